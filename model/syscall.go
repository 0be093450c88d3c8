package model

import (
	"strconv"
	"strings"
)

// Futex operations that wait for the word to change: FUTEX_WAIT,
// FUTEX_LOCK_PI, FUTEX_WAIT_BITSET, FUTEX_WAIT_REQUEUE_PI, FUTEX_LOCK_PI2.
var futexWaitOps = map[uint64]bool{0: true, 6: true, 9: true, 11: true, 13: true}

// FutexWait returns the address a thread waits on in futex(), if it does.
func FutexWait(sc Syscall) (addr uint64, ok bool) {
	if !sc.InCall() {
		return 0, false
	}
	switch sc.Name {
	case "futex":
		return sc.Args[0], futexWaitOps[sc.Args[1]&0x7f]
	case "futex_wait":
		return sc.Args[0], true
	}
	return 0, false
}

// WaitedChild returns the process a thread blocked in wait4 or waitid
// waits for: wait4(pid, …), waitid(P_PID, pid, …), or the process behind the
// pidfd of waitid(P_PIDFD, fd, …) (Go's os/exec waits that way). 0 means any
// child, a process group, or no wait at all.
func WaitedChild(t Thread) int {
	sc := t.Syscall
	if !sc.InCall() {
		return 0
	}
	pid := 0
	switch {
	case sc.Name == "wait4":
		pid = int(int32(sc.Args[0]))
	case sc.Name == "waitid" && sc.Args[0] == 1: // P_PID
		pid = int(int32(sc.Args[1]))
	case sc.Name == "waitid" && sc.Args[0] == 3: // P_PIDFD
		pid = t.PidfdPID
	}
	return max(pid, 0)
}

// FutexKey is how Sample.Futexes names an address.
func FutexKey(addr uint64) string { return "0x" + strconv.FormatUint(addr, 16) }

// fdArg names the argument that holds a file descriptor, for the calls a
// thread blocks in.
var fdArg = map[string]int{
	"read": 0, "write": 0, "readv": 0, "writev": 0, "pread64": 0, "pwrite64": 0,
	"preadv": 0, "pwritev": 0, "preadv2": 0, "pwritev2": 0,
	"recvfrom": 0, "sendto": 0, "recvmsg": 0, "sendmsg": 0, "recvmmsg": 0, "sendmmsg": 0,
	"accept": 0, "accept4": 0, "connect": 0,
	"epoll_wait": 0, "epoll_pwait": 0, "epoll_pwait2": 0,
	"fsync": 0, "fdatasync": 0, "flock": 0, "fcntl": 0, "ioctl": 0, "sendfile": 0,
	"splice": 2, "tee": 1,
	"io_uring_enter": 0,
}

// FDArg returns the file descriptor a blocked call is using, if it has one.
func FDArg(sc Syscall) (int, bool) {
	if !sc.InCall() {
		return 0, false
	}
	if sc.Name == "waitid" && sc.Args[0] == 3 { // P_PIDFD
		return int(int32(sc.Args[1])), true
	}
	i, ok := fdArg[sc.Name]
	if !ok {
		return 0, false
	}
	return int(int32(sc.Args[i])), true
}

// GoStd reports a function of Go's standard library (or runtime): its
// import path's first element is one of the standard library's. A dot in
// it does not decide: a module path needs none ("myapp/db" is a
// program's), so the table below, not the dot, says what is the
// standard library's.
func GoStd(fn string) bool {
	first, _, _ := strings.Cut(fn, "/")
	if !strings.Contains(fn, "/") {
		first, _, _ = strings.Cut(fn, ".")
	}
	return stdRoots[first]
}

// stdRoots are the first elements of the standard library's import paths
// in Go 1.22–1.27 (go list std), with "vendor" for the modules it vendors
// (vendor/golang.org/x/net/…). A table of names rather than a list from
// the toolchain: hangdoc reads dumps on machines without Go.
var stdRoots = map[string]bool{
	"archive": true, "bufio": true, "bytes": true, "cmp": true, "compress": true, "container": true,
	"context": true, "crypto": true, "database": true, "debug": true, "embed": true, "encoding": true,
	"errors": true, "expvar": true, "flag": true, "fmt": true, "go": true, "hash": true, "html": true,
	"image": true, "index": true, "internal": true, "io": true, "iter": true, "log": true, "maps": true,
	"math": true, "mime": true, "net": true, "os": true, "path": true, "plugin": true, "reflect": true,
	"regexp": true, "runtime": true, "slices": true, "sort": true, "strconv": true, "strings": true,
	"structs": true, "sync": true, "syscall": true, "testing": true, "text": true, "time": true,
	"unicode": true, "unique": true, "unsafe": true, "weak": true, "vendor": true,
}

// RuntimeGoroutine reports a goroutine the Go runtime started for itself:
// its stack is all runtime frames and it was created by the runtime (or
// nothing), as the GC workers, the finalizer and the timer goroutines a
// traceback shows under GOTRACEBACK=system, in crash dumps and to a memory
// reader. It is the one rule: classify sets such goroutines aside, and the
// readers keep their runtime frames.
func RuntimeGoroutine(stack []Frame, createdBy *Frame) bool {
	if createdBy != nil && !runtimeFunc(createdBy.Func) {
		return false
	}
	for _, f := range stack {
		if !strings.HasPrefix(f.Func, "runtime.") {
			return false
		}
	}
	return len(stack) > 0
}

// waitIdentity names, for the calls whose arguments change when a thread
// re-enters the same wait after an interruption, the arguments that say
// which wait it is: poll's timeout (its third argument) is recomputed by
// every caller that retries after EINTR (CPython's PEP 475, Go's netpoll),
// so only the descriptors count. Calls not listed are identified by their
// first three arguments.
var waitIdentity = map[string]int{"poll": 2, "ppoll": 2, "epoll_wait": 3, "epoll_pwait": 3, "epoll_pwait2": 3}

// SameWait reports whether two readings of a thread's call are the same
// wait: the same call on the same arguments, a timeout left aside. A call
// resumed as restart_syscall whose registers still hold the arguments of
// the other reading is the same wait too.
func SameWait(a, b Syscall) bool {
	if a.Running != b.Running || a.Unknown != b.Unknown || a.Nr < 0 != (b.Nr < 0) {
		return false
	}
	if a.Nr < 0 || a.Running || a.Unknown {
		return true
	}
	n, ok := waitIdentity[a.Name]
	if !ok {
		n = 3
	}
	if a.Name != b.Name && !(a.Name == "restart_syscall" || b.Name == "restart_syscall") {
		return false
	}
	for i := 0; i < n; i++ {
		if a.Args[i] != b.Args[i] {
			return false
		}
	}
	return true
}

// ResumedTransfer reports b as what may be the rest of a's transfer: a
// blocking read or write broken part-way (a stop or a signal makes it
// return what it moved so far) and called again for the rest — the same
// call on the same descriptor, for fewer bytes. Its buffer may be another
// (Python's buffered writer writes a remainder from its own buffer).
func ResumedTransfer(a, b Syscall) bool {
	switch a.Name {
	case "read", "write", "sendto", "recvfrom":
	default:
		return false
	}
	return b.Name == a.Name && a.Args[0] == b.Args[0] && b.Args[2] > 0 && b.Args[2] < a.Args[2]
}

// Resumed names the call of a reading that shows restart_syscall, from an
// earlier reading of the same thread whose registers held the same
// arguments. It returns sc unchanged when it is not restart_syscall or
// prev does not match.
func Resumed(sc, prev Syscall) Syscall {
	if sc.Name != "restart_syscall" || !prev.InCall() || prev.Name == "restart_syscall" ||
		sc.Args[0] != prev.Args[0] || sc.Args[1] != prev.Args[1] || sc.Args[2] != prev.Args[2] {
		return sc
	}
	sc.Nr, sc.Name, sc.Restarted = prev.Nr, prev.Name, true
	return sc
}

// PollArgs says where a thread blocked in poll, ppoll, select or pselect6
// keeps the descriptors it waits on: for poll and ppoll the pollfd array
// and its length, for select and pselect6 the number of descriptors and
// the read and write sets (0 for none).
func PollArgs(sc Syscall) (kind string, addr, n, readSet, writeSet uint64, ok bool) {
	if !sc.InCall() {
		return "", 0, 0, 0, 0, false
	}
	switch sc.Name {
	case "poll", "ppoll":
		return "poll", sc.Args[0], sc.Args[1], 0, 0, true
	case "select", "pselect6":
		return "select", 0, sc.Args[0], sc.Args[1], sc.Args[2], true
	}
	return "", 0, 0, 0, 0, false
}

// runtimeFunc reports a function of the runtime's, or one the runtime
// links into another package of the standard library under its
// "pkg.runtime_name" convention (unique.runtime_registerUniqueMapCleanup
// starts a goroutine of the runtime's for the unique package, go1.23 and
// go1.24).
func runtimeFunc(fn string) bool {
	if strings.HasPrefix(fn, "runtime.") {
		return true
	}
	pkg, name, ok := strings.Cut(fn, ".")
	return ok && !strings.Contains(pkg, "/") && GoStd(fn) && strings.HasPrefix(name, "runtime_")
}

// GoLockCaller is the index of the frame of a Go stack that calls into the
// sync package's locks (sync.(*Once).doSlow, a program's own function):
// the first frame above the runtime's and the sync lock's own, or -1.
func GoLockCaller(stack []Frame) int {
	for i, f := range stack {
		if !goLockFrame(f.Func) {
			return i
		}
	}
	return -1
}

// goLockFrame reports a frame of a sync lock's own (and the runtime's,
// below it).
func goLockFrame(fn string) bool {
	for _, p := range []string{"sync.(*Mutex).", "sync.(*RWMutex).", "internal/sync.", "sync.runtime_", "runtime."} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}
