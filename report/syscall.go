package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// view prints a blocked call the way strace would, as far as the raw
// arguments allow: descriptors and small numbers in decimal, pointers in hex.
func view(sc model.Syscall) *Syscall {
	if !sc.InCall() {
		return nil
	}
	v := &Syscall{Nr: sc.Nr, Name: sc.Name, Args: make([]string, len(sc.Args)), Restarted: sc.Restarted}
	for i, a := range sc.Args {
		v.Args[i] = "0x" + strconv.FormatUint(a, 16)
	}
	name := sc.Name
	if name == "" {
		name = fmt.Sprintf("syscall_%d", sc.Nr)
	}
	var args []string
	switch {
	case name == "futex":
		args = []string{hex(sc.Args[0]), futexOpText(sc.Args[1]), num(sc.Args[2])}
	case name == "futex_wait":
		args = []string{hex(sc.Args[0]), num(sc.Args[1])}
	case name == "wait4" || name == "waitid" && sc.Args[0] == 1: // P_PID
		args = []string{num(sc.Args[0]), "…"}
		if name == "waitid" {
			args = []string{"P_PID", num(sc.Args[1]), "…"}
		}
	case name == "read" || name == "write" || name == "pread64" || name == "pwrite64" ||
		name == "recvfrom" || name == "sendto":
		args = []string{num(sc.Args[0]), hex(sc.Args[1]), num(sc.Args[2])}
	case name == "nanosleep" || name == "clock_nanosleep" || name == "pause":
		args = []string{"…"}
	default:
		if _, ok := model.FDArg(sc); ok {
			args = []string{num(sc.Args[0]), "…"}
		} else {
			args = []string{smart(sc.Args[0]), smart(sc.Args[1]), smart(sc.Args[2])}
		}
	}
	v.Text = name + "(" + strings.Join(args, ", ") + ")"
	return v
}

func hex(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// num prints an argument as the signed 32-bit integer C passes in a register.
func num(a uint64) string { return strconv.Itoa(int(int32(a))) }

func smart(a uint64) string {
	if a < 1<<16 {
		return strconv.FormatUint(a, 10)
	}
	return hex(a)
}

var futexOps = []string{
	0: "FUTEX_WAIT", 1: "FUTEX_WAKE", 2: "FUTEX_FD", 3: "FUTEX_REQUEUE", 4: "FUTEX_CMP_REQUEUE",
	5: "FUTEX_WAKE_OP", 6: "FUTEX_LOCK_PI", 7: "FUTEX_UNLOCK_PI", 8: "FUTEX_TRYLOCK_PI",
	9: "FUTEX_WAIT_BITSET", 10: "FUTEX_WAKE_BITSET", 11: "FUTEX_WAIT_REQUEUE_PI",
	12: "FUTEX_CMP_REQUEUE_PI", 13: "FUTEX_LOCK_PI2",
}
