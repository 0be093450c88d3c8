// Package classify turns samples into a diagnosis: a class for every thread,
// a verdict for the process, the locks and who holds them, the wait-for
// cycles, and the evidence for each claim. It is pure: no I/O, no clock.
package classify

import "github.com/hangdoc/hangdoc/sampler"

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
	Seen  int             `json:"seen_in_samples"`
	Why   string          `json:"why"`
	Holds []string        `json:"holds"`               // lock ids
	Waits string          `json:"waits_for,omitempty"` // lock id
	Stack []sampler.Frame `json:"stack"`
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
	// SpinSwitchesPerSecond is the most voluntary context switches a
	// spinning thread may make: a page fault or a stray signal is not a
	// loop that blocks.
	SpinSwitchesPerSecond float64
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
	return Options{SpinCPU: 0.80, SpinSwitchesPerSecond: 2, BusyCPU: 0.05, RSSGrowth: 0.02, RSSGrowthBytes: 1 << 20}
}
