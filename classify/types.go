// Package classify turns a recording into a diagnosis: a class for every
// actor (an OS thread, a goroutine), one wait-for graph over actors,
// processes and resources, and one verdict ladder over that graph. It is
// pure: no I/O, no clock, no globals. It returns facts — a verdict, typed
// evidence that refers to actors, locks and resources — and builds no
// sentences: report words them.
//
// Runtimes are adapters: the thread adapter reads the kernel's view of
// every thread, the Python adapter adds the locks a stack's source shows,
// the goroutine adapter adds goroutines, their locks and channel waits.
// None of them has a verdict of its own.
package classify

import "github.com/hangdoc/hangdoc/model"

// Verdict is the process-level answer.
type Verdict uint8

const (
	Working  Verdict = iota // it moves: slow, not stopped
	Spinning                // a core pinned, nothing moving
	Blocked                 // no CPU, waiting on something
	Idle                    // parked waiting for work that never comes
	Deadlock                // a wait-for cycle
)

var verdictNames = [...]string{"working", "spinning", "blocked", "idle", "deadlock"}

func (v Verdict) String() string               { return verdictNames[v] }
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// Class is an actor's answer: the verdict names, plus Exited.
type Class uint8

const (
	ClassWorking Class = iota
	ClassSpinning
	ClassBlocked
	ClassIdle
	ClassExited
)

var classNames = [...]string{"working", "spinning", "blocked", "idle", "exited"}

func (c Class) String() string               { return classNames[c] }
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Confidence says how far the evidence goes.
type Confidence uint8

const (
	High Confidence = iota + 1 // the zero value is no confidence at all
	Medium
	Low
)

var confidenceNames = [...]string{"none", "high", "medium", "low"}

func (c Confidence) String() string               { return confidenceNames[c] }
func (c Confidence) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Ref names an actor of a process — a thread (TID) or a goroutine — or,
// with neither, the process itself.
type Ref struct {
	PID       int
	TID       int
	Goroutine int64
}

// IsProcess reports a reference to a whole process.
func (r Ref) IsProcess() bool { return r.TID == 0 && r.Goroutine == 0 }

// ActorKind says what an actor is.
type ActorKind uint8

const (
	ActorThread ActorKind = iota
	ActorGoroutine
)

// Actor is one thing that runs and waits: an OS thread (with its Python
// stack, when a stack source gave one) or a goroutine. Which fields are
// filled depends on the kind and on the evidence: a thread read from a
// dump has a stack and no kernel state.
type Actor struct {
	Kind ActorKind
	Ref  Ref
	// Name is a thread's name: its Python name when known, else its comm.
	Name  string
	Class Class
	Why   Why
	// Wait is what it waits on at its last wait; WaitNone when it runs.
	// Resource is what the wait is on: a descriptor's target
	// ("pipe:[42]"), a futex ("futex:0x5000"), "" for none.
	Wait     model.WaitKind
	Resource string
	Moved    bool
	// Seen is how many samples saw it; fewer than all means it came or went.
	Seen int
	CPU  CPU
	// Holds are the ids of the locks it holds (or, for a goroutine,
	// probably holds); WaitsFor the lock it waits for.
	Holds    []string
	WaitsFor string
	Stack    []model.Frame
	// Native are a Python thread's native frames above the interpreter
	// (an extension's C), innermost first.
	Native []model.Frame
	// OnCPU is where the kernel's sampling caught it running: a thread's
	// own, a running goroutine's its thread's; nil when none did.
	OnCPU *CPUProfile

	// A thread's kernel evidence, at its last wait.
	State       model.ThreadState
	Wchan       string
	Syscall     model.Syscall
	FD          string
	Voluntary   uint64
	Involuntary uint64
	Python      *model.PythonThread
	Java        *model.JavaThread // what a JVM thread dump says of it
	NSTID       int               // its id in the target's own PID namespace, where that differs
	Vars        []model.FrameVars // the objects its frames name (py-spy --locals)

	// A goroutine's evidence, at its last wait.
	GoState string       // the wait reason or status as the source printed it, for the report
	GoWait  model.GoWait // GoState read: what rules match
	// HeldLocks are the waited-for locks its stack refers to, from a
	// memory read (Goroutine.HeldLocks).
	HeldLocks   []string
	WaitMinutes int   // the runtime's stamp, a lower bound
	Thread      int   // the OS thread it ran on, when the source said
	Aside       Aside // not the program's story, and why
	Group       int   // its index in Diagnosis.Groups
	CreatedBy   *model.Frame
	CreatorID   int64 // the goroutine that started it, when the source says

	// Coroutine is, for a thread running an asyncio event loop that a
	// synchronous call blocks, the coroutine that makes the call.
	Coroutine *model.Frame
	// Twins are the goroutines every sample read exactly like this one
	// (state, wait, stack with its argument words, labels, creator), lowest
	// id first: no rule can tell them apart, so they are one actor, which
	// they share their class, waits and edges with. A pile of 30,000
	// goroutines at one Lock is one actor with 29,999 twins.
	Twins []int64
}

// Count is how many goroutines the actor stands for: itself and its twins.
func (a *Actor) Count() int { return 1 + len(a.Twins) }

// Refs are the actor's reference and its twins'.
func (a *Actor) Refs() []Ref {
	if len(a.Twins) == 0 {
		return []Ref{a.Ref}
	}
	out := make([]Ref, 0, a.Count())
	out = append(out, a.Ref)
	for _, id := range a.Twins {
		out = append(out, Ref{PID: a.Ref.PID, Goroutine: id})
	}
	return out
}

// CPU is an actor's CPU over the run, in percent of one core. Known is
// false when the evidence has none (a dump): unknown is not zero.
type CPU struct {
	Known           bool
	Percent         float64
	RunqueuePercent float64 // runnable but waiting for a CPU
}

// Aside says why a goroutine is not part of the program's story.
type Aside uint8

const (
	AsideNone     Aside = iota
	AsideRuntime        // the runtime's own (GC workers, finalizers, timers)
	AsidePlumbing       // an HTTP server's own machinery: the accept loop, a connection's background read
	AsideObserver       // hangdoc's own look: the pprof handler writing this profile
	AsideDumper         // the program's goroutine writing this very dump (runtime.Stack)
)

// Machinery reports a goroutine that is not the program's at all: the
// runtime's, an HTTP server's, the profiler's.
func (a Aside) Machinery() bool { return a == AsideRuntime || a == AsidePlumbing || a == AsideObserver }

// Diagnosis is everything classify concludes from a recording.
type Diagnosis struct {
	Verdict    Verdict
	Confidence Confidence
	// Cause is why the verdict: the rung of the ladder that decided it and
	// what it is about. Layers are the causes each layer of actors would
	// give alone (the OS threads of a Go program under its goroutines).
	Cause    Cause
	Evidence []Fact
	// Threads and Goroutines are the target's actors: threads in TID
	// order, goroutines in id order.
	Threads    []Actor
	Goroutines []Actor
	// Tasks are a Python target's asyncio tasks and what each waits for
	// (its last sample's).
	Tasks []Task
	// Loop is the asyncio event loop's thread, as the kernel showed it,
	// when the tasks were read; its TID is 0 for none found.
	Loop   Loop
	Groups []Group
	Locks  []Lock
	Cycles []Cycle
	Waits  []Wait
	Memory Memory
	// Processes are the other processes the target's waits lead to.
	Processes []Process
	// Orphans are processes left behind in the target's process group or
	// session: their parent exited and they were reparented.
	Orphans []Orphan
	// Throttle is what the target's cgroup's CPU quota did over the run,
	// and Machine how busy the machine was; nil when unread.
	Throttle *Throttle
	Machine  *MachineLoad
	// GC is a live JVM's collector over the run, from its counters; nil
	// for none.
	GC *GCPressure
}

// Lock is something actors wait to take: a futex word, a Python
// with-block, a Go mutex.
type Lock struct {
	ID      string
	Kind    LockKind
	Address string // the futex word, the Go mutex, or "FILE:LINE" of a with-block
	Holder  *Ref
	Waiters []Ref
	// Readers hold a sync.RWMutex for reading; ReadWaiters are the
	// waiters that want to read (the others want to write).
	Readers     []Ref
	ReadWaiters []Ref
	Basis       Basis
}

// LockKind says what sort of lock it is.
type LockKind uint8

const (
	LockFutex     LockKind = iota // a futex word, not validated as a mutex
	LockMutex                     // a validated glibc mutex
	LockPIMutex                   // a glibc priority-inheritance mutex
	LockPython                    // a Python lock, by its with-block
	LockGoMutex                   // a sync.Mutex
	LockGoRWMutex                 // a sync.RWMutex
	LockFlock                     // a file lock taken with flock()
	LockPOSIX                     // a file lock taken with fcntl(F_SETLK) or lockf()
	LockOFD                       // an open file description lock, fcntl(F_OFD_SETLK)
	LockMonitor                   // a Java object's monitor (synchronized)
	LockJavaSync                  // a java.util.concurrent lock's synchronizer (ReentrantLock)
	LockGIL                       // a Python interpreter's global interpreter lock
)

var lockKindNames = [...]string{"futex", "mutex", "pi-mutex", "python-lock", "sync.Mutex", "sync.RWMutex", "flock", "posix-lock", "ofd-lock", "java-monitor", "java-lock", "gil"}

func (k LockKind) String() string               { return lockKindNames[k] }
func (k LockKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Cycle is a wait-for cycle: its members in wait order (A waits for B …),
// starting from the smallest.
type Cycle []Ref

// Wait is what one blocked or parked thread waits for: another actor or
// process (To), or a resource.
type Wait struct {
	From     Ref
	To       *Ref
	Kind     model.WaitKind
	Resource string
	Syscall  model.Syscall
	// Lock is the lock waited for (WaitLock, and Python with-blocks).
	Lock string
	// WithSite is the with-block a Python thread waits to enter.
	WithSite string
	// Joined is the thread a pthread_join waits for; Child the child a
	// wait4 or waitid waits for (0: any).
	Joined, Child int
	Watches       []string
	KernelStack   []string
	// Path is the path or socket address the call was given, read from
	// the thread's memory; FIFO the FIFO an open waits on (WaitFIFO).
	Path string
	FIFO *model.FIFOWait
	// Anon is what fdinfo says of the eventfd, signalfd, timerfd, inotify
	// instance or pidfd a read or poll waits on.
	Anon *model.AnonFD
	// SysV is the SysV semaphore set or message queue a semop or msgrcv
	// waits on.
	SysV *model.SysVWait
	// Shared is the shared mapping a futex word with no named owner lies
	// in (a POSIX named semaphore, a process-shared condition or mutex);
	// MappedBy the other processes found mapping it, who could wake it.
	Shared         *model.SharedWord
	MappedBy       []int
	MappedComplete bool
	// Retry is the record lock a sleeping thread retries (WaitLockRetry).
	Retry *RetryLock
	// Ends are the processes at the other end of a pipe or socket, or the
	// children waited for, as the graph found them; Looked says it looked
	// for them.
	Ends   []int
	Looked bool
	// Chain follows a blocked thread's wait to where it ends, across lock
	// holders and processes.
	Chain []Step
	// Polled are the descriptors a poll or select waits on (WaitPollFDs),
	// each with the processes at its other end.
	Polled []Polled
	// Basis is what the wait's edge in the wait-for graph rests on. Only
	// proven and inferred edges are edges: cycles and deadlocks run over
	// them, never over candidates.
	Basis EdgeBasis
	// Candidates are, for a wait that names no one at its other end (a
	// condition, a semaphore, an event, a future, a lock with no recorded
	// holder, a join of a thread it does not name), a few of the other
	// live actors of its process that could end it, lowest first;
	// CandidateCount is how many there are in all. Nobody: there are none
	// — no live actor is left that could end it.
	Candidates     []Ref
	CandidateCount int
	Nobody         bool
	// Counterparts are, for a goroutine's channel wait, the goroutines
	// the memory scan found referring to its channels (chanproof.go);
	// nil without a scan.
	Counterparts *Counterparts
}

// EdgeBasis says what a wait's edge rests on: the JSON's waits[].basis.
type EdgeBasis uint8

const (
	EdgeNone      EdgeBasis = iota // nothing is found that it waits for
	EdgeProven                     // read, not reasoned: a recorded owner, the same address, a join's named thread, a pipe's or socket's other end, a child, a tracer
	EdgeInferred                   // reasoned: a holder by the lock's expression or site, or the only candidate left for a lock or a join
	EdgeCandidate                  // nobody is named: its Candidates could end it, none is proven to
)

var edgeBasisNames = [...]string{"none", "proven", "inferred", "candidate"}

func (b EdgeBasis) String() string               { return edgeBasisNames[b] }
func (b EdgeBasis) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// maxCandidates is how many candidates a wait lists; the rest are counted.
const maxCandidates = 5

// Polled is one descriptor a poll or select waits on, and the processes at
// its other end: the writers of a pipe it reads, the readers of one it
// writes, the holders of a TCP socket's peer.
type Polled struct {
	FD          int
	Read, Write bool
	Resource    string
	Ends        []int
}

// Step is one wait along a chain: From waits (Kind, on Resource) for To.
// The last step says how the chain ends.
type Step struct {
	From     Ref
	Kind     model.WaitKind
	Resource string
	To       *Ref
	End      ChainEnd
}

// ChainEnd says how a chain of waits ends.
type ChainEnd uint8

const (
	EndNone         ChainEnd = iota // it goes on with the next step
	EndHere                         // nothing more to say
	EndNoOtherEnd                   // no process was found at the other end
	EndThreadState                  // at a thread, which is doing what it does
	EndSelfCycle                    // the thread waits for itself
	EndOwnProcess                   // the other end is the waiter's own process
	EndCycle                        // back at a process the chain passed: a cycle
	EndProcessState                 // at a process, which is doing what it does
	EndTooDeep                      // followed as far as it goes
	EndActorCycle                   // at an actor the chain passed: a cycle it joins
)

// Memory is the resident set size at each sample and its trend.
type Memory struct {
	RSSBytes []int64
	Trend    model.Trend
}

// Process is a process one of the target's waits leads to, classified
// from its own samples.
type Process struct {
	PID     int
	Cmdline string
	Depth   int
	Err     string
	Verdict Verdict
	// Key is the thread that says what it is doing: its first blocked
	// thread, else its main thread, else its first; Threads how many it
	// has. Actors are all its threads.
	Key    *Actor
	Actors []Actor
	Waits  []Wait
}

// Orphan is a process left behind: in the target's process group (or
// session) but with a parent outside it, typically a grandchild whose shell
// was killed by a timeout. It may hold pipe ends and burn CPU.
type Orphan struct {
	PID        int
	PPID       int
	Command    string
	State      model.ThreadState
	AgeSeconds float64
	CPUPercent float64
}

// Group is the goroutines that share a stack (argument words ignored) and
// a state in the last sample.
type Group struct {
	Count int
	State string
	Class Class
	// IDs are its goroutines, lowest first, at most maxGroupIDs.
	IDs []int64
	// Counts is its size in each sample, first to last: a group that grows
	// is a pile-up.
	Counts []int
	Grew   bool
	Stack  []model.Frame
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
	// ShapeOnly and HolderLocks degrade classification for a heap past
	// its budget (internal/membudget): goroutines are grouped by state
	// and stack shape alone (functions, files, lines), each group read as
	// its first goroutine, and holders are searched for the HolderLocks
	// locks with the most waiters only (0: all).
	ShapeOnly   bool
	HolderLocks int

	// share is what the machine could give one runnable task over the
	// run, as a share of a core (MachineLoad.Share): Classify sets it.
	// Below 1 the machine was crowded, and a thread that loops is judged
	// against it, not against a whole core. 0 is unknown: a whole core.
	share float64
}

// crowded is the share a crowded machine could give one runnable task,
// or 1.
func (o Options) crowded() float64 {
	if o.share <= 0 || o.share > 1 {
		return 1
	}
	return o.share
}

// DefaultOptions returns the thresholds hangdoc uses.
func DefaultOptions() Options {
	return Options{SpinCPU: 0.80, GoSpinCPU: 0.50, SpinSwitchesPerSecond: 2, PauseSwitches: 4, BusyCPU: 0.05, RSSGrowth: 0.02, RSSGrowthBytes: 1 << 20}
}
