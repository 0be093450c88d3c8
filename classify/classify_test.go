package classify_test

import (
	"github.com/hangdoc/hangdoc/classify"
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
				TID: t.tid, Name: t.name, State: model.ParseThreadState(t.state), CPUTime: t.cpu, Voluntary: t.vol,
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

func classes(d diag) map[int]classify.Class {
	m := map[int]classify.Class{}
	for _, t := range d.Threads {
		m[t.Ref.TID] = t.Class
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
		verdict    classify.Verdict
		confidence classify.Confidence
		classes    map[int]classify.Class
		holder     int // of the first lock; 0 for none
		cycles     []classify.Cycle
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
			verdict: classify.Blocked, confidence: classify.High, holder: 2,
			classes:    map[int]classify.Class{1: classify.ClassBlocked, 2: classify.ClassBlocked, 3: classify.ClassBlocked, 4: classify.ClassBlocked},
			summaryHas: "tid 2 (worker-0) holds mutex 0x5000 and is blocked in write(3, 0x7000, 512) on pipe:[42]; 2 threads wait",
			hintHas:    "never hold a lock across blocking I/O",
		},
		{
			name: "ABBA deadlock",
			samples: steady(3, map[string]model.Futex{"0x5000": mutex(3), "0x6000": mutex(2)},
				th{tid: 2, name: "left", state: "S", call: futexWait(lock, 2)},
				th{tid: 3, name: "right", state: "S", call: futexWait(lock2, 2)},
			),
			verdict: classify.Deadlock, confidence: classify.High, holder: 3,
			classes:    map[int]classify.Class{2: classify.ClassBlocked, 3: classify.ClassBlocked},
			cycles:     []classify.Cycle{{{PID: pid, TID: 2}, {PID: pid, TID: 3}}},
			summaryHas: "deadlock between 2 threads: tid 2 (left) waits for mutex 0x5000 held by tid 3 (right)",
		},
		{
			name: "a thread relocks its own mutex",
			samples: steady(2, map[string]model.Futex{"0x5000": mutex(2)},
				th{tid: 2, name: "self", state: "S", call: futexWait(lock, 2)},
			),
			verdict: classify.Deadlock, confidence: classify.High, holder: 2,
			classes: map[int]classify.Class{2: classify.ClassBlocked},
			cycles:  []classify.Cycle{{{PID: pid, TID: 2}}},
			hintHas: "already holds",
		},
		{
			name: "holder spins, others wait",
			samples: steady(3, map[string]model.Futex{"0x5000": mutex(2)},
				th{tid: 2, name: "renderer-0", state: "R", cpu: 990 * time.Millisecond, call: running},
				th{tid: 3, name: "renderer-1", state: "S", call: futexWait(lock, 2)},
			),
			verdict: classify.Spinning, confidence: classify.High, holder: 2,
			classes:    map[int]classify.Class{2: classify.ClassSpinning, 3: classify.ClassBlocked},
			summaryHas: "tid 2 (renderer-0) spins (99% of a core) while holding mutex 0x5000; 1 thread waits",
		},
		{
			// The machine is busy only when /proc/stat says so: here its
			// CPUs were 95% busy (see TestStarved for the other causes).
			name: "a spinner starved of CPU still wants a whole core",
			samples: withMachine(run(nil,
				[]th{{tid: 1, name: "main", state: "R", cpu: 0, call: running, delay: 1}},
				[]th{{tid: 1, name: "main", state: "R", cpu: 20 * time.Millisecond, call: running, delay: 950 * time.Millisecond}},
			), 95),
			verdict:    classify.Spinning,
			classes:    map[int]classify.Class{1: classify.ClassSpinning},
			summaryHas: "(2% of a core, and 95% waiting for one (the machine is busy))",
		},
		{
			name: "half a core and not waiting for more is working",
			samples: run(nil,
				[]th{{tid: 1, name: "main", state: "R", cpu: 0, call: running, delay: 1}},
				[]th{{tid: 1, name: "main", state: "R", cpu: 500 * time.Millisecond, call: running, delay: 1}},
			),
			verdict: classify.Working,
			classes: map[int]classify.Class{1: classify.ClassWorking},
		},
		{
			name: "a spinner alone: medium confidence without stacks",
			samples: steady(3, nil,
				th{tid: 1, name: "main", state: "R", cpu: 1000 * time.Millisecond, call: running},
			),
			verdict: classify.Spinning, confidence: classify.Medium,
			classes: map[int]classify.Class{1: classify.ClassSpinning},
		},
		{
			name: "a busy thread that blocks often is working, not spinning",
			samples: steady(3, nil,
				th{tid: 1, name: "cruncher", state: "R", cpu: 900 * time.Millisecond, vol: 200, call: running},
				th{tid: 2, name: "main", state: "S", call: futexWait(0x9000, 0)},
			),
			verdict: classify.Working, confidence: classify.Medium,
			classes: map[int]classify.Class{1: classify.ClassWorking, 2: classify.ClassIdle},
		},
		{
			name: "a spinner whose stack moves is working",
			samples: run(nil,
				[]th{{tid: 1, name: "main", state: "R", cpu: 1 * time.Second, call: running, stack: []model.Frame{{Func: "a"}}}},
				[]th{{tid: 1, name: "main", state: "R", cpu: 2 * time.Second, call: running, stack: []model.Frame{{Func: "b"}}}},
			),
			verdict: classify.Working,
			classes: map[int]classify.Class{1: classify.ClassWorking},
		},
		{
			name: "low CPU but the write gets through: slow, not stopped",
			samples: steady(3, nil,
				th{tid: 1, name: "main", state: "S", vol: 5, call: pipeWrite, fd: "pipe:[42]"},
			),
			verdict: classify.Working,
			classes: map[int]classify.Class{1: classify.ClassWorking},
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
			verdict: classify.Blocked,
			classes: map[int]classify.Class{1: classify.ClassBlocked, 2: classify.ClassIdle},
		},
		{
			name: "a lone sleeper is idle, sleeping",
			samples: steady(2, nil,
				th{tid: 1, name: "sleep", state: "S", call: call("clock_nanosleep", 0, 0)},
			),
			verdict:    classify.Idle,
			classes:    map[int]classify.Class{1: classify.ClassIdle},
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
			verdict: classify.Idle, confidence: classify.Medium,
			classes: map[int]classify.Class{1: classify.ClassIdle, 2: classify.ClassIdle, 3: classify.ClassIdle},
			hintHas: "look upstream",
		},
		{
			name: "reading an inherited stdin pipe nobody writes",
			samples: steady(3, nil,
				th{tid: 1, name: "git", state: "S", call: call("read", 0, 0x100, 4096), fd: "pipe:[7]"},
			),
			verdict: classify.Blocked, confidence: classify.High,
			classes:    map[int]classify.Class{1: classify.ClassBlocked},
			summaryHas: "tid 1 (git) is blocked, reading its standard input in read(0, 0x100, 4096) on pipe:[7]",
			hintHas:    "/dev/null",
		},
		{
			// A third thread is there that may hold it: with the two waiters
			// alone, nobody could (see TestNobodyLeft).
			name: "threads sharing a futex that is not a mutex: a lock with no holder",
			samples: steady(2, map[string]model.Futex{"0x5000": {Word: 0}},
				th{tid: 1, name: "a", state: "S", call: futexWait(lock, 0)},
				th{tid: 2, name: "b", state: "S", call: futexWait(lock, 0)},
				th{tid: 3, name: "c", state: "S", call: call("recvfrom", 4, 0x100, 64), fd: "socket:[9]"},
			),
			verdict: classify.Blocked,
			classes: map[int]classify.Class{1: classify.ClassBlocked, 2: classify.ClassBlocked, 3: classify.ClassBlocked},
			hintHas: "holder is not recorded",
		},
		{
			name: "uninterruptible sleep",
			samples: steady(2, nil,
				th{tid: 1, name: "io", state: "D", call: call("fsync", 3), fd: "/mnt/nfs/x"},
			),
			verdict: classify.Blocked,
			classes: map[int]classify.Class{1: classify.ClassBlocked},
			hintHas: "nothing in user space will move it",
		},
		{
			name: "one sample: low confidence",
			samples: steady(1, nil,
				th{tid: 1, name: "main", state: "S", call: call("read", 4, 0, 10), fd: "socket:[9]"},
			),
			verdict: classify.Blocked, confidence: classify.Low,
			classes: map[int]classify.Class{1: classify.ClassBlocked},
		},
		{
			name: "a thread that exits mid-run keeps its readings; its absence is data",
			samples: run(nil,
				// The thread that goes was on a CPU when it was seen: it
				// must not make the process "working".
				[]th{{tid: 1, name: "main", state: "S", call: call("wait4", 7)}, {tid: 2, name: "gone", state: "R", call: running}},
				[]th{{tid: 1, name: "main", state: "S", call: call("wait4", 7)}},
			),
			verdict:    classify.Blocked,
			classes:    map[int]classify.Class{1: classify.ClassBlocked, 2: classify.ClassExited},
			summaryHas: "waiting for a child process to exit",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify(tt.samples, World{}, classify.DefaultOptions())
			if d.Verdict != tt.verdict {
				t.Errorf("verdict = %s, want %s (summary %q)", d.Verdict, tt.verdict, d.Summary)
			}
			if tt.confidence != 0 && d.Confidence != tt.confidence {
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
				tt.cycles = []classify.Cycle{}
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

// A join points at the thread it waits for, and is as idle as that thread:
// behind a thread that waits for work it is parked, behind one blocked for
// good it is blocked (a join is never idle in itself).
func TestJoinPointsAtTheThread(t *testing.T) {
	// pthread_join sleeps on the joined thread's TID word, expecting the TID.
	join := model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{0x8000, 0x109, 5}}
	for _, tt := range []struct {
		name   string
		worker th
		want   classify.Class
	}{
		{"behind a sleeper", th{tid: 5, name: "worker", state: "S", call: call("clock_nanosleep", 1, 0)}, classify.ClassIdle},
		{"behind a blocked read", th{tid: 5, name: "worker", state: "S", call: call("read", 0, 0, 1), fd: "/dev/pts/1"}, classify.ClassBlocked},
	} {
		t.Run(tt.name, func(t *testing.T) {
			samples := steady(2, map[string]model.Futex{"0x8000": {Word: 5}},
				th{tid: 1, name: "main", state: "S", call: join}, tt.worker)
			d := Classify(samples, World{}, classify.DefaultOptions())
			var w *classify.Wait
			for i := range d.Waits {
				if d.Waits[i].From.TID == 1 {
					w = &d.Waits[i]
				}
			}
			if w == nil || w.Kind != model.WaitThreadExit || w.To == nil || w.To.TID != 5 {
				t.Fatalf("wait of the joining thread = %+v, want thread-exit to tid 5", w)
			}
			if got := classes(d)[1]; got != tt.want {
				t.Errorf("joining thread class = %s, want %s (%s)", got, tt.want, d.Summary)
			}
		})
	}
}

func TestJSONListsAreNeverNull(t *testing.T) {
	d := Classify(nil, World{}, classify.DefaultOptions())
	if d.Evidence == nil || d.Threads == nil || d.Locks == nil || d.Cycles == nil || d.Waits == nil || d.Memory.RSSBytes == nil {
		t.Errorf("empty diagnosis has nil lists: %+v", d)
	}
}
