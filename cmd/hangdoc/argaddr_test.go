package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestArgumentWordsWithoutSource: a dump read without the program's
// source still links a waiter to who may hold its mutex by the words its
// frames print. The corpus's abba-nol dumps (built with -N -l, so both
// frames print both mutexes) of every Go version, as SIGQUIT and pprof
// print them: alice waits on b and prints a, bob waits on a and prints b,
// so each is the one goroutine that refers to what the other waits on. A
// deadlock of the two, each holder inferred (the source would show the
// Lock call, which is what exact and probable rest on), and the words say
// so.
func TestArgumentWordsWithoutSource(t *testing.T) {
	dumps, _ := filepath.Glob("../../testdata/corpus/dumps/go-*/abba-nol.*.txt")
	if len(dumps) < 12 {
		t.Fatalf("%d abba-nol dumps, want 12 (sigquit and pprof, Go 1.22–1.27)", len(dumps))
	}
	for _, dump := range dumps {
		t.Run(filepath.Base(filepath.Dir(dump))+"/"+filepath.Base(dump), func(t *testing.T) {
			exp, err := os.ReadFile(strings.TrimSuffix(dump, ".txt") + ".expect")
			if err != nil {
				t.Fatal(err)
			}
			var want []int64
			for _, l := range strings.Split(string(exp), "\n") {
				if id, ok := strings.CutPrefix(l, "holder: goroutine "); ok {
					n, _ := strconv.ParseInt(id, 10, 64)
					want = append(want, n)
				}
			}
			out, stderr, code := hangdoc(t, "analyze", "--json", dump)
			var r struct {
				Verdict string `json:"verdict"`
				Summary string `json:"summary"`
				Locks   []struct {
					Holder *struct {
						Goroutine int64 `json:"goroutine"`
					} `json:"holder"`
					BasisKind string `json:"basis_kind"`
					Basis     string `json:"basis"`
				} `json:"locks"`
				Cycles [][]struct {
					Goroutine int64 `json:"goroutine"`
				} `json:"cycles"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("exit %d: %v\n%s", code, err, stderr)
			}
			if r.Verdict != "deadlock" || code != ExitDeadlock || len(r.Cycles) != 1 {
				t.Fatalf("verdict %s (exit %d), cycles %v: want one deadlock; %s", r.Verdict, code, r.Cycles, r.Summary)
			}
			var got []int64
			for _, m := range r.Cycles[0] {
				got = append(got, m.Goroutine)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("cycle %v, want goroutines %v", got, want)
			}
			for _, l := range r.Locks {
				if l.Holder == nil || l.BasisKind != "inferred" || !strings.Contains(l.Basis, "prints its address") || !strings.Contains(l.Basis, "the program's source would show") {
					t.Errorf("lock %+v: want a holder inferred from its argument words", l)
				}
			}
			if !strings.Contains(r.Summary, "probably held by") {
				t.Errorf("summary %q: an inferred holder is worded as probable", r.Summary)
			}
		})
	}
}
