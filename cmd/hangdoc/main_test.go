package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for hangdoc when it re-executes
// itself: the demo starts its victim as "hangdoc __victim NAME", and the
// permission test runs the binary as another user with HANGDOC_MAIN=1.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == victimCommand || os.Getenv("HANGDOC_MAIN") == "1" {
		os.Exit(int(Main(os.Args[1:], os.Stdout, os.Stderr)))
	}
	os.Exit(m.Run())
}

// hangdoc runs the command in-process and returns what it printed.
func hangdoc(t *testing.T, args ...string) (stdout, stderr string, code ExitCode) {
	t.Helper()
	args, rec := withRecord(t, args)
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	checkLive(t, rec)
	return out.String(), errb.String(), code
}

// contract is the JSON report as docs/json.md documents it: decoding into
// it checks the names runbooks rely on.
type contract struct {
	SchemaVersion int `json:"schema_version"`
	Target        struct {
		PID     int    `json:"pid"`
		Cmdline string `json:"cmdline"`
		Runtime string `json:"runtime"`
	} `json:"target"`
	Sampling struct {
		Samples       int    `json:"samples"`
		IntervalMS    int64  `json:"interval_ms"`
		Partial       bool   `json:"partial"`
		PartialReason string `json:"partial_reason"`
		TargetExited  bool   `json:"target_exited"`
		StackSource   string `json:"stack_source"`
	} `json:"sampling"`
	Verdict  string   `json:"verdict"`
	Summary  string   `json:"summary"`
	Evidence []string `json:"evidence"`
	Threads  []struct {
		TID        int     `json:"tid"`
		Name       string  `json:"name"`
		Class      string  `json:"class"`
		CPUPercent float64 `json:"cpu_percent"`
		State      string  `json:"state"`
		Wchan      string  `json:"wchan"`
		Syscall    *struct {
			Name string `json:"name"`
			Text string `json:"text"`
		} `json:"syscall"`
		Stack []struct {
			Func string `json:"func"`
			File string `json:"file"`
		} `json:"stack"`
	} `json:"threads"`
	Locks []struct {
		ID      string `json:"id"`
		Holder  *ref   `json:"holder"`
		Waiters []ref  `json:"waiters"`
		Basis   string `json:"basis"`
	} `json:"locks"`
	Cycles [][]ref `json:"cycles"`
	Memory struct {
		RSSBytes []int64 `json:"rss_bytes"`
		Trend    string  `json:"trend"`
	} `json:"memory"`
}

type ref struct {
	PID int `json:"pid"`
	TID int `json:"tid"`
}

func decode(t *testing.T, stdout string) contract {
	t.Helper()
	var c contract
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, stdout)
	}
	if c.SchemaVersion != 1 {
		t.Errorf("schema_version = %d, want 1", c.SchemaVersion)
	}
	noCandidateCycles(t, stdout)
	return c
}

// noCandidateCycles fails a report that claims a cycle through a wait
// whose edge is not proven or inferred: a deadlock is never claimed
// through a thread that merely could end a wait (a condition's possible
// signaller). Every report the tests decode is held to it.
func noCandidateCycles(t *testing.T, stdout string) {
	t.Helper()
	var r struct {
		Waits []struct {
			From  ref    `json:"from"`
			Basis string `json:"basis"`
		} `json:"waits"`
		Cycles [][]ref `json:"cycles"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		return
	}
	for _, cy := range r.Cycles {
		for _, m := range cy {
			for _, w := range r.Waits {
				if m.TID != 0 && w.From == m && w.Basis != "proven" && w.Basis != "inferred" {
					t.Errorf("cycle %v runs through tid %d's wait, whose basis is %q: a cycle needs proven or inferred edges", cy, m.TID, w.Basis)
				}
			}
		}
	}
}

func (c contract) class(tid int) string {
	for _, th := range c.Threads {
		if th.TID == tid {
			return th.Class
		}
	}
	return "absent"
}

// lockHeldBy returns the lock whose holder is tid.
func (c contract) lockHeldBy(tid int) (waiters []int, ok bool) {
	for _, l := range c.Locks {
		if l.Holder != nil && l.Holder.TID == tid {
			for _, w := range l.Waiters {
				waiters = append(waiters, w.TID)
			}
			return waiters, true
		}
	}
	return nil, false
}

func oneLine(t *testing.T, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) > 2 || !strings.HasPrefix(lines[0], "hangdoc: ") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("want one 'hangdoc: …' line (and at most a usage pointer), got:\n%s", stderr)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
