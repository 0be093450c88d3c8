package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// TestTwoDiagnosesAtOnce: several hangdocs of one target take turns: each
// claims the target, the others wait for it, and every one gives the same
// verdict — none counts another's py-spy pauses as the target's movement,
// none says "permission denied" for a target another is tracing (issue 14
// item 8).
func TestTwoDiagnosesAtOnce(t *testing.T) {
	needPySpy(t)
	v := testvictim.StartPython(t, "py_dead_feeder.py")
	results := atOnce(t, 4, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms")
	for i, r := range results {
		var c struct {
			Verdict  string `json:"verdict"`
			Summary  string `json:"summary"`
			Sampling struct {
				Notes []string `json:"notes"`
			} `json:"sampling"`
		}
		if err := json.Unmarshal([]byte(r.out), &c); err != nil {
			t.Fatalf("run %d: exit %d, %v\n%s", i, r.code, err, r.stderr)
		}
		if r.code != ExitBlocked || c.Verdict != "blocked" {
			// The whole report: which thread's wait moved, and how, is
			// what a recurrence has to tell.
			t.Errorf("run %d: exit %d, verdict %s (%s), want blocked as every other run; notes %v\n%s", i, r.code, c.Verdict, c.Summary, c.Sampling.Notes, r.out)
		}
		if strings.Contains(r.out+r.stderr, "permission denied") {
			t.Errorf("run %d says permission denied: %v\n%s", i, c.Sampling.Notes, r.stderr)
		}
	}
}

// TestDiagnosesAtOnceOfALockWait: diagnoses of one Python program whose
// threads wait on a lock, all at once, say blocked and name the same
// holder — also those that could not claim the target and ran while
// another's py-spy paused it: a stop that is not a diagnosis's own is no
// movement (issue 18 item 8; ten at once gave 5 "working" before). Each
// run lasts at least 4s (3 samples 2s apart), so the fourth cannot claim
// the target within its wait of 10s unless the runs start far apart.
func TestDiagnosesAtOnceOfALockWait(t *testing.T) {
	needPySpy(t)
	v := testvictim.StartPython(t, "py_ndjson_pipe.py")
	holder := v.TID("holder")
	results := atOnce(t, 4, strconv.Itoa(v.PID), "--json", "--samples", "3", "--interval", "2s")
	foreign := 0
	for i, r := range results {
		var c struct {
			Verdict  string `json:"verdict"`
			Summary  string `json:"summary"`
			Sampling struct {
				Notes []string `json:"notes"`
			} `json:"sampling"`
		}
		if err := json.Unmarshal([]byte(r.out), &c); err != nil {
			t.Fatalf("run %d: exit %d, %v\n%s", i, r.code, err, r.stderr)
		}
		if r.code != ExitBlocked || c.Verdict != "blocked" {
			// The whole report: which thread's wait moved, and how, is
			// what a recurrence has to tell.
			t.Errorf("run %d: exit %d, verdict %s (%s), want blocked as every other run; notes %v\n%s", i, r.code, c.Verdict, c.Summary, c.Sampling.Notes, r.out)
		}
		// The holder is named from the Python stacks; a py-spy that a
		// loaded machine kept past its deadline leaves the kernel's
		// evidence alone, which names the waits but not who holds the lock.
		stacks := !slices.ContainsFunc(c.Sampling.Notes, func(n string) bool {
			return strings.Contains(n, "did not finish")
		})
		if stacks && !strings.Contains(c.Summary, "tid "+strconv.Itoa(holder)+" ") {
			t.Errorf("run %d: summary %q does not name the holder, tid %d", i, c.Summary, holder)
		}
		for _, n := range c.Sampling.Notes {
			if strings.Contains(n, "stopped by someone else") {
				foreign++
			}
		}
	}
	t.Logf("%d of %d runs counted stops not their own as no movement", foreign, len(results))
}

// atOnceResult is what one of several diagnoses run at once said.
type atOnceResult struct {
	code   ExitCode
	out    string
	stderr string
}

// atOnce runs n hangdoc processes with args at the same time and returns
// what each said.
func atOnce(t *testing.T, n int, args ...string) []atOnceResult {
	t.Helper()
	results := make([]atOnceResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, stderr, code := hangdocProcess(t, args...)
			results[i] = atOnceResult{code, out, stderr}
		}()
	}
	wg.Wait()
	return results
}
