package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/replay"
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
	if code == ExitError || code == ExitUsage {
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
	if code == ExitError || c.Sampling.Samples != 2 {
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
		if code != ExitError || out != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
		oneLine(t, stderr)
	}
	if _, stderr, code := hangdoc(t, "analyze"); code != ExitUsage {
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

// Goroutine profiles (pprof goroutine?debug=2) of the Go victims, taken
// twice half a second apart: testdata/go/VICTIM-1.txt and -2.txt.
func goDumps(victim string) []string {
	return []string{"testdata/go/" + victim + "-1.txt", "testdata/go/" + victim + "-2.txt"}
}

func TestAnalyzeGoDumps(t *testing.T) {
	for _, tc := range []struct {
		victim  string
		one     bool // a single snapshot
		verdict string
		holder  int64
	}{
		{victim: "gomutexpipe", one: true, verdict: "blocked", holder: 9},
		{victim: "gomutexpipe", verdict: "blocked", holder: 9},
		{victim: "gospinholder", verdict: "spinning", holder: 22},
		{victim: "gochancycle", verdict: "blocked"},  // a profile does not say which channels each refers to: no cycle proved
		{victim: "godeadfeeder", verdict: "blocked"}, // main in wg.Wait for the workers: not an idle pool
		{victim: "goworking", verdict: "working"},
	} {
		t.Run(fmt.Sprintf("%s/one=%v", tc.victim, tc.one), func(t *testing.T) {
			files := goDumps(tc.victim)
			if tc.one {
				files = files[:1]
			}
			out, stderr, code := hangdoc(t, append([]string{"analyze", "--json"}, files...)...)
			if code == ExitError || code == ExitUsage {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			c := godecode(t, out)
			if c.Sampling.StackSource != "go dump (pprof-debug2)" || c.Sampling.Samples != len(files) {
				t.Errorf("stack_source %q, %d samples; want go dump (pprof-debug2), %d", c.Sampling.StackSource, c.Sampling.Samples, len(files))
			}
			if c.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %s", c.Verdict, tc.verdict, c.Summary)
			}
			if id, _ := c.holder(); id != tc.holder {
				t.Errorf("probable holder goroutine %d, want %d", id, tc.holder)
			}
			if tc.one && !strings.Contains(strings.Join(c.Evidence, "\n"), "only one goroutine dump") {
				t.Errorf("one snapshot, but no evidence line says it cannot tell stopped from slow: %v", c.Evidence)
			}
		})
	}
}

func TestAnalyzeGoFromStdin(t *testing.T) {
	b, err := os.ReadFile(goDumps("gomutexpipe")[0])
	if err != nil {
		t.Fatal(err)
	}
	rec, err := replay.Dumps([]string{"-"}, bytes.NewReader(b), "test")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Target.Runtime != model.RuntimeGo || len(rec.Samples) != 1 || len(rec.Samples[0].Goroutines) == 0 {
		t.Errorf("runtime %q, %d samples: want one Go snapshot with goroutines", rec.Target.Runtime, len(rec.Samples))
	}
}

func TestAnalyzeGoBadDumps(t *testing.T) {
	// A debug=1 profile counts stacks without ids or states.
	out, stderr, code := hangdoc(t, "analyze", "testdata/go/gomutexpipe-debug1.txt")
	if code != ExitError || out != "" || !strings.Contains(stderr, "debug=2") {
		t.Errorf("debug=1: exit %d, stderr %q; want an error that says to fetch debug=2", code, stderr)
	}
	oneLine(t, stderr)
	// A truncated dump is read as far as it goes, and says so.
	out, stderr, code = hangdoc(t, "analyze", "--json", "../../sampler/goroutines/testdata/corpus/golang-20170-main-chan-send-no-receiver.txt")
	if code == ExitError {
		t.Fatalf("truncated corpus dump: %s", stderr)
	}
	c := godecode(t, out)
	if !strings.Contains(strings.Join(c.Sampling.Notes, "\n"), "truncated") || len(c.Goroutines) == 0 {
		t.Errorf("notes %v with %d goroutines: want a truncation note and the goroutines read", c.Sampling.Notes, len(c.Goroutines))
	}
}

// TestAnalyzeSourceMap: a dump names its files where the program was
// built; --src maps them to this checkout, so the holder that took the
// lock in a caller, in another type, is found from the source.
func TestAnalyzeSourceMap(t *testing.T) {
	root, err := filepath.Abs("../../testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(root, "dumps", "go-sigquit", "callerholds.go1.27.0.txt")
	with, stderr, code := hangdoc(t, "analyze", "--json", "--src", "/work/wt/corpus/testdata/corpus="+root, dump)
	if code != ExitBlocked || !strings.Contains(with, `"basis_kind": "probable"`) || !strings.Contains(with, "l.cache.mu, locked in main.(*Loader).Reload") {
		t.Errorf("with --src: exit %d, want the holder from the source:\n%s\n%s", code, with, stderr)
	}
	if _, stderr, code := hangdoc(t, "analyze", "--src", "nothing", dump); code != ExitUsage || !strings.Contains(stderr, "FROM=TO") {
		t.Errorf("a bad --src: exit %d, %q", code, stderr)
	}
}

// TestAnalyzeBounded: input that is not text stops with one clear line; a
// FIFO that never ends is read until --timeout and reported, partial.
func TestAnalyzeBounded(t *testing.T) {
	_, stderr, code := hangdoc(t, "analyze", "/dev/zero")
	if code != ExitError || !strings.Contains(stderr, "not text") {
		t.Errorf("/dev/zero: exit %d, %q; want an error that it is not text", code, stderr)
	}
	oneLine(t, stderr)
	if _, stderr, code := hangdoc(t, "analyze", "--timeout", "0s", "x"); code != ExitUsage {
		t.Errorf("--timeout 0s: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := hangdoc(t, "analyze", "--src", "/nonexistent/dir", "x"); code != ExitUsage {
		t.Errorf("--src of no directory: exit %d\n%s", code, stderr)
	}

	fifo := filepath.Join(t.TempDir(), "dump")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	written := make(chan error, 1)
	go func() {
		// Opening blocks until analyze opens the other end; the dump is
		// written, and the FIFO is held open until the test ends.
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			written <- err
			return
		}
		t.Cleanup(func() { w.Close() })
		_, err = w.WriteString("goroutine 1 [running]:\nmain.main()\n\t/src/main.go:10 +0x1\n\ngoroutine 5 [chan receive]:\nmain.worker()\n\t/src/main.go:20 +0x2\n\n")
		written <- err
	}()
	// The timeout is long enough for the write on a loaded machine; what is
	// checked is what was read, not when.
	out, stderr, code := hangdoc(t, "analyze", "--json", "--timeout", "3s", fifo)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	c := decode(t, out)
	if code == ExitError || !c.Sampling.Partial || !strings.Contains(c.Sampling.PartialReason, "--timeout") {
		t.Fatalf("exit %d, partial %v %q\n%s", code, c.Sampling.Partial, c.Sampling.PartialReason, stderr)
	}
}
