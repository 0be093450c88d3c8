package classify_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// Candidates are not edges (issue 18): a wait that names no one (a
// condition, a semaphore, a future) lists who could end it, and no cycle
// or deadlock is claimed through them. Threads that wait on each other
// that way are a lost wake-up: blocked, with the waits named.

// joinOf is pthread_join of tid: glibc sleeps on the joined thread's TID
// word at addr, expecting the TID.
func joinOf(addr uint64, tid int) model.Syscall {
	return model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{addr, 0x109, uint64(tid)}}
}

func waitFrom(d diag, tid int) *classify.Wait {
	for i := range d.Waits {
		if d.Waits[i].From.TID == tid {
			return &d.Waits[i]
		}
	}
	return nil
}

func TestCandidatesAreNoEdges(t *testing.T) {
	tests := []struct {
		name    string
		futexes map[string]model.Futex
		threads []th
		verdict classify.Verdict
		rule    classify.CauseRule
		cycles  int
		basis   map[int]classify.EdgeBasis // by waiting tid
		count   map[int]int                // candidates, by waiting tid
		summary []string
		hint    string
	}{
		{
			name: "two threads each on a condition only the other would signal",
			threads: []th{
				{tid: pid, name: "main", state: "S", call: futexWait(0x1000, 0)},
				{tid: pid + 1, name: "peer", state: "S", call: futexWait(0x2000, 0)},
			},
			verdict: classify.Blocked, rule: classify.CauseLostWakeup,
			basis:   map[int]classify.EdgeBasis{pid: classify.EdgeCandidate, pid + 1: classify.EdgeCandidate},
			count:   map[int]int{pid: 1, pid + 1: 1},
			summary: []string{"a lost wake-up, or a deadlock through waits that record no owner; not proven either way", "tid 101 (peer)", "tid 100 (main)"},
			hint:    "who should have signalled",
		},
		{
			name:    "a loader that missed its signal, workers waiting for the loader, main joining the workers",
			futexes: map[string]model.Futex{"0x8000": {Word: pid + 2}},
			threads: []th{
				{tid: pid, name: "main", state: "S", call: joinOf(0x8000, pid+2)},
				{tid: pid + 1, name: "loader", state: "S", call: futexWait(0x1000, 0)},
				{tid: pid + 2, name: "worker", state: "S", call: futexWait(0x2000, 0)},
				{tid: pid + 3, name: "worker", state: "S", call: futexWait(0x2000, 0)},
				{tid: pid + 4, name: "worker", state: "S", call: futexWait(0x2000, 0)},
			},
			verdict: classify.Blocked, rule: classify.CauseLostWakeup,
			basis:   map[int]classify.EdgeBasis{pid: classify.EdgeProven, pid + 1: classify.EdgeCandidate, pid + 2: classify.EdgeCandidate},
			count:   map[int]int{pid: 0, pid + 1: 4, pid + 2: 2},
			summary: []string{"a lost wake-up, or a deadlock through waits that record no owner; not proven either way", "tid 101 (loader)", "3 threads, tid 102 (worker) first", "waits for thread 102 to exit (pthread_join)"},
			hint:    "who should have signalled",
		},
		{
			name:    "two named threads joining each other are a real cycle",
			futexes: map[string]model.Futex{"0x8000": {Word: pid + 1}, "0x9000": {Word: pid + 2}},
			threads: []th{
				{tid: pid, name: "main", state: "S", call: futexWait(0x3000, 0)},
				{tid: pid + 1, name: "a", state: "S", call: joinOf(0x9000, pid+2)},
				{tid: pid + 2, name: "b", state: "S", call: joinOf(0x8000, pid+1)},
			},
			verdict: classify.Deadlock, rule: classify.CauseDeadlock, cycles: 1,
			basis:   map[int]classify.EdgeBasis{pid + 1: classify.EdgeProven, pid + 2: classify.EdgeProven, pid: classify.EdgeCandidate},
			summary: []string{"deadlock between 2 threads"},
			hint:    "joins a thread that waits for it",
		},
		{
			name: "a candidate on the world outside may still end the wait: blocked, no lost wake-up",
			threads: []th{
				{tid: pid, name: "main", state: "S", call: futexWait(0x1000, 0)},
				{tid: pid + 1, name: "reader", state: "S", call: call("read", 5, 0, 4096), fd: "socket:[77]"},
			},
			verdict: classify.Blocked, rule: classify.CauseBlocked,
			basis: map[int]classify.EdgeBasis{pid: classify.EdgeCandidate},
			count: map[int]int{pid: 1},
		},
		{
			name: "a condition whose only candidate works is parked behind it",
			threads: []th{
				{tid: pid, name: "main", state: "S", call: futexWait(0x1000, 0)},
				{tid: pid + 1, name: "busy", state: "R", cpu: 500 * time.Millisecond, vol: 50, call: running},
			},
			verdict: classify.Working, rule: classify.CauseWorking,
			basis: map[int]classify.EdgeBasis{pid: classify.EdgeCandidate},
			count: map[int]int{pid: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify(steady(2, tt.futexes, tt.threads...), World{}, classify.DefaultOptions())
			if d.Verdict != tt.verdict || d.Cause.Rule != tt.rule || len(d.Cycles) != tt.cycles {
				t.Fatalf("verdict %s, rule %d, cycles %+v (%s); want %s, rule %d, %d cycles", d.Verdict, d.Cause.Rule, d.Cycles, d.Summary, tt.verdict, tt.rule, tt.cycles)
			}
			for tid, b := range tt.basis {
				if w := waitFrom(d, tid); w == nil || w.Basis != b {
					t.Errorf("tid %d: wait %+v, want basis %s", tid, w, b)
				}
			}
			for tid, n := range tt.count {
				if w := waitFrom(d, tid); w == nil || w.CandidateCount != n || len(w.Candidates) != min(n, 5) {
					t.Errorf("tid %d: wait %+v, want %d candidates", tid, w, n)
				}
			}
			for _, s := range tt.summary {
				if !strings.Contains(d.Summary, s) {
					t.Errorf("summary %q lacks %q", d.Summary, s)
				}
			}
			if tt.hint != "" && !strings.Contains(d.Hint, tt.hint) {
				t.Errorf("hint %q lacks %q", d.Hint, tt.hint)
			}
			if tt.verdict != classify.Deadlock && (strings.Contains(d.Hint, "opposite orders") || strings.Contains(d.Summary, "deadlock between")) {
				t.Errorf("no cycle is proven, yet summary %q, hint %q", d.Summary, d.Hint)
			}
			for _, w := range d.R.Waits {
				if w.Basis == "" {
					t.Errorf("wait %+v has no basis in JSON", w)
				}
				if len(w.Candidates) > 0 && (w.CandidateCount < len(w.Candidates) || !slices.Equal(w.Wakers, w.Candidates)) {
					t.Errorf("wait %+v: candidates and their count disagree", w)
				}
			}
		})
	}
}

// TestCandidatesCountedByPlace: thousands of threads, each on a futex of
// its own, have thousands of candidates each; they are counted, a few
// listed, and the waits settle without walking every pair.
func TestCandidatesCountedByPlace(t *testing.T) {
	const n = 3000
	var threads []th
	for i := range n {
		threads = append(threads, th{tid: pid + i, name: "waiter", state: "S", call: futexWait(uint64(0x10000+16*i), 0)})
	}
	t.Run("all blocked: a lost wake-up", func(t *testing.T) {
		d := Classify(steady(2, nil, threads...), World{}, classify.DefaultOptions())
		if d.Verdict != classify.Blocked || d.Cause.Rule != classify.CauseLostWakeup || len(d.Cycles) != 0 {
			t.Fatalf("verdict %s, rule %d, cycles %d (%s)", d.Verdict, d.Cause.Rule, len(d.Cycles), d.Summary)
		}
		w := waitFrom(d, pid+7)
		if w == nil || w.CandidateCount != n-1 || len(w.Candidates) != 5 || w.Candidates[0].TID != pid {
			t.Errorf("wait %+v, want %d candidates, 5 listed, tid %d first", w, n-1, pid)
		}
		if len(d.Cause.Actors) != n {
			t.Errorf("the lost wake-up names %d threads, want %d", len(d.Cause.Actors), n)
		}
	})
	t.Run("one works: all parked behind it", func(t *testing.T) {
		busy := append(slices.Clone(threads), th{tid: pid + n, name: "busy", state: "R", cpu: 500 * time.Millisecond, vol: 50, call: running})
		d := Classify(steady(2, nil, busy...), World{}, classify.DefaultOptions())
		for _, a := range d.Threads[:n] {
			// The first is parked behind the busy one; each after it behind
			// the first free thread by TID, which is then the first.
			if a.Class != classify.ClassIdle || a.Why.Rule != classify.WhyBehind || a.Why.Other == nil || a.Why.N != n {
				t.Fatalf("tid %d: %s %+v, want idle behind another, one of %d", a.Ref.TID, a.Class, a.Why, n)
			}
		}
		if o := d.Threads[0].Why.Other; o.TID != pid+n {
			t.Errorf("the first waiter is behind tid %d, want the busy tid %d", o.TID, pid+n)
		}
	})
}

// TestGoroutineCandidatesAreNoEdges: a WaitGroup's waiter is no edge to
// the goroutines that could call Done; with none of the program's own
// left outside its place, nobody is left.
func TestGoroutineCandidatesAreNoEdges(t *testing.T) {
	parked := model.Thread{TID: 100, Name: "prog", State: model.StateSleeping, Syscall: futexWait(0x9000, 0)}
	t.Run("others could call Done", func(t *testing.T) {
		d := Classify(goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
			return []model.Goroutine{gr(1, "sync.WaitGroup.Wait", waitStack), gr(5, "chan send", []model.Frame{{Func: "main.ping", File: "/src/main.go", Line: 10}})}
		}), World{}, classify.DefaultOptions())
		if d.Verdict == classify.Deadlock || len(d.Cycles) != 0 {
			t.Fatalf("verdict %s, cycles %+v (%s): no cycle through a WaitGroup's candidates", d.Verdict, d.Cycles, d.Summary)
		}
		for _, g := range d.Goroutines {
			if g.Why.Rule == classify.WhyNobodyLeft {
				t.Errorf("goroutine %d: nobody left, but goroutine 5 could call Done", g.Ref.Goroutine)
			}
		}
	})
	t.Run("only waiters at its own place", func(t *testing.T) {
		d := Classify(goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
			return []model.Goroutine{gr(1, "sync.WaitGroup.Wait", waitStack), gr(2, "sync.WaitGroup.Wait", waitStack)}
		}), World{}, classify.DefaultOptions())
		if d.Verdict != classify.Blocked || d.Cause.Rule != classify.CauseStranded {
			t.Fatalf("verdict %s, rule %d (%s): want blocked, nobody left", d.Verdict, d.Cause.Rule, d.Summary)
		}
	})
}
