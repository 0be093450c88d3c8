package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/internal/reportcheck"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// TestRecordingsCheck renders every recording in the three formats and
// fails on an empty slot, a dangling separator, or a word of the text that
// the JSON contradicts (internal/reportcheck).
func TestRecordingsCheck(t *testing.T) {
	recs, err := filepath.Glob("testdata/*.recording.json")
	if err != nil || len(recs) == 0 {
		t.Fatalf("no recordings in testdata: %v", err)
	}
	for _, path := range recs {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".recording.json"), func(t *testing.T) {
			rec, err := replay.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			r := New(rec, classify.Classify(rec, classify.DefaultOptions()))
			for _, p := range checkRendered(t, r) {
				t.Error(p)
			}
		})
	}
}

// checkRendered renders r as text, Markdown and JSON, and checks them.
func checkRendered(t *testing.T, r *Report) []reportcheck.Problem {
	t.Helper()
	var text, md, js bytes.Buffer
	if err := Text(&text, r, Palette{}); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	return reportcheck.Check(text.Bytes(), md.Bytes(), js.Bytes())
}

// A goroutine cycle whose members have no channel evidence (no
// ChanWait) says what they wait on: never "is blocked in ;".
func TestDeadlockSummaryNoEmptySlot(t *testing.T) {
	g := func(id int64, fn string) classify.Actor {
		return classify.Actor{Kind: classify.ActorGoroutine, Ref: classify.Ref{PID: 1, Goroutine: id}, Class: classify.ClassBlocked,
			Wait: model.WaitChannel, GoState: "chan receive", Stack: []model.Frame{{Func: "runtime.gopark"}, {Func: fn, File: "/src/main.go", Line: 9}}}
	}
	cycle := classify.Cycle{{PID: 1, Goroutine: 7}, {PID: 1, Goroutine: 8}}
	ping, pong := g(7, "main.ping"), g(8, "main.pong")
	pong.Group = 1
	d := classify.Diagnosis{Verdict: classify.Deadlock, Confidence: classify.Medium,
		Goroutines: []classify.Actor{ping, pong}, Cycles: []classify.Cycle{cycle},
		Groups: []classify.Group{{Count: 1, State: "chan receive", Class: classify.ClassBlocked, IDs: []int64{7}, Counts: []int{1}, Stack: ping.Stack},
			{Count: 1, State: "chan receive", Class: classify.ClassBlocked, IDs: []int64{8}, Counts: []int{1}, Stack: pong.Stack}},
		Cause: classify.Cause{Rule: classify.CauseDeadlock, Layer: classify.ActorGoroutine, Actors: cycle, Cycle: 0, Cycles: 1}}
	rec := model.Recording{Samples: []model.Sample{{PID: 1}}}
	r := New(rec, d)
	if strings.Contains(r.Summary, "in ;") || strings.HasSuffix(r.Summary, "in ") {
		t.Errorf("summary %q has an empty slot", r.Summary)
	}
	for _, p := range checkRendered(t, r) {
		t.Error(p)
	}
}
