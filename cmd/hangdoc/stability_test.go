//go:build stability

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// The stability suite (issue 18 item 8): the same hang, the same verdict.
// Each live victim is diagnosed ten times in a row and once more while two
// busy loops load the machine, and every run must give the same verdict,
// the same holders and the same cycles; ten diagnoses of one Python lock
// wait at once must all say blocked. It takes minutes, so it is not in the
// default test command:
//
//	go test -tags stability -run Stability -count=1 ./cmd/hangdoc

const stabilityRuns = 10

// stabilityVictims are the live victims, each with the verdict it must
// give ("" where it depends on the stack source a machine has).
var stabilityVictims = []struct {
	name    string
	kind    string // "c", "go", "python"
	verdict string
}{
	{"abba", "c", "deadlock"},
	{"pipeholder", "c", "blocked"},
	{"spinholder", "c", "spinning"},
	{"gomutexpipe", "go", "blocked"},
	{"gospinholder", "go", "spinning"},
	{"gochancycle", "go", ""},
	{"godeadfeeder", "go", "blocked"},          // main waits in wg.Wait() for the workers
	{"py_dead_feeder.py", "python", "blocked"}, // main joins the workers
	{"py_ndjson_pipe.py", "python", "blocked"},
	{"py_spin_renderers.py", "python", "spinning"},
}

// stableFacts is what must not change from run to run.
type stableFacts struct {
	Verdict string
	Holders []string // "tid N" or "goroutine N", sorted
	Cycles  []string // each cycle's members, sorted
}

func (f stableFacts) String() string {
	return fmt.Sprintf("verdict %s, holders %v, cycles %v", f.Verdict, f.Holders, f.Cycles)
}

func stableOf(t *testing.T, out string) (stableFacts, string) {
	t.Helper()
	var r struct {
		Verdict string `json:"verdict"`
		Summary string `json:"summary"`
		Locks   []struct {
			Holder *struct {
				TID       int   `json:"tid"`
				Goroutine int64 `json:"goroutine"`
			} `json:"holder"`
		} `json:"locks"`
		Cycles [][]struct {
			PID       int   `json:"pid"`
			TID       int   `json:"tid"`
			Goroutine int64 `json:"goroutine"`
		} `json:"cycles"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, out)
	}
	f := stableFacts{Verdict: r.Verdict}
	for _, l := range r.Locks {
		if h := l.Holder; h != nil {
			w := "tid " + strconv.Itoa(h.TID)
			if h.Goroutine != 0 {
				w = "goroutine " + strconv.FormatInt(h.Goroutine, 10)
			}
			if !slices.Contains(f.Holders, w) {
				f.Holders = append(f.Holders, w)
			}
		}
	}
	slices.Sort(f.Holders)
	for _, c := range r.Cycles {
		var m []string
		for _, a := range c {
			m = append(m, fmt.Sprintf("%d/%d/%d", a.PID, a.TID, a.Goroutine))
		}
		slices.Sort(m)
		f.Cycles = append(f.Cycles, strings.Join(m, " "))
	}
	slices.Sort(f.Cycles)
	return f, r.Summary
}

func startStable(t *testing.T, name, kind string) *testvictim.Victim {
	switch kind {
	case "c":
		return testvictim.Start(t, testvictim.Build(t, name))
	case "go":
		return testvictim.Start(t, testvictim.BuildGo(t, name))
	}
	needPySpy(t)
	return testvictim.StartPython(t, name)
}

// busyLoops starts n shell loops that keep a core each busy, until the
// test ends.
func busyLoops(t *testing.T, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting a busy loop: %v", err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
}

func TestStabilityVerdicts(t *testing.T) {
	for _, vc := range stabilityVictims {
		t.Run(vc.name, func(t *testing.T) {
			v := startStable(t, vc.name, vc.kind)
			// Each run is recorded, and the recordings kept, so that a
			// run that differs can be replayed (hangdoc analyze FILE).
			dir, err := os.MkdirTemp("", "hangdoc-stability-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if !t.Failed() {
					os.RemoveAll(dir)
				}
			})
			n := 0
			diagnose := func() (stableFacts, string) {
				n++
				rec := filepath.Join(dir, fmt.Sprintf("%s-%d.json", vc.name, n))
				out, stderr, _ := hangdocProcess(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms", "--record", rec)
				f, summary := stableOf(t, out)
				return f, summary + " " + stderr + " (recorded in " + rec + ")"
			}
			first, summary := diagnose()
			if vc.verdict != "" && first.Verdict != vc.verdict {
				t.Errorf("run 1: %s (%s), want verdict %s", first, summary, vc.verdict)
			}
			for i := 2; i <= stabilityRuns; i++ {
				if f, summary := diagnose(); !equalFacts(f, first) {
					t.Errorf("run %d: %s (%s); run 1: %s", i, f, summary, first)
				}
			}
			busyLoops(t, 2)
			if f, summary := diagnose(); !equalFacts(f, first) {
				t.Errorf("with two busy loops: %s (%s); unloaded: %s", f, summary, first)
			}
		})
	}
}

func equalFacts(a, b stableFacts) bool {
	return a.Verdict == b.Verdict && slices.Equal(a.Holders, b.Holders) && slices.Equal(a.Cycles, b.Cycles)
}

// TestStabilityTenAtOnce: ten diagnoses at once of a Python program whose
// threads wait on a lock all say blocked, with the same holder: none reads
// another's py-spy pauses as the target's movement.
func TestStabilityTenAtOnce(t *testing.T) {
	needPySpy(t)
	v := testvictim.StartPython(t, "py_ndjson_pipe.py")
	const runs = 10
	outs := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _, _ = hangdocProcess(t, strconv.Itoa(v.PID), "--json")
		}()
	}
	wg.Wait()
	want := stableFacts{Verdict: "blocked", Holders: []string{"tid " + strconv.Itoa(v.TID("holder"))}}
	for i, out := range outs {
		if f, summary := stableOf(t, out); !equalFacts(f, want) {
			t.Errorf("run %d: %s (%s), want %s", i+1, f, summary, want)
		}
	}
}
