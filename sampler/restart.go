package sampler

import (
	"strings"

	"github.com/hangdoc/hangdoc/internal/syscalls"
	"github.com/hangdoc/hangdoc/model"
)

// resumedCall names the call a thread read in restart_syscall resumed. A
// stop — py-spy's pause, Delve's attach, SIGSTOP — breaks into a timed
// wait (poll, nanosleep, a futex with a timeout); the kernel resumes it as
// restart_syscall with the original arguments still in the registers. Read
// as it is, the changed call looks like movement; it is hangdoc's own
// doing. The thread's earlier reading names the call when its arguments
// match; else its wchan does, for the calls the kernel restarts this way.
func resumedCall(arch string, sc, prev model.Syscall, wchan string) model.Syscall {
	if r := model.Resumed(sc, prev); r.Restarted {
		return r
	}
	sc.Restarted = true
	name := ""
	switch {
	case strings.HasPrefix(wchan, "futex_"):
		name = "futex"
	case strings.Contains(wchan, "poll_schedule_timeout") || strings.Contains(wchan, "do_sys_poll") || wchan == "do_poll":
		// ppoll and select restart as themselves; only poll comes back
		// through restart_syscall.
		name = "poll"
	case strings.Contains(wchan, "nanosleep"):
		// clock_nanosleep's first argument is a clock id; nanosleep's a
		// pointer.
		name = "nanosleep"
		if sc.Args[0] < 16 {
			name = "clock_nanosleep"
		}
	}
	if nr, ok := syscalls.Number(arch, name); ok {
		sc.Nr, sc.Name = nr, name
	}
	return sc
}
