package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

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
		StackSource string `json:"stack_source"`
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
			for i, args := range [][]string{{}, {"--no-stop"}, {}} {
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
				if want := tt.source; len(args) > 0 {
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
