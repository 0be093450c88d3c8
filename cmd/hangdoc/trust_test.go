package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// Verdicts on hangs hangdoc was never shown (issue 10): its own stops are
// no progress, every wait resolves to what it waits on, "idle" only for
// waits for work. The victims block (none measures CPU), so the tests run
// in parallel.

// tcontract is the JSON report with the fields these tests read.
type tcontract struct {
	xcontract
	Sampling struct {
		StackSource string   `json:"stack_source"`
		Notes       []string `json:"notes"`
	} `json:"sampling"`
}

func tdecode(t *testing.T, out string) tcontract {
	t.Helper()
	var c tcontract
	c.xcontract = xdecode(t, out)
	if err := jsonUnmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOwnStopsAreNoProgress: the same victims, diagnosed with the stack
// sources that stop them (py-spy's pause, Delve's attach) and with
// --no-stop, get the same verdict. A stop breaks into their timed waits,
// which the kernel resumes as restart_syscall.
func TestOwnStopsAreNoProgress(t *testing.T) {
	tests := []struct {
		name   string
		start  func(t *testing.T) *testvictim.Victim
		source string
		hint   string
	}{
		{"python subprocess.run(capture_output=True), child reading stdin", func(t *testing.T) *testvictim.Victim {
			return testvictim.StartPython(t, "run_capture_stdin.py")
		}, "py-spy", "stdin=subprocess.DEVNULL"},
		{"go cmd.Wait() before reading StdoutPipe", func(t *testing.T) *testvictim.Victim {
			return testvictim.Start(t, testvictim.BuildGo(t, "gowait"))
		}, "delve", "StdoutPipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := tt.start(t)
			parent, child := v.PID, v.Int("child")
			// Stopping first leaves the timed waits in restart_syscall for
			// the --no-stop run to read; stopping again reads them too.
			// The memory readers come first, and do not stop it.
			stop := []string{"--source", tt.source}
			for i, args := range [][]string{stop, {"--no-stop"}, stop} {
				// A process of its own, as an on-call runs it: Delve refuses
				// its own child.
				out, stderr, code := hangdocProcess(t, append([]string{strconv.Itoa(parent), "--json", "--interval", "300ms"}, args...)...)
				c := tdecode(t, out)
				if code != ExitDeadlock || c.Verdict != "deadlock" {
					t.Fatalf("run %d %v: exit %d verdict %q (%s), want deadlock\n%s", i, args, code, c.Verdict, c.Summary, stderr)
				}
				if len(c.Cycles) != 1 || !slices.Equal(cyclePIDs(c.Cycles[0]), sorted(parent, child)) {
					t.Errorf("run %d %v: cycles = %+v, want one of pids %d and %d", i, args, c.Cycles, parent, child)
				}
				if !strings.Contains(c.Hint, tt.hint) {
					t.Errorf("run %d %v: hint %q should name %s", i, args, c.Hint, tt.hint)
				}
				if want := tt.source; slices.Contains(args, "--no-stop") {
					if c.Sampling.StackSource == "delve" {
						t.Errorf("run %d --no-stop: stack source %s stops the target", i, c.Sampling.StackSource)
					}
				} else if c.Sampling.StackSource != want {
					t.Errorf("run %d: stack source %q, want %s (the one that stops it)", i, c.Sampling.StackSource, want)
				}
			}
		})
	}
}

// TestStoppedTargets: a process stopped by a signal or a tracer is blocked
// on that stop, whatever its threads were waiting for when it stopped: not
// "holds mutex … and is blocked in pause()".
func TestStoppedTargets(t *testing.T) {
	type stopJSON struct {
		Stop *struct {
			Signal string `json:"signal"`
			Tracer *struct {
				PID int `json:"pid"`
			} `json:"tracer"`
		} `json:"stop"`
	}
	bin := testvictim.Build(t, "stopped")
	tests := []struct {
		mode, signal, summary, hint string
	}{
		{"stop", "signal", "is stopped by a signal", "kill -CONT"},
		{"traced", "tracer", "is stopped by its tracer pid", "Detach the debugger"},
		{"ttin", "SIGTTIN", "SIGTTIN", "fg"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			v := testvictim.Start(t, bin, tt.mode)
			target := v.Int("stopped")
			out, stderr, code := hangdocProcess(t, strconv.Itoa(target), "--json", "--interval", "300ms", "--samples", "2")
			c := tdecode(t, out)
			if code != ExitBlocked || c.Verdict != "blocked" {
				t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
			}
			if !strings.Contains(c.Summary, tt.summary) || strings.Contains(c.Summary, "holds") {
				t.Errorf("summary %q should say %q and name no lock holder", c.Summary, tt.summary)
			}
			if !strings.Contains(c.Hint, tt.hint) {
				t.Errorf("hint %q lacks %q", c.Hint, tt.hint)
			}
			var s stopJSON
			if err := jsonUnmarshal(out, &s); err != nil || s.Stop == nil || s.Stop.Signal != tt.signal {
				t.Fatalf("stop = %+v (%v), want signal %q", s.Stop, err, tt.signal)
			}
			if tt.mode == "traced" {
				if s.Stop.Tracer == nil || s.Stop.Tracer.PID != v.Int("tracer") {
					t.Errorf("stop.tracer = %+v, want pid %d", s.Stop.Tracer, v.Int("tracer"))
				}
				if len(c.Processes) == 0 || c.Processes[0].PID != v.Int("tracer") {
					t.Errorf("processes %+v, want the tracer %d followed", c.Processes, v.Int("tracer"))
				}
			}
			// hangdoc leaves it as stopped as it found it, and no more.
			if st := xpStatState(t, target); st != map[string]string{"stop": "T", "traced": "t", "ttin": "T"}[tt.mode] {
				t.Errorf("state after hangdoc %q", st)
			}
		})
	}
}

func xpStatState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// TestFileLocks: a process blocked taking a file lock names the process
// that holds it (from /proc/locks; for an OFD lock, which names none, the
// descriptor whose fdinfo lists it, even with a bystander that has the
// file open too), the file, and follows it.
func TestFileLocks(t *testing.T) {
	type lockJSON struct {
		Locks []struct {
			ID      string `json:"id"`
			Kind    string `json:"kind"`
			Address string `json:"address"`
			Holder  *ref   `json:"holder"`
			Waiters []ref  `json:"waiters"`
			Basis   string `json:"basis_kind"`
		} `json:"locks"`
	}
	bin := testvictim.Build(t, "filelock")
	tests := []struct {
		mode, kind, hint string
	}{
		{"flock", "flock", "flock -n"},
		{"posix", "posix-lock", "flock -n"},
		{"ofd", "ofd-lock", "flock -n"},
		{"ofd-crowd", "ofd-lock", "flock -n"},
		{"self", "flock", "take the lock once"},
		{"two cron runs under flock(1) (shell)", "flock", "flock -n"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tt.mode)
			if strings.Contains(tt.mode, "shell") {
				cmd = exec.Command("sh", testvictim.Script(t, "cronlock.sh"))
			}
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
			v := testvictim.StartCmd(t, cmd)
			holder, path, waiter := v.Int("holder"), v.Info["path"], v.PID
			if _, ok := v.Info["waiter"]; ok {
				waiter = v.Int("waiter")
			}
			out, stderr, code := hangdoc(t, strconv.Itoa(waiter), "--json", "--interval", "300ms", "--samples", "2")
			c := tdecode(t, out)
			if code != ExitBlocked || c.Verdict != "blocked" {
				t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
			}
			var l lockJSON
			if err := jsonUnmarshal(out, &l); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, lk := range l.Locks {
				if lk.Address == path && lk.Kind == tt.kind && lk.Holder != nil && lk.Holder.PID == holder && lk.Holder.TID == 0 &&
					len(lk.Waiters) == 1 && lk.Waiters[0].TID == waiter && lk.Basis == "exact" {
					found = true
				}
			}
			if !found {
				t.Errorf("locks %+v, want a %s on %s held by pid %d exactly, waited for by tid %d", l.Locks, tt.kind, path, holder, waiter)
			}
			if !strings.Contains(c.Summary, path) && !strings.Contains(c.Summary, "file lock") {
				t.Errorf("summary %q names neither the file lock nor %s", c.Summary, path)
			}
			if !strings.Contains(c.Hint, tt.hint) {
				t.Errorf("hint %q lacks %q", c.Hint, tt.hint)
			}
			if tt.mode == "self" {
				if !strings.Contains(c.Summary, "no live thread is left") {
					t.Errorf("summary %q should say nothing is left to release it", c.Summary)
				}
				return
			}
			if !strings.Contains(c.Summary, "held by pid "+strconv.Itoa(holder)) {
				t.Errorf("summary %q does not name the holder %d", c.Summary, holder)
			}
			var to *ref
			for _, w := range c.Waits {
				if w.From.TID == waiter && w.Kind == "file-lock" {
					to = w.To
				}
			}
			if to == nil || to.PID != holder {
				t.Errorf("waits %+v, want a file-lock wait to pid %d", c.Waits, holder)
			}
			if len(c.Processes) == 0 || c.Processes[0].PID != holder {
				t.Errorf("processes %+v, want the holder %d followed", c.Processes, holder)
			}
		})
	}
}

// TestGoWaitsNamedByTheirLibrary: Go waits named by the library frame
// that explains them, and what is missing: a WaitGroup nobody is left to
// call Done on, a database/sql pool whose only connection the waiter
// holds, an HTTP client waiting on a server in another process, over TCP
// or a Unix socket.
func TestGoWaitsNamedByTheirLibrary(t *testing.T) {
	bin := testvictim.BuildGo(t, "gonobody")
	tests := []struct {
		mode, kind, summary, hint string
	}{
		{"waitgroup", "waitgroup", "no live goroutine of the program's own is left that could call Done", "defer wg.Done()"},
		{"dbpool", "db-conn", "free connection of a full pool", "rows.Close()"},
		{"httpclient", "http-response", "waiting for an HTTP response", "Timeout"},
		{"httpunix", "http-response", "waiting for an HTTP response", "Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tt.mode)
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // httpunix's socket
			v := testvictim.StartCmd(t, cmd)
			// A goroutine source reads them (the memory reader, or Delve:
			// then hangdoc must not be the victim's parent).
			out, stderr, code := hangdocProcess(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
			var c struct {
				tcontract
				Goroutines []struct {
					ID        int64  `json:"id"`
					BlockedOn string `json:"blocked_on"`
				} `json:"goroutines"`
			}
			c.tcontract = tdecode(t, out)
			if err := jsonUnmarshal(out, &c); err != nil {
				t.Fatal(err)
			}
			if code != ExitBlocked || c.Verdict != "blocked" {
				t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
			}
			if s := c.Sampling.StackSource; s != "memory" && s != "delve" {
				t.Fatalf("stack source %q, want the goroutines read (memory or delve)", s)
			}
			kinds := map[string]bool{}
			for _, g := range c.Goroutines {
				kinds[g.BlockedOn] = true
			}
			if !kinds[tt.kind] {
				t.Errorf("no goroutine blocked on %s: %+v", tt.kind, c.Goroutines)
			}
			if !strings.Contains(c.Summary, tt.summary) {
				t.Errorf("summary %q lacks %q", c.Summary, tt.summary)
			}
			if !strings.Contains(c.Hint, tt.hint) {
				t.Errorf("hint %q lacks %q", c.Hint, tt.hint)
			}
			if tt.mode != "httpclient" && tt.mode != "httpunix" {
				return
			}
			server := v.Int("server")
			if !strings.Contains(c.Summary, "from "+v.Info["addr"]) || !strings.Contains(c.Summary, "pid "+strconv.Itoa(server)) {
				t.Errorf("summary %q should name the server %s, pid %d", c.Summary, v.Info["addr"], server)
			}
			if !slices.ContainsFunc(c.Processes, func(p struct {
				PID   int    `json:"pid"`
				Depth int    `json:"depth"`
				State string `json:"state"`
			}) bool {
				return p.PID == server
			}) {
				t.Errorf("processes %+v, want the server %d followed", c.Processes, server)
			}
		})
	}
}

// TestIdleOnlyForWaitsForWork: a lone futex wait, a lock or condition
// nobody is left to release or signal, a queue's join after its workers
// died, a join of a thread that waits for its joiner, an executor waiting
// on itself, an event loop a coroutine blocks: none is "idle … whatever
// feeds the process stopped". Each says what is missing.
func TestIdleOnlyForWaitsForWork(t *testing.T) {
	cbin := testvictim.Build(t, "nobody")
	tests := []struct {
		name    string
		start   func(t *testing.T) *testvictim.Victim
		target  string // the ready line's key for the stuck process; "" for the victim
		verdict string
		summary []string
		hint    string
	}{
		{"C lock inherited locked across fork", func(t *testing.T) *testvictim.Victim { return testvictim.Start(t, cbin, "forklock") }, "child",
			"blocked", []string{"whose owner tid", "is not a live thread", "nothing is left that could release it"}, "fork"},
		{"C semaphore whose poster returned", func(t *testing.T) *testvictim.Victim { return testvictim.Start(t, cbin, "lone") }, "",
			"blocked", []string{"no live thread is left that could wake it", "the process's only thread"}, "signal on every path"},
		{"C lost wake-up", func(t *testing.T) *testvictim.Victim { return testvictim.Start(t, cbin, "lostwakeup") }, "",
			"blocked", []string{"a lost wake-up, or a deadlock through waits that record no owner; not proven either way", "(peer)"}, "who should have signalled"},
		{"C lost wake-up behind a loader, workers joined", func(t *testing.T) *testvictim.Victim { return testvictim.Start(t, cbin, "loader") }, "",
			"blocked", []string{"a lost wake-up, or a deadlock through waits that record no owner; not proven either way", "(loader)", "3 threads", "(pthread_join)"}, "who should have signalled"},
		{"Python queue.join() after the workers died", func(t *testing.T) *testvictim.Victim { return testvictim.StartPython(t, "py_nobody.py", "queuejoin") }, "",
			"blocked", []string{"queue.join()", "no live thread is left that could call task_done()"}, "task_done() in a finally"},
		{"Python Event.wait() whose setter died", func(t *testing.T) *testvictim.Victim { return testvictim.StartPython(t, "py_nobody.py", "event") }, "",
			"blocked", []string{"Event.wait()", "no live thread is left that could call set()"}, "Set the event in a finally"},
		{"Python Thread.join() of a thread waiting for its joiner", func(t *testing.T) *testvictim.Victim { return testvictim.StartPython(t, "py_nobody.py", "join") }, "",
			"blocked", []string{"waits for another thread to exit (join)", "Event.wait()", "(waiter)"}, "signal before joining"},
		{"Python join of a thread waiting on an Event nobody sets", func(t *testing.T) *testvictim.Victim { return testvictim.StartPython(t, "py_nobody.py", "eventjoin") }, "",
			"blocked", []string{"a lost wake-up, or a deadlock through waits that record no owner; not proven either way", "(waiter) waiting in Event.wait()", "(joiner) waiting for another thread to exit (join)"}, "who should have set it"},
		{"Python executor waiting for a future it cannot run", func(t *testing.T) *testvictim.Victim { return testvictim.StartPython(t, "py_nobody.py", "future") }, "",
			"blocked", []string{"future's result", "a lost wake-up, or a deadlock through waits that record no owner; not proven either way"}, "never wait for a future from inside the executor"},
		{"Python multiprocessing.Pool result whose worker hangs", func(t *testing.T) *testvictim.Victim { return testvictim.StartPython(t, "py_nobody.py", "pool") }, "",
			"blocked", []string{"multiprocessing pool"}, "timeout to get()"},
		{"Python asyncio loop blocked by a coroutine's time.sleep", func(t *testing.T) *testvictim.Victim { return testvictim.StartPython(t, "py_nobody.py", "asyncio") }, "",
			"blocked", []string{"asyncio event loop", "the coroutine handler (py_nobody.py:"}, "asyncio.to_thread"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := tt.start(t)
			pid := v.PID
			if tt.target != "" {
				pid = v.Int(tt.target)
			}
			out, stderr, code := hangdoc(t, strconv.Itoa(pid), "--json", "--interval", "300ms", "--samples", "2")
			c := tdecode(t, out)
			if c.Verdict != tt.verdict || code == ExitIdle {
				t.Fatalf("exit %d verdict %q (%s), want %s\n%s", code, c.Verdict, c.Summary, tt.verdict, stderr)
			}
			for _, s := range tt.summary {
				if !strings.Contains(c.Summary, s) {
					t.Errorf("summary %q lacks %q", c.Summary, s)
				}
			}
			if !strings.Contains(c.Hint, tt.hint) {
				t.Errorf("hint %q lacks %q", c.Hint, tt.hint)
			}
			if strings.Contains(c.Summary, "whatever feeds") {
				t.Errorf("summary %q calls it a wait for work", c.Summary)
			}
			if tt.verdict == "deadlock" && len(c.Cycles) != 1 {
				t.Errorf("cycles %+v, want one", c.Cycles)
			}
			if tt.verdict != "deadlock" && (len(c.Cycles) > 0 || strings.Contains(c.Summary, "deadlock between") || strings.Contains(c.Hint, "opposite orders")) {
				t.Errorf("no cycle is proven, yet cycles %+v, summary %q, hint %q", c.Cycles, c.Summary, c.Hint)
			}
			if loader, ok := v.Info["loader"]; ok && !strings.Contains(c.Summary, "tid "+loader+" (loader)") {
				t.Errorf("summary %q does not name the loader %s", c.Summary, loader)
			}
			if peer, ok := v.Info["peer"]; ok && !strings.Contains(c.Summary, "tid "+peer) {
				t.Errorf("summary %q does not name the peer %s", c.Summary, peer)
			}
		})
	}
}

// cpuCgroup makes a cgroup whose CPU quota is quotaUS of CPU time per
// periodUS — under cgroup v2 where its cpu controller is enabled for
// children of the root, else under the v1 cpu controller — and returns
// the function that moves a process into it and waits until the quota has
// throttled it twice. The cgroup is removed when the test ends; call it
// before starting the victims that go in it, so that they are killed and
// reaped first.
func cpuCgroup(t *testing.T, quotaUS, periodUS int) func(pid int) {
	t.Helper()
	name := fmt.Sprintf("hangdoc-test-%d-%s", os.Getpid(), strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
	var dir string
	var write [][2]string
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control"); err == nil && slices.Contains(strings.Fields(string(b)), "cpu") {
		dir = "/sys/fs/cgroup/" + name
		// The most weight there is: on a crowded machine (a CI run's
		// other packages compiling) the victim must still get its quota
		// to be throttled by it, not lose the CPU to everything else.
		write = [][2]string{{"cpu.max", fmt.Sprintf("%d %d", quotaUS, periodUS)}, {"cpu.weight", "10000"}}
	} else {
		for _, v1 := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
			if _, err := os.Stat(v1 + "/cpu.cfs_quota_us"); err == nil {
				dir = v1 + "/" + name
				break
			}
		}
		write = [][2]string{{"cpu.cfs_period_us", strconv.Itoa(periodUS)}, {"cpu.cfs_quota_us", strconv.Itoa(quotaUS)}, {"cpu.shares", "262144"}}
	}
	if dir == "" {
		t.Fatalf("no cgroup CPU controller to put the victim under: mount cgroup v2 with +cpu in /sys/fs/cgroup/cgroup.subtree_control, or the v1 cpu controller (and run as root)")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("making the test's cgroup (run as root): %v", err)
	}
	t.Cleanup(func() {
		// The victims were killed and reaped by their own cleanups, which
		// run first; a cgroup goes once its last process has.
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the test's cgroup %s: %v", dir, err)
		}
	})
	for _, kv := range write {
		if err := os.WriteFile(dir+"/"+kv[0], []byte(kv[1]), 0); err != nil {
			t.Fatalf("setting %s of %s: %v", kv[0], dir, err)
		}
	}
	return func(pid int) {
		t.Helper()
		if err := os.WriteFile(dir+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatalf("moving pid %d into %s: %v", pid, dir, err)
		}
		for {
			b, err := os.ReadFile(dir + "/cpu.stat")
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(b), "\n") {
				if n, ok := strings.CutPrefix(line, "nr_throttled "); ok && n != "0" && n != "1" {
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestStarvedNotHung: a thread that wants a core, in a cgroup whose quota
// gives it 0.05 of one, is starved, not hung: the verdict says so with the
// quota and how often it throttled, the JSON has the cpu.throttled block,
// and a Go program whose GOMAXPROCS exceeds the quota gets its line.
func TestStarvedNotHung(t *testing.T) {
	type cpuJSON struct {
		CPU *struct {
			Throttled *struct {
				QuotaCores float64 `json:"quota_cores"`
				Percent    float64 `json:"throttled_percent"`
				Starved    bool    `json:"starved"`
				Alone      bool    `json:"alone"`
				GoMaxProcs int     `json:"gomaxprocs"`
			} `json:"throttled"`
			Machine *struct {
				CPUs int `json:"cpus"`
			} `json:"machine"`
		} `json:"cpu"`
	}
	tests := []struct {
		name      string
		start     func(t *testing.T) *testvictim.Victim
		goMaxProc int
	}{
		{"C spinner", func(t *testing.T) *testvictim.Victim { return testvictim.Start(t, testvictim.Build(t, "starved")) }, 0},
		{"Go workers with GOMAXPROCS=2", func(t *testing.T) *testvictim.Victim {
			cmd := exec.Command(testvictim.BuildGo(t, "goworking"))
			cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
			return testvictim.StartCmd(t, cmd)
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One victim at a time: two throttled victims side by side on
			// a busy machine get less than their quota, and throttle less.
			into := cpuCgroup(t, 5000, 100000)
			v := tt.start(t)
			into(v.PID)
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
			c := tdecode(t, out)
			if code != ExitWorking || c.Verdict != "working" {
				t.Fatalf("exit %d verdict %q (%s), want working (starved)\n%s", code, c.Verdict, c.Summary, stderr)
			}
			for _, s := range []string{"starved, not hung", "throttled in", "CPU quota of 0.05 cores"} {
				if !strings.Contains(c.Summary, s) {
					t.Errorf("summary %q lacks %q", c.Summary, s)
				}
			}
			if t.Failed() {
				t.Logf("the report:\n%s", out)
			}
			if !strings.Contains(c.Hint, "raise its cgroup's quota") {
				t.Errorf("hint %q", c.Hint)
			}
			var j cpuJSON
			if err := jsonUnmarshal(out, &j); err != nil {
				t.Fatal(err)
			}
			if j.CPU == nil || j.CPU.Throttled == nil || j.CPU.Throttled.QuotaCores != 0.05 || !j.CPU.Throttled.Starved || !j.CPU.Throttled.Alone || j.CPU.Throttled.Percent < 20 {
				t.Fatalf("cpu = %+v, want a throttled block: quota 0.05 cores, starved, the victim alone in its cgroup", j.CPU)
			}
			if j.CPU.Machine == nil || j.CPU.Machine.CPUs == 0 {
				t.Errorf("cpu.machine = %+v", j.CPU.Machine)
			}
			if tt.goMaxProc > 0 {
				if j.CPU.Throttled.GoMaxProcs != tt.goMaxProc {
					t.Errorf("cpu.throttled.gomaxprocs = %d, want %d", j.CPU.Throttled.GoMaxProcs, tt.goMaxProc)
				}
				if !slices.ContainsFunc(c.Evidence, func(e string) bool { return strings.Contains(e, "GOMAXPROCS is 2 (its GOMAXPROCS variable)") }) {
					t.Errorf("evidence %q lacks the GOMAXPROCS line", c.Evidence)
				}
			}
		})
	}
}
