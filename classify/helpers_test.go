package classify_test

import (
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
)

// World is the evidence around the target a test gives: the parts of a
// recording beside the target's samples.
type World struct {
	Peers                []model.Process
	Resources            map[string]model.Resource
	FamilyBefore, Family []model.Proc
	BootTime             time.Time
	Sources              map[string][]string
}

// diag is what a test looks at: classify's facts, and the words report
// makes of them (the summary, the hint, the evidence, and the whole report).
type diag struct {
	classify.Diagnosis
	Summary, Hint string
	Evidence      []string
	R             *report.Report
}

// Classify classifies samples in a world, and words the diagnosis.
func Classify(samples []model.Sample, w World, opts classify.Options) diag {
	rec := model.Recording{Samples: samples, Peers: w.Peers, Resources: w.Resources, FamilyBefore: w.FamilyBefore,
		Family: w.Family, BootTime: w.BootTime, Sources: w.Sources}
	d := classify.Classify(rec, opts)
	r := report.New(rec, d)
	return diag{Diagnosis: d, Summary: r.Summary, Hint: r.Hint, Evidence: r.Evidence, R: r}
}
