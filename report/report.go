// Package report holds the one model of a diagnosis that every output is a
// view of — text for tickets and terminals, Markdown for tickets, JSON for
// runbooks (a versioned contract, see docs/json.md) — and every word of it:
// classify decides and returns facts, report says them.
package report

import (
	"fmt"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// SchemaVersion is the JSON contract's version. Adding fields keeps it;
// renaming or removing one, or changing a meaning, bumps it.
const SchemaVersion = 1

// Report is a diagnosis in words, with what it was made from. Its fields
// are the JSON contract (docs/json.md); the text and Markdown views read
// the same fields.
type Report struct {
	SchemaVersion  int       `json:"schema_version"`
	HangdocVersion string    `json:"hangdoc_version"`
	Time           time.Time `json:"time"`
	Host           Host      `json:"host"`
	Target         Target    `json:"target"`
	Sampling       Sampling  `json:"sampling"`

	Verdict    string   `json:"verdict"`
	Summary    string   `json:"summary"`
	Confidence string   `json:"confidence"`
	Hint       string   `json:"hint"`
	HintBasis  string   `json:"hint_basis"` // the fact that chose the hint: docs/hints.md
	Evidence   []string `json:"evidence"`
	Threads    []Thread `json:"threads"`
	Locks      []Lock   `json:"locks"`
	Cycles     [][]Ref  `json:"cycles"`
	Waits      []Wait   `json:"waits"`
	Memory     Memory   `json:"memory"`
	// Processes are the other processes the target's waits lead to.
	Processes []Process `json:"processes"`
	// Orphans are processes left behind in the target's process group or
	// session: their parent exited and they were reparented.
	Orphans []Orphan `json:"orphans"`
	// Goroutines and Groups are a Go target's goroutines, from a goroutine
	// stack source: each one's class, and the groups of goroutines with
	// the same stack, biggest first. Empty without a Go stack source.
	Goroutines GoroutineList `json:"goroutines"`
	Groups     []Group       `json:"groups"`
	// Tasks are a Python target's asyncio tasks, read from the
	// interpreter's memory on the last sample; empty otherwise.
	Tasks []Task `json:"tasks"`
	// Stop is how the target is stopped, when every thread of it is (by a
	// signal or a tracer); absent when it runs.
	Stop *Stop `json:"stop,omitempty"`
	// CPU is what limits the CPU the target gets: its cgroup's quota and
	// the throttling it did over the run, and how busy the machine was;
	// absent when unread (dumps).
	CPU *CPU `json:"cpu,omitempty"`

	// verdict is the typed verdict, for ExitFor and the palette.
	verdict classify.Verdict
	// goIndex finds an entry of Goroutines by id, a twin's too; nil
	// until asked for (goroutine).
	goIndex map[int64]int
	// tidIndex finds an entry of Threads by tid (the first); nil until
	// asked for, rebuilt when Threads changed length.
	tidIndex map[int]int
	tidCount int
}

// thread is the entry of Threads for tid, nil when there is none.
func (r *Report) thread(tid int) *Thread {
	if r.tidIndex == nil || r.tidCount != len(r.Threads) {
		r.tidIndex, r.tidCount = make(map[int]int, len(r.Threads)), len(r.Threads)
		for i := len(r.Threads) - 1; i >= 0; i-- {
			r.tidIndex[r.Threads[i].TID] = i
		}
	}
	if i, ok := r.tidIndex[tid]; ok {
		return &r.Threads[i]
	}
	return nil
}

// goroutine is the entry of Goroutines for goroutine id (its own or a
// twin's), or nil: Goroutines.Find through an index built once.
func (r *Report) goroutine(id int64) *Goroutine {
	if r.goIndex == nil {
		r.goIndex = make(map[int64]int, r.Goroutines.Count())
		// The first entry that names an id, as Find has it.
		for i := range r.Goroutines {
			g := &r.Goroutines[i]
			for j := -1; j < len(g.Twins); j++ {
				id := g.ID
				if j >= 0 {
					id = g.Twins[j]
				}
				if _, ok := r.goIndex[id]; !ok {
					r.goIndex[id] = i
				}
			}
		}
	}
	i, ok := r.goIndex[id]
	if !ok || i >= len(r.Goroutines) {
		return nil
	}
	return &r.Goroutines[i]
}

// Host is the machine a report was made on.
type Host struct {
	Name   string `json:"name"`
	Kernel string `json:"kernel"`
	Arch   string `json:"arch"`
	CPUs   int    `json:"cpus"`
}

// Target is the process diagnosed.
type Target struct {
	PID int `json:"pid"`
	// NSPID is the pid in the target's own PID namespace (a container's)
	// where that differs from PID; absent when the same.
	NSPID          int       `json:"nspid,omitempty"`
	PPID           int       `json:"ppid"`
	Cmdline        string    `json:"cmdline"`
	Exe            string    `json:"exe"`
	User           string    `json:"user"`
	Started        time.Time `json:"started"`
	Runtime        string    `json:"runtime"`
	RuntimeVersion string    `json:"runtime_version,omitempty"`
}

// Sampling says how the evidence was taken, and whether the run was cut short.
type Sampling struct {
	Samples       int    `json:"samples"`
	Requested     int    `json:"requested"`
	IntervalMS    int64  `json:"interval_ms"`
	DurationMS    int64  `json:"duration_ms"`
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason,omitempty"`
	TargetExited  bool   `json:"target_exited"`
	StackSource   string `json:"stack_source"`
	// FromDumps: the samples are stack dumps read from files (hangdoc
	// analyze), with no kernel evidence: the threads' cpu_percent,
	// runqueue_percent, state, wchan, syscall and switch counts, and the
	// memory, were not read, and their zeros mean unknown (docs/json.md).
	FromDumps bool `json:"from_dumps"`
	// Search says how other processes were scanned for the other ends of
	// pipes and sockets, and whether the scan finished within its budget.
	Search Search   `json:"search"`
	Notes  []string `json:"notes"`
}

// Search is how the holders of pipes and sockets were looked for.
type Search struct {
	Scanned  int   `json:"scanned_processes"`
	Complete bool  `json:"complete"`
	BudgetMS int64 `json:"budget_ms"`
}

// Ref names a thread, a goroutine, or a process.
type Ref struct {
	PID       int   `json:"pid"`
	TID       int   `json:"tid,omitempty"`
	Goroutine int64 `json:"goroutine,omitempty"`
}

// Frame is one line of a stack.
type Frame struct {
	Func string `json:"func"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Args string `json:"args,omitempty"`
	// Native marks a Python thread's native frame (C), unwound from its
	// memory, above its Python frames.
	Native bool `json:"native,omitempty"`
}

// Thread is one thread's class and the readings behind it.
type Thread struct {
	TID int `json:"tid"`
	// NSTID is the thread's id in the target's own PID namespace where
	// that differs from TID; absent when the same.
	NSTID           int      `json:"nstid,omitempty"`
	Name            string   `json:"name"`
	Class           string   `json:"class"`
	CPUPercent      float64  `json:"cpu_percent"`
	RunqueuePercent float64  `json:"runqueue_percent"`
	State           string   `json:"state"`
	Wchan           string   `json:"wchan"`
	Syscall         *Syscall `json:"syscall"`
	FD              string   `json:"fd,omitempty"`
	Voluntary       uint64   `json:"voluntary_switches"`
	Involuntary     uint64   `json:"involuntary_switches"`
	Moved           bool     `json:"moved"`
	Seen            int      `json:"seen_in_samples"`
	Why             string   `json:"why"`
	Holds           []string `json:"holds"`
	Waits           string   `json:"waits_for,omitempty"`
	Stack           []Frame  `json:"stack"`
	// NativeStack is a Python thread's native frames above its Python
	// stack (the C of an extension or a library it is in, unwound from
	// its memory), innermost first, each marked native.
	NativeStack []Frame `json:"native_stack,omitempty"`
	Python      *Python `json:"python,omitempty"`
	Java        *Java   `json:"java,omitempty"`
	OnCPU       *OnCPU  `json:"on_cpu,omitempty"`

	where string // its innermost frame: "emit (app.py:42)"
}

// OnCPU is where the kernel's CPU-clock sampling caught a thread running
// over the run (99 Hz of the CPU it used).
type OnCPU struct {
	Samples int `json:"samples"`
	Kernel  int `json:"kernel_samples"`
	// Loop is the innermost function on (nearly) every sampled stack,
	// with the lines it was caught at and how many samples had it; nil
	// when no function was.
	Loop *CPULoop `json:"loop,omitempty"`
	// Top are the functions most often innermost, at most three.
	Top []CPUFunc `json:"top"`
}

// CPULoop is the function a thread stays in. FirstLine and LastLine are
// 0 for native code without line tables; File is then the mapped file.
type CPULoop struct {
	Func      string `json:"func"`
	File      string `json:"file,omitempty"`
	FirstLine int    `json:"first_line,omitempty"`
	LastLine  int    `json:"last_line,omitempty"`
	Samples   int    `json:"samples"`
}

// CPUFunc is a function and the samples that caught it innermost.
type CPUFunc struct {
	Func    string `json:"func"`
	File    string `json:"file,omitempty"`
	Samples int    `json:"samples"`
}

// Python is what the stack source says of a Python thread.
type Python struct {
	ThreadName string `json:"thread_name"`
	OwnsGIL    bool   `json:"owns_gil"`
	Active     bool   `json:"active"`
	// ActiveRead: py-spy read the OS thread, so Active is evidence (a
	// dump's); Ident is threading.get_ident() as 0x and 16 hex digits,
	// when the dump gave it.
	ActiveRead bool   `json:"active_read,omitempty"`
	Ident      string `json:"ident,omitempty"`
}

// Syscall is the call a thread is blocked in, as read and as printed.
type Syscall struct {
	Nr   int      `json:"nr"`
	Name string   `json:"name"`
	Args []string `json:"args"`
	Text string   `json:"text"`
	// Restarted: the kernel showed restart_syscall, the call resumed after
	// a stop (hangdoc's own, a debugger's, SIGSTOP); Name is the original
	// call's.
	Restarted bool `json:"restarted,omitempty"`
}

// Goroutine is one goroutine's class and the readings behind it, as of the
// last sample that saw it.
type Goroutine struct {
	ID          int64    `json:"id"`
	State       string   `json:"state"`
	WaitMinutes int      `json:"wait_minutes"`
	Class       string   `json:"class"`
	BlockedOn   string   `json:"blocked_on,omitempty"`
	Thread      int      `json:"thread,omitempty"`
	System      bool     `json:"system,omitempty"`
	Moved       bool     `json:"moved"`
	Seen        int      `json:"seen_in_samples"`
	Why         string   `json:"why"`
	Waits       string   `json:"waits_for,omitempty"`
	Holds       []string `json:"holds"`
	Group       int      `json:"group"`
	Stack       []Frame  `json:"stack"`
	CreatedBy   *Frame   `json:"created_by,omitempty"`
	// Labels are its pprof labels, as the dump printed them (Go 1.26
	// with GODEBUG=tracebacklabels=1, Go 1.27 by default).
	Labels map[string]string `json:"labels,omitempty"`
	// Twins are the goroutines read exactly like this one (classify's
	// Actor.Twins): in Go, part of this entry; in JSON, entries of their
	// own.
	Twins []int64 `json:"-"`

	where string // see Where
}

// Group is the goroutines that share a stack and a state.
type Group struct {
	Count  int     `json:"count"`
	State  string  `json:"state"`
	Class  string  `json:"class"`
	Title  string  `json:"title"`
	IDs    []int64 `json:"ids"`
	Counts []int   `json:"counts"`
	Grew   bool    `json:"grew"`
	Stack  []Frame `json:"stack"`
}

// Lock is something threads or goroutines wait to take.
type Lock struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Address string `json:"address"`
	Holder  *Ref   `json:"holder"`
	Waiters []Ref  `json:"waiters"`
	Basis   string `json:"basis"`
	// BasisKind is how sure the holder is: exact, probable or inferred;
	// omitted when no holder is named.
	BasisKind string `json:"basis_kind,omitempty"`
	// Readers hold a sync.RWMutex for reading.
	Readers []Ref `json:"readers,omitempty"`
}

// Wait is what one blocked or parked thread waits for.
type Wait struct {
	From     Ref    `json:"from"`
	To       *Ref   `json:"to"`
	Resource string `json:"resource,omitempty"`
	Kind     string `json:"kind"`
	Detail   string `json:"detail"`
	Chain    string `json:"chain,omitempty"`
	// Polled are, for a poll or select resolved to its descriptors
	// (kind poll-fds), each descriptor and the processes at its other end.
	Polled []Polled `json:"polled,omitempty"`
	// Basis is what its edge in the wait-for graph rests on: proven,
	// inferred, candidate or none. Cycles run over proven and inferred
	// edges only.
	Basis string `json:"basis"`
	// Candidates are, for a wait no one is named for (a condition, a
	// semaphore, a join, a lock with no recorded holder), a few of the
	// other live threads that could end it, and CandidateCount how many
	// there are; NobodyLeft: there are none. Wakers is the same list,
	// under the name earlier versions gave it.
	Candidates     []Ref `json:"candidates,omitempty"`
	CandidateCount int   `json:"candidate_count,omitempty"`
	Wakers         []Ref `json:"wakers,omitempty"`
	NobodyLeft     bool  `json:"nobody_left,omitempty"`
	// Counterparts are, for a goroutine's channel wait read from a live
	// program's memory, the goroutines that refer to its channels and how
	// that was established (see chanproof.go).
	Counterparts *Counterparts `json:"counterparts,omitempty"`
	// Path is the path or socket address the blocked call was given, read
	// from the thread's memory ("/run/app/ctl", "unix:/run/app.sock").
	Path string `json:"path,omitempty"`
	// FIFO is, for an open that waits for the other end of a FIFO (kind
	// fifo-open), the FIFO and who has it open.
	FIFO *FIFO `json:"fifo,omitempty"`
	// Unix is, for a wait on a Unix socket, the socket and its other end.
	Unix *UnixEnd `json:"unix,omitempty"`
	// Retry is, for a lock-retry wait, the record lock retried.
	Retry *Retry `json:"retry,omitempty"`
	// Anon is, for a wait on an eventfd, a signalfd, a timerfd, an inotify
	// instance or a pidfd, what its fdinfo says.
	Anon *Anon `json:"anon,omitempty"`
	// Shared is, for a futex wait on a word in shared memory with no
	// owner named elsewhere, the mapping and who else maps it.
	Shared *SharedWait `json:"shared,omitempty"`
	// SysV is, for a sysv-sem or sysv-msg wait, the set or queue.
	SysV *model.SysVWait `json:"sysv,omitempty"`
}

// Retry is a record lock a process retries while another holds it.
type Retry struct {
	Path string `json:"path"`
	// Holder is the process /proc/locks names; Lock its lock there:
	// "POSIX WRITE 1073741825 1073741825".
	Holder int    `json:"holder"`
	Lock   string `json:"lock"`
	// SleepMS is the back-off between tries.
	SleepMS float64 `json:"sleep_ms"`
	SQLite  bool    `json:"sqlite,omitempty"`
	// Basis is "inferred": the attempts are never seen, only the sleeps
	// and the other process's lock, in Samples samples.
	Basis   string `json:"basis"`
	Samples int    `json:"samples"`
}

// UnixEnd is a Unix socket a thread waits on and what is at its other end.
type UnixEnd struct {
	Type string `json:"type"` // stream, dgram, seqpacket
	// Peer is the other end ("socket:[N]"): the connected peer, or the
	// listener a connect waits on (Listener); PeerPath the name it is
	// bound to.
	Peer     string `json:"peer,omitempty"`
	PeerPath string `json:"peer_path,omitempty"`
	Listener bool   `json:"listener,omitempty"`
	// Queued and Backlog are the listener's: connections waiting to be
	// accepted, and listen()'s limit (a connect blocks once Queued is
	// more than Backlog).
	Queued  *int `json:"queued,omitempty"`
	Backlog *int `json:"backlog,omitempty"`
}

// FIFO is a FIFO an open waits on.
type FIFO struct {
	Path string `json:"path"`
	// WaitsFor is the end it waits for: "reader" (it opens to write) or
	// "writer".
	WaitsFor string `json:"waits_for"`
	// OpenBy are the processes found with the FIFO open; Complete is false
	// when the search ran out of time first.
	OpenBy   []int `json:"open_by"`
	Complete bool  `json:"complete"`
}

// Polled is one descriptor a poll or select waits on.
type Polled struct {
	FD       int    `json:"fd"`
	Events   string `json:"events"` // "read", "write" or "read-write"
	Resource string `json:"resource"`
	Ends     []int  `json:"ends"`
}

// Memory is the resident set size at each sample and its trend.
type Memory struct {
	RSSBytes []int64 `json:"rss_bytes"`
	Trend    string  `json:"trend"`
}

// Process is a process one of the target's waits leads to.
type Process struct {
	PID int `json:"pid"`
	// NSPID is its pid in its own PID namespace (a container's), where
	// that differs from PID; absent when the same.
	NSPID   int    `json:"nspid,omitempty"`
	Cmdline string `json:"cmdline"`
	Depth   int    `json:"depth"`
	Verdict string `json:"verdict"`
	State   string `json:"state"`
}

// CPU is the CPU the target could get over the run.
type CPU struct {
	// Throttled is its cgroup's quota; absent when no quota limits it.
	Throttled *Throttled `json:"throttled,omitempty"`
	// Machine is the host's CPU use; absent when unread.
	Machine *MachineCPU `json:"machine,omitempty"`
	// JVMGC is a live JVM's garbage collector over the run, from its own
	// counters (hsperfdata); absent for other targets and dumps.
	JVMGC *JVMGC `json:"jvm_gc,omitempty"`
}

// JVMGC is what a JVM's counters say of its collector over the run.
type JVMGC struct {
	// Percent is the share of the run's wall time (Seconds, first to
	// last sample) in collection pauses; Thrashing says it is enough
	// (≥ 50%) that hangdoc names it as the cause.
	Percent          float64 `json:"gc_percent"`
	Seconds          float64 `json:"seconds"`
	Collections      int64   `json:"collections"`
	SafepointPercent float64 `json:"safepoint_percent"`
	HeapUsedBytes    int64   `json:"heap_used_bytes"`
	HeapMaxBytes     int64   `json:"heap_max_bytes"`
	Thrashing        bool    `json:"thrashing"`
}

// Throttled is what a cgroup's CPU quota did to the target over the run.
type Throttled struct {
	Cgroup  string `json:"cgroup"`
	Version int    `json:"version"`
	// QuotaCores is the quota over the period: 0.05 is 5% of one core.
	QuotaCores float64 `json:"quota_cores"`
	Periods    uint64  `json:"periods"`
	Throttled  uint64  `json:"throttled_periods"`
	// Percent is Throttled over Periods, in percent; Starved says it is
	// enough that hangdoc names the quota as the cause.
	Percent          float64 `json:"throttled_percent"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
	Starved          bool    `json:"starved"`
	// Alone says the target was the only process the quota governs: its
	// throttling is its own demand.
	Alone bool `json:"alone"`
	// PressurePercent is the cgroup's CPU pressure (PSI "some") over the
	// run; absent when the kernel gives none (cgroup v1).
	PressurePercent *float64 `json:"pressure_percent,omitempty"`
	// GoMaxProcs is a Go target's GOMAXPROCS as hangdoc reckons it, and
	// where from ("GOMAXPROCS": its environment; "default": its Go
	// version's default); absent when not Go.
	GoMaxProcs     int    `json:"gomaxprocs,omitempty"`
	GoMaxProcsFrom string `json:"gomaxprocs_from,omitempty"`
}

// MachineCPU is how busy the host's CPUs were over the run.
type MachineCPU struct {
	CPUs            int      `json:"cpus"`
	BusyPercent     float64  `json:"busy_percent"`
	Load1           float64  `json:"load1"`
	PressurePercent *float64 `json:"pressure_percent,omitempty"`
	Busy            bool     `json:"busy"`
}

// Stop is how a stopped target is stopped.
type Stop struct {
	// Signal is what stopped it, as far as the kernel tells: "SIGTTIN",
	// "SIGTTOU", "job-control" (a background job: SIGTSTP, SIGTTIN or
	// SIGTTOU), "tracer", or "signal" (SIGSTOP, SIGTSTP: the kernel does
	// not record which).
	Signal string `json:"signal"`
	// Tracer is the process tracing it, or null.
	Tracer *Tracer `json:"tracer"`
	// Pending are the signals queued for it, acted on once it continues.
	Pending []string `json:"pending"`
}

// Tracer is a process that traces the target.
type Tracer struct {
	PID     int    `json:"pid"`
	Cmdline string `json:"cmdline"`
	// Hangdoc: the tracer is the hangdoc that made this report.
	Hangdoc bool `json:"hangdoc"`
}

// Orphan is a process left behind in the target's process group.
type Orphan struct {
	PID        int     `json:"pid"`
	PPID       int     `json:"ppid"`
	Command    string  `json:"command"`
	State      string  `json:"state"`
	AgeSeconds float64 `json:"age_seconds"`
	CPUPercent float64 `json:"cpu_percent"`
}

// TypedVerdict is the report's verdict, typed: exit codes branch on it.
func (r *Report) TypedVerdict() classify.Verdict { return r.verdict }

// New words a diagnosis of a recording.
func New(rec model.Recording, d classify.Diagnosis) *Report {
	w := newWords(&rec, &d)
	r := &Report{
		SchemaVersion:  SchemaVersion,
		HangdocVersion: rec.HangdocVersion,
		Host:           Host(rec.Host),
		Target: Target{PID: rec.Target.PID, NSPID: rec.Target.NSPID, PPID: rec.Target.PPID, Cmdline: rec.Target.Cmdline, Exe: rec.Target.Exe,
			User: rec.Target.User, Started: rec.Target.Started, Runtime: rec.Target.Runtime.String(), RuntimeVersion: rec.Target.RuntimeVersion},
		Sampling: Sampling{
			Samples:       len(rec.Samples),
			Requested:     rec.Requested,
			IntervalMS:    rec.Interval.Milliseconds(),
			Partial:       rec.PartialReason != "",
			PartialReason: rec.PartialReason,
			TargetExited:  rec.TargetExited,
			StackSource:   rec.StackSource.String(),
			FromDumps:     rec.StackSource.IsDump(),
			Search:        Search(rec.Search),
			Notes:         NoteTexts(rec.Notes),
		},
		verdict:    d.Verdict,
		Verdict:    d.Verdict.String(),
		Confidence: d.Confidence.String(),
		Memory:     Memory{RSSBytes: d.Memory.RSSBytes, Trend: d.Memory.Trend.String()},
	}
	if n := len(rec.Samples); n > 0 {
		r.Time = rec.Samples[0].Time.UTC()
		r.Sampling.DurationMS = rec.Samples[n-1].Time.Sub(rec.Samples[0].Time).Milliseconds()
	}
	if n := foreignNote(rec.Samples); n != "" {
		r.Sampling.Notes = append(r.Sampling.Notes, n)
	}
	r.Summary, r.Hint = w.summary(d.Cause)+w.poolCalls(d.Cause), w.hint(d.Cause)
	r.HintBasis = hintKey(r.Hint)
	r.Evidence = w.evidence(d.Evidence)
	r.Threads = w.threads()
	r.Locks = w.locks()
	r.Cycles = w.cycles()
	r.Waits = w.waits()
	r.Processes = w.processes()
	r.Orphans = orphans(d.Orphans)
	r.Goroutines = w.goroutines()
	r.Groups = w.groups()
	r.Tasks = tasks(d.Tasks, d.Cause)
	r.Stop = w.stop(d.Cause.Stop)
	r.CPU = cpuBlock(d.Throttle, d.Machine)
	if g := d.GC; g != nil {
		if r.CPU == nil {
			r.CPU = &CPU{}
		}
		r.CPU.JVMGC = &JVMGC{Percent: g.Percent, Seconds: g.Seconds, Collections: g.GCs, SafepointPercent: g.SafepointPercent,
			HeapUsedBytes: g.HeapUsed, HeapMaxBytes: g.HeapMax, Thrashing: g.Significant()}
	}
	if !rec.Search.Complete && len(rec.Resources) > 0 {
		r.Evidence = append(r.Evidence, fmt.Sprintf("the search for the other ends of pipes and sockets stopped at its %dms budget after %d processes: some ends may be missing",
			rec.Search.BudgetMS, rec.Search.Scanned))
	}
	if r.Sampling.Partial {
		r.Evidence = append(r.Evidence, "partial: "+rec.PartialReason)
	}
	return r
}
