package testvictim

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ---- /proc readers for the checks ----

// sysState is one read of /proc/PID/task/TID/syscall.
type sysState struct {
	raw     string
	inCall  bool // blocked in a syscall: nr and args are valid
	nr      int64
	args    [6]uint64
	running bool // "running" or "-1 sp pc": not in a syscall
}

func readSyscall(t *testing.T, pid, tid int) sysState {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
	if err != nil {
		t.Fatalf("reading syscall of %d/%d: %v", pid, tid, err)
	}
	s := sysState{raw: strings.TrimSpace(string(b))}
	f := strings.Fields(s.raw)
	if len(f) == 0 {
		t.Fatalf("empty /proc/%d/task/%d/syscall", pid, tid)
	}
	if f[0] == "running" {
		s.running = true
		return s
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatalf("/proc/%d/task/%d/syscall: %q: %v", pid, tid, s.raw, err)
	}
	if nr < 0 {
		s.running = true
		return s
	}
	if len(f) < 7 {
		t.Fatalf("/proc/%d/task/%d/syscall: short line %q", pid, tid, s.raw)
	}
	s.inCall, s.nr = true, nr
	for i := range s.args {
		v, err := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		if err != nil {
			t.Fatalf("/proc/%d/task/%d/syscall: %q: %v", pid, tid, s.raw, err)
		}
		s.args[i] = v
	}
	return s
}

func procString(t *testing.T, format string, a ...any) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf(format, a...))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func comm(t *testing.T, pid, tid int) string {
	t.Helper()
	return procString(t, "/proc/%d/task/%d/comm", pid, tid)
}

// statFields returns the fields of /proc/PID/task/TID/stat after the comm,
// so that index 0 is field 3 (state) of proc(5).
func statFields(t *testing.T, pid, tid int) []string {
	t.Helper()
	s := procString(t, "/proc/%d/task/%d/stat", pid, tid)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		t.Fatalf("bad stat %q", s)
	}
	return strings.Fields(s[i+1:])
}

// cpuTicks is utime+stime (fields 14 and 15) of a thread.
func cpuTicks(t *testing.T, pid, tid int) uint64 {
	t.Helper()
	f := statFields(t, pid, tid)
	u, err1 := strconv.ParseUint(f[14-3], 10, 64)
	s, err2 := strconv.ParseUint(f[15-3], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad utime/stime in %v", f)
	}
	return u + s
}

func statusField(t *testing.T, path, key string) string {
	t.Helper()
	for _, line := range strings.Split(procString(t, "%s", path), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no %s", path, key)
	return ""
}

// tasks returns the TIDs of /proc/PID/task in numeric order.
func tasks(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, n)
		}
	}
	slices.Sort(tids)
	return tids
}

// glibcMutex is the head of a glibc pthread_mutex_t (x86_64 and aarch64).
type glibcMutex struct {
	lock  uint32 // futex word: 0 free, 1 locked, 2 locked with waiters
	owner int32  // TID of the owner, at +8
	kind  int32  // at +16
}

func readMutex(t *testing.T, pid int, addr uint64) glibcMutex {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 20)
	if _, err := f.ReadAt(b, int64(addr)); err != nil {
		t.Fatalf("reading mutex at %#x of %d: %v", addr, pid, err)
	}
	le := binary.LittleEndian
	return glibcMutex{
		lock:  le.Uint32(b[0:]),
		owner: int32(le.Uint32(b[8:])),
		kind:  int32(le.Uint32(b[16:])),
	}
}

const (
	futexWait        = 0
	futexWaitBitset  = 9
	futexCmdMask     = 0x7f // strips FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME
	futexPrivateFlag = 0x80
)

// checkMutexWaiter checks that tid is blocked in FUTEX_WAIT on the mutex at
// lock with the "contended" value 2, as glibc's __lll_lock_wait does.
func checkMutexWaiter(t *testing.T, pid, tid int, lock uint64) {
	t.Helper()
	s := readSyscall(t, pid, tid)
	if !s.inCall || s.nr != syscall.SYS_FUTEX || s.args[0] != lock {
		t.Errorf("thread %d (%s): want futex on %#x, syscall is %q", tid, comm(t, pid, tid), lock, s.raw)
		return
	}
	if op := s.args[1]; op&futexCmdMask != futexWait || op&futexPrivateFlag == 0 {
		t.Errorf("thread %d: futex op %#x, want FUTEX_WAIT_PRIVATE", tid, op)
	}
	if s.args[2] != 2 {
		t.Errorf("thread %d: futex val %d, want 2", tid, s.args[2])
	}
}

// checkJoining checks that the main thread is in the futex wait of
// pthread_join: a FUTEX_WAIT_BITSET on the joined thread's tid word.
func checkJoining(t *testing.T, pid int, notOn ...uint64) {
	t.Helper()
	s := readSyscall(t, pid, pid)
	if !s.inCall || s.nr != syscall.SYS_FUTEX {
		t.Errorf("main thread %d: want futex (pthread_join), syscall is %q", pid, s.raw)
		return
	}
	for _, a := range notOn {
		if s.args[0] == a {
			t.Errorf("main thread %d waits on %#x, which is a mutex", pid, a)
		}
	}
	if s.args[1]&futexCmdMask != futexWaitBitset {
		t.Errorf("main thread %d: futex op %#x, want FUTEX_WAIT_BITSET", pid, s.args[1])
	}
}

func checkTaskCount(t *testing.T, pid, want int) {
	t.Helper()
	if got := len(tasks(t, pid)); got != want {
		t.Errorf("pid %d has %d threads, want %d", pid, got, want)
	}
}

// ---- the victims ----

func TestAbba(t *testing.T) {
	t.Parallel()
	v := Start(t, Build(t, "abba"))
	left, right := v.TID("left"), v.TID("right")
	m1, m2 := v.Addr("m1"), v.Addr("m2")
	t.Logf("ready: %v", v.Info)

	if got := comm(t, v.PID, left); got != "left" {
		t.Errorf("left thread comm = %q", got)
	}
	if got := comm(t, v.PID, right); got != "right" {
		t.Errorf("right thread comm = %q", got)
	}
	checkTaskCount(t, v.PID, 3)
	checkMutexWaiter(t, v.PID, left, m2)
	checkMutexWaiter(t, v.PID, right, m1)
	checkJoining(t, v.PID, m1, m2)

	for _, c := range []struct {
		name  string
		addr  uint64
		owner int
	}{{"m1", m1, left}, {"m2", m2, right}} {
		m := readMutex(t, v.PID, c.addr)
		if m.lock != 2 || int(m.owner) != c.owner || m.kind != 0 {
			t.Errorf("%s = %+v, want lock 2, owner %d, kind 0", c.name, m, c.owner)
		}
	}
}

func TestPipeholder(t *testing.T) {
	t.Parallel()
	v := Start(t, Build(t, "pipeholder"))
	holder, waiters := v.TID("holder"), v.TIDs("waiters")
	lock, reader, pipefd := v.Addr("lock"), v.TID("reader"), v.Int("pipefd")
	t.Logf("ready: %v", v.Info)

	checkTaskCount(t, v.PID, 9)
	if len(waiters) != 7 {
		t.Errorf("%d waiters, want 7", len(waiters))
	}
	seen := map[string]bool{}
	for _, tid := range append([]int{holder}, waiters...) {
		c := comm(t, v.PID, tid)
		if !strings.HasPrefix(c, "worker-") || seen[c] {
			t.Errorf("thread %d comm %q: want a distinct worker-N", tid, c)
		}
		seen[c] = true
	}

	s := readSyscall(t, v.PID, holder)
	if !s.inCall || s.nr != syscall.SYS_WRITE || s.args[0] != uint64(pipefd) || s.args[2] != 512 {
		t.Errorf("holder %d: want write(%d, _, 512), syscall is %q", holder, pipefd, s.raw)
	}
	for _, w := range waiters {
		checkMutexWaiter(t, v.PID, w, lock)
	}
	checkJoining(t, v.PID, lock)
	if m := readMutex(t, v.PID, lock); m.lock != 2 || int(m.owner) != holder || m.kind != 0 {
		t.Errorf("lock = %+v, want lock 2, owner %d (holder), kind 0", m, holder)
	}

	// The reader is a child of the victim and holds the other end of the
	// victim's pipe.
	if f := strings.Fields(procString(t, "/proc/%d/stat", reader)); len(f) < 4 || f[3] != strconv.Itoa(v.PID) {
		t.Errorf("reader %d: ppid field %v, want %d", reader, f, v.PID)
	}
	if c := comm(t, reader, reader); c != "reader" {
		t.Errorf("reader comm %q", c)
	}
	pipe, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", v.PID, pipefd))
	if err != nil || !strings.HasPrefix(pipe, "pipe:[") {
		t.Fatalf("victim fd %d: %q, %v; want a pipe", pipefd, pipe, err)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", reader))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, fd := range fds {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", reader, fd.Name())); l == pipe {
			found = true
		}
	}
	if !found {
		t.Errorf("reader %d has no fd on %s", reader, pipe)
	}
}

func TestSpinholder(t *testing.T) {
	t.Parallel()
	v := Start(t, Build(t, "spinholder"))
	holder, waiters, lock := v.TID("holder"), v.TIDs("waiters"), v.Addr("lock")
	t.Logf("ready: %v", v.Info)

	checkTaskCount(t, v.PID, 9)
	if c := comm(t, v.PID, holder); c != "renderer-0" {
		t.Errorf("holder comm %q, want renderer-0", c)
	}
	if len(waiters) != 7 {
		t.Errorf("%d waiters, want 7", len(waiters))
	}
	for _, w := range waiters {
		checkMutexWaiter(t, v.PID, w, lock)
	}
	checkJoining(t, v.PID, lock)
	if m := readMutex(t, v.PID, lock); m.lock != 2 || int(m.owner) != holder || m.kind != 0 {
		t.Errorf("lock = %+v, want lock 2, owner %d (holder), kind 0", m, holder)
	}

	// The holder burns CPU in user space and never enters a syscall.
	before := cpuTicks(t, v.PID, holder)
	for range 5 {
		if s := readSyscall(t, v.PID, holder); !s.running {
			t.Errorf("holder %d is in a syscall: %q", holder, s.raw)
		}
		time.Sleep(60 * time.Millisecond)
	}
	growing(t, fmt.Sprintf("holder %d", holder), before, func() uint64 { return cpuTicks(t, v.PID, holder) })
}

func TestWorking(t *testing.T) {
	t.Parallel()
	v := Start(t, Build(t, "working"))
	workers := v.TIDs("workers")
	t.Logf("ready: %v", v.Info)

	checkTaskCount(t, v.PID, 5)
	if len(workers) != 4 {
		t.Fatalf("%d workers, want 4", len(workers))
	}
	checkJoining(t, v.PID)
	type sample struct{ cpu, vol uint64 }
	read := func(tid int) sample {
		p := fmt.Sprintf("/proc/%d/task/%d/status", v.PID, tid)
		vol, err := strconv.ParseUint(statusField(t, p, "voluntary_ctxt_switches"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return sample{cpuTicks(t, v.PID, tid), vol}
	}
	before := map[int]sample{}
	for i, tid := range workers {
		if c := comm(t, v.PID, tid); c != fmt.Sprintf("cruncher-%d", i) {
			t.Errorf("worker %d comm %q, want cruncher-%d", tid, c, i)
		}
		before[tid] = read(tid)
	}
	// Each worker must keep both using CPU and blocking voluntarily. On a
	// loaded machine they may get little CPU, so poll for a while.
	pending := map[int]bool{}
	for _, tid := range workers {
		pending[tid] = true
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		for tid := range pending {
			a, b := before[tid], read(tid)
			if b.cpu > a.cpu && b.vol >= a.vol+3 {
				delete(pending, tid)
			}
		}
	}
	for tid := range pending {
		a, b := before[tid], read(tid)
		t.Errorf("worker %d does not look busy after 30s: CPU ticks %d -> %d, voluntary switches %d -> %d",
			tid, a.cpu, b.cpu, a.vol, b.vol)
	}
}

func testManyThreads(t *testing.T, n int) {
	v := Start(t, Build(t, "manythreads"), strconv.Itoa(n))
	if got := v.Int("threads"); got != n {
		t.Errorf("threads=%d, want %d", got, n)
	}
	if got := statusField(t, fmt.Sprintf("/proc/%d/status", v.PID), "Threads"); got != strconv.Itoa(n+1) {
		t.Errorf("Threads: %s, want %d", got, n+1)
	}
	tids := tasks(t, v.PID)
	if len(tids) != n+1 {
		t.Errorf("%d tasks, want %d", len(tids), n+1)
	}
	bad := 0
	for _, tid := range tids {
		if s := readSyscall(t, v.PID, tid); !s.inCall || s.nr != syscall.SYS_FUTEX {
			if bad++; bad <= 5 {
				t.Errorf("thread %d not in futex: %q", tid, s.raw)
			}
		}
	}
	if c := comm(t, v.PID, tids[len(tids)-1]); !strings.HasPrefix(c, "parked-") {
		t.Errorf("last thread comm %q, want parked-N", c)
	}
}

func TestManyThreads(t *testing.T) {
	t.Parallel()
	t.Run("default", func(t *testing.T) {
		v := Start(t, Build(t, "manythreads"))
		if got := v.Int("threads"); got != 1000 {
			t.Errorf("default threads=%d, want 1000", got)
		}
	})
	t.Run("100", func(t *testing.T) { testManyThreads(t, 100) })
	t.Run("10000", func(t *testing.T) {
		if testing.Short() {
			t.Skip("10000 threads: skipped in -short mode")
		}
		testManyThreads(t, 10000)
	})
}

// ---- the helper itself ----

func TestBuildOncePerName(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	paths := make([]string, 4)
	for i := range paths {
		wg.Go(func() { paths[i] = Build(t, "abba") })
	}
	wg.Wait()
	for _, p := range paths {
		if p != paths[0] {
			t.Fatalf("Build returned different paths: %v", paths)
		}
	}
	if fi, err := os.Stat(paths[0]); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("built victim %s: %v", paths[0], err)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "testdata", "victims", "abba.c")); err != nil {
		t.Fatalf("RepoRoot %s: %v", root, err)
	}
}

func TestParseReady(t *testing.T) {
	t.Parallel()
	info, err := ParseReady("ready pid=12 left=13 m1=0x55d0c0ffee20 waiters=1,2,3 empty=")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pid": "12", "left": "13", "m1": "0x55d0c0ffee20", "waiters": "1,2,3", "empty": ""}
	if len(info) != len(want) {
		t.Fatalf("got %v, want %v", info, want)
	}
	for k, w := range want {
		if info[k] != w {
			t.Errorf("%s = %q, want %q", k, info[k], w)
		}
	}
	for _, bad := range []string{"", "readyx pid=1", "ready pid", "ready =1", "ready a=1 a=2", "pid=1"} {
		if _, err := ParseReady(bad); err == nil {
			t.Errorf("ParseReady(%q) succeeded", bad)
		}
	}

	v := &Victim{t: t, Info: want}
	if v.TID("left") != 13 || v.Addr("m1") != 0x55d0c0ffee20 {
		t.Errorf("TID/Addr: %d %#x", v.TID("left"), v.Addr("m1"))
	}
	if got := v.TIDs("waiters"); len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Errorf("TIDs = %v", got)
	}
	if got := v.TIDs("empty"); len(got) != 0 {
		t.Errorf("TIDs(empty) = %v", got)
	}
}

// fakeTB records failures and cleanups so that failure paths of StartCmd
// can be tested. Methods not overridden here must not be called.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	failed   string
	cleanups []func()
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	f.cleanups = append(f.cleanups, fn)
	f.mu.Unlock()
}

// run runs fn as a test body on f and then its cleanups, returning the
// failure message ("" if none).
func (f *fakeTB) run(fn func(tb testing.TB)) string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	return f.failed
}

func TestStartCmdFailures(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal("no sh on this machine")
	}
	cases := []struct{ name, script, want string }{
		{"exits early", "echo oops >&2; echo not-ready; exit 3", "oops"},
		{"wrong pid", "echo ready pid=1; exec sleep 60", "pid=1"},
		{"bad line", "echo ready novalue; exec sleep 60", "not key=value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeTB{TB: t}
			msg := f.run(func(tb testing.TB) { StartCmd(tb, exec.Command(sh, "-c", c.script)) })
			if !strings.Contains(msg, c.want) {
				t.Errorf("failure %q does not mention %q", msg, c.want)
			}
		})
	}
}

func TestStartCmdKillsProcessGroup(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal("no sh on this machine")
	}
	f := &fakeTB{TB: t}
	var v *Victim
	var bg int
	msg := f.run(func(tb testing.TB) {
		// A background grandchild in the same process group, and a ready
		// line written by the started process itself.
		v = StartCmd(tb, exec.Command(sh, "-c", `sleep 60 & echo "ready pid=$$ bg=$!"; wait`))
		bg = v.TID("bg")
		if pgid, err := syscall.Getpgid(v.PID); err != nil || pgid != v.PID {
			t.Errorf("victim pgid %d, %v; want its own group %d", pgid, err, v.PID)
		}
		if pgid, err := syscall.Getpgid(bg); err != nil || pgid != v.PID {
			t.Errorf("grandchild pgid %d, %v; want %d", pgid, err, v.PID)
		}
	})
	if msg != "" {
		t.Fatal(msg)
	}
	if v.Cmd.ProcessState == nil {
		t.Errorf("victim not reaped by cleanup")
	}
	// The grandchild is reparented and reaped by init or a subreaper; give
	// it a moment, then it must be gone (or at most a zombie).
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", bg))
		if err != nil {
			break
		}
		if f := strings.Fields(string(st)); len(f) > 2 && (f[2] == "Z" || f[2] == "X") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive after cleanup: %s", bg, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// growing waits until read's CPU ticks pass before. A thread that burns CPU
// may get no tick for a while on a loaded machine, so it is watched for up
// to 30 s: only a thread that does not run at all stays put that long.
func growing(t *testing.T, what string, before uint64, read func() uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	after := read()
	for after <= before && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		after = read()
	}
	if after <= before {
		t.Fatalf("%s: CPU time %d then %d ticks 30 s later, want growing", what, before, after)
	}
	t.Logf("%s: CPU time %d -> %d ticks", what, before, after)
}
