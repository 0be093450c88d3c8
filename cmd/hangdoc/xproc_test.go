package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// The cross-process victims: hangs that are only named by following a wait
// to another process. Their JSON adds waits[].chain, processes[] and
// orphans[] to the contract.

type xcontract struct {
	contract
	Hint  string `json:"hint"`
	Waits []struct {
		From   ref    `json:"from"`
		To     *ref   `json:"to"`
		Kind   string `json:"kind"`
		Detail string `json:"detail"`
		Chain  string `json:"chain"`
	} `json:"waits"`
	Processes []struct {
		PID   int    `json:"pid"`
		Depth int    `json:"depth"`
		State string `json:"state"`
	} `json:"processes"`
	Orphans []struct {
		PID  int `json:"pid"`
		PPID int `json:"ppid"`
	} `json:"orphans"`
}

func xdecode(t *testing.T, out string) xcontract {
	t.Helper()
	var c xcontract
	c.contract = decode(t, out)
	if err := jsonUnmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c xcontract) chainOf(tid int) string {
	for _, w := range c.Waits {
		if w.From.TID == tid {
			return w.Chain
		}
	}
	return ""
}

func cyclePIDs(c []ref) []int {
	var pids []int
	for _, r := range c {
		if !slices.Contains(pids, r.PID) {
			pids = append(pids, r.PID)
		}
	}
	slices.Sort(pids)
	return pids
}

func sorted(ints ...int) []int { slices.Sort(ints); return ints }

func TestPipelineWriterBlockedOnSleepingConsumer(t *testing.T) {
	v := testvictim.StartShell(t, "pipeline.sh")
	writer, consumer := v.Int("writer"), v.Int("consumer")
	out, stderr, code := hangdoc(t, strconv.Itoa(writer), "--json", "--interval", "500ms")
	c := xdecode(t, out)
	if code != ExitBlocked || c.Verdict != "blocked" {
		t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
	}
	chain := c.chainOf(writer)
	for _, needle := range []string{"write(", "pipe:[", fmt.Sprintf("read by pid %d", consumer), "sleeping"} {
		if !strings.Contains(chain, needle) {
			t.Errorf("chain %q lacks %q", chain, needle)
		}
	}
	if !strings.Contains(c.Summary, fmt.Sprintf("pid %d", consumer)) {
		t.Errorf("summary %q does not name the consumer %d", c.Summary, consumer)
	}
	if len(c.Processes) == 0 || c.Processes[0].PID != consumer || c.Processes[0].Depth != 1 {
		t.Errorf("processes = %+v, want the consumer %d at depth 1", c.Processes, consumer)
	}
	text, _, _ := hangdoc(t, strconv.Itoa(writer), "--samples", "2", "--interval", "300ms")
	if !strings.Contains(text, "WAITS") || !strings.Contains(text, fmt.Sprintf("read by pid %d", consumer)) {
		t.Errorf("text report lacks the chain:\n%s", text)
	}
}

// TestChildPipeDeadlocks: a parent waits for its child to exit while the
// child blocks writing a pipe only the parent reads — Python's
// Popen(stderr=PIPE).wait() and Go's cmd.Wait() before reading StdoutPipe.
func TestChildPipeDeadlocks(t *testing.T) {
	tests := []struct {
		name  string
		start func(t *testing.T) *testvictim.Victim
		hint  string
	}{
		{"Popen(stderr=PIPE).wait()", func(t *testing.T) *testvictim.Victim { return testvictim.StartPython(t, "popen_deadlock.py") }, "communicate()"},
		{"cmd.Wait() before StdoutPipe", func(t *testing.T) *testvictim.Victim { return testvictim.Start(t, testvictim.BuildGo(t, "gowait")) }, "StdoutPipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.start(t)
			parent, child := v.PID, v.Int("child")
			out, stderr, code := hangdoc(t, strconv.Itoa(parent), "--json", "--interval", "500ms")
			c := xdecode(t, out)
			if code != ExitDeadlock || c.Verdict != "deadlock" {
				t.Fatalf("exit %d verdict %q (%s), want deadlock\n%s", code, c.Verdict, c.Summary, stderr)
			}
			if len(c.Cycles) != 1 || !slices.Equal(cyclePIDs(c.Cycles[0]), sorted(parent, child)) {
				t.Errorf("cycles = %+v, want one of pids %d and %d", c.Cycles, parent, child)
			}
			if !strings.Contains(c.Hint, tt.hint) {
				t.Errorf("hint %q should name %s", c.Hint, tt.hint)
			}
		})
	}
}

func TestChildWaitingOnStdin(t *testing.T) {
	v := testvictim.StartPython(t, "stdin_child.py")
	parent, child := v.PID, v.Int("child")
	out, stderr, code := hangdoc(t, strconv.Itoa(child), "--json", "--interval", "500ms")
	c := xdecode(t, out)
	if code != ExitDeadlock && code != ExitBlocked {
		t.Fatalf("exit %d verdict %q (%s), want blocked or deadlock\n%s", code, c.Verdict, c.Summary, stderr)
	}
	var stdin bool
	for _, w := range c.Waits {
		if w.Kind == "stdin" && w.To != nil && w.To.PID == parent {
			stdin = true
		}
	}
	if !stdin {
		t.Errorf("waits = %+v, want a stdin wait pointing at the parent %d", c.Waits, parent)
	}
	if !strings.Contains(c.Hint, "/dev/null") {
		t.Errorf("hint %q should say to give stdin from /dev/null", c.Hint)
	}
}

func TestOrphansLeftByTimeouts(t *testing.T) {
	v := testvictim.StartPython(t, "orphans.py")
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "500ms")
	c := xdecode(t, out)
	if code == ExitError {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var got []int
	for _, o := range c.Orphans {
		got = append(got, o.PID)
	}
	slices.Sort(got)
	if want := v.TIDs("orphans"); !slices.Equal(got, want) {
		t.Errorf("orphans = %v, want %v", got, want)
	}
	text, _, _ := hangdoc(t, strconv.Itoa(v.PID), "--samples", "2", "--interval", "300ms")
	if !strings.Contains(text, "LEFT BEHIND") {
		t.Errorf("text report lacks the orphans:\n%s", text)
	}
}

func TestTCPClientBlockedOnSilentServer(t *testing.T) {
	v := testvictim.StartPython(t, "tcp_stall.py")
	server := v.Int("server")
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
	c := xdecode(t, out)
	if code != ExitBlocked || c.Verdict != "blocked" {
		t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
	}
	chain := c.chainOf(v.PID)
	for _, needle := range []string{"socket:[", "ESTABLISHED", fmt.Sprintf("127.0.0.1:%s", v.Info["port"]), fmt.Sprintf("pid %d", server)} {
		if !strings.Contains(chain, needle) {
			t.Errorf("chain %q lacks %q", chain, needle)
		}
	}
}
