package classify_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
)

// chanParked is a Go thread parked by the scheduler.
var chanParked = model.Thread{TID: 100, State: model.StateSleeping, Wchan: "futex_wait", Syscall: model.Syscall{Nr: 202}}

// chanWait finds the wait of goroutine id that carries counterparts.
func chanWait(d diag, id int64) *classify.Wait {
	for i := range d.Waits {
		if w := &d.Waits[i]; w.From.Goroutine == id && w.Counterparts != nil {
			return w
		}
	}
	return nil
}

// TestChanProofs: the memory scan's facts (HeldChans, ChanScan on the last
// sample) become each channel wait's counterparts; a counterpart keeps the
// waiters out of an idle pool, and only a complete scan that names nobody,
// with no global and no timer, proves nobody is left.
func TestChanProofs(t *testing.T) {
	complete := &model.ChanScan{Depth: 2, Complete: true}
	tests := []struct {
		name    string
		main    model.Goroutine // beside 4 workers receiving on 0xj
		scan    *model.ChanScan
		verdict classify.Verdict
		refs    []int64 // worker 20's counterparts
		first   bool    // main waits for them first
		nobody  bool
		summary string
		not     string
	}{
		{
			name: "main in wg.Wait holding the channel waits for them first",
			main: func() model.Goroutine {
				g := gr(1, "sync.WaitGroup.Wait", waitStack)
				g.HeldChans = []string{"0xj"}
				return g
			}(),
			scan: complete, verdict: classify.Blocked, refs: []int64{1}, first: true,
			summary: "4 goroutines wait in main.worker [chan receive] on a channel that goroutine 1 (main.main) refers to (memory scan: every stack and the globals, 2 pointers deep); goroutine 1 refers to the channel but waits first in sync.WaitGroup.Wait, a wait that names no goroutine (the waiting goroutines are among those that could end it): neither side is seen to move",
			not:     "feeder",
		},
		{
			name: "a counterpart that accepts connections feeds them: idle, not gone",
			main: func() model.Goroutine {
				g := gr(1, "IO wait", acceptStack)
				g.HeldChans = []string{"0xj"}
				return g
			}(),
			scan: complete, verdict: classify.Idle, refs: []int64{1},
			not: "feeder",
		},
		{
			name: "a counterpart parked for good in select {} sends nothing: blocked",
			main: func() model.Goroutine {
				g := gr(1, "select (no cases)", []model.Frame{{Func: "main.main", File: "/src/main.go", Line: 9}})
				g.HeldChans = []string{"0xj"}
				return g
			}(),
			scan: complete, verdict: classify.Blocked, refs: []int64{1},
			summary: "4 goroutines wait in main.worker [chan receive] on a channel that goroutine 1 (main.main) refers to",
			not:     "but waits first",
		},
		{
			name: "nobody refers to the channel: proven",
			main: gr(1, "select (no cases)", []model.Frame{{Func: "main.main", File: "/src/main.go", Line: 9}}),
			scan: complete, verdict: classify.Idle, refs: []int64{}, nobody: true,
			summary: "all 4 workers wait in main.worker [chan receive] and no goroutine but them refers to their channel (memory scan: every stack and the globals, 2 pointers deep)",
		},
		{
			name:    "a scan cut short proves nothing",
			main:    gr(1, "select (no cases)", []model.Frame{{Func: "main.main", File: "/src/main.go", Line: 9}}),
			scan:    &model.ChanScan{Depth: 2, Cut: "goroutine 9 was running: its registers are not in memory"},
			verdict: classify.Idle, refs: []int64{},
			not: "no goroutine but them",
		},
		{
			name:    "a global that refers to the channel proves nothing",
			main:    gr(1, "select (no cases)", []model.Frame{{Func: "main.main", File: "/src/main.go", Line: 9}}),
			scan:    &model.ChanScan{Depth: 2, Complete: true, Globals: []string{"0xj"}},
			verdict: classify.Idle, refs: []int64{},
			not: "no goroutine but them",
		},
		{
			name:    "a timer's channel proves nothing",
			main:    gr(1, "select (no cases)", []model.Frame{{Func: "main.main", File: "/src/main.go", Line: 9}}),
			scan:    &model.ChanScan{Depth: 2, Complete: true, Timers: []string{"0xj"}},
			verdict: classify.Idle, refs: []int64{},
			not: "no goroutine but them",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := goSamples(2, []model.Thread{chanParked}, func(int) []model.Goroutine {
				gs := []model.Goroutine{tt.main, gr(2, "IO wait", acceptStack)}
				for i := range 4 {
					w := gr(int64(20+i), "chan receive", recvStack)
					// The waiters' own stacks hold their channel too.
					w.WaitChans, w.HeldChans = []string{"0xj"}, []string{"0xj"}
					gs = append(gs, w)
				}
				return gs
			})
			samples[len(samples)-1].ChanScan = tt.scan
			d := Classify(samples, World{}, classify.DefaultOptions())
			if d.Verdict != tt.verdict {
				t.Errorf("verdict %v, want %v\nsummary: %s", d.Verdict, tt.verdict, d.Summary)
			}
			w := chanWait(d, 20)
			if w == nil {
				t.Fatalf("no wait with counterparts for worker 20: %+v", d.Waits)
			}
			cp := w.Counterparts
			var refs []int64
			for _, r := range cp.Refs {
				refs = append(refs, r.Goroutine)
			}
			if !slices.Equal(refs, tt.refs) && !(len(refs) == 0 && len(tt.refs) == 0) {
				t.Errorf("counterparts %v, want %v", refs, tt.refs)
			}
			if got := len(cp.WaitFirst) == 1 && cp.WaitFirst[0].Goroutine == 1; got != tt.first {
				t.Errorf("wait first %v, want main: %v", cp.WaitFirst, tt.first)
			}
			if cp.Nobody() != tt.nobody {
				t.Errorf("nobody %v, want %v: %+v", cp.Nobody(), tt.nobody, *cp)
			}
			if tt.summary != "" && !strings.Contains(d.Summary, tt.summary) {
				t.Errorf("summary %q\nwant %q", d.Summary, tt.summary)
			}
			if tt.not != "" && strings.Contains(d.Summary, tt.not) {
				t.Errorf("summary %q says %q", d.Summary, tt.not)
			}
			var b strings.Builder
			if err := report.JSON(&b, d.R); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), `"basis": "memory scan"`) {
				t.Errorf("the JSON report has no counterparts with basis memory scan")
			}
		})
	}
}

// TestChanProofsWithoutScan: without a scan (a dump, an earlier sample's
// source) no wait carries counterparts.
func TestChanProofsWithoutScan(t *testing.T) {
	samples := goSamples(2, []model.Thread{chanParked}, func(int) []model.Goroutine {
		w := gr(20, "chan receive", recvStack)
		w.WaitChans = []string{"0xj"}
		return []model.Goroutine{gr(1, "sync.WaitGroup.Wait", waitStack), w}
	})
	d := Classify(samples, World{}, classify.DefaultOptions())
	if w := chanWait(d, 20); w != nil {
		t.Errorf("counterparts without a scan: %+v", *w.Counterparts)
	}
}
