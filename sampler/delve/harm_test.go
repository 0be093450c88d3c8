package delve

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/dstate"
	"github.com/hangdoc/hangdoc/internal/fusehang"
	"github.com/hangdoc/hangdoc/internal/harmcheck"
	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// helperEnv makes the test binary a process that runs one Dump of the pid
// it names and exits: the tracer the kill tests kill.
const helperEnv = "HANGDOC_DELVE_HELPER_PID"

func helperMain(pidText string) {
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var opts Options
	if d, err := time.ParseDuration(os.Getenv("HANGDOC_DELVE_HELPER_MAXSTOP")); err == nil {
		opts.MaxStop = d
	}
	if n, err := strconv.Atoi(os.Getenv("HANGDOC_DELVE_HELPER_MAXG")); err == nil {
		opts.MaxGoroutines = n
	}
	fmt.Fprintln(os.Stderr, "hangdoc-helper: started")
	res, err := DumpWith(context.Background(), pid, opts)
	fmt.Printf("read=%d total=%d frozen=%v cut=%v err=%v\n", len(res.Goroutines), res.Total, res.Frozen, res.Cut, err)
	if err != nil && !errors.Is(err, ErrMaxStop) {
		fmt.Fprintln(os.Stderr, "hangdoc-helper:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "hangdoc-helper: done")
	os.Exit(0)
}

// heartbeat is a started goheartbeat victim.
type heartbeat struct {
	*testvictim.Victim
	pid  int    // the victim proper (the grandchild with -fork)
	beat string // its heartbeat file
}

func startHeartbeat(t testing.TB, fork bool, args ...string) heartbeat {
	t.Helper()
	beat := filepath.Join(t.TempDir(), "beat")
	args = append([]string{"-beat", beat}, args...)
	if fork {
		args = append([]string{"-fork"}, args...)
	}
	v := testvictim.Start(t, testvictim.BuildGo(t, "goheartbeat"), args...)
	pid := v.PID
	if fork {
		pid = v.Int("target")
	}
	return heartbeat{v, pid, beat}
}

// wantUnharmed fails unless the victim runs on as before: no thread
// stopped, no tracer, heartbeat advancing, code intact.
func wantUnharmed(t testing.TB, v heartbeat) {
	t.Helper()
	if err := harmcheck.Check(v.pid, v.beat); err != nil {
		t.Fatal(err)
	}
}

// waitState waits until pid's state is want. guard only bounds a failure.
func waitState(t testing.TB, pid int, want string) {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for harmcheck.State(pid) != want {
		if time.Now().After(end) {
			t.Fatalf("pid %d: state %q, want %q", pid, harmcheck.State(pid), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestDumpLeavesForeignStop: a stop someone else makes (a user's kill
// -STOP, job control) before or during a Dump is still in force after it:
// hangdoc never sends SIGCONT and its detach leaves a group stop as is.
func TestDumpLeavesForeignStop(t *testing.T) {
	for _, when := range []string{"before", "while seizing", "while stopped", "before detach"} {
		t.Run(when, func(t *testing.T) {
			v := startHeartbeat(t, true)
			stop := func() {
				if err := syscall.Kill(v.pid, syscall.SIGSTOP); err != nil {
					t.Error(err)
				}
			}
			switch when {
			case "before":
				stop()
				waitState(t, v.pid, "T")
			case "while seizing":
				hooks.seized = stop
			case "while stopped":
				hooks.stopped = stop
			case "before detach":
				hooks.beforeDetach = stop
			}
			defer func() { hooks.seized, hooks.stopped, hooks.beforeDetach = nil, nil, nil }()
			gs, _, err := Dump(context.Background(), v.pid)
			hooks.seized, hooks.stopped, hooks.beforeDetach = nil, nil, nil
			if err != nil {
				t.Fatalf("Dump: %v", err)
			}
			if g := byID(gs, int64(v.Int("holder"))); g == nil {
				t.Errorf("holder goroutine %d not read", v.Int("holder"))
			}
			// The stop is the user's: the process must be (or become,
			// as its threads take the SIGSTOP) stopped, and stay so.
			waitState(t, v.pid, "T")
			before, _ := harmcheck.Beat(v.beat)
			// Give it every chance to run if something resumed it: a
			// stopped process's heartbeat cannot move, so a wait of a
			// few of its ticks shows whether it does.
			time.Sleep(100 * time.Millisecond)
			after, _ := harmcheck.Beat(v.beat)
			if st := harmcheck.State(v.pid); st != "T" || after != before {
				t.Errorf("after Dump: state %q, heartbeat %d → %d; want it still stopped", st, before, after)
			}
			if tp := harmcheck.TracerPid(v.pid); tp != 0 {
				t.Errorf("TracerPid %d after Dump", tp)
			}
			if err := harmcheck.TextIntact(v.pid); err != nil {
				t.Error(err)
			}
			// Undo the user's stop: now it must run as before.
			if err := syscall.Kill(v.pid, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			wantUnharmed(t, v)
		})
	}
}

// TestDumpResumesOwnStop: a target only hangdoc stopped always runs again.
func TestDumpResumesOwnStop(t *testing.T) {
	v := startHeartbeat(t, true)
	for i := range 3 {
		if _, _, err := Dump(context.Background(), v.pid); err != nil {
			t.Fatalf("dump %d: %v", i+1, err)
		}
		wantUnharmed(t, v)
	}
}

// TestDumpMaxStop: a read that passes the stop bound is given up, the
// error says so and what was read, and the target runs on.
func TestDumpMaxStop(t *testing.T) {
	v := startHeartbeat(t, true, "-idle", "100")
	// The bound is checked against a clock that stands still until the
	// first goroutine has been read, then jumps past it: the next check
	// must give up, however fast or slow the machine.
	const bound = 10 * time.Second
	var fake atomic.Int64
	fake.Store(time.Now().UnixNano())
	clock = func() time.Time { return time.Unix(0, fake.Load()) }
	var once sync.Once
	testHook = func(int64) { once.Do(func() { fake.Add(int64(2 * bound)) }) }
	defer func() { testHook, clock = nil, time.Now }()
	res, err := DumpWith(context.Background(), v.pid, Options{MaxStop: bound})
	testHook, clock = nil, time.Now
	var ms *MaxStopError
	if !errors.Is(err, ErrMaxStop) || !errors.As(err, &ms) {
		t.Fatalf("DumpWith = %v, want ErrMaxStop", err)
	}
	if ms.Read != 1 || ms.Total < 100 || len(res.Goroutines) != 1 || ms.Bound != bound {
		t.Errorf("MaxStopError %+v with %d goroutines, want 1 read of over 100 within %v", ms, len(res.Goroutines), bound)
	}
	if !strings.Contains(err.Error(), "--max-stop") || !strings.Contains(err.Error(), "let go") {
		t.Errorf("error %q does not name --max-stop and say the target was let go", err)
	}
	wantUnharmed(t, v)
}

// TestDumpStuckRead: a read that never returns (a memory read blocked in
// the kernel, here a hook that blocks) is left behind: the target is let
// go at the bound, and the session refuses further dumps.
func TestDumpStuckRead(t *testing.T) {
	v := startHeartbeat(t, true)
	block := make(chan struct{})
	var once sync.Once
	testHook = func(int64) { once.Do(func() { <-block }) }
	// The read's own check of the bound never trips (its clock stands
	// still): the only way out is Dump's wait for the read giving up.
	frozen := time.Now()
	clock = func() time.Time { return frozen }
	defer func() {
		close(block)
		testHook, clock = nil, time.Now
	}()
	s, err := Open(context.Background(), v.pid, Options{MaxStop: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Dump(context.Background())
	if !errors.Is(err, ErrMaxStop) || !strings.Contains(err.Error(), "did not return") {
		t.Fatalf("Dump = %v, want ErrMaxStop saying a read did not return", err)
	}
	wantUnharmed(t, v)
	if _, err := s.Dump(context.Background()); err == nil || !strings.Contains(err.Error(), "did not return") {
		t.Errorf("second Dump on the session = %v, want a refusal", err)
	}
}

// TestDumpNeverWrites: the breakpoints Delve sets on every target are
// refused, so its code is intact even while it is stopped.
func TestDumpNeverWrites(t *testing.T) {
	v := startHeartbeat(t, true)
	var textErr error
	hooks.stopped = func() { textErr = harmcheck.TextIntact(v.pid) }
	defer func() { hooks.stopped = nil }()
	// The check itself takes long under the race detector: no stop bound.
	if _, err := DumpWith(context.Background(), v.pid, Options{MaxStop: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if textErr != nil {
		t.Errorf("while stopped: %v", textErr)
	}
	wantUnharmed(t, v)
}

// killPoints are where TestDumpKilled kills the tracer: the points of
// TestHookEnv, then delays spread over a Dump.
var killPoints = []string{"opened", "seized", "stopped", "read"}

// TestDumpKilled: a tracer SIGKILLed at any point of a Dump leaves the
// target running, untraced, with its code intact. Each trial starts a
// helper process (this test binary) that dumps the victim, kills it at a
// hook point (order-based) or after a random delay, and checks the
// victim. HANGDOC_KILL_TRIALS sets the number of delay trials (default
// 6; RELIABILITY.md records a long run).
func TestDumpKilled(t *testing.T) {
	v := startHeartbeat(t, false, "-idle", "2000")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	trials := 6
	if n, err := strconv.Atoi(os.Getenv("HANGDOC_KILL_TRIALS")); err == nil {
		trials = n
	}
	run := func(t *testing.T, point string, delay time.Duration) {
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+strconv.Itoa(v.pid), TestHookEnv+"="+point)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 16)
		go func() {
			buf := make([]byte, 4096)
			var acc string
			for {
				n, err := stderr.Read(buf)
				acc += string(buf[:n])
				for {
					i := strings.IndexByte(acc, '\n')
					if i < 0 {
						break
					}
					lines <- acc[:i]
					acc = acc[i+1:]
				}
				if err != nil {
					close(lines)
					return
				}
			}
		}()
		var said []string
		if point != "" {
			want := "hangdoc-test-hook: " + point
			for l := range lines {
				said = append(said, l)
				if strings.HasPrefix(l, want) {
					break
				}
			}
		} else {
			for l := range lines {
				if l == "hangdoc-helper: started" {
					break
				}
			}
			time.Sleep(delay)
		}
		cmd.Process.Kill()
		werr := cmd.Wait()
		for l := range lines {
			said = append(said, l)
		}
		if point != "" && !strings.Contains(strings.Join(said, "\n"), "hangdoc-test-hook: "+point) {
			t.Fatalf("the helper never reached %s: %v\n%s", point, werr, strings.Join(said, "\n"))
		}
		if err := harmcheck.Check(v.pid, v.beat); err != nil {
			t.Fatalf("killed at %s%v: %v\nhelper said:\n%s", point, delay, err, strings.Join(said, "\n"))
		}
	}
	for _, p := range killPoints {
		t.Run(p, func(t *testing.T) { run(t, p, 0) })
	}
	for i := range trials {
		// Spread over the whole Dump: loading the DWARF takes most of
		// a second here, the stop a few tens of milliseconds.
		d := time.Duration(rand.Int64N(int64(1500 * time.Millisecond)))
		t.Run(fmt.Sprintf("delay%d", i), func(t *testing.T) { run(t, "", d) })
	}
}

// TestDumpDState: a target with a thread in uninterruptible sleep (a stat
// on a FUSE mount that never answers) is not stopped: Dump refuses up
// front, naming the thread and its wchan, and the target never goes to
// T, not even when the thread wakes. With the up-front check skipped, the
// stop meets the thread, gives up and lets the others go, and the
// interrupt it asked of that thread dies with the tracer thread.
func TestDumpDState(t *testing.T) {
	for _, during := range []bool{false, true} {
		t.Run(fmt.Sprintf("during=%v", during), func(t *testing.T) {
			fs, err := fusehang.Mount(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Close()
			v := startHeartbeat(t, true, "-stat", filepath.Join(fs.Dir, "hang"))
			if err := fs.WaitHeld(1, 20*time.Second); err != nil {
				t.Fatal(err)
			}
			tid := v.TID("stattid")
			waitThreadD(t, v.pid, tid)

			hooks.skipDCheck = during
			defer func() { hooks.skipDCheck = false }()
			_, _, err = Dump(context.Background(), v.pid)
			hooks.skipDCheck = false
			var d *dstate.Error
			if !errors.Is(err, ErrUninterruptible) || !errors.As(err, &d) || d.TID != tid || d.Wchan == "" {
				t.Fatalf("Dump = %v, want ErrUninterruptible naming thread %d and its wchan", err, tid)
			}
			if !strings.Contains(err.Error(), strconv.Itoa(tid)) || !strings.Contains(err.Error(), d.Wchan) {
				t.Errorf("error %q does not name thread %d and wchan %s", err, tid, d.Wchan)
			}
			t.Log(err)
			// Everything but the sleeping thread runs on.
			if err := harmcheck.WaitBeat(v.beat, 3, 20*time.Second); err != nil {
				t.Error(err)
			}
			if s := harmcheck.StoppedThreads(v.pid); len(s) > 0 {
				t.Errorf("stopped threads %v with the thread in D", s)
			}
			// Wake the thread: it must not stop now either.
			if err := fs.Close(); err != nil {
				t.Fatal(err)
			}
			waitThreadNotD(t, v.pid, tid)
			wantUnharmed(t, v)
		})
	}
}

func waitThreadD(t *testing.T, pid, tid int) {
	t.Helper()
	end := time.Now().Add(20 * time.Second) // a failure guard only
	for {
		if s, _ := dstate.State(pid, tid); s == 'D' {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("thread %d never went into D", tid)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitThreadNotD(t *testing.T, pid, tid int) {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for {
		if s, _ := dstate.State(pid, tid); s != 'D' {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("thread %d still in D after the mount was aborted", tid)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkDumpRSS measures the peak memory (max RSS) of a process that
// dumps a target with 100,000 goroutines once, with the default bounds and
// with none, and how many goroutines it read in how long a stop.
func BenchmarkDumpRSS(b *testing.B) {
	v := startHeartbeat(b, false, "-idle", "100000")
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		maxStop, maxG string
	}{
		{"defaults", "", ""},
		{"unbounded", "10m", "-1"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var rss int64
			var said string
			for b.Loop() {
				cmd := exec.Command(self, "-test.run=^$")
				cmd.Env = append(os.Environ(), helperEnv+"="+strconv.Itoa(v.pid),
					"HANGDOC_DELVE_HELPER_MAXSTOP="+c.maxStop, "HANGDOC_DELVE_HELPER_MAXG="+c.maxG)
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				said = strings.TrimSpace(string(out))
				rss = max(rss, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
			}
			b.ReportMetric(float64(rss)/1024, "maxrss-MiB")
			b.Log(said)
		})
	}
	wantUnharmed(b, v)
}

// TestDumpSignalDuringSeize: a signal that reaches a thread between its
// seize and its interrupt is not lost. SIGURG (Go's preemption signal) is
// held where it found the thread and given back on detach; any other is
// delivered at once (here SIGUSR1, which the victim counts).
func TestDumpSignalDuringSeize(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGURG} {
		t.Run(sig.String(), func(t *testing.T) {
			sigfile := filepath.Join(t.TempDir(), "usr1")
			v := startHeartbeat(t, true, "-sigfile", sigfile)
			var held []unix.Signal
			hooks.beforeInterrupt = func(tid int) {
				if err := unix.Tgkill(v.pid, tid, sig); err != nil {
					t.Error(err)
					return
				}
				// Seized, the thread stops as it takes the signal
				// (a signal-delivery stop): wait for it, so the
				// signal is there before the interrupt.
				for end := time.Now().Add(20 * time.Second); ; {
					if s, _ := dstate.State(v.pid, tid); s == 't' {
						return
					}
					if time.Now().After(end) {
						t.Errorf("thread %d never stopped for %v", tid, sig)
						return
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
			hooks.held = func(_ int, s unix.Signal) { held = append(held, s) }
			defer func() { hooks.beforeInterrupt, hooks.held = nil, nil }()
			if _, _, err := Dump(context.Background(), v.pid); err != nil {
				t.Fatal(err)
			}
			hooks.beforeInterrupt, hooks.held = nil, nil
			if want := sig == syscall.SIGURG; (len(held) == 1 && held[0] == unix.SIGURG) != want {
				t.Errorf("signals held: %v, want SIGURG held: %v", held, want)
			}
			if sig == syscall.SIGUSR1 {
				for end := time.Now().Add(20 * time.Second); ; {
					if b, _ := os.ReadFile(sigfile); strings.TrimSpace(string(b)) == "1" {
						break
					}
					if time.Now().After(end) {
						t.Fatal("the victim never got its SIGUSR1")
					}
					time.Sleep(time.Millisecond)
				}
			}
			wantUnharmed(t, v)
		})
	}
}
