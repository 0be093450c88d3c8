package main

import (
	"encoding/json"
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
	const runs = 4
	type result struct {
		code   ExitCode
		out    string
		stderr string
	}
	results := make([]result, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, stderr, code := hangdocProcess(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms")
			results[i] = result{code, out, stderr}
		}()
	}
	wg.Wait()
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
			t.Errorf("run %d: exit %d, verdict %s (%s), want blocked as every other run; notes %v", i, r.code, c.Verdict, c.Summary, c.Sampling.Notes)
		}
		if strings.Contains(r.out+r.stderr, "permission denied") {
			t.Errorf("run %d says permission denied: %v\n%s", i, c.Sampling.Notes, r.stderr)
		}
	}
}
