package classify_test

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// TestHintFollowsFact: each hint is chosen by the kind of wait it rests
// on (docs/hints.md). "The outside world" only for a wait that names an
// outside call; where the facts stop, a place to look next, not a fix.
func TestHintFollowsFact(t *testing.T) {
	ownPipe := World{Resources: map[string]model.Resource{"pipe:[5]": pipeRes("pipe:[5]", 0, model.FDRef{PID: pid, FD: 3, Mode: "r"}, model.FDRef{PID: pid, FD: 4, Mode: "w"})}}
	otherPipe := World{Resources: map[string]model.Resource{"pipe:[5]": pipeRes("pipe:[5]", 0, model.FDRef{PID: pid, FD: 3, Mode: "r"}, model.FDRef{PID: pid + 1, FD: 1, Mode: "w"})}}
	read := steady(3, nil, th{tid: pid, name: "main", state: "S", call: call("read", 3, 0x10, 512), fd: "pipe:[5]"})
	tests := []struct {
		name    string
		samples []model.Sample
		key     string
		world   World
	}{
		{"a pipe only its own process can write: not the outside world", read, "own-pipe", ownPipe},
		{"a pipe another process writes: the outside world", read, "outside-world", otherPipe},
		{"a syscall the table does not know: look next", steady(3, nil, th{tid: 1, name: "main", state: "S", call: call("ioctl", 3, 0x5401)}), "blocked-look-next", World{}},
		{"a socket read: the outside world", steady(3, nil, th{tid: 1, name: "main", state: "S", call: call("read", 4, 0, 10), fd: "socket:[9]"}), "outside-world", World{}},
		{"a pipe read: the outside world", steady(3, nil, th{tid: 1, name: "main", state: "S", call: call("read", 4, 0, 10), fd: "pipe:[9]"}), "outside-world", World{}},
		{"a file read: what backs the file", steady(3, nil, th{tid: 1, name: "main", state: "S", call: call("read", 4, 0, 10), fd: "/mnt/x"}), "file-io", World{}},
		{"a futex nobody is named for: a wake-up, not the outside world", steady(3, nil,
			th{tid: 1, name: "main", state: "S", call: futexWait(0x5000, 0)},
			th{tid: 2, name: "b", state: "S", call: call("ioctl", 3)}), "wakeup", World{}},
		{"ABBA: the lock order", steady(3, map[string]model.Futex{"0x5000": mutex(3), "0x6000": mutex(2)},
			th{tid: 2, name: "left", state: "S", call: futexWait(0x5000, 2)},
			th{tid: 3, name: "right", state: "S", call: futexWait(0x6000, 2)}), "lock-order", World{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify(tt.samples, tt.world, classify.DefaultOptions())
			if d.R.HintBasis != tt.key {
				t.Errorf("hint_basis %q, want %q; hint %q (summary %q)", d.R.HintBasis, tt.key, d.Hint, d.Summary)
			}
			if tt.key != "outside-world" && strings.Contains(d.Hint, "outside world") {
				t.Errorf("hint %q: no wait names an outside call", d.Hint)
			}
		})
	}
}
