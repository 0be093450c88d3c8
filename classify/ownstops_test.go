package classify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// hangdoc's own stops are not progress: a stack source's pause resumes a
// timed wait as restart_syscall, costs switches, and a caller that retries
// after EINTR re-enters the same call with a new timeout.
func TestOwnStopsAreNoMovement(t *testing.T) {
	poll := model.Syscall{Nr: 7, Name: "poll", Args: [6]uint64{0x7f00, 2, 0xffffffff}}
	restart := model.Syscall{Nr: 219, Name: "restart_syscall", Args: poll.Args}
	retried := poll
	retried.Args[2] = 987
	futexT := model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{0x5e1e20, 128, 0, 0xc000010000}}
	futexRestart := model.Syscall{Nr: 219, Name: "restart_syscall", Args: futexT.Args}
	pipeWrite := model.Syscall{Nr: 1, Name: "write", Args: [6]uint64{4, 0x7f0000001c00, 0x1001}}
	pipeRest := model.Syscall{Nr: 1, Name: "write", Args: [6]uint64{4, 0x55d000000270, 1}}
	tests := []struct {
		name  string
		calls []model.Syscall
		vol   []uint64
	}{
		{"poll resumed as restart_syscall", []model.Syscall{poll, restart, restart}, []uint64{10, 12, 14}},
		{"poll re-entered with a new timeout", []model.Syscall{poll, retried, poll}, []uint64{10, 11, 13}},
		{"timed futex resumed", []model.Syscall{futexT, futexRestart, futexRestart}, []uint64{3, 5, 7}},
		// A write to a full pipe broken part-way returns what it wrote;
		// the rest is written again, from another buffer (Python's).
		{"pipe write broken and resumed", []model.Syscall{pipeWrite, pipeRest, pipeRest}, []uint64{3, 5, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var steps [][]th
			for i, c := range tt.calls {
				steps = append(steps, []th{{tid: 1, name: "main", state: "S", call: c, wchan: "poll_schedule_timeout", vol: tt.vol[i]}})
			}
			samples := run(nil, steps...)
			for i := range samples[:len(samples)-1] {
				samples[i].Paused = true
			}
			d := Classify(samples, World{}, classify.DefaultOptions())
			if a := d.Threads[0]; a.Class == classify.ClassWorking || a.Moved {
				t.Errorf("class %s (moved %v, %s): a stop hangdoc made reads as movement", a.Class, a.Moved, d.Summary)
			}
			if d.Verdict == classify.Working {
				t.Errorf("verdict working: %s", d.Summary)
			}
		})
	}
	// Without the pauses, the same switches are the thread's own: it got
	// through its wait.
	samples := run(nil,
		[]th{{tid: 1, name: "main", state: "S", call: poll, vol: 10}},
		[]th{{tid: 1, name: "main", state: "S", call: poll, vol: 30}},
	)
	if d := Classify(samples, World{}, classify.DefaultOptions()); !d.Threads[0].Moved {
		t.Errorf("20 switches of its own, no pause: not moved (%s)", d.Summary)
	}
	// Without a pause, a shorter write is a write of its own; and a
	// longer one, or one on another descriptor, is another write.
	other := pipeRest
	other.Args[0] = 5
	for _, next := range []model.Syscall{pipeRest, pipeWrite, other} {
		steps := [][]th{{{tid: 1, name: "main", state: "S", call: pipeRest, wchan: "anon_pipe_write", vol: 3}},
			{{tid: 1, name: "main", state: "S", call: next, wchan: "anon_pipe_write", vol: 3}}}
		if next == pipeRest {
			steps[0][0].call = pipeWrite
		}
		samples := run(nil, steps...)
		if next != pipeRest {
			samples[0].Paused = true
		}
		if d := Classify(samples, World{}, classify.DefaultOptions()); !d.Threads[0].Moved {
			t.Errorf("write %v then %v (paused %v): not moved (%s)", steps[0][0].call.Args[:3], next.Args[:3], samples[0].Paused, d.Summary)
		}
	}
}

// Stops that are not hangdoc's own are not progress either: while another
// diagnosis holds the target (its py-spy pauses) or a tracer does, the
// switches, a reading caught stopped, and a stack that changed across the
// interval are not the thread's movement (issue 18 item 8: ten diagnoses
// at once of a Python program whose threads wait on a lock said "working"
// in half of them).
func TestForeignStopsAreNoMovement(t *testing.T) {
	lock := futexWait(0x5556606ed830, 0)
	frameA := []model.Frame{{Func: "writer", File: "w.py", Line: 65}}
	frameB := []model.Frame{{Func: "flush", File: "w.py", Line: 12}, {Func: "writer", File: "w.py", Line: 66}}
	claim := []model.ForeignStop{{Kind: model.ForeignClaim, PID: 4242}}
	tests := []struct {
		name    string
		steps   [][]th
		foreign [][]model.ForeignStop // per sample
	}{
		{"switches while another diagnosis holds the target",
			[][]th{{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", vol: 10}},
				{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", vol: 12}},
				{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", vol: 14}}},
			[][]model.ForeignStop{claim, claim, claim}},
		{"a reading caught in a tracer's stop",
			[][]th{{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", vol: 10}},
				{{tid: 1, name: "w", state: "t", call: model.Syscall{Nr: -1}, wchan: "ptrace_stop", vol: 11}},
				{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", vol: 12}}},
			[][]model.ForeignStop{nil, {{Kind: model.ForeignStopped, TID: 1}, {Kind: model.ForeignTracer, PID: 4242}}, nil}},
		{"a reading woken by another's stop, on a run queue",
			[][]th{{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", vol: 10}},
				{{tid: 1, name: "w", state: "R", call: running, vol: 11}},
				{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", vol: 12}}},
			[][]model.ForeignStop{claim, claim, claim}},
		{"a stack read across another's stop",
			[][]th{{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", stack: frameA}},
				{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", stack: frameB}},
				{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait", stack: frameB}}},
			[][]model.ForeignStop{nil, {{Kind: model.ForeignRestart, TID: 1}}, nil}},
		// The CI failure of TestDiagnosesAtOnceOfALockWait: another
		// diagnosis's py-spy pause broke the lock wait, which the thread
		// re-entered by another call (Python's lock retry, a new
		// timeout): "5 threads are working … the waits move".
		{"a wait read across another's stop",
			[][]th{{{tid: 1, name: "w", state: "S", call: lock, wchan: "futex_do_wait"}},
				{{tid: 1, name: "w", state: "S", call: futexWait(0x5556606ed830, 1), wchan: "futex_do_wait"}},
				{{tid: 1, name: "w", state: "S", call: futexWait(0x5556606ed830, 1), wchan: "futex_do_wait"}}},
			[][]model.ForeignStop{claim, claim, claim}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := run(nil, tt.steps...)
			for i := range samples {
				samples[i].Foreign = tt.foreign[i]
			}
			d := Classify(samples, World{}, classify.DefaultOptions())
			a := d.Threads[0]
			if a.Class != classify.ClassBlocked || a.Moved {
				t.Errorf("class %s (moved %v, %s), want blocked: a stop not hangdoc's own reads as movement", a.Class, a.Moved, d.Summary)
			}
			if a.Wait == model.WaitTraced || d.Cause.Stop != nil {
				t.Errorf("wait %v, stop %+v: a stop that came and went is not the thread's wait", a.Wait, d.Cause.Stop)
			}
			// The same readings with no sign of another's stop: the
			// thread moved.
			for i := range samples {
				samples[i].Foreign = nil
			}
			if d := Classify(samples, World{}, classify.DefaultOptions()); !strings.Contains(tt.name, "a reading") && !d.Threads[0].Moved {
				t.Errorf("no foreign stop: not moved (%s)", d.Summary)
			}
		})
	}
}

// A thread woken about once a second that goes back to the same futex
// wait each time, with no CPU (a JVM monitor's waiter rechecking, a timed
// wait that keeps timing out), shows no progress: blocked, not "working,
// slow". Waking more often, using CPU, or waiting elsewhere is movement.
func TestRewaitsAreNoProgress(t *testing.T) {
	lock := futexWait(0x7fae280b7c78, 0)
	other := futexWait(0x7fae280b8c7c, 0)
	write := call("write", 1, 0x7fca380e01a0, 65)
	for _, tc := range []struct {
		name  string
		calls [3]model.Syscall
		vol   [3]uint64
		cpu   [3]time.Duration
		want  classify.Class
		rule  classify.WhyRule
	}{
		{"rechecks once a second", [3]model.Syscall{lock, lock, lock}, [3]uint64{22, 23, 24}, [3]time.Duration{}, classify.ClassBlocked, classify.WhyRewaits},
		{"wakes 20 times a second", [3]model.Syscall{lock, lock, lock}, [3]uint64{22, 42, 62}, [3]time.Duration{}, classify.ClassWorking, classify.WhySlow},
		{"uses CPU between", [3]model.Syscall{lock, lock, lock}, [3]uint64{22, 23, 24}, [3]time.Duration{0, 30 * time.Millisecond, 60 * time.Millisecond}, classify.ClassWorking, classify.WhySlow},
		{"waits on another futex", [3]model.Syscall{lock, other, lock}, [3]uint64{22, 23, 24}, [3]time.Duration{}, classify.ClassWorking, classify.WhySlow},
		// Any wait, not only a futex's: a write to a full pipe woken twice
		// (the CI failure of TestDiagnosesAtOnceOfALockWait: every thread
		// of a hung writer "woke 2 times … slow, not stopped").
		{"a pipe write woken twice", [3]model.Syscall{write, write, write}, [3]uint64{22, 23, 24}, [3]time.Duration{}, classify.ClassBlocked, classify.WhyRewaits},
		{"a pipe write woken 20 times a second", [3]model.Syscall{write, write, write}, [3]uint64{22, 42, 62}, [3]time.Duration{}, classify.ClassWorking, classify.WhySlow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps [][]th
			for i := range tc.calls {
				wchan := "futex_do_wait"
				if tc.calls[i].Name == "write" {
					wchan = "anon_pipe_write"
				}
				steps = append(steps, []th{{tid: 7, name: "abba-1", state: "S", call: tc.calls[i], wchan: wchan, vol: tc.vol[i], cpu: tc.cpu[i], fd: "pipe:[9]"}})
			}
			d := Classify(run(nil, steps...), World{}, classify.DefaultOptions())
			// A blocked thread's rule may be a later one's (alone, nobody
			// is left to wake it).
			if a := d.Threads[0]; a.Class != tc.want || tc.want == classify.ClassWorking && a.Why.Rule != tc.rule {
				t.Errorf("class %s (rule %d), want %s (rule %d): %s", a.Class, a.Why.Rule, tc.want, tc.rule, d.Summary)
			}
			if tc.want == classify.ClassBlocked && d.Verdict == classify.Working {
				t.Errorf("verdict working: %s", d.Summary)
			}
		})
	}
}
