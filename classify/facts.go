package classify

import "github.com/hangdoc/hangdoc/model"

// Why is the rule that gave an actor its class, with what the rule saw.
// Report words it.
type Why struct {
	Rule WhyRule
	// N is the rule's count: samples seen, switches got through, others
	// at the same place.
	N int
	// Kind is the wait the rule is about.
	Kind model.WaitKind
	// Site is a with-block ("FILE:LINE") or a function the rule names.
	Site string
	// Other is another actor the rule names: the thread that spins
	// while a goroutine runs, the thread a goroutine runs on.
	Other *Ref
	// ProcessCPU is the process's CPU across its threads, for the rules
	// that judge a goroutine by it.
	ProcessCPU float64
	// Siblings: this many goroutines started by the same go statement
	// (SiblingsAt) moved, so a goroutine that looked like it spun is a
	// busy worker.
	Siblings   int
	SiblingsAt *model.Frame
	// ChanWait: a goroutine in a channel deadlock waits on these
	// channels, which only these blocked goroutines refer to.
	ChanWait *ChanWait
	// OnCPU is what said a thread read from dumps ran (WhyDumpRunning,
	// WhyDumpSpins).
	OnCPU OnCPUEvidence
	// Crowded is, for a spinner judged by what a crowded machine could
	// give it, that share in percent of a core: it wants a CPU it does
	// not get. 0 when it got what it wanted.
	Crowded float64
	// CPUMillis is, for a Java thread in two dumps or more, the CPU time
	// its cpu= grew by between the first and the last.
	CPUMillis float64
}

// OnCPUEvidence is what a dump shows of a thread being on a CPU: a dump
// has no CPU time, so only these.
type OnCPUEvidence uint8

const (
	OnCPUNone      OnCPUEvidence = iota
	OnCPUFlag                    // py-spy saw the OS thread running ("active")
	OnCPUGIL                     // it held the GIL (py-spy's "+gil")
	OnCPULine                    // its innermost frame stands at a line that calls nothing: Python code running
	OnCPUJavaState               // a JVM dump prints it RUNNABLE in Java code, no frame naming a wait
	OnCPUJavaCPU                 // RUNNABLE in Java code, and its cpu= grew between the dumps (Why.CPUMillis)
)

// ChanWait is what a goroutine in a channel cycle waits on.
type ChanWait struct {
	State string
	Chans []string
	Only  []int64
}

// WhyRule names the rule that classified an actor.
type WhyRule uint8

const (
	WhyNone WhyRule = iota
	// Threads.
	WhyExited      // gone before the last sample (N: samples seen)
	WhyOnCPUOnce   // on a CPU in the only sample it was seen in
	WhySpins       // wants a core, no switch or wait (N: samples; a stack in each when it has one)
	WhyBusy        // uses CPU
	WhyStackMoved  // its stack changed between samples
	WhyRunnable    // runnable in every sample, little CPU (N)
	WhyParked      // parked in a wait for work (Kind)
	WhySlow        // waits, but woke N times (or, with N 0, its wait changed)
	WhyBlockedOnce // waiting in the only sample it was seen in (Kind)
	WhyBlocked     // the same wait in N samples, no CPU (Kind)
	WhyRewaits     // the same futex wait in every sample, woken N times between with no CPU: no progress shown
	WhyWithBlock   // waits to enter the with-block at Site
	WhyBehind      // parked in a wait (Kind) that one of N other actors, Other first, can end: they move or wait for work
	WhyNobodyLeft  // waits (Kind) for something no live actor of its process is left to do
	// Goroutines.
	WhyGoAside         // the runtime's, or an HTTP server's machinery
	WhyGoObserver      // the pprof handler writing hangdoc's profile
	WhyGoDumper        // the program's goroutine writing this dump
	WhyGoMoved         // its stack or state changed
	WhyGoRunningOnce   // running in the only sample it was seen in
	WhyGoBetweenWaits  // ran between waits
	WhyGoSpinsOnThread // the same stack in N samples, on thread Other using a core
	WhyGoSpinsWhile    // the same stack in N samples while thread Other spins
	WhyGoSpinsProcess  // the same loop in N samples while the process uses ProcessCPU
	WhyGoSpinsInDumps  // the same stack in N dumps, no CPU evidence
	WhyGoRunsLittle    // the same stack in N samples, but the process uses little CPU
	WhyGoParked        // parked in a wait for work (Kind)
	WhyGoAccept        // parked waiting for a connection
	WhyGoServerRead    // an HTTP server connection waiting for its next request
	WhyGoSelectForever // select {}
	WhyGoBlockedOnce   // blocked in the only sample it was seen in (Kind)
	WhyGoBlocked       // blocked, unchanged in N samples (Kind)
	WhyGoPool          // parked receiving at Site with N others, nothing left that could send
	WhyGoIdleWorkers   // parked receiving with N others at one place, none sending; whether any goroutine is left that could, the evidence does not prove
	WhyGoExcerpt       // waits (Kind) for others to end it, and the dump is an excerpt: it does not show them
	WhyGoFedBy         // parked receiving on a channel that Other, which is not blocked, refers to (the memory scan)
	// Threads read from dumps: no kernel evidence.
	WhyDumpRunning // on a CPU in the only dump it is in (OnCPU says how it shows)
	WhyDumpSpins   // on a CPU with the same stack in all N dumps (OnCPU)
	WhyDumpWaitsIn // waits in the call its line makes (Site: "time.sleep"), in N dumps (Kind)
	WhyDumpOffCPU  // py-spy saw it off a CPU, in a call its stack does not name, in N dumps
	// WhyGoUnreadRuns: running in all N samples with no stack to read
	// (read from memory while it ran), on thread Other, which sleeps and
	// wakes: no sign of one loop.
	WhyGoUnreadRuns
	// WhyJavaMachinery: the JVM's own thread (GC, compiler, VM thread,
	// reference handler, signal dispatcher, attach listener…).
	WhyJavaMachinery
)

// Cause is why the verdict: the rung of the ladder that decided it, and
// the actors, lock, cycle or group it is about.
type Cause struct {
	Rule CauseRule
	// Layer is the kind of actors the ladder judged.
	Layer ActorKind
	// Actors are the rung's subjects: the holder, the spinners, the
	// workers, the blocked, the pool.
	Actors []Ref
	Lock   string
	Cycle  int // index in Diagnosis.Cycles
	Cycles int // how many cycles there are
	// TaskCycle is a cycle of asyncio tasks (indexes in Diagnosis.Tasks),
	// each waiting for a lock the next one holds; TaskCycles how many
	// cycles there are.
	TaskCycle  []int
	TaskCycles int
	// Group is the rung's group of goroutines (the biggest blocked or
	// idle one); -1 for none.
	Group int
	// CPU is the workers' CPU in all, or the process's.
	CPU float64
	// Kinds are the waits of the rung's subjects, most common first, with
	// how many wait in each.
	Kinds []KindCount
	// SleepOnly: every idle thread sleeps.
	SleepOnly bool
	// HolderIO is the pipe a goroutine holder in IO wait is stuck on.
	HolderIO *IOChain
	// RuntimeSaid: the Go runtime itself reported the deadlock.
	RuntimeSaid bool
	// Leaked: the runtime's goroutine leak detector (Go 1.26+) marked the
	// blocked goroutines "(leaked)": no live goroutine can reach what they
	// wait on, so they never proceed — the runtime's proof of a partial
	// deadlock.
	Leaked bool
	// Stop is how a stopped process is stopped (CauseStopped).
	Stop *StopFact
	// PoolIdle are a multiprocessing pool's worker processes, when the
	// blocked wait for its result has every one of them waiting on the
	// target for a task: none runs the task whose result is awaited.
	PoolIdle []int
	// PoolLate are those of them that started later than the pool's
	// first worker: the pool started them to replace a worker that
	// exited (one that died, or one retired by maxtasksperchild).
	PoolLate []PoolWorker
	// Throttle is the cgroup quota that starves the process (CauseStarved).
	Throttle *Throttle
	// GC is the JVM's collector over the run (CauseGCThrash).
	GC *GCPressure
	// Beside is, for a blocked verdict on goroutines, the biggest group of
	// the program's goroutines that are idle around what stops work: said
	// after it, never instead of it. Nil for none.
	Beside *Group
	// BesidePool: Beside are a pool's workers, to which no goroutine sends.
	BesidePool bool
	// Requests counts the goroutines of a server's requests in flight
	// that are blocked (handlers that do not return), and Handler names
	// the handler of the group the verdict leads with (CauseBlocked).
	Requests int
	Handler  string
	// For CausePool: NobodyLeft, the evidence proves that no goroutine is
	// left that could feed the pool (for CauseTasksBlocked: that nothing
	// is left that could wake the event loop, Diagnosis.Loop) (a whole dump or a live source, and no
	// goroutine of the program outside the pool but those parked for
	// good); else Excerpt, the dump is an excerpt, and Outside, the
	// program's goroutines outside the pool (OutsideN of them).
	NobodyLeft bool
	Excerpt    bool
	Outside    []Ref
	OutsideN   int
	// Joiners, for a pool of threads: the threads alive in a join
	// (Thread.join) beside the idle workers. The thread it joins never
	// ends (every other thread waits), so the process is blocked, not
	// idle: it waits for workers who wait for work nobody is left to put.
	Joiners []Ref
}

// PoolWorker is a pool's worker that started after the pool's first.
type PoolWorker struct {
	PID int
	// AfterMS is how much later it started, in milliseconds (the
	// kernel's start times count in 10 ms ticks).
	AfterMS int64
}

// Throttle is what a cgroup's CPU quota did to a process over the run.
type Throttle struct {
	Cgroup     string // the cgroup whose quota limits it
	Version    int
	QuotaCores float64 // quota / period
	// Periods and Throttled are the periods that passed during the run,
	// and those in which the quota ran out; Percent is their share.
	Periods, Throttled uint64
	Percent            float64
	ThrottledSeconds   float64
	// Alone says the process was the only one the quota governs, in every
	// sample that read it: its throttling is its own demand for CPU.
	Alone bool
	// PressurePercent is the cgroup's CPU pressure (PSI "some") over the
	// run, in percent of the time; -1 when the kernel gives none.
	PressurePercent float64
	// GoMaxProcs is a Go target's GOMAXPROCS as far as hangdoc can tell
	// (its environment, else the runtime's default for its version); 0
	// when not Go or unknown. Above QuotaCores, it runs more threads at
	// once than the quota pays for.
	GoMaxProcs int
	// GoMaxProcsFrom says where GoMaxProcs comes from: "GOMAXPROCS",
	// "default".
	GoMaxProcsFrom string
}

// Significant reports a quota that throttled the process in a good share
// of the run's periods: one that explains a thread that waits for a CPU.
func (t *Throttle) Significant() bool {
	return t != nil && t.Throttled >= 2 && t.Percent >= 20
}

// MachineLoad is how busy the machine was over the run.
type MachineLoad struct {
	BusyPercent float64 // of all CPUs' time, from /proc/stat
	Load1       float64
	CPUs        int
	// PressurePercent is the machine's CPU pressure over the run; -1 for
	// none.
	PressurePercent float64
}

// Share is what the machine could give one runnable task, as a share of
// a core: its CPUs over its load average, or what its CPU pressure left
// free of waiting, whichever says it was less loaded (the load average
// lags a minute behind); at most 1. A spinner on a crowded machine gets
// no more than this.
func (m *MachineLoad) Share() float64 {
	if m == nil {
		return 1
	}
	load := 1.0
	if m.CPUs > 0 && m.Load1 > float64(m.CPUs) {
		load = float64(m.CPUs) / m.Load1
	}
	pressure := 0.0
	if m.PressurePercent >= 0 {
		pressure = 1 - min(m.PressurePercent, 100)/100
	}
	return max(load, pressure)
}

// Busy reports a machine whose CPUs were nearly all busy: only then does
// a thread's wait for a CPU say the machine is busy.
func (m *MachineLoad) Busy() bool { return m != nil && m.BusyPercent >= 90 }

// StopFact is how a stopped process is stopped, as far as the kernel tells.
type StopFact struct {
	Traced    bool
	Tracer    int  // the tracer's pid
	ByHangdoc bool // the tracer is hangdoc itself
	Signal    StopSignal
	Pending   []string // signals it will act on once continued
}

// StopSignal is the signal that stopped a process, where the evidence
// tells: the kernel does not record it.
type StopSignal uint8

const (
	StopSignalUnknown StopSignal = iota // SIGSTOP, SIGTSTP or another stop signal
	StopSignalJob                       // a background job of its terminal: SIGTSTP (Ctrl-Z), SIGTTIN or SIGTTOU
	StopSignalTTIN                      // a background job that read its terminal
	StopSignalTTOU                      // a background job that wrote to its terminal (with stty tostop)
)

// KindCount is how many actors wait in one kind of wait.
type KindCount struct {
	Kind model.WaitKind
	N    int
}

// CauseRule names a rung of the verdict ladder.
type CauseRule uint8

const (
	CauseNoSamples       CauseRule = iota // nothing was sampled
	CauseStopped                          // the process is stopped by a signal or a tracer (Stop)
	CauseStarved                          // it wants CPU its cgroup's quota does not give (Throttle): starved, not hung
	CauseCrossDeadlock                    // a cycle across processes
	CauseDeadlock                         // a cycle inside the process (one member: a self-deadlock)
	CauseHolderSpins                      // a lock's holder spins
	CauseHolderBlocked                    // a lock's holder is blocked
	CauseSpinning                         // something spins
	CauseWorking                          // something works
	CauseSendersStuck                     // goroutines blocked sending, none running to receive: blocked, no cycle proved
	CausePool                             // a pool of workers whose feeder is gone
	CauseStranded                         // waits that no live actor is left to end: a lock whose owner is gone, a condition nobody can signal
	CauseBlocked                          // blocked
	CauseIdle                             // parked waiting for work
	CauseThreadsWork                      // goroutines parked in every dump, but the threads work
	CauseNoLive                           // no live actor
	CauseRuntimeDeadlock                  // the Go runtime said "all goroutines are asleep - deadlock!"
	CauseLostWakeup                       // threads wait on each other with no proof of who would end the waits: each waits on a condition, a future, a join whose every candidate waits itself (Actors: all of them, Kinds)
	CauseGCThrash                         // a JVM spends most of the run in GC pauses (Diagnosis.GC): working, but hardly at all
	CauseTaskDeadlock                     // asyncio tasks wait for asyncio locks the others hold, in a cycle (TaskCycle)
	CauseTasksBlocked                     // the loop waits for events, but asyncio tasks wait on locks, events, conditions (TaskCycle: them): blocked, not idle
)

// IOChain is what the kernel says of the pipe a goroutine in IO wait is
// stuck on: the full one it writes (or the empty one it reads), among
// those the runtime's poller watches, and the processes at its other end.
type IOChain struct {
	Pipe  string
	Write bool
	Ends  []int
}

// Fact is one observation that supports the verdict.
type Fact struct {
	Kind FactKind
	Ref  Ref    // the actor or process it is about
	Lock string // the lock it is about
	// Group is the group it is about.
	Group int
	// Refs are the actors it is about, when several.
	Refs []Ref
	// Cause is the cause a layer of actors gives alone (FactLayer).
	Cause *Cause
	// IO is the holder's pipe (FactHolderIO).
	IO *IOChain
	// Run counts the samples and actors (FactRun, FactGoroutines).
	Run *RunCounts
	// Verdict is the verdict of the layer the fact belongs to (FactMemory:
	// flat memory with flat waits is a stall).
	Verdict Verdict
}

// RunCounts is how many samples saw how many actors, and how many came,
// went or moved during the run.
type RunCounts struct {
	Samples, Actors   int
	Came, Went, Moved int
	Aside, Groups     int
}

// FactKind names an observation.
type FactKind uint8

const (
	FactRun         FactKind = iota // the samples and the threads they saw (Run)
	FactOneSample                   // one sample cannot tell stopped from slow
	FactActor                       // an actor that matters, with its readings
	FactLock                        // a lock and its basis
	FactMemory                      // the memory trend
	FactGIL                         // a Python thread holds the GIL
	FactProcess                     // a process the waits lead to
	FactOrphans                     // processes left behind
	FactGoroutines                  // the goroutines in the last sample, how many set aside, in how many groups (Run)
	FactHolderIO                    // a goroutine holder's pipe
	FactOneDump                     // one goroutine dump
	FactForever                     // goroutines that can never wake (nil channels)
	FactPileUp                      // a group grew
	FactLongestWait                 // the goroutine that has waited longest
	FactLayer                       // what a layer of actors says alone
	FactThrottle                    // the cgroup's CPU quota throttled it (Diagnosis.Throttle)
	FactMachineBusy                 // the machine's CPUs were nearly all busy (Diagnosis.Machine)
	FactGoMaxProcs                  // a Go program's GOMAXPROCS exceeds its quota (Diagnosis.Throttle)
	FactAsyncio                     // a thread runs an asyncio loop: its waiting tasks are not seen
	FactGC                          // a JVM's counters: its GC and safepoint time over the run (Diagnosis.GC)
)

// BasisKind is how sure the holder is: the JSON's basis_kind.
type BasisKind uint8

const (
	BasisUnknown  BasisKind = iota // no holder named
	BasisExact                     // an owner recorded by the lock, or the same address
	BasisProbable                  // the same lock expression in source, or the same site
	BasisInferred                  // the only candidate the others leave
)

var basisKindNames = [...]string{"", "exact", "probable", "inferred"}

func (k BasisKind) String() string               { return basisKindNames[k] }
func (k BasisKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// RankedHolder is one candidate holder of a lock: who, on what basis, and
// where it holds it.
type RankedHolder struct {
	Ref   Ref
	Kind  BasisKind
	Frame string
	Line  int
	Expr  string // the expression it locked, "" without the source
	Read  bool   // it holds a read lock
	Site  bool   // by the same site, not by name
}

// Basis says how a lock's holder was established, or why none is named.
type Basis struct {
	Rule BasisRule
	Kind BasisKind
	// Owner is the holder's TID or goroutine.
	Owner int64
	PID   int
	// Word is the lock word as read; PI says a priority-inheritance one.
	Word int32
	PI   bool
	// MutexKind is glibc's __kind.
	MutexKind int32
	// Op is a futex operation the waiters use; Value a value one waits for.
	Op    uint64
	Value int32
	TID   int
	// Err is why the memory could not be read.
	Err string
	// Waiters is how many wait.
	Waiters int
	// JVMSaid: the JVM's own deadlock report lists the waiters (a Java lock).
	JVMSaid bool
	// A Python with-block: Site is FILE:LINE, Func its function, Lines
	// its extent; Inside the threads whose stacks are inside; Agrees: the
	// futex evidence agrees (Address the futex).
	Site     string
	Func     string
	From, To int
	Inside   []int
	Agrees   bool
	Address  string
	// A Go mutex: the holder stands in Frame at Line, past the Lock
	// (Other: waiting there for another mutex), where the waiters call
	// Lock in WaitFunc at WaitLine; Receiver when the receivers match;
	// Candidates when several stand there.
	WaitFunc   string
	Frame      string
	Line       int
	Other      string
	WaitLine   int
	Receiver   string
	Candidates []int64
	// A lock named from the stacks' frames: the waiters lock Expr (read
	// from the source when Sourced) in WaitFunc at WaitLine; the holder
	// holds HeldExpr in Frame at Line, itself (Self) when it is one of the
	// waiters; Ranked are the candidates, strongest first, at most
	// maxRanked of them, and Unranked how many more there are.
	Expr, HeldExpr string
	// ReadLock: the waiters take it with RLock.
	ReadLock      bool
	Sourced, Self bool
	// Reentry, for a self-deadlock: the calls from the frame that holds
	// the lock to the one that waits for it, outermost first.
	Reentry []model.Frame
	// Handler: one of the Reentry calls is a signal handler, as the
	// source's signal.signal(...) registers it.
	Handler *SignalHandler
	// Stale: the source was read but does not match the stacks.
	Stale    bool
	Ranked   []RankedHolder
	Unranked int
	// Futex is the futex word the waiters share, when the kernel shows it
	// (live): the same lock, whatever the source says.
	Futex string
	// A file lock (BasisFileLock): the lock /proc/locks shows held on the
	// file (its pid is -1 for an OFD lock); Opened are the other processes
	// that have the file open, among which an OFD lock's holder is.
	File   *model.FileLockEntry
	Opened []int
	// ByFDInfo: the fdinfo of the holder's descriptor HeldFD lists the
	// lock: its exact holder.
	ByFDInfo bool
	HeldFD   int
	// A process-shared mutex (BasisSharedOwner): the shared mapping its
	// word lies in, and the waiters' process.
	Shared    *model.SharedWord
	WaiterPID int
}

// SignalHandler is a function the source registers as a signal handler:
// signal.signal(Signal, Func) at File:Line.
type SignalHandler struct {
	Func, Signal, File string
	Line               int
}

// BasisRule names how a lock's holder was (or was not) established.
type BasisRule uint8

const (
	BasisNone BasisRule = iota
	// glibc mutexes.
	BasisGlibcOwner  // __owner read from memory, validated
	BasisMemoryErr   // the memory could not be read (Err)
	BasisNotRead     // the futex word was not read
	BasisFutexWait2  // waiters use futex_wait(2)
	BasisNotTwo      // a waiter (TID) waits for Value, not 2
	BasisOtherOp     // waiters use futex operation Op
	BasisBadKind     // __kind is not a mutex type
	BasisUnlocked    // the word reads 0
	BasisNoOwner     // __owner reads ≤ 0 (Owner)
	BasisOwnerShared // __owner is not a thread of pid: a process-shared mutex
	BasisOwnerGone   // __owner is not a live thread of pid
	// Python with-blocks.
	BasisWithBlock // the with-block at Site; Inside says who is in it
	// Locks named from the stacks' frames (Python, Go).
	BasisSameObject    // exact: the holder locked the very object the waiters wait on
	BasisSameExpr      // probable: the holder locked the same expression
	BasisSameSite      // probable: no source; the holder stands past the waiters' lock line
	BasisOnlyCandidate // inferred: the one actor holding a lock none other is named for
	BasisUnseen        // inferred: nothing seen holds it; the one actor whose stack is not seen may
	BasisArgAddress    // inferred: no source; the one frame that prints the lock's Address among its arguments
	BasisStackWord     // inferred: the one goroutine not waiting for it whose stack refers to the lock's Address (a memory read)
	BasisReaders       // a sync.RWMutex held for reading, by Lock.Readers
	BasisCandidates    // several hold it as far as the evidence goes: Ranked
	BasisNoCandidate   // nobody is seen holding it
	BasisCopiedLock    // the waiters lock a copy their frame made (a mutex field of a value receiver): nobody holds it
	// File locks.
	BasisFileLock // /proc/locks shows the lock held (File), by PID when it says; else by the only other process with the file open
	// Java monitors and j.u.c locks, from a JVM thread dump.
	BasisJavaLocked  // exact: a frame of the holder prints "- locked" the object the waiters wait for (Address)
	BasisJavaOwnable // exact: the holder's "Locked ownable synchronizers" list it
	BasisJavaOwner   // exact: the JSON dump names the blocker's owner
	BasisJVMDeadlock // exact: the JVM's own deadlock report names the holder
	BasisJavaNoOwner // no thread of the dump shows holding it
	BasisJavaNoL     // a j.u.c lock in a dump printed without -l: owners were not printed
	// BasisSharedOwner: a process-shared glibc mutex whose owner (Owner) is
	// a thread of another process (PID) that maps the same word (Shared)
	// as the waiters' process (WaiterPID).
	BasisSharedOwner
	// BasisJavaSameClass: inferred: the waiters' synchronizer is named by
	// its identity hash (a JSON thread dump's, "ReentrantLock$NonfairSync
	// @1e11fd0c"), the holders' by address (the text dump's); one thread
	// alone holds a synchronizer of that class that no other waiter
	// waits for (Address: the class).
	BasisJavaSameClass
	// BasisRustOnlyOther: inferred: the waiters wait in Rust's std
	// Mutex::lock, which records no owner; the holder (Owner) is the one
	// thread of the process that neither waits for it nor joins another.
	BasisRustOnlyOther
	// BasisRustNoOwner: a Rust std Mutex with no single candidate (Value:
	// how many threads could hold it).
	BasisRustNoOwner
	// BasisRustSameSite: inferred: of the Value threads that could hold a
	// Rust std Mutex, the holder (Owner) is the one whose stack stands in
	// Frame, the function every waiter calls lock() from.
	BasisRustSameSite
	// BasisGILFlag: exact: py-spy read the GIL's holder (Owner) from the
	// interpreter, the same thread in every sample.
	BasisGILFlag
)

// SharedFutex: the basis of a futex several threads share whose word did
// not validate as a mutex wraps the reason: Waiters threads wait on it.
func (b Basis) SharedFutex() bool { return b.Rule >= BasisMemoryErr && b.Rule <= BasisOwnerGone }
