package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler/delve"
	"github.com/hangdoc/hangdoc/sampler/oncpu"
)

// gocontract is the JSON report's Go part, as docs/json.md documents it.
type gocontract struct {
	contract
	Sampling struct {
		Samples     int      `json:"samples"`
		Partial     bool     `json:"partial"`
		StackSource string   `json:"stack_source"`
		Notes       []string `json:"notes"`
	} `json:"sampling"`
	Goroutines []struct {
		ID          int64  `json:"id"`
		State       string `json:"state"`
		WaitMinutes int    `json:"wait_minutes"`
		Class       string `json:"class"`
		Thread      int    `json:"thread"`
		Stack       []struct {
			Func string `json:"func"`
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"stack"`
	} `json:"goroutines"`
	Groups []struct {
		Count int    `json:"count"`
		State string `json:"state"`
		Stack []struct {
			Func string `json:"func"`
		} `json:"stack"`
	} `json:"groups"`
	Locks []struct {
		ID      string  `json:"id"`
		Holder  *goRef  `json:"holder"`
		Waiters []goRef `json:"waiters"`
		Basis   string  `json:"basis"`
	} `json:"locks"`
	Cycles [][]goRef `json:"cycles"`
}

type goRef struct {
	PID       int   `json:"pid"`
	Goroutine int64 `json:"goroutine"`
}

func godecode(t *testing.T, out string) gocontract {
	t.Helper()
	decode(t, out)
	var c gocontract
	if err := jsonUnmarshal(out, &c); err != nil {
		t.Fatalf("the report is not JSON: %v", err)
	}
	return c
}

// goroutine returns the class of goroutine id, "absent" if none.
func (c gocontract) goroutine(id int64) string {
	for _, g := range c.Goroutines {
		if g.ID == id {
			return g.Class
		}
	}
	return "absent"
}

// holder returns the probable holder of the lock with the most waiters.
func (c gocontract) holder() (id int64, waiters int) {
	for _, l := range c.Locks {
		if l.Holder != nil && len(l.Waiters) > waiters {
			id, waiters = l.Holder.Goroutine, len(l.Waiters)
		}
	}
	return id, waiters
}

// hangdocProcess runs hangdoc as a process of its own (this test binary,
// re-executed), as an on-call would: a target that is the diagnosing
// process's own child is one Delve must refuse, since the parent's wait
// would swallow the stops Delve waits for.
func hangdocProcess(t *testing.T, args ...string) (stdout, stderr string, code ExitCode) {
	t.Helper()
	return hangdocProcessEnv(t, nil, args...)
}

// hangdocProcessEnv is hangdocProcess with env added to its environment
// (a later entry for a name wins).
func hangdocProcessEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code ExitCode) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args, rec := withRecord(t, args)
	defer checkLive(t, rec)
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), "HANGDOC_MAIN=1"), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errorsAs(err, &ee):
		code = ExitCode(ee.ExitCode())
	default:
		t.Fatalf("running hangdoc: %v", err)
	}
	return out.String(), errb.String(), code
}

// wantUnharmed fails the test if the victim stopped, died or is still
// traced: every source but --sigquit must leave it as it was.
func wantUnharmed(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("victim %d is gone: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "T") || strings.HasPrefix(v, "t") || strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				t.Errorf("victim %d is %s after hangdoc", pid, v)
			}
		case "TracerPid":
			if v != "0" {
				t.Errorf("victim %d is still traced by %s after hangdoc", pid, v)
			}
		}
	}
	// Its threads too: Delve stops every one of them.
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/stat")
	for _, p := range tasks {
		if st, ok := statState(p); ok && (st == "T" || st == "t") {
			t.Errorf("thread %s of victim %d is stopped (%s) after hangdoc", p, pid, st)
		}
	}
}

// TestGoVictims diagnoses every Go victim through each non-destructive
// source: its own pprof endpoint (found on its listening sockets), and,
// for a victim that serves no pprof, its memory read while it runs (the
// default then) and Delve (--source delve).
func TestGoVictims(t *testing.T) {
	for _, source := range []string{"pprof", "memory", "delve"} {
		for _, tc := range []struct {
			victim  string
			verdict string
			code    ExitCode
			holder  string // the ready key of the probable holder's goroutine id
			cycle   []string
			class   map[string]string // ready key of a goroutine id → class
		}{
			{victim: "gomutexpipe", verdict: "blocked", code: ExitBlocked, holder: "holder"},
			{victim: "gospinholder", verdict: "spinning", code: ExitSpinning, holder: "holder", class: map[string]string{"holder": "spinning"}},
			{victim: "gochancycle", verdict: "deadlock", code: ExitDeadlock, class: map[string]string{"ping": "blocked", "pong": "blocked"}},
			// main is alive in wg.Wait for the workers: somebody is left,
			// and it waits for them — blocked, not an idle pool.
			{victim: "godeadfeeder", verdict: "blocked", code: ExitBlocked},
			{victim: "goworking", verdict: "working", code: ExitWorking},
		} {
			t.Run(source+"/"+tc.victim, func(t *testing.T) {
				var args []string
				if source == "pprof" {
					args = append(args, "-pprof")
				}
				v := testvictim.Start(t, testvictim.BuildGo(t, tc.victim), args...)
				flags := []string{strconv.Itoa(v.PID), "--json", "--samples", "3", "--interval", "400ms"}
				if source == "delve" {
					// A loaded machine may not let Delve read every
					// goroutine within the default stop bound of 2s:
					// the read is what this test is about, not the bound.
					flags = append(flags, "--source", "delve", "--max-stop", "30s")
				}
				out, stderr, code := hangdocProcess(t, flags...)
				wantUnharmed(t, v.PID)
				c := godecode(t, out)
				if tc.victim == "gochancycle" && source != "delve" {
					// Only Delve reads which channels each goroutine
					// refers to: without it two senders and nobody
					// receiving are blocked, no cycle proved.
					tc.verdict, tc.code = "blocked", ExitBlocked
				}
				if tc.victim == "godeadfeeder" && source == "memory" {
					// The memory reader's channel scan finds main, in
					// wg.Wait(), referring to the jobs channel: the feeder
					// is gone, not all that could close it. Blocked, each
					// waiting for the other (issue 18).
					tc.verdict, tc.code = "blocked", ExitBlocked
					if !strings.Contains(c.Summary, "refers to the channel but waits first in sync.WaitGroup.Wait") || strings.Contains(c.Summary, "feeder") {
						t.Errorf("summary %q: want main named as referring to the channel and waiting first, no feeder gone", c.Summary)
					}
				}
				if tc.victim == "gospinholder" && source == "memory" {
					// Its stack is not in memory while it runs: the
					// kernel's samples of its thread name the loop, or a
					// note says why they could not be taken.
					if err := oncpu.Probe(); err != nil {
						if !slices.ContainsFunc(c.Sampling.Notes, func(n string) bool { return strings.Contains(n, "on-CPU sampling") }) {
							t.Errorf("on-CPU sampling unavailable here (%v), and no note says so: %q", err, c.Sampling.Notes)
						}
					} else if !strings.Contains(c.Summary, "spins in main.(*Cache).Refresh (main.go:") && !strings.Contains(c.Summary, "spins in main.step (main.go:") {
						t.Errorf("summary %q: want the loop named from the on-CPU samples", c.Summary)
					}
				}
				if c.Verdict != tc.verdict || code != tc.code {
					t.Errorf("verdict %s (exit %d), want %s (exit %d): %s\nevidence:\n%s\nnotes: %v\nstderr: %s",
						c.Verdict, code, tc.verdict, tc.code, c.Summary, strings.Join(c.Evidence, "\n"), c.Sampling.Notes, stderr)
				}
				if c.Sampling.StackSource != source {
					t.Errorf("stack_source %q, want %q; notes: %v", c.Sampling.StackSource, source, c.Sampling.Notes)
				}
				if len(c.Goroutines) == 0 || len(c.Groups) == 0 {
					t.Fatalf("no goroutines or groups in the report: %v", c.Sampling.Notes)
				}
				if tc.holder != "" {
					id, waiters := c.holder()
					if want := int64(v.Int(tc.holder)); id != want || waiters != 8 {
						t.Errorf("probable holder goroutine %d with %d waiters, want %d with 8; locks: %+v", id, waiters, want, c.Locks)
					}
				}
				for key, class := range tc.class {
					if got := c.goroutine(int64(v.Int(key))); got != class {
						t.Errorf("goroutine %s=%d is %s, want %s", key, v.Int(key), got, class)
					}
				}
				if tc.victim == "gochancycle" && source == "delve" {
					if len(c.Cycles) != 1 {
						t.Fatalf("cycles %v, want ping and pong", c.Cycles)
					}
					var ids []int64
					for _, r := range c.Cycles[0] {
						ids = append(ids, r.Goroutine)
					}
					slices.Sort(ids)
					want := []int64{int64(v.Int("ping")), int64(v.Int("pong"))}
					slices.Sort(want)
					if !slices.Equal(ids, want) {
						t.Errorf("cycle %v, want %v", ids, want)
					}
				}
			})
		}
	}
}

// TestGoNoStop: with --no-stop and no pprof endpoint the goroutines come
// from the target's memory, read while it runs; with the memory reader
// ruled out too, there is no source, and the report says why and still
// gives the kernel's view.
func TestGoNoStop(t *testing.T) {
	v := testvictim.Start(t, testvictim.BuildGo(t, "gomutexpipe"))
	out, _, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "200ms", "--no-stop")
	wantUnharmed(t, v.PID)
	c := godecode(t, out)
	if c.Sampling.StackSource != "memory" || len(c.Goroutines) == 0 || code != ExitBlocked {
		t.Errorf("stack_source %q with %d goroutines, exit %d: want the memory reader's, blocked", c.Sampling.StackSource, len(c.Goroutines), code)
	}
	if id, _ := c.holder(); id != int64(v.Int("holder")) {
		t.Errorf("holder goroutine %d, want %d", id, v.Int("holder"))
	}

	out, _, _ = hangdoc(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "200ms", "--no-stop", "--source", "pprof")
	wantUnharmed(t, v.PID)
	c = godecode(t, out)
	if c.Sampling.StackSource != "none" || len(c.Goroutines) != 0 {
		t.Errorf("--source pprof without an endpoint: stack_source %q with %d goroutines, want none", c.Sampling.StackSource, len(c.Goroutines))
	}
	if !slices.ContainsFunc(c.Sampling.Notes, func(n string) bool { return strings.Contains(n, "no goroutines") }) {
		t.Errorf("no note says why there are no goroutines: %v", c.Sampling.Notes)
	}
}

// TestGoSigquit: --sigquit, when nothing else can read the goroutines,
// kills the target for one dump, read from its stderr file.
func TestGoSigquit(t *testing.T) {
	for _, viaLog := range []bool{false, true} {
		t.Run("log="+strconv.FormatBool(viaLog), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "stderr.log")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := exec.Command(testvictim.BuildGo(t, "gomutexpipe"))
			cmd.Stderr = f
			v := testvictim.StartCmd(t, cmd)
			// --source pprof: no source but the dump can read it.
			args := []string{strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "200ms", "--source", "pprof", "--sigquit"}
			if viaLog {
				args = append(args, "--sigquit-log", path)
			}
			out, stderr, code := hangdoc(t, args...)
			c := godecode(t, out)
			if c.Sampling.StackSource != "sigquit" || c.Verdict != "blocked" || code != ExitBlocked {
				t.Fatalf("stack_source %q, verdict %s (exit %d), want sigquit and blocked: %s\nnotes: %v\nstderr: %s", c.Sampling.StackSource, c.Verdict, code, c.Summary, c.Sampling.Notes, stderr)
			}
			if id, _ := c.holder(); id != int64(v.Int("holder")) {
				t.Errorf("probable holder goroutine %d, want %d", id, v.Int("holder"))
			}
			// SIGQUIT kills a Go program: that is why it is opt-in.
			deadline := time.Now().Add(30 * time.Second) // a dump of every goroutine, on a loaded machine
			for !dead(v.PID) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if !dead(v.PID) {
				t.Errorf("victim %d still runs after --sigquit", v.PID)
			}
		})
	}
}

// dead reports a process that exited: reaped, or a zombie.
func dead(pid int) bool {
	st, ok := statState("/proc/" + strconv.Itoa(pid) + "/stat")
	return !ok || st == "Z"
}

// TestGoPprofFlag: --pprof names the endpoint; one that does not answer
// is noted, and no source that stops the target takes its place.
func TestGoPprofFlag(t *testing.T) {
	v := testvictim.Start(t, testvictim.BuildGo(t, "godeadfeeder"), "-pprof")
	out, _, code := hangdocProcess(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "200ms", "--pprof", "http://"+v.Info["addr"]+"/")
	wantUnharmed(t, v.PID)
	c := godecode(t, out)
	if c.Sampling.StackSource != "pprof" || c.Verdict != "blocked" || code != ExitBlocked {
		t.Errorf("--pprof: stack_source %q, verdict %s (exit %d), want pprof and blocked; notes %v", c.Sampling.StackSource, c.Verdict, code, c.Sampling.Notes)
	}

	w := testvictim.Start(t, testvictim.BuildGo(t, "godeadfeeder"))
	out, _, _ = hangdocProcess(t, strconv.Itoa(w.PID), "--json", "--samples", "2", "--interval", "200ms", "--pprof", "http://"+w.Info["addr"])
	wantUnharmed(t, w.PID)
	c = godecode(t, out)
	if c.Sampling.StackSource != "none" || !slices.ContainsFunc(c.Sampling.Notes, func(n string) bool {
		return strings.Contains(n, "--pprof http://"+w.Info["addr"]) && strings.Contains(n, "delve: not tried, --pprof names the source")
	}) {
		t.Errorf("a --pprof that serves no profile: stack_source %q, notes %v; want none and a note on --pprof, Delve not tried", c.Sampling.StackSource, c.Sampling.Notes)
	}
}

// TestGoTimeoutDetaches: a run that ends while Delve holds the target
// stopped still lets it go: the victim runs on, untraced, and the report
// comes out, marked partial. It depends on order, not timing: a test hook
// in hangdoc (delve.TestHookEnv) ends the run with SIGINT at a chosen
// point of the stop, however slow the machine. SIGINT and --timeout end
// the run through the same context (root.go), so this is the --timeout
// case too; a --timeout short enough to land inside the stop would land
// there only on a machine of the right speed.
func TestGoTimeoutDetaches(t *testing.T) {
	v := testvictim.Start(t, testvictim.BuildGo(t, "gomutexpipe"))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, point := range []string{"opened", "seized", "stopped", "read"} {
		t.Run(point, func(t *testing.T) {
			cmd := exec.Command(self, strconv.Itoa(v.PID), "--json", "--samples", "5", "--interval", "100ms", "--timeout", "10m", "--source", "delve")
			cmd.Env = append(os.Environ(), "HANGDOC_MAIN=1", delve.TestHookEnv+"="+point+":interrupt")
			var out, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &stderr
			err := cmd.Run()
			wantUnharmed(t, v.PID)
			if !strings.Contains(stderr.String(), "hangdoc-test-hook: "+point) {
				t.Fatalf("the run never reached %s (%v): %s", point, err, stderr.String())
			}
			if out.String() == "" {
				t.Fatalf("no report (%v): %s", err, stderr.String())
			}
			if c := godecode(t, out.String()); !c.Sampling.Partial {
				t.Errorf("a run of 5 samples cut short at %s is not marked partial (%d samples)", point, c.Sampling.Samples)
			}
		})
	}
}
