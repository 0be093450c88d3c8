package sampler

import (
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

func TestWaitedChild(t *testing.T) {
	call := func(name string, args ...uint64) model.Syscall {
		sc := model.Syscall{Nr: 61, Name: name}
		copy(sc.Args[:], args)
		return sc
	}
	tests := []struct {
		name string
		t    model.Thread
		want int
	}{
		{"wait4 for a pid", model.Thread{Syscall: call("wait4", 4321)}, 4321},
		{"wait4 for any child", model.Thread{Syscall: call("wait4", 0xffffffff)}, 0},
		{"waitid P_PID", model.Thread{Syscall: call("waitid", 1, 77)}, 77},
		{"waitid P_PIDFD through fdinfo", model.Thread{Syscall: call("waitid", 3, 14), PidfdPID: 88}, 88},
		{"waitid P_ALL", model.Thread{Syscall: call("waitid", 0, 0)}, 0},
		{"not a wait", model.Thread{Syscall: call("read", 4321)}, 0},
		{"running", model.Thread{Syscall: model.Syscall{Running: true, Nr: -1, Name: "wait4", Args: [6]uint64{5}}}, 0},
	}
	for _, tt := range tests {
		if got := model.WaitedChild(tt.t); got != tt.want {
			t.Errorf("%s: WaitedChild(%+v) = %d, want %d", tt.name, tt.t.Syscall, got, tt.want)
		}
	}
}
