package classify_test

import (
	"fmt"
	"github.com/hangdoc/hangdoc/classify"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

const appPy = "/srv/app.py"

var appSource = strings.Split(`import threading
out_lock = threading.Lock()

def emit(rows):
    for row in rows:
        with out_lock:
            line = encode(row)
            sys.stdout.write(line)
            sys.stdout.flush()
        count()
`, "\n")

func TestPythonWithBlockHolder(t *testing.T) {
	waitAt := []model.Frame{{Func: "emit", File: appPy, Line: 6}, {Func: "run", File: "/usr/lib/python3.11/threading.py", Line: 975}}
	inside := []model.Frame{{Func: "emit", File: appPy, Line: 9}, {Func: "run", File: "/usr/lib/python3.11/threading.py", Line: 975}}
	threads := []th{{tid: 10, name: "python3", state: "S", call: call("write", 1, 0x10, 4096), fd: "pipe:[3]", stack: inside}}
	for i := 11; i <= 13; i++ {
		threads = append(threads, th{tid: i, name: "python3", state: "S", call: futexWait(0x9000, 0), stack: waitAt})
	}
	samples := steady(3, map[string]model.Futex{"0x9000": {Word: 0}}, threads...)
	for si := range samples {
		for ti := range samples[si].Threads {
			samples[si].Threads[ti].Python = &model.PythonThread{ThreadName: fmt.Sprintf("writer-%d", samples[si].Threads[ti].TID-10)}
		}
	}
	d := Classify(samples, World{Sources: map[string][]string{appPy: appSource}}, classify.DefaultOptions())
	if d.Verdict != classify.Blocked {
		t.Fatalf("verdict %s (%s)", d.Verdict, d.Summary)
	}
	if len(d.Locks) != 1 || d.Locks[0].Holder == nil || d.Locks[0].Holder.TID != 10 {
		t.Fatalf("locks %+v, want one held by tid 10", d.Locks)
	}
	for _, s := range []string{"probable: tid 10 (writer-0) holds out_lock, locked in emit at line 9", "which the source names as the lock the waiters take", "they share futex 0x9000"} {
		if !strings.Contains(d.R.Locks[0].Basis, s) {
			t.Errorf("basis %q lacks %q", d.R.Locks[0].Basis, s)
		}
	}
	if !strings.Contains(d.Summary, "tid 10 (writer-0) probably holds python-lock") || !strings.Contains(d.Summary, "write(1,") {
		t.Errorf("summary %q should name writer-0 holding the lock, blocked in write", d.Summary)
	}
}

func TestPythonWithBlockNoHolderWhenNobodyInside(t *testing.T) {
	waitAt := []model.Frame{{Func: "emit", File: appPy, Line: 6}}
	elsewhere := []model.Frame{{Func: "emit", File: appPy, Line: 10}} // after the block
	samples := steady(2, nil,
		th{tid: 10, state: "S", call: call("clock_nanosleep", 0), stack: elsewhere},
		th{tid: 11, state: "S", call: futexWait(0x9000, 0), stack: waitAt},
	)
	d := Classify(samples, World{Sources: map[string][]string{appPy: appSource}}, classify.DefaultOptions())
	if len(d.Locks) != 1 || d.Locks[0].Holder != nil || !strings.Contains(d.R.Locks[0].Basis, "no holder is named") {
		t.Errorf("locks %+v, want one with no holder named", d.Locks)
	}
}

func TestPythonSpinnerDespiteDumperPauses(t *testing.T) {
	loop := []model.Frame{{Func: "paginate", File: appPy, Line: 20}}
	loopNext := []model.Frame{{Func: "paginate", File: appPy, Line: 21}}
	// py-spy pauses the process for each dump: the spinner shows voluntary
	// switches, but its stack stays in the same loop.
	samples := run(nil,
		[]th{{tid: 1, name: "renderer-0", state: "R", cpu: 0, vol: 0, call: running, stack: loop}},
		[]th{{tid: 1, name: "renderer-0", state: "R", cpu: 990 * time.Millisecond, vol: 4, call: running, stack: loopNext}},
		[]th{{tid: 1, name: "renderer-0", state: "R", cpu: 1980 * time.Millisecond, vol: 8, call: running, stack: loop}},
	)
	for i := range samples {
		samples[i].Paused = true
	}
	d := Classify(samples, World{}, classify.DefaultOptions())
	if d.Verdict != classify.Spinning || d.Confidence != classify.High {
		t.Errorf("verdict %s (%s), want spinning with high confidence: a loop over two lines is one loop", d.Verdict, d.Confidence)
	}
	moving := run(nil,
		[]th{{tid: 1, state: "R", cpu: 0, vol: 0, call: running, stack: loop}},
		[]th{{tid: 1, state: "R", cpu: 900 * time.Millisecond, vol: 8, call: running, stack: []model.Frame{{Func: "hash", File: appPy, Line: 40}}}},
	)
	if d := Classify(moving, World{}, classify.DefaultOptions()); d.Verdict != classify.Working {
		t.Errorf("a thread whose function changes is working, got %s", d.Verdict)
	}
}

// TestPythonIdlePool: workers in queue.get() with no thread left to feed
// them are an idle pool while main only sleeps; with main alive in a join
// of the workers the program is blocked: it waits for what never comes.
func TestPythonIdlePool(t *testing.T) {
	get := []model.Frame{
		{Func: "wait", File: "/usr/lib/python3.11/threading.py", Line: 320},
		{Func: "Queue.get", File: "/usr/lib/python3.11/queue.py", Line: 171},
		{Func: "work", File: appPy, Line: 30},
	}
	join := []model.Frame{{Func: "_wait_for_tstate_lock", File: "/usr/lib/python3.11/threading.py", Line: 1132}, {Func: "<module>", File: appPy, Line: 50}}
	sleep := []model.Frame{{Func: "<module>", File: appPy, Line: 52}}
	for _, tc := range []struct {
		name    string
		main    []model.Frame
		call    model.Syscall
		verdict classify.Verdict
		says    []string
	}{
		{"sleeping", sleep, call("clock_nanosleep", 1, 0, 0), classify.Idle, []string{"all 8 workers (worker-0…worker-7) wait in queue.get()", "the feeder thread is gone"}},
		{"joining", join, futexWait(0x100, 0), classify.Blocked, []string{"tid 1 (MainThread) waits in join()", "all 8 workers (worker-0…worker-7) wait in queue.get()", "the feeder thread is gone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			threads := []th{{tid: 1, state: "S", call: tc.call, stack: tc.main}}
			for i := 2; i <= 9; i++ {
				threads = append(threads, th{tid: i, state: "S", call: futexWait(uint64(0x1000*i), 0), stack: get})
			}
			samples := steady(3, nil, threads...)
			for si := range samples {
				for ti := range samples[si].Threads {
					tid := samples[si].Threads[ti].TID
					name := "MainThread"
					if tid > 1 {
						name = fmt.Sprintf("worker-%d", tid-2)
					}
					samples[si].Threads[ti].Python = &model.PythonThread{ThreadName: name}
				}
			}
			d := Classify(samples, World{}, classify.DefaultOptions())
			if d.Verdict != tc.verdict || d.Confidence != classify.High {
				t.Fatalf("verdict %s %s (%s), want %s, high", d.Verdict, d.Confidence, d.Summary, tc.verdict)
			}
			for _, s := range tc.says {
				if !strings.Contains(d.Summary, s) {
					t.Errorf("summary %q lacks %q", d.Summary, s)
				}
			}
		})
	}
}

// TestPythonReentryWithoutSource: with no source, a thread waiting in a
// function that stands again further out on its stack, at another line,
// through other calls (a signal handler), waits for what its outer frame
// took: a self-deadlock, probable by the site. A plain recursion waiting
// at its top is not one.
func TestPythonReentryWithoutSource(t *testing.T) {
	const app = "/srv/agent.py"
	for _, tc := range []struct {
		name  string
		stack []model.Frame
		self  bool
	}{
		{"signal handler", []model.Frame{
			{Func: "start", File: app, Line: 53}, {Func: "run_sighup", File: app, Line: 64},
			{Func: "load_config", File: app, Line: 49}, {Func: "start", File: app, Line: 54}, {Func: "<module>", File: app, Line: 104},
		}, true},
		{"recursion", []model.Frame{
			{Func: "poll", File: app, Line: 5}, {Func: "poll", File: app, Line: 7}, {Func: "<module>", File: app, Line: 20},
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples := steady(3, nil, th{tid: 1, state: "S", call: futexWait(0x9000, 0), stack: tc.stack})
			d := Classify(samples, World{}, classify.DefaultOptions())
			self := d.Verdict == classify.Deadlock && len(d.Cycles) == 1 && len(d.Cycles[0]) == 1
			if self != tc.self {
				t.Fatalf("verdict %s (%s), cycles %v: self-deadlock %v, want %v", d.Verdict, d.Summary, d.Cycles, self, tc.self)
			}
			if tc.self && (!strings.Contains(d.Summary, "self-deadlock") || !strings.Contains(d.Summary, "run_sighup")) {
				t.Errorf("summary %q should name the self-deadlock and its path through run_sighup", d.Summary)
			}
		})
	}
}
