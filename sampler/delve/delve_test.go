package delve

import (
	"context"
	"debug/elf"
	"errors"
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

	"github.com/go-delve/delve/pkg/proc"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/internal/procstatus"
	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
)

var (
	binDir   string
	buildsMu sync.Mutex
	builds   = map[string]*victimBuild{}
)

type victimBuild struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	if pid := os.Getenv(helperEnv); pid != "" {
		helperMain(pid)
		return
	}
	// The tests of the stop bound set it; the others must not trip it
	// on a loaded machine or under the race detector.
	defaultMaxStop = time.Minute
	dir, err := os.MkdirTemp("", "hangdoc-delve-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// victimBinary builds testdata/victim once per ldflags value.
func victimBinary(t testing.TB, ldflags string) string {
	t.Helper()
	buildsMu.Lock()
	b := builds[ldflags]
	if b == nil {
		b = &victimBuild{}
		builds[ldflags] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() {
		b.path = filepath.Join(binDir, fmt.Sprintf("victim%d", len(builds)))
		cmd := exec.Command("go", "build", "-ldflags="+ldflags, "-o", b.path, "./testdata/victim")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// victim is a started testdata/victim: the launcher is the test's child,
// the victim proper (pid) its grandchild.
type victim struct {
	*testvictim.Victim
	pid int
}

func startVictim(t testing.TB, ldflags string, args ...string) victim {
	t.Helper()
	cmd := exec.Command(victimBinary(t, ldflags), append([]string{"-fork"}, args...)...)
	v := testvictim.StartCmd(t, cmd)
	return victim{v, v.Int("target")}
}

// checkLeftRunning fails unless pid is untraced and not stopped.
func checkLeftRunning(t testing.TB, pid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("victim %d: %v", pid, err)
	}
	st, err := procstatus.Parse(b)
	if err != nil || st.Has&procstatus.HasTracerPid == 0 || st.Has&procstatus.HasState == 0 {
		t.Fatalf("victim %d: status unread: %v", pid, err)
	}
	if st.TracerPid != 0 {
		t.Errorf("victim %d: TracerPid %d after Dump, want 0", pid, st.TracerPid)
	}
	if st.State == 'T' || st.State == 't' {
		t.Errorf("victim %d: state %c after Dump, want running or sleeping", pid, st.State)
	}
}

// checkCodeIntact fails unless the victim's text in memory is its
// executable's .text byte for byte: a breakpoint left behind (0xCC) would
// stop it later with nobody to resume it.
func checkCodeIntact(t testing.TB, pid int) {
	t.Helper()
	f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	if text == nil || f.Type != elf.ET_EXEC {
		t.Fatalf("victim %d: no .text or not a fixed-address executable", pid)
	}
	want, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	got := make([]byte, len(want))
	if _, err := mem.ReadAt(got, int64(text.Addr)); err != nil {
		t.Fatalf("reading victim %d's text: %v", pid, err)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("victim %d: text at %#x is %#x, the executable has %#x", pid, text.Addr+uint64(i), got[i], want[i])
			return
		}
	}
}

func byID(gs []model.Goroutine, id int64) *model.Goroutine {
	for i := range gs {
		if gs[i].ID == id {
			return &gs[i]
		}
	}
	return nil
}

func hasFrame(g *model.Goroutine, fn string) bool {
	return slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return f.Func == fn })
}

func dumpText(gs []model.Goroutine) string {
	var b strings.Builder
	for _, g := range gs {
		fmt.Fprintf(&b, "goroutine %d [%s] thread=%d creator=%d wait=%v refs=%v\n",
			g.ID, g.State, g.Thread, g.CreatorID, g.WaitChans, g.ChanRefs)
		for _, f := range g.Stack {
			fmt.Fprintf(&b, "  %s%s %s:%d\n", f.Func, f.Args, f.File, f.Line)
		}
	}
	return b.String()
}

func TestDump(t *testing.T) {
	const waiters = 3
	v := startVictim(t, "", "-waiters", strconv.Itoa(waiters))
	gs, frozen, err := Dump(context.Background(), v.pid)
	if err != nil {
		t.Fatal(err)
	}
	checkLeftRunning(t, v.pid)
	checkCodeIntact(t, v.pid)
	if frozen <= 0 {
		t.Errorf("frozen = %v, want > 0", frozen)
	}
	defer func() {
		if t.Failed() {
			t.Logf("dump:\n%s", dumpText(gs))
		}
	}()

	// main, accept loop, holder, waiters, ping, pong, sys.
	var user []int64
	for _, g := range gs {
		if !classify.RuntimeGoroutine(g) {
			user = append(user, g.ID)
		}
	}
	if want := 6 + waiters; len(user) != want {
		t.Errorf("%d non-system goroutines %v, want %d", len(user), user, want)
	}
	if g := byID(gs, 1); g == nil || g.State != "select (no cases)" || !hasFrame(g, "main.main") {
		t.Errorf("goroutine 1 = %+v, want main.main in [select (no cases)]", g)
	}
	if !slices.ContainsFunc(gs, func(g model.Goroutine) bool {
		return classify.RuntimeGoroutine(g) && hasFrame(&g, "runtime.forcegchelper")
	}) {
		t.Errorf("no system goroutine running runtime.forcegchelper")
	}

	sys := byID(gs, int64(v.Int("sys")))
	if sys == nil || sys.State != "syscall" || sys.Thread != v.TID("systid") || !sys.LockedToThread || !hasFrame(sys, "main.readRaw") {
		t.Errorf("sys goroutine %d = %+v, want main.readRaw in [syscall] on thread %d, locked to it", v.Int("sys"), sys, v.TID("systid"))
	}

	holder := byID(gs, int64(v.Int("holder")))
	switch {
	case holder == nil:
		t.Fatalf("holder goroutine %d missing", v.Int("holder"))
	case holder.State != "IO wait" || !hasFrame(holder, "os.(*File).Write") || !hasFrame(holder, "main.hold"):
		t.Errorf("holder = [%s] %v, want [IO wait] with os.(*File).Write under main.hold", holder.State, holder.Stack)
	case holder.CreatedBy == nil || holder.CreatedBy.Func != "main.main" || holder.CreatorID != 1:
		t.Errorf("holder created by %+v in goroutine %d, want main.main in goroutine 1", holder.CreatedBy, holder.CreatorID)
	}
	// The runtime's own frames (runtime.gopark, runtime.netpollblock) are
	// hidden, as the traceback hides them.
	if holder != nil && holder.Stack[0].Func != "internal/poll.runtime_pollWait" {
		t.Errorf("holder's innermost frame %q, want internal/poll.runtime_pollWait (runtime frames hidden)", holder.Stack[0].Func)
	}

	// Every waiter's lockSlow frame names the mutex the victim printed.
	mutex := fmt.Sprintf("%#x", v.Addr("mutex"))
	n := 0
	for _, g := range gs {
		if g.State != "sync.Mutex.Lock" {
			continue
		}
		n++
		i := slices.IndexFunc(g.Stack, func(f model.Frame) bool { return f.Func == "internal/sync.(*Mutex).lockSlow" })
		if i < 0 {
			t.Errorf("waiter %d has no lockSlow frame", g.ID)
			continue
		}
		if want := "(" + mutex + ")"; g.Stack[i].Args != want {
			t.Errorf("waiter %d: lockSlow args %q, want %q", g.ID, g.Stack[i].Args, want)
		}
	}
	if n != waiters {
		t.Errorf("%d goroutines in [sync.Mutex.Lock], want %d", n, waiters)
	}

	// ping sends on a and will receive from b; pong the reverse. Each
	// waits on a channel the other refers to: the cycle.
	a, b := fmt.Sprintf("%#x", v.Addr("a")), fmt.Sprintf("%#x", v.Addr("b"))
	ping, pong := byID(gs, int64(v.Int("ping"))), byID(gs, int64(v.Int("pong")))
	if ping == nil || pong == nil {
		t.Fatalf("ping %d or pong %d missing", v.Int("ping"), v.Int("pong"))
	}
	for _, c := range []struct {
		g         *model.Goroutine
		waits     string
		other     *model.Goroutine
		otherName string
	}{{ping, a, pong, "pong"}, {pong, b, ping, "ping"}} {
		if c.g.State != "chan send" || !slices.Equal(c.g.WaitChans, []string{c.waits}) {
			t.Errorf("goroutine %d: [%s] waits on %v, want [chan send] on [%s]", c.g.ID, c.g.State, c.g.WaitChans, c.waits)
		}
		if !slices.Contains(c.other.ChanRefs, c.waits) {
			t.Errorf("%s (goroutine %d) refers to %v, want %s, the channel goroutine %d waits on",
				c.otherName, c.other.ID, c.other.ChanRefs, c.waits, c.g.ID)
		}
	}
}

func TestDumpTwiceFromOtherGoroutines(t *testing.T) {
	v := startVictim(t, "")
	for i := range 2 {
		var (
			gs  []model.Goroutine
			err error
		)
		done := make(chan struct{})
		go func() {
			defer close(done)
			// A goroutine on a thread of its own, as a worker pool's
			// would be: Delve's ptrace calls must not depend on it.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			gs, _, err = Dump(context.Background(), v.pid)
		}()
		<-done
		if err != nil {
			t.Fatalf("dump %d: %v", i+1, err)
		}
		checkLeftRunning(t, v.pid)
		if g := byID(gs, int64(v.Int("holder"))); g == nil || !hasFrame(g, "main.hold") {
			t.Errorf("dump %d: holder %d missing or without main.hold", i+1, v.Int("holder"))
		}
	}
}

// stopAfter is a context whose Err turns to context.Canceled after n
// calls, so a Dump is cancelled at a known point in its reading.
type stopAfter struct {
	context.Context
	mu sync.Mutex
	n  int
}

func (c *stopAfter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

func TestDumpCancelled(t *testing.T) {
	v := startVictim(t, "", "-idle", "200")
	for _, n := range []int{0, 2, 5, 100} {
		t.Run(fmt.Sprintf("after%d", n), func(t *testing.T) {
			ctx := &stopAfter{Context: context.Background(), n: n}
			gs, _, err := Dump(ctx, v.pid)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Dump = %d goroutines, %v; want context.Canceled", len(gs), err)
			}
			if gs != nil {
				t.Errorf("cancelled Dump returned %d goroutines, want none", len(gs))
			}
			// n=0 cancels during the attach, which then detaches in the
			// background: Settle waits for it, as hangdoc does before it
			// exits on a run it gave up.
			if !Settle(10 * time.Second) {
				t.Fatalf("an attach of pid %d was not detached within 10s", v.pid)
			}
			checkLeftRunning(t, v.pid)
			checkCodeIntact(t, v.pid)
		})
	}
	// And the victim is still readable.
	if _, _, err := Dump(context.Background(), v.pid); err != nil {
		t.Fatal(err)
	}
	checkLeftRunning(t, v.pid)
}

func TestDumpPanicDetaches(t *testing.T) {
	v := startVictim(t, "")
	testHook = func(int64) { panic("boom") }
	defer func() { testHook = nil }()
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("Dump panicked with %v, want the reader's panic re-raised", r)
			}
		}()
		Dump(context.Background(), v.pid)
	}()
	checkLeftRunning(t, v.pid)
	checkCodeIntact(t, v.pid)
}

func TestDumpErrors(t *testing.T) {
	t.Run("not Go", func(t *testing.T) {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		_, _, err := Dump(context.Background(), cmd.Process.Pid)
		if !errors.Is(err, ErrNotGo) {
			t.Fatalf("Dump(sleep) = %v, want ErrNotGo", err)
		}
		checkLeftRunning(t, cmd.Process.Pid)
	})
	t.Run("stripped", func(t *testing.T) {
		v := startVictim(t, "-s -w")
		_, _, err := Dump(context.Background(), v.pid)
		if !errors.Is(err, ErrNoDebugInfo) || !strings.Contains(err.Error(), "kernel evidence") {
			t.Fatalf("Dump(stripped) = %v, want ErrNoDebugInfo saying kernel evidence is still reported", err)
		}
		checkLeftRunning(t, v.pid)
	})
	t.Run("no process", func(t *testing.T) {
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		// A reaped child's pid: free until the kernel wraps around.
		_, _, err := Dump(context.Background(), cmd.Process.Pid)
		if !errors.Is(err, sampler.ErrNoProcess) {
			t.Fatalf("Dump(gone) = %v, want ErrNoProcess", err)
		}
	})
	t.Run("own child", func(t *testing.T) {
		cmd := exec.Command(victimBinary(t, ""))
		v := testvictim.StartCmd(t, cmd)
		_, _, err := Dump(context.Background(), v.PID)
		if err == nil || !strings.Contains(err.Error(), "own child") {
			t.Fatalf("Dump(child) = %v, want a refusal naming it our own child", err)
		}
		checkLeftRunning(t, v.PID)
	})
	t.Run("traced", func(t *testing.T) {
		v := startVictim(t, "")
		detach := ptraceAttach(t, v.pid)
		_, _, err := Dump(context.Background(), v.pid)
		detach()
		if !errors.Is(err, ErrTraced) || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
			t.Fatalf("Dump(traced) = %v, want ErrTraced naming pid %d", err, os.Getpid())
		}
		checkLeftRunning(t, v.pid)
	})
}

// ptraceAttach makes this process pid's tracer, from a thread of its own
// (ptrace requests must come from the attaching thread), and returns the
// detach.
func ptraceAttach(t *testing.T, pid int) (detach func()) {
	t.Helper()
	reqs := make(chan func())
	errs := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		for f := range reqs {
			f()
		}
	}()
	do := func(f func() error) error {
		reqs <- func() { errs <- f() }
		return <-errs
	}
	if err := do(func() error {
		if err := syscall.PtraceAttach(pid); err != nil {
			return err
		}
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0x40000000, nil) // __WALL
		return err
	}); err != nil {
		close(reqs)
		t.Fatalf("ptrace attach %d: %v", pid, err)
	}
	return func() {
		if err := do(func() error { return syscall.PtraceDetach(pid) }); err != nil {
			t.Errorf("ptrace detach %d: %v", pid, err)
		}
		close(reqs)
	}
}

// BenchmarkFreeze reports how long one Dump keeps the target stopped.
// BenchmarkFreeze measures how long Delve keeps a target stopped per
// sample, and, side by side, its peer: what a program's own pprof
// endpoint costs it, a runtime.Stack(all) call, which stops the world
// for as long as it prints (measured here in this process, with as many
// parked goroutines).
func BenchmarkFreeze(b *testing.B) {
	for _, n := range []int{20, 10000} {
		b.Run(fmt.Sprintf("delve/goroutines=%d", n), func(b *testing.B) {
			// The victim has 15 goroutines besides the idle ones:
			// 9 of its own (3 mutex waiters) and the runtime's 6.
			v := startVictim(b, "", "-idle", strconv.Itoa(max(n-15, 0)))
			var frozen time.Duration
			var count int
			for b.Loop() {
				gs, f, err := Dump(context.Background(), v.pid)
				if err != nil {
					b.Fatal(err)
				}
				frozen += f
				count = len(gs)
			}
			checkLeftRunning(b, v.pid)
			b.ReportMetric(float64(frozen.Microseconds())/1e3/float64(b.N), "frozen-ms/op")
			b.ReportMetric(float64(count), "goroutines")
		})
		b.Run(fmt.Sprintf("runtime.Stack/goroutines=%d", n), func(b *testing.B) {
			park := make(chan struct{})
			defer close(park)
			for range n - runtime.NumGoroutine() {
				go func() { <-park }()
			}
			buf := make([]byte, 64<<20)
			var frozen time.Duration
			for b.Loop() {
				start := time.Now()
				runtime.Stack(buf, true)
				frozen += time.Since(start)
			}
			b.ReportMetric(float64(frozen.Microseconds())/1e3/float64(b.N), "frozen-ms/op")
			b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
		})
	}
}

func TestState(t *testing.T) {
	r := &reader{statuses: statusWords, waitReasons: []string{"", "GC assist marking", "IO wait"}}
	for _, c := range []struct {
		name   string
		status uint64
		reason int64
		want   string
	}{
		{"running", 2, 0, "running"},
		{"runnable while scanned", gScan | gRunnable, 0, "runnable"},
		{"syscall ignores a stale reason", 3, 2, "syscall"},
		{"waiting with a reason", 4, 2, "IO wait"},
		{"waiting without one", 4, 0, "waiting"},
		{"reason out of range", 4, 9, "unknown wait reason"},
		{"leaked", 10, 2, "IO wait (leaked)"},
		{"status out of range", 42, 0, "???"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := r.state(&proc.G{Status: c.status, WaitReason: c.reason}); got != c.want {
				t.Errorf("state(status %#x, reason %d) = %q, want %q", c.status, c.reason, got, c.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct {
		name    string
		funcTxt string
		closure bool
	}{
		{"main.main", "main.main", false},
		{"main.main.func1", "main.main.func1", true},
		{"main.main.gowrap2", "main.main.gowrap2", true},
		{"net/http.(*conn).serve.func3.1", "net/http.(*conn).serve.func3.1", true},
		{"main.(*T).function", "main.(*T).function", false},
		{"main.Map[go.shape.int,go.shape.string]", "main.Map[...]", false},
		{"main.(*List[go.shape.int]).Push", "main.(*List[...]).Push", false},
		{"runtime.gopanic", "panic", false},
	} {
		if got := funcName(c.name); got != c.funcTxt {
			t.Errorf("funcName(%q) = %q, want %q", c.name, got, c.funcTxt)
		}
		if got := isClosure(c.name); got != c.closure {
			t.Errorf("isClosure(%q) = %v, want %v", c.name, got, c.closure)
		}
	}
}

// BenchmarkSessionFreeze is BenchmarkFreeze's delve half with one Session
// kept across dumps, as a run that samples a target repeatedly keeps it:
// the DWARF is loaded once, before the first stop.
func BenchmarkSessionFreeze(b *testing.B) {
	for _, n := range []int{20, 10000} {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			v := startVictim(b, "", "-idle", strconv.Itoa(max(n-15, 0)))
			s, err := Open(context.Background(), v.pid, Options{MaxStop: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var frozen time.Duration
			var count int
			for b.Loop() {
				res, err := s.Dump(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				frozen += res.Frozen
				count = len(res.Goroutines)
			}
			checkLeftRunning(b, v.pid)
			b.ReportMetric(float64(frozen.Microseconds())/1e3/float64(b.N), "frozen-ms/op")
			b.ReportMetric(float64(count), "goroutines")
		})
	}
}
