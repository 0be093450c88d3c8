package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// A sync.Once whose function never returns holds the Once's mutex, and
// the other callers of Do wait for it inside the standard library
// (sync.(*Once).doSlow). testdata/once is such a program (main.go) and
// its runtime.Stack dump under go1.26.8, with that version's sync/once.go
// in a toolchain of its own (goroot). Issue 18, item 5: the standard
// library's frames are read from the program's own toolchain or not at
// all, and the program's line that calls once.Do is never "edited since
// the build".
func TestOnceHolder(t *testing.T) {
	const dump = "testdata/once/once.go1.26.8.txt"
	src := []string{"--src", "/tmp/words-once=testdata/once"}

	t.Run("a dump names no Go version: std not read, named by the site", func(t *testing.T) {
		stdout, stderr, code := hangdoc(t, append(append([]string{"analyze", "--json"}, src...), dump)...)
		if code == ExitError {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		r := onceLock(t, stdout)
		if r.holder != 7 || r.kind != "probable" || !strings.Contains(r.basis, "inside sync.(*Once).doSlow at line 78, past where the waiters lock (sync.(*Once).doSlow at line 74)") {
			t.Errorf("holder goroutine %d (%s): %s; want goroutine 7, probable, by doSlow's site", r.holder, r.kind, r.basis)
		}
		if !strings.Contains(r.basis, "the standard library's source was not read") {
			t.Errorf("basis %q does not say the standard library's source was not read", r.basis)
		}
		if !strings.Contains(strings.Join(r.notes, "\n"), "(sync/once.go) were not read: the program's Go version is not known") {
			t.Errorf("notes %q do not say why sync/once.go was not read", r.notes)
		}
		if strings.Contains(stdout, "edited since") || strings.Contains(stdout, "does not match the stacks") {
			t.Errorf("the report says the source was edited:\n%s", stdout)
		}
	})

	t.Run("a line that cannot make the call on the stack: edited", func(t *testing.T) {
		// The ABBA victim of the corpus, its Lock lines edited away.
		b, err := os.ReadFile("../../testdata/corpus/victims/go/abba/main.go")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for _, n := range []int{26, 36} {
			if !strings.Contains(lines[n-1], ".Lock()") {
				t.Fatalf("line %d of abba/main.go is %q, not the Lock the dump stands at", n, lines[n-1])
			}
			lines[n-1] = "\t_ = 0 // no call here any more"
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := hangdoc(t, "analyze", "--json", "--src", "/work/wt/corpus/testdata/corpus/victims/go/abba="+dir,
			"../../testdata/corpus/dumps/go-sigquit/abba-nol.go1.26.0.txt")
		if code == ExitError {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "does not match the stacks (no Lock call at line 26: edited since the build?)") {
			t.Errorf("an edited line is not said to be edited:\n%s", stdout)
		}
	})

	rec, err := replay.Dumps([]string{dump}, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the program's own toolchain: read", func(t *testing.T) {
		std, note := sampler.GoStdSources(rec.Samples, "go1.26.8", []string{"testdata/once/goroot"})
		if note != nil || len(std["/usr/local/go/src/sync/once.go"]) == 0 {
			t.Fatalf("sources %d files, note %q; want sync/once.go read from testdata/once/goroot", len(std), note)
		}
		rec := rec
		rec.Sources = std
		r := report.New(rec, classify.Classify(rec, classify.DefaultOptions()))
		if len(r.Locks) != 1 || r.Locks[0].Holder == nil || r.Locks[0].Holder.Goroutine != 7 ||
			!strings.Contains(r.Locks[0].Basis, "holds o.m, locked in sync.(*Once).doSlow") ||
			!strings.Contains(r.Locks[0].Basis, "(o.m.Lock() in sync.(*Once).doSlow at line 74)") {
			t.Errorf("locks %+v; want goroutine 7 holding o.m of sync.(*Once).doSlow", r.Locks)
		}
	})
	t.Run("another version's toolchain: not read", func(t *testing.T) {
		std, note := sampler.GoStdSources(rec.Samples, "go1.26.7", []string{"testdata/once/goroot"})
		if len(std) != 0 || note == nil || !strings.Contains(report.NoteText(*note), "no toolchain of go1.26.7") {
			t.Errorf("sources %d files, note %v; want none read, and why", len(std), note)
		}
	})
}

type onceReport struct {
	holder int64
	kind   string
	basis  string
	notes  []string
}

func onceLock(t *testing.T, stdout string) onceReport {
	t.Helper()
	var r struct {
		Sampling struct {
			Notes []string `json:"notes"`
		} `json:"sampling"`
		Locks []struct {
			Holder *struct {
				Goroutine int64 `json:"goroutine"`
			} `json:"holder"`
			Basis     string `json:"basis"`
			BasisKind string `json:"basis_kind"`
		} `json:"locks"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(r.Locks) != 1 {
		t.Fatalf("locks %+v, want the Once's mutex", r.Locks)
	}
	out := onceReport{kind: r.Locks[0].BasisKind, basis: r.Locks[0].Basis, notes: r.Sampling.Notes}
	if h := r.Locks[0].Holder; h != nil {
		out.holder = h.Goroutine
	}
	return out
}
