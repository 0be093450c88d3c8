package sampler

import (
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

func TestResumedCall(t *testing.T) {
	args := func(a ...uint64) (r [6]uint64) { copy(r[:], a); return }
	restart := func(a ...uint64) model.Syscall {
		return model.Syscall{Nr: 219, Name: "restart_syscall", Args: args(a...)}
	}
	poll := model.Syscall{Nr: 7, Name: "poll", Args: args(0x7f76fd6c49a0, 2, 0xffffffff)}
	tests := []struct {
		name  string
		sc    model.Syscall
		prev  model.Syscall
		wchan string
		want  string
		nr    int
	}{
		{"the earlier reading names it", restart(0x7f76fd6c49a0, 2, 0xffffffff), poll, "poll_schedule_timeout.constprop.0", "poll", 7},
		{"poll from its wchan", restart(0x7f76fd6c49a0, 2, 0xffffffff), model.Syscall{}, "poll_schedule_timeout.constprop.0", "poll", 7},
		{"futex from its wchan", restart(0x5e1e20, 128, 0), model.Syscall{}, "futex_do_wait", "futex", 202},
		{"nanosleep", restart(0x7ffd0000, 0), model.Syscall{}, "hrtimer_nanosleep", "nanosleep", 35},
		{"clock_nanosleep: a clock id first", restart(1, 0, 0x7ffd0000), model.Syscall{}, "do_nanosleep", "clock_nanosleep", 230},
		{"other arguments than the earlier call: the wchan decides", restart(0x9000, 128, 0), poll, "futex_wait_queue", "futex", 202},
		{"nothing tells", restart(1, 2, 3), model.Syscall{}, "", "restart_syscall", 219},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resumedCall("x86_64", tt.sc, tt.prev, tt.wchan)
			if got.Name != tt.want || got.Nr != tt.nr || !got.Restarted || got.Args != tt.sc.Args {
				t.Errorf("resumedCall = %+v, want %s (%d), restarted, the same arguments", got, tt.want, tt.nr)
			}
		})
	}
}
