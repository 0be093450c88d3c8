package testvictim

// Thread-level Python victims (testdata/victims/py_*.py): a lock held across
// a write to a full pipe, a lock held by a spinning thread, queue workers
// whose feeder died, and a busy process that is not hung. Each test starts
// the victim and checks from /proc (and the victim's source, for line
// numbers) that its ready line tells the truth.
//
// Identifiers here carry a py prefix so they cannot collide with the
// helpers of the other test files of the package.

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
)

// ---- /proc readers ----

// pyCall is one read of /proc/PID/task/TID/syscall.
type pyCall struct {
	raw  string
	nr   int64 // -1: not blocked in a syscall ("running" or "-1 sp pc")
	args [6]uint64
}

func pySyscall(t *testing.T, pid, tid int) pyCall {
	t.Helper()
	raw := procString(t, "/proc/%d/task/%d/syscall", pid, tid)
	c := pyCall{raw: raw, nr: -1}
	f := strings.Fields(raw)
	if len(f) < 7 || f[0] == "running" {
		return c
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatalf("/proc/%d/task/%d/syscall: %q: %v", pid, tid, raw, err)
	}
	if nr < 0 {
		return c
	}
	for i := range c.args {
		c.args[i], err = strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		if err != nil {
			t.Fatalf("/proc/%d/task/%d/syscall: %q: %v", pid, tid, raw, err)
		}
	}
	c.nr = nr
	return c
}

// pyTask is the part of /proc/PID/task/TID/stat the tests look at.
type pyTask struct {
	comm       string
	state      string
	ppid, pgrp int
	ticks      uint64 // utime+stime
}

func pyStat(t *testing.T, pid, tid int) pyTask {
	t.Helper()
	s := procString(t, "/proc/%d/task/%d/stat", pid, tid)
	l, r := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if l < 0 || r < l {
		t.Fatalf("/proc/%d/task/%d/stat: %q", pid, tid, s)
	}
	f := strings.Fields(s[r+1:]) // f[0] is field 3 of proc(5)
	if len(f) < 13 {
		t.Fatalf("/proc/%d/task/%d/stat: %q", pid, tid, s)
	}
	p := pyTask{comm: s[l+1 : r], state: f[0]}
	var errs [4]error
	p.ppid, errs[0] = strconv.Atoi(f[4-3])
	p.pgrp, errs[1] = strconv.Atoi(f[5-3])
	utime, e2 := strconv.ParseUint(f[14-3], 10, 64)
	stime, e3 := strconv.ParseUint(f[15-3], 10, 64)
	errs[2], errs[3] = e2, e3
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatalf("/proc/%d/task/%d/stat: %q: %v", pid, tid, s, err)
	}
	p.ticks = utime + stime
	return p
}

// pyWantTasks waits up to 5 s for pid's threads to be exactly want (the
// reporter thread ends right after writing the ready line, so it may still
// be there at first) and fails if they never are.
func pyWantTasks(t *testing.T, pid int, want []int) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := tasks(t, pid)
		if slices.Equal(got, want) {
			t.Logf("threads of %d: %v", pid, got)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads of %d: %v, want exactly %v", pid, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func pyLink(t *testing.T, pid, fd int) string {
	t.Helper()
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pyFds returns pid's fds whose link is link.
func pyFds(t *testing.T, pid int, link string) []int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd)); err == nil && l == link {
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	return fds
}

// pyHolders maps every live process of process group pgrp that has link
// open to its fds on it.
func pyHolders(t *testing.T, pgrp int, link string) map[int][]int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 3 || f[0] == "Z" || f[2] != strconv.Itoa(pgrp) {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/fd", pid)); err != nil {
			continue
		}
		if fds := pyFds(t, pid, link); len(fds) > 0 {
			out[pid] = fds
		}
	}
	return out
}

const (
	pyFutexWait       = 0
	pyFutexWaitBitset = 9
	pyFutexCmdMask    = 0x7f // strips FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME
)

// pyWantFutexWait fails unless thread pid/tid is blocked in a FUTEX_WAIT
// or FUTEX_WAIT_BITSET (a threading.Lock's sem_wait, the GIL, a join) and
// returns the futex address.
func pyWantFutexWait(t *testing.T, who string, pid, tid int) uint64 {
	t.Helper()
	c := pySyscall(t, pid, tid)
	if c.nr != syscall.SYS_FUTEX {
		t.Fatalf("%s %d: syscall %q, want futex (wchan %s)",
			who, tid, c.raw, procString(t, "/proc/%d/task/%d/wchan", pid, tid))
	}
	if cmd := c.args[1] & pyFutexCmdMask; cmd != pyFutexWait && cmd != pyFutexWaitBitset {
		t.Fatalf("%s %d: futex op %#x, want a FUTEX_WAIT", who, tid, c.args[1])
	}
	return c.args[0]
}

// pyWantSameFutex fails unless every tid waits in futex on one address,
// which it returns.
func pyWantSameFutex(t *testing.T, who string, pid int, tids []int) uint64 {
	t.Helper()
	if len(tids) == 0 {
		t.Fatalf("no %s", who)
	}
	addr := pyWantFutexWait(t, who, pid, tids[0])
	for _, tid := range tids[1:] {
		if a := pyWantFutexWait(t, who, pid, tid); a != addr {
			t.Fatalf("%s %d waits on futex %#x, %s %d on %#x: not one lock", who, tid, a, who, tids[0], addr)
		}
	}
	t.Logf("%s %v: all in futex wait on %#x", who, tids, addr)
	return addr
}

// pyWantLine fails unless line n of victim script name, stripped, is text,
// and returns the lines of the script.
func pyWantLine(t *testing.T, name string, n int, text string) []string {
	t.Helper()
	b, err := os.ReadFile(Script(t, name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if n < 1 || n > len(lines) || strings.TrimSpace(lines[n-1]) != text {
		got := "(no such line)"
		if n >= 1 && n <= len(lines) {
			got = strings.TrimSpace(lines[n-1])
		}
		t.Fatalf("%s:%d is %q, want %q", name, n, got, text)
	}
	return lines
}

// pyWantComm fails unless thread tid is named name (Python sets the OS
// thread name from the threading name since 3.14, truncated to 15 bytes)
// or still carries the process's name (older Pythons).
func pyWantComm(t *testing.T, pid, tid int, name string) {
	t.Helper()
	proc := pyStat(t, pid, pid).comm
	if len(name) > 15 {
		name = name[:15]
	}
	if c := pyStat(t, pid, tid).comm; c != name && c != proc {
		t.Fatalf("thread %d is named %q, want %q or the process's %q", tid, c, name, proc)
	}
}

// ---- the victims ----

// py_ndjson_pipe.py: four writers share `with out_lock:`; the one inside
// blocks writing fd 1, a full pipe to a consumer child reading a line per
// 10 s; the three others wait for the lock.
func TestPyNDJSONPipe(t *testing.T) {
	t.Parallel()
	v := StartPython(t, "py_ndjson_pipe.py")
	t.Logf("ready: %v", v.Info)
	p, holder, waiters, cons := v.PID, v.TID("holder"), v.TIDs("waiters"), v.TID("consumer")
	pyWantLine(t, "py_ndjson_pipe.py", v.Int("lockline"), "with out_lock:")

	if len(waiters) != 3 || slices.Contains(waiters, holder) || slices.Contains(waiters, p) || !slices.IsSorted(waiters) {
		t.Fatalf("holder %d, waiters %v: want 3 waiters, ascending, other than the holder and the main thread", holder, waiters)
	}
	pyWantTasks(t, p, append([]int{p, holder}, waiters...))
	for _, tid := range append([]int{holder}, waiters...) {
		// Which writer holds the lock is not known: check the name pattern.
		c := pyStat(t, p, tid).comm
		if c != pyStat(t, p, p).comm && !(strings.HasPrefix(c, "writer-") && len(c) == len("writer-0")) {
			t.Fatalf("thread %d is named %q, want writer-N or the process's name", tid, c)
		}
	}

	// The holder is in write(1, buf, n) with a whole NDJSON line (atomic:
	// at most PIPE_BUF bytes).
	for round := range 2 {
		c := pySyscall(t, p, holder)
		if c.nr != syscall.SYS_WRITE || c.args[0] != 1 || c.args[2] == 0 || c.args[2] > 4096 {
			t.Fatalf("holder %d: syscall %q, want write(1, buf, 1..4096)", holder, c.raw)
		}
		if round == 0 {
			t.Logf("holder %d: syscall %s", holder, c.raw)
			time.Sleep(300 * time.Millisecond) // still there a moment later
		}
	}
	lock := pyWantSameFutex(t, "waiter", p, waiters)
	if main := pyWantFutexWait(t, "main thread", p, p); main == lock {
		t.Fatalf("main thread waits on the waiters' futex %#x, want its join", lock)
	}

	// fd 1 is a full pipe whose only other end is the consumer's stdin.
	pipe := pyLink(t, p, 1)
	if !strings.HasPrefix(pipe, "pipe:[") {
		t.Fatalf("victim's fd 1 is %q, want a pipe", pipe)
	}
	ct := pyStat(t, cons, cons)
	if !strings.HasPrefix(ct.comm, "python") || ct.ppid != p || ct.pgrp != p || ct.state == "Z" {
		t.Fatalf("consumer %d: comm %q ppid %d pgrp %d state %s, want a live python child of %d in its group",
			cons, ct.comm, ct.ppid, ct.pgrp, ct.state, p)
	}
	if got := pyLink(t, cons, 0); got != pipe {
		t.Fatalf("consumer's fd 0 is %s, victim's fd 1 is %s", got, pipe)
	}
	holders := pyHolders(t, p, pipe)
	if want := map[int][]int{p: {1}, cons: {0}}; len(holders) != 2 ||
		!slices.Equal(holders[p], want[p]) || !slices.Equal(holders[cons], want[cons]) {
		t.Fatalf("holders of %s: %v, want %v", pipe, holders, want)
	}
	if c := pySyscall(t, cons, cons); !slices.Contains([]int64{syscall.SYS_NANOSLEEP, syscall.SYS_CLOCK_NANOSLEEP, syscall.SYS_READ}, c.nr) {
		t.Fatalf("consumer %d: syscall %q, want a sleep (or its once-in-10-s read)", cons, c.raw)
	}
	queued, size := xpPipeFill(t, p, 1)
	if queued <= size-os.Getpagesize() || queued > size {
		t.Fatalf("pipe %s holds %d of %d bytes: not full", pipe, queued, size)
	}
	t.Logf("pipe %s holds %d of %d bytes", pipe, queued, size)
}

// py_spin_renderers.py: renderer-0 spins forever inside `with page_lock:`,
// renderer-1..7 wait for the lock.
func TestPySpinRenderers(t *testing.T) {
	t.Parallel()
	v := StartPython(t, "py_spin_renderers.py")
	t.Logf("ready: %v", v.Info)
	p, holder, waiters := v.PID, v.TID("holder"), v.TIDs("waiters")
	lines := pyWantLine(t, "py_spin_renderers.py", v.Int("lockline"), "with page_lock:")
	loop := v.Int("loopline")
	pyWantLine(t, "py_spin_renderers.py", loop, "page = (page + 1) % PAGES")
	if loop < 2 || !strings.HasPrefix(strings.TrimSpace(lines[loop-2]), "while ") || loop <= v.Int("lockline") {
		t.Fatalf("loopline %d is not the first line of a while body after lockline %d", loop, v.Int("lockline"))
	}

	if len(waiters) != 7 || slices.Contains(waiters, holder) || slices.Contains(waiters, p) || !slices.IsSorted(waiters) {
		t.Fatalf("holder %d, waiters %v: want 7 waiters, ascending, other than the holder and the main thread", holder, waiters)
	}
	// Once the reporter is gone nothing else wants the GIL: the spinner
	// keeps it and never enters the kernel.
	pyWantTasks(t, p, append([]int{p, holder}, waiters...))
	pyWantComm(t, p, holder, "renderer-0")
	for _, tid := range waiters {
		c := pyStat(t, p, tid).comm
		if c != pyStat(t, p, p).comm && !(strings.HasPrefix(c, "renderer-") && len(c) == len("renderer-0") && c != "renderer-0") {
			t.Fatalf("waiter %d is named %q, want renderer-1..7 or the process's name", tid, c)
		}
	}

	var ticks [2]uint64
	for i := range ticks {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		st := pyStat(t, p, holder)
		if st.state != "R" {
			t.Fatalf("holder %d: state %s, want R", holder, st.state)
		}
		if c := pySyscall(t, p, holder); c.nr != -1 {
			t.Fatalf("holder %d: syscall %q, want running (not in a syscall)", holder, c.raw)
		}
		ticks[i] = st.ticks
		pyWantSameFutex(t, "waiter", p, waiters)
	}
	if ticks[1] <= ticks[0] {
		// A loaded machine may give it no tick in 300 ms: watch longer.
		growing(t, fmt.Sprintf("holder %d", holder), ticks[0], func() uint64 { return pyStat(t, p, holder).ticks })
	}
	t.Logf("holder %d: CPU time %d -> %d ticks in 300 ms", holder, ticks[0], ticks[1])
	pyWantFutexWait(t, "main thread", p, p)
}

// py_dead_feeder.py: eight workers in queue.Queue.get(); the feeder put two
// items and died of an unlogged KeyError.
func TestPyDeadFeeder(t *testing.T) {
	t.Parallel()
	v := StartPython(t, "py_dead_feeder.py")
	t.Logf("ready: %v", v.Info)
	p, workers, feeder := v.PID, v.TIDs("workers"), v.TID("feeder")
	if v.Int("feeder_dead") != 1 {
		t.Fatalf("feeder_dead=%s, want 1", v.Info["feeder_dead"])
	}
	if len(workers) != 8 || slices.Contains(workers, p) || slices.Contains(workers, feeder) {
		t.Fatalf("workers %v (feeder %d): want 8 threads other than the main thread and the feeder", workers, feeder)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", p, feeder)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("feeder %d: /proc/%d/task/%d: %v, want it gone", feeder, p, feeder, err)
	}
	// The feeder and the reporter are gone: the main thread and the workers
	// are all that is left. (Python 3.11 leaves every thread named like
	// the process, so the names cannot tell the feeder is gone; 3.14+
	// would name it "feeder".)
	pyWantTasks(t, p, append([]int{p}, workers...))
	for _, tid := range tasks(t, p) {
		if c := pyStat(t, p, tid).comm; c == "feeder" {
			t.Fatalf("thread %d is named feeder", tid)
		}
	}
	for i, tid := range workers {
		pyWantComm(t, p, tid, fmt.Sprintf("worker-%d", i))
	}

	// Each worker waits in Condition.wait on a lock of its own.
	addrs := map[uint64]int{}
	for _, tid := range workers {
		a := pyWantFutexWait(t, "worker", p, tid)
		if other, dup := addrs[a]; dup {
			t.Fatalf("workers %d and %d wait on one futex %#x, want a waiter lock each", other, tid, a)
		}
		addrs[a] = tid
	}
	if a := pyWantFutexWait(t, "main thread", p, p); addrs[a] != 0 {
		t.Fatalf("main thread waits on worker %d's futex %#x", addrs[a], a)
	}
	t.Logf("workers %v: each in futex wait on its own address", workers)
	if s := v.Stderr(); s != "" {
		t.Fatalf("the feeder's death was logged: stderr %q", s)
	}
}

// py_working.py: three hashers keep the CPUs busy; not hung.
func TestPyWorking(t *testing.T) {
	t.Parallel()
	v := StartPython(t, "py_working.py")
	t.Logf("ready: %v", v.Info)
	p, workers := v.PID, v.TIDs("workers")
	if len(workers) != 3 || slices.Contains(workers, p) {
		t.Fatalf("workers %v: want 3 threads other than the main thread", workers)
	}
	pyWantTasks(t, p, append([]int{p}, workers...))
	for i, tid := range workers {
		pyWantComm(t, p, tid, fmt.Sprintf("hasher-%d", i))
	}
	before := make([]uint64, len(workers))
	for i, tid := range workers {
		before[i] = pyStat(t, p, tid).ticks
	}
	// Each worker's CPU time must grow. On a loaded machine three threads
	// that share the GIL may get no tick in a short while: watch each one
	// until it has grown, within a bound that only a stopped worker exceeds.
	for i, tid := range workers {
		growing(t, fmt.Sprintf("worker %d", tid), before[i], func() uint64 { return pyStat(t, p, tid).ticks })
	}
	pyWantFutexWait(t, "main thread", p, p)
}
