// Package reaper makes hangdoc a child subreaper: a process that a helper
// (py-spy, and whatever it starts) leaves behind when it dies, one that
// left the helper's process group with setsid, reparents to hangdoc
// instead of init, where hangdoc can find it, kill it, and reap it,
// rather than let it outlive hangdoc holding a pipe open.
//
// The one danger of a reaper in a Go program is stealing an exit status:
// os/exec waits for each child it started, and a wait(-1) that reaped one
// first would make that Wait fail. This reaper only ever waits for one
// process at a time, by pidfd, and only for a child that os/exec did not
// start: Go holds a pidfd for every child os.StartProcess started until it
// has reaped it (Linux 5.4 and later), and a child with such a pidfd in
// this process's descriptor table is left alone. A child started some
// other way (syscall.ForkExec) would look adopted: hangdoc starts none.
package reaper

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	startOnce sync.Once
	startErr  error
	active    atomic.Bool
	mu        sync.Mutex // one scan at a time
)

// Active reports whether Start has made this process a subreaper.
func Active() bool { return active.Load() }

// Start makes this process a child subreaper and starts reaping the
// processes that reparent to it when they exit. It returns an error, and
// does nothing, where that cannot be done safely (no pidfds to tell
// os/exec's children apart). Calling it again returns the first result.
func Start() error {
	startOnce.Do(func() {
		if err := checkPidfds(); err != nil {
			startErr = fmt.Errorf("not reaping orphaned helpers: %w", err)
			return
		}
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			startErr = fmt.Errorf("becoming a child subreaper: %w", err)
			return
		}
		active.Store(true)
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGCHLD)
		go func() {
			for range ch {
				Reap()
			}
		}()
	})
	return startErr
}

// checkPidfds checks what Go's os package checks before it keeps a pidfd
// per child: pidfd_open and waitid(P_PIDFD).
func checkPidfds() error {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(fd)
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil); err != unix.ECHILD {
		return fmt.Errorf("waitid(P_PIDFD): %v", err)
	}
	return nil
}

// Reap reaps every adopted child that has exited, and returns how many.
func Reap() int {
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, c := range adopted() {
		if c.zombie && reap(c.pid) {
			n++
		}
	}
	return n
}

// Adopted lists the pids of the living processes that reparented to this
// one (children os/exec did not start).
func Adopted() []int {
	mu.Lock()
	defer mu.Unlock()
	var pids []int
	for _, c := range adopted() {
		if !c.zombie {
			pids = append(pids, c.pid)
		}
	}
	return pids
}

// KillAdopted kills (SIGKILL) and reaps every process that reparented to
// this one, and returns how many it killed. A helper's descendant that
// escaped its process group and outlived it is one: nothing hangdoc
// starts may outlive the helper that started it.
func KillAdopted() int {
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, c := range adopted() {
		if !c.zombie {
			fd, err := unix.PidfdOpen(c.pid, 0)
			if err != nil {
				continue
			}
			// By pidfd: the process examined, not whatever has its pid now.
			if mine(c.pid, fd) {
				unix.Close(fd)
				continue
			}
			if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				n++
			}
			// Reaped now if SIGKILL has taken already, else on its
			// SIGCHLD.
			var info unix.Siginfo
			unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
			unix.Close(fd)
			continue
		}
		reap(c.pid)
	}
	return n
}

// reap waits for one exited child, by pidfd, unless os/exec started it.
func reap(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	// With fd held the pid cannot be reused: check again that it is not
	// one of os/exec's, now for certain the process we hold.
	if mine(pid, fd) {
		return false
	}
	var info unix.Siginfo
	return unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil) == nil && info.Signo != 0
}

type child struct {
	pid    int
	zombie bool
}

// adopted lists this process's children that os/exec did not start.
func adopted() []child {
	pids := children()
	if len(pids) == 0 {
		return nil
	}
	held := pidfdPids(-1)
	var out []child
	for _, pid := range pids {
		if held[pid] {
			continue
		}
		st := stat(pid)
		if st.ppid != os.Getpid() {
			continue // not (or no longer) ours
		}
		out = append(out, child{pid, st.state == 'Z'})
	}
	return out
}

// mine reports whether os/exec holds a pidfd for pid (one other than
// ours, the reaper's own).
func mine(pid, ours int) bool { return pidfdPids(ours)[pid] }

// children lists this process's children: every thread's, from
// /proc/self/task/*/children, or from a scan of /proc where the kernel
// lacks those files.
func children() []int {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	if len(files) == 0 {
		return scanChildren()
	}
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(w); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func scanChildren() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if stat(pid).ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

type procStat struct {
	state byte
	ppid  int
}

func stat(pid int) procStat {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 2 {
		return procStat{}
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{state: f[0][0], ppid: ppid}
}

// pidfdPids is the set of pids this process holds a pidfd for, in
// descriptors other than except.
func pidfdPids(except int) map[int]bool {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	out := map[int]bool{}
	for _, e := range ents {
		if e.Name() == strconv.Itoa(except) {
			continue
		}
		link, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || link != "anon_inode:[pidfd]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(info)) {
			if v, ok := strings.CutPrefix(line, "Pid:"); ok {
				if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && pid > 0 {
					out[pid] = true
				}
			}
		}
	}
	return out
}
