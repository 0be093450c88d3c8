package classify

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/model"
)

const pid = 100

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// th is a thread reading: name, state, CPU so far, and its call.
type th struct {
	tid   int
	name  string
	state string
	cpu   time.Duration
	vol   uint64
	call  model.Syscall
	wchan string
	fd    string
	stack []model.Frame
	delay time.Duration
}

func futexWait(addr, val uint64) model.Syscall {
	return model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{addr, 128, val}}
}

func call(name string, args ...uint64) model.Syscall {
	sc := model.Syscall{Nr: 1, Name: name}
	copy(sc.Args[:], args)
	return sc
}

var running = model.Syscall{Running: true, Nr: -1}

// run builds samples one second apart; each element of steps is one sample.
func run(futexes map[string]model.Futex, steps ...[]th) []model.Sample {
	var out []model.Sample
	for i, step := range steps {
		s := model.Sample{Time: t0.Add(time.Duration(i) * time.Second), PID: pid, RSSBytes: 4 << 20, Futexes: futexes}
		for _, t := range step {
			s.Threads = append(s.Threads, model.Thread{
				TID: t.tid, Name: t.name, State: t.state, CPUTime: t.cpu, Voluntary: t.vol,
				Syscall: t.call, Wchan: t.wchan, FD: t.fd, Stack: t.stack, RunDelay: t.delay,
			})
		}
		out = append(out, s)
	}
	return out
}

// steady repeats the same readings n times, adding cpuPerStep to every
// thread whose cpu is non-zero at the start, and volPerStep switches.
func steady(n int, futexes map[string]model.Futex, threads ...th) []model.Sample {
	var steps [][]th
	for i := range n {
		var step []th
		for _, t := range threads {
			t.cpu *= time.Duration(i + 1)
			t.vol *= uint64(i + 1)
			step = append(step, t)
		}
		steps = append(steps, step)
	}
	return run(futexes, steps...)
}

func mutex(owner int32) model.Futex { return model.Futex{Word: 2, Owner: owner, Kind: 0} }

func classes(d Diagnosis) map[int]Class {
	m := map[int]Class{}
	for _, t := range d.Threads {
		m[t.TID] = t.Class
	}
	return m
}

func TestVerdicts(t *testing.T) {
	const lock = 0x5000
	const lock2 = 0x6000
	pipeWrite := call("write", 3, 0x7000, 512)
	tests := []struct {
		name       string
		samples    []model.Sample
		verdict    Verdict
		confidence Confidence
		classes    map[int]Class
		holder     int // of the first lock; 0 for none
		cycles     [][]Ref
		summaryHas string
		hintHas    string
	}{
		{
			name: "holder blocked writing a full pipe, others wait on its mutex",
			samples: steady(3, map[string]model.Futex{"0x5000": mutex(2)},
				th{tid: 1, name: "main", state: "S", call: call("wait4", 0xffffffff)},
				th{tid: 2, name: "worker-0", state: "S", call: pipeWrite, wchan: "pipe_write", fd: "pipe:[42]"},
				th{tid: 3, name: "worker-1", state: "S", call: futexWait(lock, 2)},
				th{tid: 4, name: "worker-2", state: "S", call: futexWait(lock, 2)},
			),
			verdict: Blocked, confidence: High, holder: 2,
			classes:    map[int]Class{1: ClassBlocked, 2: ClassBlocked, 3: ClassBlocked, 4: ClassBlocked},
			summaryHas: "tid 2 (worker-0) holds mutex 0x5000 and is blocked in write(3, 0x7000, 512) on pipe:[42]; 2 threads wait",
			hintHas:    "never hold a lock across blocking I/O",
		},
		{
			name: "ABBA deadlock",
			samples: steady(3, map[string]model.Futex{"0x5000": mutex(3), "0x6000": mutex(2)},
				th{tid: 2, name: "left", state: "S", call: futexWait(lock, 2)},
				th{tid: 3, name: "right", state: "S", call: futexWait(lock2, 2)},
			),
			verdict: Deadlock, confidence: High, holder: 3,
			classes:    map[int]Class{2: ClassBlocked, 3: ClassBlocked},
			cycles:     [][]Ref{{{PID: pid, TID: 2}, {PID: pid, TID: 3}}},
			summaryHas: "deadlock between 2 threads: tid 2 (left) waits for mutex 0x5000 held by tid 3 (right)",
		},
		{
			name: "a thread relocks its own mutex",
			samples: steady(2, map[string]model.Futex{"0x5000": mutex(2)},
				th{tid: 2, name: "self", state: "S", call: futexWait(lock, 2)},
			),
			verdict: Deadlock, confidence: High, holder: 2,
			classes: map[int]Class{2: ClassBlocked},
			cycles:  [][]Ref{{{PID: pid, TID: 2}}},
			hintHas: "already holds",
		},
		{
			name: "holder spins, others wait",
			samples: steady(3, map[string]model.Futex{"0x5000": mutex(2)},
				th{tid: 2, name: "renderer-0", state: "R", cpu: 990 * time.Millisecond, call: running},
				th{tid: 3, name: "renderer-1", state: "S", call: futexWait(lock, 2)},
			),
			verdict: Spinning, confidence: High, holder: 2,
			classes:    map[int]Class{2: ClassSpinning, 3: ClassBlocked},
			summaryHas: "tid 2 (renderer-0) spins (99% of a core) while holding mutex 0x5000; 1 thread waits",
		},
		{
			name: "a spinner starved of CPU still wants a whole core",
			samples: run(nil,
				[]th{{tid: 1, name: "main", state: "R", cpu: 0, call: running, delay: 1}},
				[]th{{tid: 1, name: "main", state: "R", cpu: 20 * time.Millisecond, call: running, delay: 950 * time.Millisecond}},
			),
			verdict:    Spinning,
			classes:    map[int]Class{1: ClassSpinning},
			summaryHas: "(2% of a core, and 95% waiting for one (the machine is busy))",
		},
		{
			name: "half a core and not waiting for more is working",
			samples: run(nil,
				[]th{{tid: 1, name: "main", state: "R", cpu: 0, call: running, delay: 1}},
				[]th{{tid: 1, name: "main", state: "R", cpu: 500 * time.Millisecond, call: running, delay: 1}},
			),
			verdict: Working,
			classes: map[int]Class{1: ClassWorking},
		},
		{
			name: "a spinner alone: medium confidence without stacks",
			samples: steady(3, nil,
				th{tid: 1, name: "main", state: "R", cpu: 1000 * time.Millisecond, call: running},
			),
			verdict: Spinning, confidence: Medium,
			classes: map[int]Class{1: ClassSpinning},
		},
		{
			name: "a busy thread that blocks often is working, not spinning",
			samples: steady(3, nil,
				th{tid: 1, name: "cruncher", state: "R", cpu: 900 * time.Millisecond, vol: 200, call: running},
				th{tid: 2, name: "main", state: "S", call: futexWait(0x9000, 0)},
			),
			verdict: Working, confidence: Medium,
			classes: map[int]Class{1: ClassWorking, 2: ClassIdle},
		},
		{
			name: "a spinner whose stack moves is working",
			samples: run(nil,
				[]th{{tid: 1, name: "main", state: "R", cpu: 1 * time.Second, call: running, stack: []model.Frame{{Func: "a"}}}},
				[]th{{tid: 1, name: "main", state: "R", cpu: 2 * time.Second, call: running, stack: []model.Frame{{Func: "b"}}}},
			),
			verdict: Working,
			classes: map[int]Class{1: ClassWorking},
		},
		{
			name: "low CPU but the write gets through: slow, not stopped",
			samples: steady(3, nil,
				th{tid: 1, name: "main", state: "S", vol: 5, call: pipeWrite, fd: "pipe:[42]"},
			),
			verdict: Working,
			classes: map[int]Class{1: ClassWorking},
		},
		{
			name: "a parked thread caught on a CPU in the last sample stays parked",
			samples: run(nil,
				[]th{
					{tid: 1, name: "main", state: "S", call: pipeWrite, fd: "pipe:[42]"},
					{tid: 2, name: "sysmon", state: "S", vol: 10, call: call("nanosleep")},
				},
				[]th{
					{tid: 1, name: "main", state: "S", call: pipeWrite, fd: "pipe:[42]"},
					{tid: 2, name: "sysmon", state: "R", vol: 20, call: running},
				},
			),
			verdict: Blocked,
			classes: map[int]Class{1: ClassBlocked, 2: ClassIdle},
		},
		{
			name: "a lone sleeper is idle, sleeping",
			samples: steady(2, nil,
				th{tid: 1, name: "sleep", state: "S", call: call("clock_nanosleep", 0, 0)},
			),
			verdict:    Idle,
			classes:    map[int]Class{1: ClassIdle},
			summaryHas: "its only thread is sleeping",
			hintHas:    "waits for time",
		},
		{
			name: "every thread parked in epoll and futexes: idle",
			samples: steady(3, nil,
				th{tid: 1, name: "main", state: "S", call: futexWait(0x9000, 0)},
				th{tid: 2, name: "loop", state: "S", call: call("epoll_wait", 5, 0x100, 64, 0xffffffff)},
				th{tid: 3, name: "timer", state: "S", vol: 3, call: call("clock_nanosleep", 1, 0)},
			),
			verdict: Idle, confidence: Medium,
			classes: map[int]Class{1: ClassIdle, 2: ClassIdle, 3: ClassIdle},
			hintHas: "look upstream",
		},
		{
			name: "reading an inherited stdin pipe nobody writes",
			samples: steady(3, nil,
				th{tid: 1, name: "git", state: "S", call: call("read", 0, 0x100, 4096), fd: "pipe:[7]"},
			),
			verdict: Blocked, confidence: High,
			classes:    map[int]Class{1: ClassBlocked},
			summaryHas: "tid 1 (git) is blocked, reading its standard input in read(0, 0x100, 4096) on pipe:[7]",
			hintHas:    "/dev/null",
		},
		{
			name: "threads sharing a futex that is not a mutex: a lock with no holder",
			samples: steady(2, map[string]model.Futex{"0x5000": {Word: 0}},
				th{tid: 1, name: "a", state: "S", call: futexWait(lock, 0)},
				th{tid: 2, name: "b", state: "S", call: futexWait(lock, 0)},
			),
			verdict: Blocked,
			classes: map[int]Class{1: ClassBlocked, 2: ClassBlocked},
			hintHas: "holder is not recorded",
		},
		{
			name: "uninterruptible sleep",
			samples: steady(2, nil,
				th{tid: 1, name: "io", state: "D", call: call("fsync", 3), fd: "/mnt/nfs/x"},
			),
			verdict: Blocked,
			classes: map[int]Class{1: ClassBlocked},
			hintHas: "nothing in user space will move it",
		},
		{
			name: "one sample: low confidence",
			samples: steady(1, nil,
				th{tid: 1, name: "main", state: "S", call: call("read", 4, 0, 10), fd: "socket:[9]"},
			),
			verdict: Blocked, confidence: Low,
			classes: map[int]Class{1: ClassBlocked},
		},
		{
			name: "a thread that exits mid-run keeps its readings; its absence is data",
			samples: run(nil,
				// The thread that goes was on a CPU when it was seen: it
				// must not make the process "working".
				[]th{{tid: 1, name: "main", state: "S", call: call("wait4", 7)}, {tid: 2, name: "gone", state: "R", call: running}},
				[]th{{tid: 1, name: "main", state: "S", call: call("wait4", 7)}},
			),
			verdict:    Blocked,
			classes:    map[int]Class{1: ClassBlocked, 2: ClassExited},
			summaryHas: "waiting for a child process to exit",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify(tt.samples, World{}, DefaultOptions())
			if d.Verdict != tt.verdict {
				t.Errorf("verdict = %s, want %s (summary %q)", d.Verdict, tt.verdict, d.Summary)
			}
			if tt.confidence != "" && d.Confidence != tt.confidence {
				t.Errorf("confidence = %s, want %s", d.Confidence, tt.confidence)
			}
			if diff := cmp.Diff(tt.classes, classes(d)); diff != "" {
				t.Errorf("classes (-want +got):\n%s\nwhy: %+v", diff, d.Threads)
			}
			holder := 0
			if len(d.Locks) > 0 && d.Locks[0].Holder != nil {
				holder = d.Locks[0].Holder.TID
			}
			if holder != tt.holder {
				t.Errorf("holder of the first lock = %d, want %d (locks %+v)", holder, tt.holder, d.Locks)
			}
			if tt.cycles == nil {
				tt.cycles = [][]Ref{}
			}
			if diff := cmp.Diff(tt.cycles, d.Cycles); diff != "" {
				t.Errorf("cycles (-want +got):\n%s", diff)
			}
			if !strings.Contains(d.Summary, tt.summaryHas) {
				t.Errorf("summary = %q, want it to contain %q", d.Summary, tt.summaryHas)
			}
			if !strings.Contains(d.Hint, tt.hintHas) {
				t.Errorf("hint = %q, want it to contain %q", d.Hint, tt.hintHas)
			}
			if d.Summary == "" || d.Hint == "" || len(d.Evidence) == 0 {
				t.Errorf("summary, hint and evidence must all be said: %+v", d)
			}
		})
	}
}

func TestMutexValidation(t *testing.T) {
	live := map[int]bool{2: true, 3: true}
	waiter := model.Thread{TID: 3, Syscall: futexWait(0x5000, 2)}
	tests := []struct {
		name      string
		futex     model.Futex
		waiter    model.Thread
		owner     int
		kind      string
		reasonHas string
	}{
		{name: "normal mutex", futex: mutex(2), waiter: waiter, owner: 2, kind: "mutex"},
		{name: "recursive robust", futex: model.Futex{Word: 2, Owner: 2, Kind: 1 | 16}, waiter: waiter, owner: 2, kind: "mutex"},
		{name: "unreadable memory", futex: model.Futex{Err: "permission denied"}, waiter: waiter, reasonHas: "could not be read"},
		{name: "owner not a thread", futex: mutex(77), waiter: waiter, reasonHas: "not a live thread"},
		{name: "process-shared, owner elsewhere", futex: model.Futex{Word: 2, Owner: 77, Kind: 128}, waiter: waiter, reasonHas: "another process"},
		{name: "garbage kind", futex: model.Futex{Word: 2, Owner: 2, Kind: 0x7fff0000}, waiter: waiter, reasonHas: "not a mutex type"},
		{name: "unlocked as read", futex: model.Futex{Word: 0, Owner: 2}, waiter: waiter, reasonHas: "unlocked"},
		{name: "condition-variable wait value", futex: mutex(2), waiter: model.Thread{TID: 3, Syscall: futexWait(0x5000, 0)}, reasonHas: "not a contended mutex"},
		{
			name:   "priority inheritance: the owner is in the word",
			futex:  model.Futex{Word: int32(2 | 0x40000000), Owner: 0, Kind: 32},
			waiter: model.Thread{TID: 3, Syscall: model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{0x5000, 6 | 128}}},
			owner:  2, kind: "pi-mutex",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner, kind, reason := mutexOwner(tt.futex, []model.Thread{tt.waiter}, live, pid)
			if owner != tt.owner || kind != tt.kind {
				t.Errorf("mutexOwner(%+v) = %d, %q (%s); want %d, %q", tt.futex, owner, kind, reason, tt.owner, tt.kind)
			}
			if !strings.Contains(reason, tt.reasonHas) {
				t.Errorf("reason %q, want it to contain %q", reason, tt.reasonHas)
			}
		})
	}
}

func TestJoinIsIdleAndPointsAtTheThread(t *testing.T) {
	// pthread_join sleeps on the joined thread's TID word, expecting the TID.
	join := model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{0x8000, 0x109, 5}}
	samples := steady(2, map[string]model.Futex{"0x8000": {Word: 5}},
		th{tid: 1, name: "main", state: "S", call: join},
		th{tid: 5, name: "worker", state: "S", call: call("read", 0, 0, 1), fd: "/dev/pts/1"},
	)
	d := Classify(samples, World{}, DefaultOptions())
	var w *Wait
	for i := range d.Waits {
		if d.Waits[i].From.TID == 1 {
			w = &d.Waits[i]
		}
	}
	if w == nil || w.Kind != "thread-exit" || w.To == nil || w.To.TID != 5 {
		t.Fatalf("wait of the joining thread = %+v, want thread-exit to tid 5", w)
	}
	if got := classes(d)[1]; got != ClassIdle {
		t.Errorf("joining thread class = %s, want idle", got)
	}
}

func TestMemoryTrend(t *testing.T) {
	tests := []struct {
		rss  []int64
		want string
	}{
		{[]int64{100 << 20}, "unknown"},
		{[]int64{100 << 20, 100 << 20, 100<<20 + 4096}, "flat"},
		{[]int64{100 << 20, 110 << 20, 120 << 20}, "growing"},
		{[]int64{100 << 20, 90 << 20}, "shrinking"},
		{[]int64{1 << 20, 1<<20 + 512<<10}, "flat"}, // under the 1 MiB floor
	}
	for _, tt := range tests {
		var samples []model.Sample
		for _, r := range tt.rss {
			samples = append(samples, model.Sample{RSSBytes: r})
		}
		if got := memory(samples, DefaultOptions()).Trend; got != tt.want {
			t.Errorf("trend of %v = %s, want %s", tt.rss, got, tt.want)
		}
	}
}

func TestCyclesFindsEachOnce(t *testing.T) {
	r := func(pid, tid int) Ref { return Ref{PID: pid, TID: tid} }
	g := &graph{edges: map[Ref][]Ref{
		r(pid, 1): {r(pid, 2)},
		r(pid, 2): {r(pid, 3)},
		r(pid, 3): {r(pid, 1)},
		r(pid, 4): {r(pid, 1)}, // waits into the cycle but is not in it
		r(pid, 8): {r(pid, 9)}, // a chain, no cycle
		// Across processes: a thread of 200 waits for process 300, whose
		// only waiting thread waits for process 200.
		r(200, 201): {{PID: 300}},
		{PID: 300}:  {r(300, 301)},
		r(300, 301): {{PID: 200}},
		{PID: 200}:  {r(200, 201)},
	}}
	got := g.cycles()
	want := [][]Ref{{r(pid, 1), r(pid, 2), r(pid, 3)}, {r(200, 201), r(300, 301)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cycles (-want +got):\n%s", diff)
	}
}

func TestSyscallView(t *testing.T) {
	tests := []struct {
		sc   model.Syscall
		want string
	}{
		{futexWait(0x7e6e80, 2), "futex(0x7e6e80, FUTEX_WAIT_PRIVATE, 2)"},
		{call("write", 8, 0xc000100000, 512), "write(8, 0xc000100000, 512)"},
		{call("wait4", 0xffffffff, 0x10), "wait4(-1, …)"},
		{call("epoll_pwait", 6, 0x10, 128), "epoll_pwait(6, …)"},
		{model.Syscall{Nr: 999, Args: [6]uint64{1, 0x7fff0000}}, "syscall_999(1, 0x7fff0000, 0)"},
	}
	for _, tt := range tests {
		if got := view(tt.sc).Text; got != tt.want {
			t.Errorf("view(%+v) = %q, want %q", tt.sc, got, tt.want)
		}
	}
	if view(running) != nil {
		t.Errorf("a running thread has no call to show")
	}
}

func TestJSONListsAreNeverNull(t *testing.T) {
	d := Classify(nil, World{}, DefaultOptions())
	if d.Evidence == nil || d.Threads == nil || d.Locks == nil || d.Cycles == nil || d.Waits == nil || d.Memory.RSSBytes == nil {
		t.Errorf("empty diagnosis has nil lists: %+v", d)
	}
}
