package model

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Sample is one look at a process: process-wide facts and one entry per thread.
// Samples serialise to JSON so a run can be recorded and replayed.
type Sample struct {
	Time       time.Time   `json:"time"`
	PID        int         `json:"pid"`
	StartTicks uint64      `json:"start_ticks"` // start time in clock ticks after boot: a change means the pid was reused
	State      ThreadState `json:"state"`
	RSSBytes   int64       `json:"rss_bytes"`
	Threads    []Thread    `json:"threads"`
	// Paused: a stack source stopped the process for an instant right after
	// this sample (py-spy without --nonblocking). Each pause costs every
	// thread a voluntary context switch or two that are not its own doing.
	Paused bool `json:"paused,omitempty"`
	// Foreign are the signs that something else stopped the target
	// between the previous sample and this one (another diagnosis, a
	// tracer): across that interval no switch and no stack change is
	// movement. Nil when there were none.
	Foreign []ForeignStop `json:"foreign_stops,omitempty"`
	// Futexes holds what the target's memory says at each address a thread
	// waits on in futex(): the words classify needs to name a mutex's owner.
	Futexes map[string]Futex `json:"futexes,omitempty"`
	// Goroutines are a Go target's goroutines from a goroutine stack
	// source (pprof, Delve, a SIGQUIT dump); nil when there was none.
	Goroutines []Goroutine `json:"goroutines,omitempty"`
	// Tasks are a Python target's pending asyncio tasks, read from the
	// interpreter's memory (3.11 on) on a run's last sample; nil
	// elsewhere.
	Tasks []Task `json:"tasks,omitempty"`
	// Excerpt: the goroutines are not the whole program's, or may not be:
	// a dump cut short, one with goroutines it could not read or did not
	// keep, one without goroutine 1 (a paste of some records), a panic's
	// that printed only the panicking goroutine. What is absent from an
	// excerpt proves nothing: no "nobody left" rests on it.
	Excerpt bool `json:"excerpt,omitempty"`
	// Frozen is how long a stack source kept the target stopped for this
	// sample (Delve's first interrupt to last detach); 0 for sources that do not stop it.
	Frozen time.Duration `json:"frozen_ns,omitempty"`
	// StackSource is where this sample's stacks came from: a live source
	// or the format of a dump read from a file; FormatNone for none.
	StackSource Format `json:"stack_source,omitempty"`
	// Message is what the runtime said with the stacks: a Go fatal
	// error's text ("all goroutines are asleep - deadlock!"), a panic's.
	Message string `json:"message,omitempty"`
	// Stop is what the kernel says of a process stopped by a signal or a
	// tracer (state T or t); nil when it runs.
	Stop *Stop `json:"stop,omitempty"`
	// Cgroup is the process's cgroup's CPU limit, throttling and
	// pressure at this sample; Machine the host's CPU use and load. Nil
	// when unread (a dump, a /proc without them).
	Cgroup  *Cgroup  `json:"cgroup,omitempty"`
	Machine *Machine `json:"machine,omitempty"`
	// LockedFiles are, when a thread sleeps briefly (a retry loop's
	// back-off) and none waits in a lock call, the files the process has
	// open on which another process holds a record lock (POSIX or OFD),
	// from /proc/locks: a lock it may be retrying with F_SETLK.
	LockedFiles []LockedFile `json:"locked_files,omitempty"`
	// ChanScan says how the memory reader looked for the goroutines that
	// refer to the channels others wait on (Goroutine.HeldChans); nil
	// when it did not (it runs on a run's last sample only).
	ChanScan *ChanScan `json:"chan_scan,omitempty"`
	// JVM is a live JVM's counters from its hsperfdata file; nil when
	// unread (not a JVM, -XX:-UsePerfData, a dump).
	JVM *JVMCounters `json:"jvm,omitempty"`
	// JavaDeadlocks are the deadlocks a JVM thread dump reported itself.
	JavaDeadlocks []JavaDeadlock `json:"java_deadlocks,omitempty"`
}

// LockedFile is a file a process has open and the record locks on it.
type LockedFile struct {
	Path  string `json:"path"`
	FD    int    `json:"fd"`
	Dev   string `json:"dev"`
	Inode uint64 `json:"inode"`
	// Held are the locks other processes hold on it; Own this process's.
	Held []FileLockEntry `json:"held"`
	Own  []FileLockEntry `json:"own"`
	// SQLite: the file begins with SQLite's header ("SQLite format 3").
	SQLite bool `json:"sqlite,omitempty"`
}

// ChanScan is a conservative scan of a live Go program's memory for the
// channels its goroutines wait on: every goroutine's stack (from its stack
// pointer up), the heap objects those words point into and the objects
// those point into (Depth pointers in all), and the program's globals.
type ChanScan struct {
	// Depth is how many pointers from a stack word were followed.
	Depth int `json:"depth"`
	// Complete: every goroutine's stack and every object within Depth
	// was read, and no goroutine moved while it was. Otherwise Cut says
	// where a bound or a moving goroutine cut it.
	Complete bool   `json:"complete"`
	Cut      string `json:"cut,omitempty"`
	// Bytes is how much memory was read.
	Bytes int64 `json:"bytes"`
	// Globals are the waited-on channels that the program's globals
	// (its data and bss) refer to, within Depth: any goroutine may reach
	// them, so none can be named.
	Globals []string `json:"globals,omitempty"`
	// Timers are the waited-on channels that may belong to a timer (a
	// buffered channel of one time.Time, or one the runtime marks as a
	// timer's): the runtime sends on them, no goroutine does.
	Timers []string `json:"timers,omitempty"`
}

// Cgroup is what the cgroup that limits a process's CPU says at one
// instant: the counters are cumulative, so two samples give the run's.
type Cgroup struct {
	// Path is the cgroup, as /proc/PID/cgroup names it; Limited the one
	// whose cpu.max (or cfs_quota_us) limits it — Path or an ancestor; ""
	// when none does.
	Path    string `json:"path"`
	Limited string `json:"limited,omitempty"`
	Version int    `json:"version"` // 1 or 2
	// QuotaUS of CPU time per PeriodUS: the bandwidth limit; 0 for none.
	QuotaUS  int64 `json:"quota_us,omitempty"`
	PeriodUS int64 `json:"period_us,omitempty"`
	// Periods and Throttled are cpu.stat's nr_periods and nr_throttled
	// (periods in which the quota ran out); ThrottledUS the time its tasks
	// waited for the next period.
	Periods     uint64 `json:"nr_periods"`
	Throttled   uint64 `json:"nr_throttled"`
	ThrottledUS uint64 `json:"throttled_us"`
	// Alone says the process is the only one its quota governs: the
	// limiting cgroup is its own, has no child cgroup, and its
	// cgroup.procs lists it alone. Its throttling is then its own demand.
	Alone bool `json:"alone,omitempty"`
	// Pressure is the cgroup's PSI (cgroup v2): the total time some task
	// stalled on each resource, µs; nil without it.
	Pressure *Pressure `json:"pressure,omitempty"`
	Err      string    `json:"err,omitempty"`
}

// Pressure is pressure stall information: for each resource, the total
// time in µs in which some task waited for it ("some" lines).
type Pressure struct {
	CPUUS    uint64 `json:"cpu_us"`
	MemoryUS uint64 `json:"memory_us"`
	IOUS     uint64 `json:"io_us"`
}

// Machine is the host's CPU at one instant: /proc/stat's cumulative busy
// and total ticks over all CPUs, /proc/loadavg, and /proc/pressure.
type Machine struct {
	BusyTicks  uint64    `json:"busy_ticks"`
	TotalTicks uint64    `json:"total_ticks"`
	Load1      float64   `json:"load1"`
	Pressure   *Pressure `json:"pressure,omitempty"`
}

// Stop is a stopped process as /proc/PID/status and stat tell it. Which
// signal stopped it the kernel does not say; what it does say is here.
type Stop struct {
	// TracerPID is the process tracing it (a debugger, strace); 0 for none.
	TracerPID int `json:"tracer_pid,omitempty"`
	// ByHangdoc: the tracer is the hangdoc that took this sample.
	ByHangdoc bool `json:"by_hangdoc,omitempty"`
	// Background: it has a controlling terminal whose foreground process
	// group is not its own — a job stopped by SIGTSTP (Ctrl-Z), or by
	// SIGTTIN or SIGTTOU for touching the terminal from the background.
	Background bool `json:"background,omitempty"`
	// Pending are the signals queued for it (SigPnd, ShdPnd), which it
	// acts on once it is continued: "SIGTERM".
	Pending []string `json:"pending,omitempty"`
}

// Thread is what the kernel says about one thread at one instant.
type Thread struct {
	TID int `json:"tid"`
	// NSTID is the thread's id in its own PID namespace (a container's),
	// where that differs from TID, which is as hangdoc's /proc numbers it;
	// 0 when they are the same.
	NSTID int         `json:"nstid,omitempty"`
	Name  string      `json:"name"`
	State ThreadState `json:"state"` // R, S, D, T, t, Z, X, I; unknown in a dump
	// CPUTime is user plus system time since the thread started.
	CPUTime time.Duration `json:"cpu_ns"`
	// RunDelay is the time spent runnable but waiting for a CPU
	// (/proc/TID/schedstat), read only for threads in state R: a spinning
	// thread on a crowded machine wants a core it does not always get.
	// Zero when unread.
	RunDelay    time.Duration `json:"run_delay_ns,omitempty"`
	Wchan       string        `json:"wchan,omitempty"`
	Syscall     Syscall       `json:"syscall"`
	Voluntary   uint64        `json:"voluntary_ctxt_switches"`
	Involuntary uint64        `json:"nonvoluntary_ctxt_switches"`
	// FD is what the file descriptor in the syscall's arguments points at
	// (readlink of /proc/PID/fd/N: "pipe:[32921]", "socket:[123]", a path).
	FD string `json:"fd,omitempty"`
	// PidfdPID is the process a pidfd in the syscall's arguments refers to
	// (waitid(P_PIDFD, fd, …)), from /proc/PID/fdinfo.
	PidfdPID int `json:"pidfd_pid,omitempty"`
	// Watches are the descriptors an epoll_wait's epoll instance watches
	// ("3 socket:[123]"), from fdinfo.
	Watches []string `json:"watches,omitempty"`
	// Polled are the descriptors a thread blocked in poll, ppoll, select
	// or pselect6 waits on, read from its memory (the pollfd array, the
	// fd_sets); PollErr says why they could not be read.
	Polled  []PolledFD `json:"polled,omitempty"`
	PollErr string     `json:"poll_err,omitempty"`
	// Path is what a blocked open, openat, openat2, creat, mknod,
	// stat-family or execve call was given, or the address a connect or
	// bind was given ("unix:/run/app.sock", "unix:@name",
	// "127.0.0.1:80"), read from the thread's memory; a relative path is
	// made absolute by its directory descriptor or the working directory.
	// PathErr says why it could not be read.
	Path    string `json:"path,omitempty"`
	PathErr string `json:"path_err,omitempty"`
	// Native is, for a thread whose stacks come from its runtime (a
	// Python thread's from py-spy), the native frames above the
	// interpreter's, innermost first: the C of an extension or a library
	// it is blocked in, unwound from its memory; nil when none were read.
	Native []Frame `json:"native,omitempty"`
	// OnCPU is where the kernel's CPU-clock sampling caught the thread
	// running since the previous sample; nil when it was not sampled (a
	// dump, the first sample, a thread that did not run, sampling
	// refused).
	OnCPU *OnCPU `json:"on_cpu,omitempty"`
	// FIFO is, for an open that waits for the other end of a FIFO (wchan
	// wait_for_partner), the FIFO and the processes that have it open.
	FIFO *FIFOWait `json:"fifo,omitempty"`
	// Anon is, for a read or a one-descriptor poll of an eventfd, a
	// signalfd, a timerfd, an inotify instance or a pidfd, what its fdinfo
	// says.
	Anon *AnonFD `json:"anon,omitempty"`
	// SysV is, for a semop, semtimedop, msgrcv or msgsnd, the SysV
	// semaphore set or message queue it waits on.
	SysV *SysVWait `json:"sysv,omitempty"`
	// SleepNS is how long a nanosleep or clock_nanosleep asked to sleep,
	// read from the thread's memory; 0 when unread or absolute.
	SleepNS int64 `json:"sleep_ns,omitempty"`
	// Waitv are the futex words a futex_waitv waits on, any of which
	// ends it, read from the thread's memory (at most 128, as the kernel
	// allows); nil when unread.
	Waitv []uint64 `json:"waitv,omitempty"`
	// FileLock is, for a thread blocked in flock() or fcntl(F_SETLKW),
	// the file and the locks held on it, from /proc/locks.
	FileLock *FileLock `json:"file_lock,omitempty"`
	// KernelStack is /proc/TID/stack for a thread in uninterruptible sleep,
	// function names innermost first (readable by root only).
	KernelStack []string `json:"kernel_stack,omitempty"`
	// Exited: the thread was listed but gone before it could be read.
	Exited bool `json:"exited,omitempty"`
	// Stack is filled by stack sources (goroutine dumps, py-spy), innermost
	// frame first; /proc has none.
	Stack []Frame `json:"stack,omitempty"`
	// Python is what py-spy says of the Python thread on this OS thread.
	Python *PythonThread `json:"python,omitempty"`
	// Java is what a JVM thread dump says of this thread.
	Java *JavaThread `json:"java,omitempty"`
	// Vars are the objects its frames' variables name (py-spy --locals):
	// how a lock is told from another by its address.
	Vars []FrameVars `json:"vars,omitempty"`
}

// FrameVars are the variables of one frame of a stack (Frame indexes it)
// that name objects.
type FrameVars struct {
	Frame int   `json:"frame"`
	Vars  []Var `json:"vars"`
}

// Var is a variable that names an object: its name, the object's type and
// its address ("<_thread.lock at 0x7f…>"). Only objects are kept, never
// values: a string or a number may be a secret.
type Var struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Addr string `json:"addr"`
}

// PolledFD is one descriptor a thread waits on in poll or select.
type PolledFD struct {
	FD int `json:"fd"`
	// Read and Write say which way it waits: for input (POLLIN, the read
	// set) or for room to write (POLLOUT, the write set).
	Read  bool `json:"read,omitempty"`
	Write bool `json:"write,omitempty"`
	// Target is what the descriptor points at, as /proc/PID/fd names it.
	Target string `json:"target,omitempty"`
}

// FileLock is a file a thread waits to lock, and the locks held on it.
type FileLock struct {
	Path string `json:"path"`
	// Dev and Inode name the file as /proc/locks does: "08:01", 131090.
	Dev   string `json:"dev"`
	Inode uint64 `json:"inode"`
	// Held are the locks on the file that are granted; Blocked the waits
	// for one, this thread's among them.
	Held    []FileLockEntry `json:"held"`
	Blocked []FileLockEntry `json:"blocked"`
	Err     string          `json:"err,omitempty"`
}

// FileLockEntry is one line of /proc/locks.
type FileLockEntry struct {
	// Class is FLOCK (flock), POSIX (fcntl F_SETLK, lockf) or OFDLCK
	// (open file description locks, F_OFD_SETLK).
	Class string `json:"class"`
	Type  string `json:"type"` // READ or WRITE
	// PID is the process that took it; -1 for an OFD lock, which belongs
	// to an open file and no process (the follower finds who has it open).
	PID int `json:"pid"`
	// Range is the locked bytes: "0 EOF", "100 199".
	Range string `json:"range"`
}

// PythonThread is a Python thread's facts from a stack dump.
type PythonThread struct {
	ThreadName string `json:"thread_name"`
	OwnsGIL    bool   `json:"owns_gil"`
	// Active is py-spy's instant guess; hangdoc's classes come from
	// measured CPU and whether the stack moved, not from it, when the
	// kernel can be read.
	Active bool `json:"active"`
	// ActiveRead: the source looked at the OS thread (py-spy printed its
	// TID), so Active is evidence — the only evidence of CPU a dump read
	// from a file has. False where the source prints no such flag
	// (faulthandler, sys._current_frames()) or py-spy could not see the
	// OS thread and printed its default (3.8–3.10 under --nonblocking
	// print the pthread_t, and "active" for a thread it cannot read).
	ActiveRead bool `json:"active_read,omitempty"`
	// Ident is threading.get_ident() (the pthread_t) as the dump printed
	// it: the only id faulthandler and the sys._current_frames() prints
	// give. 0 when the dump gave none.
	Ident uint64 `json:"ident,omitempty"`
}

// Syscall is /proc/TID/syscall: the call a thread is blocked in, if any.
type Syscall struct {
	// Running: the thread was on a CPU, so the kernel reports no call.
	Running bool `json:"running,omitempty"`
	// Nr is the call's number; -1 means blocked outside a syscall (a page
	// fault, a stop). Unread when Unknown.
	Nr   int       `json:"nr"`
	Name string    `json:"name,omitempty"`
	Args [6]uint64 `json:"args"`
	// SP and PC are the thread's user stack pointer and program counter
	// as the kernel shows them with the call (the last two fields of
	// /proc/TID/syscall): where an unwinder starts its native stack.
	SP uint64 `json:"sp,omitempty"`
	PC uint64 `json:"pc,omitempty"`
	// Unknown: the file could not be read (permission, or the thread exited).
	Unknown bool `json:"unknown,omitempty"`
	// Restarted: the kernel showed restart_syscall, the call a thread
	// resumes in after a stop (py-spy's pause, a debugger, SIGSTOP) broke
	// into a timed wait. Nr and Name are then the original call's, as the
	// thread's earlier reading or its wchan tell (restart_syscall itself
	// when neither does); Args are the original call's, which the
	// registers still hold. A stop that hangdoc made is no movement.
	Restarted bool `json:"restarted,omitempty"`
}

// InCall reports whether the thread is blocked inside a known syscall.
func (s Syscall) InCall() bool { return !s.Running && !s.Unknown && s.Nr >= 0 }

// Frame is one line of a stack.
type Frame struct {
	Func string `json:"func"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Args is a Go frame's argument words as the traceback prints them,
	// with their parentheses: "(0xc000012088, 0x1)"; a trailing '?' marks
	// a word the runtime could not vouch for. "" for other runtimes.
	Args string `json:"args,omitempty"`
}

// Goroutine is one goroutine as a Go stack source saw it.
type Goroutine struct {
	ID int64 `json:"id"`
	// State is the wait reason ("chan receive", "sync.Mutex.Lock", "IO
	// wait", "select") or the status word ("running", "runnable",
	// "syscall").
	State string `json:"state"`
	// WaitMinutes is how long it has waited as the runtime stamps it (at
	// GC, so a lower bound; 0 may mean "not stamped yet").
	WaitMinutes int `json:"wait_minutes,omitempty"`
	// Thread is the OS thread running it, when the source says (Delve,
	// for running and syscall goroutines); 0 when unknown.
	Thread         int               `json:"thread,omitempty"`
	LockedToThread bool              `json:"locked_to_thread,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	// Stack is innermost first.
	Stack     []Frame `json:"stack"`
	CreatedBy *Frame  `json:"created_by,omitempty"`
	CreatorID int64   `json:"creator_id,omitempty"`
	// WaitChans are the channels a goroutine blocked in a channel
	// operation or select waits on ("0xc000020060"), and ChanRefs the
	// channels its own frames' variables refer to: the evidence for a
	// channel cycle. Only a source that reads memory (Delve) fills them.
	WaitChans []string `json:"wait_chans,omitempty"`
	ChanRefs  []string `json:"chan_refs,omitempty"`
	// HeldChans are the channels some goroutine of the sample waits on
	// that this goroutine's stack refers to, as a word of its stack or of
	// a heap object its stack leads to (ChanScan.Depth pointers at most):
	// a conservative scan of the target's memory, filled only on a
	// sample that has a ChanScan. A word that looks like the address is
	// enough, so a goroutine listed here may not use the channel; one not
	// listed cannot reach it that way.
	HeldChans []string `json:"held_chans,omitempty"`
	// WaitLock is the address of the sync.Mutex or sync.RWMutex a
	// goroutine blocked in Lock or RLock waits for ("0xc000012080"), read
	// from the runtime's semaphore table by the memory reader: the
	// address a dump prints as the Lock frame's receiver.
	WaitLock string `json:"wait_lock,omitempty"`
	// HeldLocks are the locks some goroutine of the sample waits for
	// (their WaitLock) that this goroutine's stack refers to, as the
	// channel scan finds HeldChans: the lock's address as a word, or a
	// word pointing into the heap object the lock is part of. A
	// candidate's evidence, never proof that it holds the lock.
	HeldLocks []string `json:"held_locks,omitempty"`
	// Twins are the ids of the other goroutines of the sample that read
	// exactly like this one (state, wait, stack with its argument words,
	// labels, creator): a source that reads a pile of identical
	// goroutines (a dump read by hangdoc analyze) records the pile once.
	// Every consumer counts a reading as 1+len(Twins) goroutines.
	Twins []int64 `json:"twins,omitempty"`
}

// Futex is the start of the memory at a futex address, read as a glibc
// pthread_mutex_t: {int __lock; unsigned __count; int __owner; unsigned
// __nusers; int __kind; ...}. Only classify decides whether it is one.
type Futex struct {
	Word  int32  `json:"word"`
	Owner int32  `json:"owner"`
	Kind  int32  `json:"kind"`
	Err   string `json:"err,omitempty"`
	// Shared is the MAP_SHARED mapping the word lies in, when it lies in
	// one: the same lock in every process that maps that object there.
	Shared *SharedWord `json:"shared,omitempty"`
	// OwnerPID is the process of the owner thread the word records, when
	// that thread is in another process that maps the same object at the
	// same offset (a process-shared mutex held across processes).
	OwnerPID int `json:"owner_pid,omitempty"`
	// MappedBy are the other processes found mapping the same shared word
	// (who could wake its waiters: post a semaphore, release a lock),
	// when no owner is named; MappedComplete is false when the search ran
	// out of time first.
	MappedBy       []int `json:"mapped_by,omitempty"`
	MappedComplete bool  `json:"mapped_complete,omitempty"`
}

// FIFOWait is an open of a FIFO that waits for a process to open its
// other end: a writer waits for a reader, a reader for a writer.
type FIFOWait struct {
	Path string `json:"path"`
	// Write: it opens the FIFO to write, and so waits for a reader.
	Write bool `json:"write"`
	// Holders are the descriptors open on the FIFO in any process, matched
	// by device and inode; Complete is false when the search ran out of
	// time before every process was read.
	Holders  []FDRef `json:"holders"`
	Complete bool    `json:"complete"`
	Err      string  `json:"err,omitempty"`
}

// OnCPU is a thread's on-CPU profile over one interval: the stacks the
// kernel's CPU-clock event caught it in, 99 times a second of CPU it used.
type OnCPU struct {
	// Samples is how many times it was caught running; Kernel how many of
	// those in the kernel (a system call, a page fault), whose user stack
	// is the one that entered it.
	Samples int `json:"samples"`
	Kernel  int `json:"kernel,omitempty"`
	// Stacks are the stacks it was caught in, the most frequent first,
	// at most a few; Other counts the samples in stacks not kept.
	Stacks []CPUStack `json:"stacks,omitempty"`
	Other  int        `json:"other,omitempty"`
	// Funcs are the functions on the stacks caught, over every stack
	// (those Stacks leaves out too), the most often on a stack first, at
	// most a few dozen: where a thread that never takes one path twice
	// (a regular expression backtracking) stays all the same.
	Funcs []FuncCount `json:"funcs,omitempty"`
	// Lost is how many samples the kernel could not write (a full ring
	// buffer).
	Lost int `json:"lost,omitempty"`
}

// FuncCount is one function of an on-CPU profile: how many samples had
// it on their stack (OnStack) and caught it innermost (Leaf), and the
// lines it was caught at, innermost call of it on each stack (0 without
// line tables).
type FuncCount struct {
	Func      string `json:"func"`
	File      string `json:"file,omitempty"`
	OnStack   int    `json:"on_stack"`
	Leaf      int    `json:"leaf,omitempty"`
	FirstLine int    `json:"first_line,omitempty"`
	LastLine  int    `json:"last_line,omitempty"`
}

// CountFuncs counts the functions on stacks: on how many samples' stacks
// each is, innermost on how many, and the lines it was caught at (its
// innermost call on each stack); the most often on a stack first.
func CountFuncs(stacks []CPUStack) []FuncCount {
	type key struct{ fn, file string }
	by := map[key]*FuncCount{}
	for _, st := range stacks {
		seen := map[key]bool{}
		for i, f := range st.Frames {
			k := key{f.Func, f.File}
			c := by[k]
			if c == nil {
				c = &FuncCount{Func: f.Func, File: f.File}
				by[k] = c
			}
			if i == 0 {
				c.Leaf += st.N
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			c.OnStack += st.N
			if f.Line > 0 {
				if c.FirstLine == 0 || f.Line < c.FirstLine {
					c.FirstLine = f.Line
				}
				c.LastLine = max(c.LastLine, f.Line)
			}
		}
	}
	out := make([]FuncCount, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b FuncCount) int {
		if c := cmp.Compare(b.OnStack, a.OnStack); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Leaf, a.Leaf); c != 0 {
			return c
		}
		return strings.Compare(a.Func+"\x00"+a.File, b.Func+"\x00"+b.File)
	})
	return out
}

// CPUStack is one stack of an on-CPU profile, innermost frame first,
// and how many samples caught it. Native frames have the path of the
// file mapped there and no line.
type CPUStack struct {
	N      int     `json:"n"`
	Frames []Frame `json:"frames"`
}

// Task is one asyncio task as the interpreter's memory holds it.
type Task struct {
	// Addr is the task object's address: what a task that awaits it
	// names.
	Addr string `json:"addr"`
	Name string `json:"name"`
	// Done: it finished, and is still referred to; Failed: with an
	// exception (nobody may have retrieved it).
	Done   bool `json:"done,omitempty"`
	Failed bool `json:"failed,omitempty"`
	// Stack is its coroutines' frames, innermost first: the coroutine the
	// task runs last.
	Stack []Frame     `json:"stack"`
	Vars  []FrameVars `json:"vars,omitempty"`
	// Awaits is the object its innermost coroutine awaits (a future,
	// another task) and that object's type; "" when it awaits nothing (it
	// runs, or has not started).
	Awaits     string `json:"awaits,omitempty"`
	AwaitsType string `json:"awaits_type,omitempty"`
	// AwaitsAll are, when it awaits a gather, the gathered tasks'
	// (or futures') addresses: it waits for every one.
	AwaitsAll []string `json:"awaits_all,omitempty"`
	// FD is the descriptor of the socket it waits on, through a stream
	// (its transport's) or a loop's sock_* call; nil when none or unread.
	FD *int `json:"fd,omitempty"`
	// Thread is the thread (its TID, as hangdoc's /proc numbers it) whose
	// thread-pool work item resolves the future it awaits
	// (run_in_executor, asyncio.to_thread): that item's future's done
	// callback holds the very future; 0 for none.
	Thread int `json:"thread,omitempty"`
}
