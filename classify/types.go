// Package classify turns samples into a diagnosis: a class for every thread,
// a verdict for the process, the locks and who holds them, the wait-for
// cycles, and the evidence for each claim. It is pure: no I/O, no clock.
package classify

import (
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// Verdict is the process-level answer.
type Verdict string

const (
	Working  Verdict = "working"  // stacks or syscalls move: slow, not stopped
	Spinning Verdict = "spinning" // a core pinned, nothing moving
	Blocked  Verdict = "blocked"  // no CPU, waiting in the kernel on something
	Idle     Verdict = "idle"     // parked waiting for work that never comes
	Deadlock Verdict = "deadlock" // a wait-for cycle
)

// Class is a thread's answer. Threads take the verdict names, plus Exited.
type Class string

const (
	ClassWorking  Class = "working"
	ClassSpinning Class = "spinning"
	ClassBlocked  Class = "blocked"
	ClassIdle     Class = "idle"
	ClassExited   Class = "exited"
)

// Confidence says how far the evidence goes.
type Confidence string

const (
	High   Confidence = "high"
	Medium Confidence = "medium"
	Low    Confidence = "low"
)

// Ref names a thread (or, from stack sources, a goroutine) in a process.
type Ref struct {
	PID       int   `json:"pid"`
	TID       int   `json:"tid,omitempty"`
	Goroutine int64 `json:"goroutine,omitempty"`
}

// Diagnosis is everything classify concludes from a run of samples.
type Diagnosis struct {
	Verdict    Verdict    `json:"verdict"`
	Summary    string     `json:"summary"`
	Confidence Confidence `json:"confidence"`
	Hint       string     `json:"hint"`
	Evidence   []string   `json:"evidence"`
	Threads    []Thread   `json:"threads"`
	Locks      []Lock     `json:"locks"`
	Cycles     [][]Ref    `json:"cycles"`
	Waits      []Wait     `json:"waits"`
	Memory     Memory     `json:"memory"`
	// Processes are the other processes the target's waits lead to.
	Processes []Process `json:"processes"`
	// Orphans are processes left behind in the target's process group or
	// session: their parent exited and they were reparented.
	Orphans []Orphan `json:"orphans"`
	// Goroutines and Groups are a Go target's goroutines, from a goroutine
	// stack source: each one's class, and the groups of goroutines with
	// the same stack, biggest first. Empty without a Go stack source.
	Goroutines []Goroutine `json:"goroutines"`
	Groups     []Group     `json:"groups"`
}

// World is the evidence around the target: the processes its waits lead to,
// the resources they share, and its family of processes. Its zero value
// means the target alone.
type World struct {
	Peers     []model.Process
	Resources map[string]model.Resource
	// FamilyBefore and Family are the target's process group (and session,
	// if it leads one) and its ancestors, at the first and the last sample.
	FamilyBefore, Family []model.Proc
	// BootTime turns start times in clock ticks into ages.
	BootTime time.Time
	// Sources holds the lines of the source files that stacks point into
	// where threads wait (file path → lines, line 1 first): how a lock's
	// with-block is found.
	Sources map[string][]string
}

// Process is a process one of the target's waits leads to, as classified
// from its own samples.
type Process struct {
	PID     int     `json:"pid"`
	Cmdline string  `json:"cmdline"`
	Depth   int     `json:"depth"`
	Verdict Verdict `json:"verdict"`
	// State says what it is doing in a few words: "sleeping in clock_nanosleep(…), 0% CPU".
	State string `json:"state"`
}

// Orphan is a process left behind: in the target's process group (or
// session) but with a parent outside it, typically a grandchild whose shell
// was killed by a timeout. It may hold pipe ends and burn CPU.
type Orphan struct {
	PID        int     `json:"pid"`
	PPID       int     `json:"ppid"`
	Command    string  `json:"command"`
	State      string  `json:"state"`
	AgeSeconds float64 `json:"age_seconds"`
	CPUPercent float64 `json:"cpu_percent"`
}

// Thread is one thread's class and the readings behind it.
type Thread struct {
	TID        int     `json:"tid"`
	Name       string  `json:"name"`
	Class      Class   `json:"class"`
	CPUPercent float64 `json:"cpu_percent"`
	// RunqueuePercent is the share of the run it spent runnable but
	// waiting for a CPU: high on a crowded machine.
	RunqueuePercent float64      `json:"runqueue_percent"`
	State           string       `json:"state"`
	Wchan           string       `json:"wchan"`
	Syscall         *SyscallView `json:"syscall"`
	FD              string       `json:"fd,omitempty"`
	// Voluntary and Involuntary are context switches during the run.
	Voluntary   uint64 `json:"voluntary_switches"`
	Involuntary uint64 `json:"involuntary_switches"`
	// Moved: its wait, its stack or its switch counters changed between samples.
	Moved bool `json:"moved"`
	// Seen is how many samples saw it; fewer than all means it came or went.
	Seen  int           `json:"seen_in_samples"`
	Why   string        `json:"why"`
	Holds []string      `json:"holds"`               // lock ids
	Waits string        `json:"waits_for,omitempty"` // lock id
	Stack []model.Frame `json:"stack"`
	// Python is what the stack source says of the Python thread, if any.
	Python *model.PythonThread `json:"python,omitempty"`
}

// Goroutine is one goroutine's class and the readings behind it, as of
// the last sample that saw it.
type Goroutine struct {
	ID    int64  `json:"id"`
	State string `json:"state"`
	// WaitMinutes is the runtime's stamp, a lower bound (see sampler).
	WaitMinutes int   `json:"wait_minutes"`
	Class       Class `json:"class"`
	// BlockedOn says what a blocked or idle goroutine waits on: mutex,
	// rwmutex, channel, select, io, syscall, waitgroup, cond, sleep,
	// other; "" for running ones.
	BlockedOn string `json:"blocked_on,omitempty"`
	// Thread is the OS thread it ran on, when the source said.
	Thread int `json:"thread,omitempty"`
	// System: the runtime's own (GC workers, finalizers), an HTTP
	// server's connection plumbing, or the profiler answering hangdoc:
	// not the program's story, and left out of the verdict.
	System bool   `json:"system,omitempty"`
	Moved  bool   `json:"moved"`
	Seen   int    `json:"seen_in_samples"`
	Why    string `json:"why"`
	// Waits is the id of the lock it waits for; Holds the locks it
	// probably holds.
	Waits string   `json:"waits_for,omitempty"`
	Holds []string `json:"holds"`
	// Group is its index in Diagnosis.Groups.
	Group     int           `json:"group"`
	Stack     []model.Frame `json:"stack"`
	CreatedBy *model.Frame  `json:"created_by,omitempty"`
}

// Group is the goroutines that share a stack (argument words ignored) and
// a state in the last sample.
type Group struct {
	Count int    `json:"count"`
	State string `json:"state"`
	Class Class  `json:"class"`
	// Title is the group in one line: "412 goroutines in
	// sync.(*Mutex).Lock ← db.(*Pool).Get".
	Title string `json:"title"`
	// IDs are its goroutines, lowest first, at most 20.
	IDs []int64 `json:"ids"`
	// Counts is its size in each sample, first to last: a group that grows
	// is a pile-up.
	Counts []int         `json:"counts"`
	Grew   bool          `json:"grew"`
	Stack  []model.Frame `json:"stack"`
}

// SyscallView is the call a thread is blocked in, as read and as printed.
type SyscallView struct {
	Nr   int      `json:"nr"`
	Name string   `json:"name"`
	Args []string `json:"args"`
	Text string   `json:"text"`
}

// Lock is one futex word that threads wait on.
type Lock struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"` // mutex, pi-mutex, futex
	Address string `json:"address"`
	Holder  *Ref   `json:"holder"`
	Waiters []Ref  `json:"waiters"`
	Basis   string `json:"basis"`
}

// Wait is what one blocked or parked thread waits for: another thread or
// process (To), or a resource named in Resource.
type Wait struct {
	From     Ref    `json:"from"`
	To       *Ref   `json:"to"`
	Resource string `json:"resource,omitempty"`
	Kind     string `json:"kind"`
	Detail   string `json:"detail"`
	// Chain follows the wait to where it ends, across processes:
	// "write(1, …) → pipe:[32921], 65536/65536 bytes queued → read by pid
	// 9141 (python3 feeder.py): sleeping in clock_nanosleep(…), 0% CPU".
	Chain string `json:"chain,omitempty"`
}

// Memory is the resident set size at each sample and its trend.
type Memory struct {
	RSSBytes []int64 `json:"rss_bytes"`
	Trend    string  `json:"trend"` // flat, growing, shrinking, unknown
}

// Options holds the thresholds. DefaultOptions gives the ones hangdoc uses.
type Options struct {
	// SpinCPU is the share of one core at or above which a thread with no
	// movement is spinning.
	SpinCPU float64
	// GoSpinCPU is the same for a goroutine caught running in one loop in
	// every sample: the stacks already say it does not move, so the CPU
	// only has to show it burns (a goroutine moves between threads, and a
	// stack source stops the process for part of the run).
	GoSpinCPU float64
	// SpinSwitchesPerSecond is the most voluntary context switches a
	// spinning thread may make: a page fault or a stray signal is not a
	// loop that blocks.
	SpinSwitchesPerSecond float64
	// PauseSwitches is how many voluntary switches a stack source's pause
	// may cost a thread (py-spy: one for a running thread, two for a
	// blocked one); they do not count as the thread moving.
	PauseSwitches uint64
	// BusyCPU is the share of one core at or above which a thread is using
	// the CPU at all.
	BusyCPU float64
	// RSSGrowth is the relative change in RSS across the run that counts as
	// growing or shrinking; RSSGrowthBytes the least absolute change.
	RSSGrowth      float64
	RSSGrowthBytes int64
}

// DefaultOptions returns the thresholds hangdoc uses.
func DefaultOptions() Options {
	return Options{SpinCPU: 0.80, GoSpinCPU: 0.50, SpinSwitchesPerSecond: 2, PauseSwitches: 4, BusyCPU: 0.05, RSSGrowth: 0.02, RSSGrowthBytes: 1 << 20}
}
