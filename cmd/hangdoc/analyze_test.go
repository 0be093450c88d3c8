package main

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/diagnose"
)

// Dumps captured from sampler/python/testdata/live/victim.py: a thread
// "lock-waiter" blocked at a `with lock:` line, a "queue-getter" in
// queue.get(), and the main thread.
const (
	liveJSON         = "../../sampler/python/testdata/live/pyspy-3.12.json"
	liveFaulthandler = "../../sampler/python/testdata/live/faulthandler-later-3.12.txt"
)

func TestAnalyzeOnePySpyDump(t *testing.T) {
	out, stderr, code := hangdoc(t, "analyze", liveJSON, "--json")
	c := pydecodeAs(t, out, "py-spy-json")
	if code == diagnose.ExitError || code == diagnose.ExitUsage {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if c.Sampling.Samples != 1 {
		t.Errorf("samples = %d, want 1", c.Sampling.Samples)
	}
	classes := map[string]string{}
	for _, th := range c.Threads {
		classes[th.Name] = th.Class
		if len(th.Stack) == 0 {
			t.Errorf("thread %s has no stack", th.Name)
		}
	}
	if classes["queue-getter"] != "idle" || classes["lock-waiter"] != "blocked" {
		t.Errorf("classes %v: want queue-getter idle, lock-waiter blocked", classes)
	}
	found := false
	for _, w := range c.Waits {
		found = found || (w.Kind == "lock" && strings.Contains(w.Detail, "with-block at"))
	}
	if !found {
		t.Errorf("waits %+v: want the lock-waiter waiting at its with-block", c.Waits)
	}
}

func TestAnalyzeSeries(t *testing.T) {
	// Two dumps in one file (dump_traceback_later repeats), then the same
	// py-spy dump twice: snapshots in time, with threads matched across them.
	out, stderr, code := hangdoc(t, "analyze", liveFaulthandler, "--json")
	c := pydecodeAs(t, out, "faulthandler")
	if code == diagnose.ExitError || c.Sampling.Samples != 2 {
		t.Fatalf("exit %d, %d samples, want 2\n%s", code, c.Sampling.Samples, stderr)
	}
	out, _, _ = hangdoc(t, "analyze", liveJSON, liveJSON, "--json")
	c = pydecodeAs(t, out, "py-spy-json")
	if c.Sampling.Samples != 2 || len(c.Threads) != 3 {
		t.Errorf("%d samples, %d threads: want 2 samples of the same 3 threads", c.Sampling.Samples, len(c.Threads))
	}
	for _, th := range c.Threads {
		if th.Class == "working" {
			t.Errorf("thread %s is working, but its stack is the same in both snapshots", th.Name)
		}
	}
}

func TestAnalyzeBadInput(t *testing.T) {
	for _, args := range [][]string{{"analyze", "go.mod"}, {"analyze", "/nonexistent/dump.txt"}} {
		out, stderr, code := hangdoc(t, args...)
		if code != diagnose.ExitError || out != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
		oneLine(t, stderr)
	}
	if _, stderr, code := hangdoc(t, "analyze"); code != diagnose.ExitUsage {
		t.Errorf("analyze with no file: exit %d\n%s", code, stderr)
	}
}

// pydecodeAs decodes a report whose stacks came from the named format.
func pydecodeAs(t *testing.T, out, source string) pycontract {
	t.Helper()
	var c pycontract
	c.xcontract = xdecode(t, out)
	if err := jsonUnmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	if c.Sampling.StackSource != source {
		t.Fatalf("stack_source %q, want %s", c.Sampling.StackSource, source)
	}
	return c
}
