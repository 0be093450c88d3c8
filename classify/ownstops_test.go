package classify_test

import (
	"testing"

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
	tests := []struct {
		name  string
		calls []model.Syscall
		vol   []uint64
	}{
		{"poll resumed as restart_syscall", []model.Syscall{poll, restart, restart}, []uint64{10, 12, 14}},
		{"poll re-entered with a new timeout", []model.Syscall{poll, retried, poll}, []uint64{10, 11, 13}},
		{"timed futex resumed", []model.Syscall{futexT, futexRestart, futexRestart}, []uint64{3, 5, 7}},
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
}
