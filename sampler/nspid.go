package sampler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// A target and hangdoc may number the same process differently. /proc
// (or --proc's tree) numbers it as the PID namespace of that mount does;
// py-spy, Delve and kill(2) take a pid as hangdoc's own namespace numbers
// it. In a DaemonSet's setup (hangdoc in a container of its own, the
// host's /proc mounted at /host/proc) the two differ, and the host's pid
// names nothing, or another process, in hangdoc's namespace. The other way
// round, a target in a container seen from the host has its host pid in
// /proc and another in its own namespace (NSpid in its status): that one
// is only for showing, and for matching thread ids a helper reads from the
// target's own memory (py-spy's native thread ids).
//
// nsenter is no way out: the kernel refuses a setns into a PID namespace
// that is not the caller's own or below it, so a helper cannot be run in
// the namespace of a target hangdoc's own namespace does not contain.

// ErrOtherNamespace: the target has no pid in hangdoc's own PID namespace,
// so no helper that takes a pid can be pointed at it.
var ErrOtherNamespace = errors.New("no pid in hangdoc's own PID namespace")

// LocalPID is the pid that names, in hangdoc's own PID namespace, the
// process fs numbers pid: the pid to hand py-spy or Delve, or to signal.
// It is pid itself when fs is /proc. Its error wraps ErrOtherNamespace and
// says why when hangdoc's namespace does not contain the target's.
func LocalPID(fs FS, pid int) (int, error) { return localPID(fs, NewFS(""), pid) }

// localPID is LocalPID with hangdoc's own /proc at own. fs numbers
// processes from its mount's namespace down: a process's NSpid there has
// one pid for each level from that namespace to its own. hangdoc finds its
// own level through fs's "self"; the target's pid at the same level is its
// pid in hangdoc's namespace if the target's namespace at that level is
// hangdoc's, which own then confirms (it shows the same process there).
func localPID(fs, own FS, pid int) (int, error) {
	if filepath.Clean(fs.root) == filepath.Clean(own.root) {
		return pid, nil
	}
	self, err := os.Readlink(fs.Path("self"))
	me, aerr := strconv.Atoi(self)
	if err != nil || aerr != nil {
		return 0, fmt.Errorf("pid %d: %s does not show hangdoc itself, so its PID namespace is neither hangdoc's nor one that contains it: %w", pid, fs.root, ErrOtherNamespace)
	}
	mine, err := nspidOf(fs, me)
	if err != nil {
		return 0, err
	}
	theirs, err := nspidOf(fs, pid)
	if err != nil {
		return 0, err
	}
	level := len(mine) - 1
	if len(mine) == 0 || len(theirs) <= level {
		return 0, fmt.Errorf("pid %d is in a PID namespace that hangdoc's (pid %d in %s) does not contain: %w", pid, me, fs.root, ErrOtherNamespace)
	}
	local := theirs[level]
	if !sameProcess(fs, pid, theirs, own, local) {
		return 0, fmt.Errorf("pid %d is in a PID namespace beside hangdoc's (pid %d in %s), not below it: %w", pid, me, fs.root, ErrOtherNamespace)
	}
	return local, nil
}

// nspidOf reads pid's NSpid through fs.
func nspidOf(fs FS, pid int) ([]int, error) {
	st, err := ReadStatus(fs, pid)
	if err != nil {
		return nil, err
	}
	ns := st.NSpid
	if len(ns) == 0 {
		return nil, fmt.Errorf("reading %s: no NSpid (a kernel before 4.1): %w", fs.pidPath(pid, "status"), ErrOtherNamespace)
	}
	return ns, nil
}

// sameProcess reports whether own's local is fs's pid: the same PID
// namespace (its inode) and the same pid in it, which no two processes
// share.
func sameProcess(fs FS, pid int, nspid []int, own FS, local int) bool {
	ns, err := os.Readlink(fs.pidPath(pid, "ns", "pid"))
	if err != nil {
		return false
	}
	if other, err := os.Readlink(own.pidPath(local, "ns", "pid")); err != nil || other != ns {
		return false
	}
	theirs, err := nspidOf(own, local)
	return err == nil && theirs[len(theirs)-1] == nspid[len(nspid)-1]
}
