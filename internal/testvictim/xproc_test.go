package testvictim

// Cross-process victims: hangs that span several processes (a pipeline, a
// parent waiting for a child blocked on a pipe the parent holds, orphans, a
// TCP client waiting for a silent server). Each test starts the victim and
// checks from /proc that its ready line tells the truth.
//
// Identifiers here carry an xp prefix so they cannot collide with the
// helpers of testvictim_test.go.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ---- /proc readers ----

// xpCall is one read of /proc/PID/task/TID/syscall.
type xpCall struct {
	raw  string
	nr   int64 // -1: not blocked in a syscall
	args [6]uint64
}

func xpSyscall(t *testing.T, pid, tid int) xpCall {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
	if err != nil {
		t.Fatalf("reading the syscall of %d/%d: %v", pid, tid, err)
	}
	c := xpCall{raw: strings.TrimSpace(string(b)), nr: -1}
	f := strings.Fields(c.raw)
	if len(f) < 7 || f[0] == "running" {
		return c
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatalf("/proc/%d/task/%d/syscall: %q: %v", pid, tid, c.raw, err)
	}
	if nr < 0 {
		return c
	}
	for i := range c.args {
		c.args[i], err = strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		if err != nil {
			t.Fatalf("/proc/%d/task/%d/syscall: %q: %v", pid, tid, c.raw, err)
		}
	}
	c.nr = nr
	return c
}

// xpWantCall fails unless thread pid/tid is blocked in one of nrs, and
// returns what it read.
func xpWantCall(t *testing.T, who string, pid, tid int, nrs ...int) xpCall {
	t.Helper()
	c := xpSyscall(t, pid, tid)
	// A thread caught on a CPU (a shell reaping the reporter that printed
	// the ready line) is given two seconds to get back to its wait.
	for deadline := time.Now().Add(2 * time.Second); c.raw == "running" && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		c = xpSyscall(t, pid, tid)
	}
	if !slices.Contains(nrs, int(c.nr)) {
		t.Fatalf("%s (%d/%d): syscall %q, want one of %v (wchan %s)",
			who, pid, tid, c.raw, nrs, xpRead(t, "/proc/%d/task/%d/wchan", pid, tid))
	}
	t.Logf("%s (%d/%d): syscall %s; wchan %s", who, pid, tid, c.raw,
		xpRead(t, "/proc/%d/task/%d/wchan", pid, tid))
	return c
}

func xpRead(t *testing.T, format string, a ...any) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf(format, a...))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// xpProc is the part of /proc/PID/stat the tests look at.
type xpProc struct {
	comm       string
	state      string
	ppid, pgrp int
}

func xpStatOf(pid int) (xpProc, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return xpProc{}, err
	}
	s := string(b)
	l, r := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if l < 0 || r < l {
		return xpProc{}, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[r+1:])
	if len(f) < 3 {
		return xpProc{}, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	p := xpProc{comm: s[l+1 : r], state: f[0]}
	if p.ppid, err = strconv.Atoi(f[1]); err != nil {
		return xpProc{}, err
	}
	if p.pgrp, err = strconv.Atoi(f[2]); err != nil {
		return xpProc{}, err
	}
	return p, nil
}

func xpStat(t *testing.T, pid int) xpProc {
	t.Helper()
	p, err := xpStatOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// xpWantChild fails unless pid is a live child of parent named comm in the
// process group pgrp. A comm ending in "*" matches as a prefix ("python*":
// python3, python3.11, ...).
func xpWantChild(t *testing.T, who string, pid, parent, pgrp int, comm string) {
	t.Helper()
	p := xpStat(t, pid)
	name := p.comm == comm
	if prefix, ok := strings.CutSuffix(comm, "*"); ok {
		name = strings.HasPrefix(p.comm, prefix)
	}
	if !name || p.ppid != parent || p.pgrp != pgrp || p.state == "Z" {
		t.Fatalf("%s %d: comm %q ppid %d pgrp %d state %s, want comm %q ppid %d pgrp %d alive",
			who, pid, p.comm, p.ppid, p.pgrp, p.state, comm, parent, pgrp)
	}
}

// xpGroup lists the live processes of process group pgrp.
func xpGroup(t *testing.T, pgrp int) map[int]xpProc {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]xpProc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, err := xpStatOf(pid)
		if err != nil || p.pgrp != pgrp || p.state == "Z" {
			continue // gone, or not ours
		}
		out[pid] = p
	}
	return out
}

func xpLink(t *testing.T, pid, fd int) string {
	t.Helper()
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// xpFdinfo returns the fields of /proc/PID/fdinfo/FD.
func xpFdinfo(t *testing.T, pid, fd int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(xpRead(t, "/proc/%d/fdinfo/%d", pid, fd), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// xpFlags returns the open flags of pid's fd (fdinfo "flags", octal).
func xpFlags(t *testing.T, pid, fd int) int {
	t.Helper()
	s := xpFdinfo(t, pid, fd)["flags"]
	n, err := strconv.ParseInt(s, 8, 64)
	if err != nil {
		t.Fatalf("fdinfo %d/%d: flags %q: %v", pid, fd, s, err)
	}
	return int(n)
}

// xpWantAccess fails unless pid's fd was opened with access mode acc
// (O_RDONLY, O_WRONLY or O_RDWR) and its fdinfo ino is the inode of link
// ("pipe:[N]" or "socket:[N]").
func xpWantAccess(t *testing.T, pid, fd, acc int, link string) {
	t.Helper()
	flags := xpFlags(t, pid, fd)
	if flags&syscall.O_ACCMODE != acc {
		t.Fatalf("fd %d of %d: flags %#o, want access mode %#o", fd, pid, flags, acc)
	}
	ino := xpFdinfo(t, pid, fd)["ino"]
	if !strings.HasSuffix(link, ":["+ino+"]") {
		t.Fatalf("fd %d of %d: fdinfo ino %s, link %s", fd, pid, ino, link)
	}
	t.Logf("fd %d of %d -> %s: fdinfo flags %#o ino %s", fd, pid, link, flags, ino)
}

// xpHolders maps each process of pgrp holding link (e.g. "pipe:[N]") to
// its fds on it.
func xpHolders(t *testing.T, pgrp int, link string) map[int][]int {
	t.Helper()
	out := map[int][]int{}
	for pid := range xpGroup(t, pgrp) {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue // exited meanwhile
		}
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd)); err == nil && l == link {
				out[pid] = append(out[pid], fd)
			}
		}
	}
	for _, fds := range out {
		slices.Sort(fds)
	}
	return out
}

func xpWantHolders(t *testing.T, pgrp int, link string, want map[int][]int) {
	t.Helper()
	got := xpHolders(t, pgrp, link)
	if len(got) != len(want) {
		t.Fatalf("holders of %s in group %d: %v, want %v", link, pgrp, got, want)
	}
	for pid, fds := range want {
		if !slices.Equal(got[pid], fds) {
			t.Fatalf("holders of %s in group %d: %v, want %v", link, pgrp, got, want)
		}
	}
}

// xpPipeFill opens the pipe behind pid's fd for reading (without reading
// from it) and returns the bytes queued in it and its capacity.
func xpPipeFill(t *testing.T, pid, fd int) (queued, capacity int) {
	t.Helper()
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("opening the pipe of %d/%d: %v", pid, fd, err)
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ierr, ferr error
	if err := rc.Control(func(p uintptr) {
		queued, ierr = unix.IoctlGetInt(int(p), unix.TIOCINQ) // FIONREAD
		capacity, ferr = unix.FcntlInt(p, unix.F_GETPIPE_SZ, 0)
	}); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(ierr, ferr); err != nil {
		t.Fatalf("pipe of %d/%d: %v", pid, fd, err)
	}
	return queued, capacity
}

// xpWantFull fails unless the pipe behind pid's fd has no free page left.
func xpWantFull(t *testing.T, pid, fd int) {
	t.Helper()
	n, size := xpPipeFill(t, pid, fd)
	if n <= size-os.Getpagesize() || n > size {
		t.Fatalf("pipe of %d/%d holds %d of %d bytes: not full", pid, fd, n, size)
	}
	t.Logf("pipe of %d/%d holds %d of %d bytes (FIONREAD, F_GETPIPE_SZ)", pid, fd, n, size)
}

// xpTCPSock is one line of /proc/PID/net/tcp.
type xpTCPSock struct {
	local, remote string // "0100007F:1F90"
	lport, rport  int
	state         int // 1 ESTABLISHED, 10 LISTEN
	txq, rxq      int
}

// xpTCP parses /proc/PID/net/tcp (pid's network namespace), by inode.
func xpTCP(t *testing.T, pid int) map[string]xpTCPSock {
	t.Helper()
	lines := strings.Split(xpRead(t, "/proc/%d/net/tcp", pid), "\n")
	out := map[string]xpTCPSock{}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		s := xpTCPSock{local: f[1], remote: f[2]}
		var err error
		port := func(addr string) int {
			_, p, _ := strings.Cut(addr, ":")
			n, e := strconv.ParseInt(p, 16, 32)
			err = errors.Join(err, e)
			return int(n)
		}
		s.lport, s.rport = port(f[1]), port(f[2])
		st, e1 := strconv.ParseInt(f[3], 16, 32)
		tx, rx, _ := strings.Cut(f[4], ":")
		txq, e2 := strconv.ParseInt(tx, 16, 64)
		rxq, e3 := strconv.ParseInt(rx, 16, 64)
		if err = errors.Join(err, e1, e2, e3); err != nil {
			t.Fatalf("/proc/%d/net/tcp: %q: %v", pid, line, err)
		}
		s.state, s.txq, s.rxq = int(st), int(txq), int(rxq)
		out[f[9]] = s
	}
	return out
}

// xpSockets returns pid's TCP sockets by fd.
func xpSockets(t *testing.T, pid int) map[int]xpTCPSock {
	t.Helper()
	tcp := xpTCP(t, pid)
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]xpTCPSock{}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
		if err != nil || !strings.HasPrefix(l, "socket:[") {
			continue
		}
		if s, ok := tcp[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")]; ok {
			out[fd] = s
		}
	}
	return out
}

var xpSleeps = []int{syscall.SYS_NANOSLEEP, syscall.SYS_CLOCK_NANOSLEEP}

func xpWantPipe(t *testing.T, link string) {
	t.Helper()
	if !strings.HasPrefix(link, "pipe:[") {
		t.Fatalf("%q is not a pipe", link)
	}
}

// ---- the victims ----

// pipeline.sh: `yes | ( read x; exec sleep ... )`; yes blocks writing the
// full pipe, the shell waits for the pipeline.
func TestXprocPipeline(t *testing.T) {
	t.Parallel()
	v := StartShell(t, "pipeline.sh")
	t.Logf("ready: %v", v.Info)
	p, w, c := v.PID, v.TID("writer"), v.TID("consumer")

	xpWantChild(t, "writer", w, p, p, "yes")
	xpWantChild(t, "consumer", c, p, p, "sleep")

	call := xpWantCall(t, "shell", p, p, syscall.SYS_WAIT4)
	if pid := int32(call.args[0]); pid != -1 && int(pid) != w && int(pid) != c {
		t.Fatalf("shell waits for %d, want -1 or a pipeline member", pid)
	}
	call = xpWantCall(t, "writer", w, w, syscall.SYS_WRITE)
	if call.args[0] != 1 {
		t.Fatalf("writer writes fd %d, want 1", call.args[0])
	}
	xpWantCall(t, "consumer", c, c, xpSleeps...)

	pipe := xpLink(t, w, 1)
	xpWantPipe(t, pipe)
	if pipe != v.Info["pipe"] {
		t.Fatalf("writer's fd 1 is %s, ready line says pipe=%s", pipe, v.Info["pipe"])
	}
	if got := xpLink(t, c, 0); got != pipe {
		t.Fatalf("consumer's fd 0 is %s, writer's fd 1 is %s", got, pipe)
	}
	xpWantAccess(t, w, 1, syscall.O_WRONLY, pipe)
	xpWantAccess(t, c, 0, syscall.O_RDONLY, pipe)
	xpWantHolders(t, p, pipe, map[int][]int{w: {1}, c: {0}})
	xpWantFull(t, w, 1)
}

// popen_deadlock.py: Popen(stderr=PIPE).wait() while the child fills stderr.
func TestXprocPopenDeadlock(t *testing.T) {
	t.Parallel()
	v := StartPython(t, "popen_deadlock.py")
	t.Logf("ready: %v", v.Info)
	p, c, rd := v.PID, v.TID("child"), v.Int("pipefd")

	xpWantChild(t, "child", c, p, p, "python*")
	call := xpWantCall(t, "parent main thread", p, p, syscall.SYS_WAIT4)
	if int(call.args[0]) != c {
		t.Fatalf("parent waits for %d, want the child %d", call.args[0], c)
	}
	call = xpWantCall(t, "child", c, c, syscall.SYS_WRITE)
	if call.args[0] != 2 || call.args[2] != 100000 {
		t.Fatalf("child's write: fd %d count %d, want fd 2 count 100000", call.args[0], call.args[2])
	}

	pipe := xpLink(t, c, 2)
	xpWantPipe(t, pipe)
	if got := xpLink(t, p, rd); got != pipe {
		t.Fatalf("parent's fd %d is %s, child's stderr is %s", rd, got, pipe)
	}
	xpWantAccess(t, p, rd, syscall.O_RDONLY, pipe)
	xpWantAccess(t, c, 2, syscall.O_WRONLY, pipe)
	xpWantHolders(t, p, pipe, map[int][]int{p: {rd}, c: {2}})
	xpWantFull(t, c, 2)
}

// gowait: exec.Cmd.Wait before reading StdoutPipe.
func TestXprocGoWait(t *testing.T) {
	t.Parallel()
	v := Start(t, BuildGo(t, "gowait"))
	t.Logf("ready: %v", v.Info)
	p, c, waiter, rd := v.PID, v.TID("child"), v.TID("waiter"), v.Int("pipefd")

	xpWantChild(t, "child", c, p, p, "head")
	if got := xpRead(t, "/proc/%d/task/%d/comm", p, waiter); got != "gowait" {
		t.Fatalf("waiter %d is %q, not a thread of gowait %d", waiter, got, p)
	}
	switch kind := v.Info["wait"] + " " + v.Info["idtype"]; kind {
	case "waitid pidfd":
		call := xpWantCall(t, "waiter", p, waiter, syscall.SYS_WAITID)
		pidfd := v.Int("pidfd")
		if call.args[0] != unix.P_PIDFD || int(call.args[1]) != pidfd || call.args[3]&unix.WEXITED == 0 {
			t.Fatalf("waiter: waitid%v, want (P_PIDFD, %d, _, WEXITED, _)", call.args[:5], pidfd)
		}
		if l := xpLink(t, p, pidfd); l != "anon_inode:[pidfd]" {
			t.Fatalf("fd %d of %d is %s, not a pidfd", pidfd, p, l)
		}
		info := xpFdinfo(t, p, pidfd)
		if info["Pid"] != strconv.Itoa(c) {
			t.Fatalf("pidfd %d of %d: fdinfo Pid %q, want the child %d", pidfd, p, info["Pid"], c)
		}
		t.Logf("fd %d of %d -> anon_inode:[pidfd], fdinfo Pid %s flags %s", pidfd, p, info["Pid"], info["flags"])
	case "waitid pid":
		call := xpWantCall(t, "waiter", p, waiter, syscall.SYS_WAITID)
		if call.args[0] != unix.P_PID || int(call.args[1]) != c {
			t.Fatalf("waiter: waitid%v, want (P_PID, %d, ...)", call.args[:5], c)
		}
	case "wait4 ":
		call := xpWantCall(t, "waiter", p, waiter, syscall.SYS_WAIT4)
		if int(call.args[0]) != c {
			t.Fatalf("waiter: wait4(%d), want the child %d", call.args[0], c)
		}
	default:
		t.Fatalf("ready line: unknown wait %q", kind)
	}

	call := xpWantCall(t, "child", c, c, syscall.SYS_WRITE)
	if call.args[0] != 1 {
		t.Fatalf("child writes fd %d, want 1", call.args[0])
	}
	pipe := xpLink(t, c, 1)
	xpWantPipe(t, pipe)
	if got := xpLink(t, p, rd); got != pipe {
		t.Fatalf("parent's fd %d is %s, child's stdout is %s", rd, got, pipe)
	}
	xpWantAccess(t, p, rd, syscall.O_RDONLY, pipe)
	xpWantAccess(t, c, 1, syscall.O_WRONLY, pipe)
	xpWantHolders(t, p, pipe, map[int][]int{p: {rd}, c: {1}})
	xpWantFull(t, c, 1)
}

// stdin_child.py: the parent waits for a child reading the stdin pipe the
// parent holds open.
func TestXprocStdinChild(t *testing.T) {
	t.Parallel()
	v := StartPython(t, "stdin_child.py")
	t.Logf("ready: %v", v.Info)
	p, c, wr := v.PID, v.TID("child"), v.Int("pipefd")

	xpWantChild(t, "child", c, p, p, "python*")
	call := xpWantCall(t, "parent main thread", p, p, syscall.SYS_WAIT4)
	if int(call.args[0]) != c {
		t.Fatalf("parent waits for %d, want the child %d", call.args[0], c)
	}
	call = xpWantCall(t, "child", c, c, syscall.SYS_READ)
	if call.args[0] != 0 {
		t.Fatalf("child reads fd %d, want 0", call.args[0])
	}

	pipe := xpLink(t, c, 0)
	xpWantPipe(t, pipe)
	if got := xpLink(t, p, wr); got != pipe {
		t.Fatalf("parent's fd %d is %s, child's stdin is %s", wr, got, pipe)
	}
	xpWantAccess(t, p, wr, syscall.O_WRONLY, pipe)
	xpWantAccess(t, c, 0, syscall.O_RDONLY, pipe)
	// The parent holds the only write end: the child would see EOF if
	// the parent closed it.
	xpWantHolders(t, p, pipe, map[int][]int{p: {wr}, c: {0}})
	if n, _ := xpPipeFill(t, c, 0); n != 0 {
		t.Fatalf("child's stdin pipe holds %d bytes, want 0", n)
	}
}

// orphans.py: subprocess.run(shell=True, timeout=...) leaves the shell's
// sleep behind, reparented, in the victim's process group.
func TestXprocOrphans(t *testing.T) {
	t.Parallel()
	v := StartPython(t, "orphans.py")
	t.Logf("ready: %v", v.Info)
	p := v.PID
	orphans, ppids := v.TIDs("orphans"), v.TIDs("orphan_ppid")
	if len(orphans) != 3 || len(ppids) != len(orphans) {
		t.Fatalf("ready line: orphans=%v orphan_ppid=%v, want 3 of each", orphans, ppids)
	}
	xpWantCall(t, "victim main thread", p, p, xpSleeps...)

	group := xpGroup(t, p)
	var sleeps []int
	for pid, pr := range group {
		if pid == p {
			continue
		}
		if pr.ppid == p {
			t.Fatalf("process %d (%s) is still a child of the victim", pid, pr.comm)
		}
		if pr.comm == "sleep" {
			sleeps = append(sleeps, pid)
		}
	}
	slices.Sort(sleeps)
	if !slices.Equal(sleeps, orphans) {
		t.Fatalf("sleep processes of group %d: %v, ready line says %v (group %v)", p, sleeps, orphans, group)
	}
	for i, o := range orphans {
		pr := group[o]
		if pr.ppid != ppids[i] {
			t.Fatalf("orphan %d: ppid %d, ready line says %d", o, pr.ppid, ppids[i])
		}
		// Reparented out of the group: to init or a subreaper.
		if parent, err := xpStatOf(pr.ppid); err != nil || parent.pgrp == p {
			t.Fatalf("orphan %d: parent %d is %+v (%v), want a process outside group %d", o, pr.ppid, parent, err, p)
		} else {
			t.Logf("orphan %d: pgrp %d, reparented to %d (%s)", o, pr.pgrp, pr.ppid, parent.comm)
		}
		xpWantCall(t, "orphan", o, o, xpSleeps...)
	}
}

// tcp_stall.py: the client blocks in recv on a server that accepted and
// sleeps.
func TestXprocTCPStall(t *testing.T) {
	t.Parallel()
	v := StartPython(t, "tcp_stall.py")
	t.Logf("ready: %v", v.Info)
	p, s, port, fd := v.PID, v.TID("server"), v.Int("port"), v.Int("fd")

	xpWantChild(t, "server", s, p, p, "python*")
	call := xpWantCall(t, "client main thread", p, p, syscall.SYS_RECVFROM)
	if int(call.args[0]) != fd {
		t.Fatalf("client receives on fd %d, ready line says fd=%d", call.args[0], fd)
	}
	xpWantCall(t, "server main thread", s, s, xpSleeps...)

	client, ok := xpSockets(t, p)[fd]
	if !ok {
		t.Fatalf("fd %d of the client is not a TCP socket (%s)", fd, xpLink(t, p, fd))
	}
	if client.state != 1 || client.rport != port || client.rxq != 0 || client.txq != 0 {
		t.Fatalf("client socket %+v: want ESTABLISHED to port %d, queues empty", client, port)
	}
	t.Logf("client fd %d: %+v", fd, client)

	const request = len("GET / HTTP/1.0\r\n\r\n")
	var listening, accepted bool
	for sfd, ss := range xpSockets(t, s) {
		t.Logf("server fd %d: %+v", sfd, ss)
		switch {
		case ss.state == 10 && ss.lport == port:
			listening = true
		case ss.state == 1 && ss.lport == port && ss.rport == client.lport:
			// The request sits unread in the server's receive queue.
			if ss.rxq != request {
				t.Fatalf("server's connection: rx_queue %d, want the %d-byte request unread", ss.rxq, request)
			}
			accepted = true
		}
	}
	if !listening || !accepted {
		t.Fatalf("server %d: listening on %d %v, holding the accepted connection from port %d %v",
			s, port, listening, client.lport, accepted)
	}
}
