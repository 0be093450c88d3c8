// Package report holds the one model of a diagnosis that every output is a
// view of: text for tickets and terminals, Markdown for tickets, JSON for
// runbooks (a versioned contract, see docs/json.md).
package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// SchemaVersion is the JSON contract's version. Adding fields keeps it;
// renaming or removing one, or changing a meaning, bumps it.
const SchemaVersion = 1

// Report is a diagnosis with what it was made from.
type Report struct {
	SchemaVersion  int          `json:"schema_version"`
	HangdocVersion string       `json:"hangdoc_version"`
	Time           time.Time    `json:"time"`
	Host           model.Host   `json:"host"`
	Target         model.Target `json:"target"`
	Sampling       Sampling     `json:"sampling"`
	classify.Diagnosis
}

// Sampling says how the evidence was taken, and whether the run was cut short.
type Sampling struct {
	Samples       int    `json:"samples"`
	Requested     int    `json:"requested"`
	IntervalMS    int64  `json:"interval_ms"`
	DurationMS    int64  `json:"duration_ms"`
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason,omitempty"`
	TargetExited  bool   `json:"target_exited"`
	StackSource   string `json:"stack_source"`
	// Search says how other processes were scanned for the other ends of
	// pipes and sockets, and whether the scan finished within its budget.
	Search model.Search `json:"search"`
	Notes  []string     `json:"notes"`
}

// New classifies a recording and builds its report.
func New(rec model.Recording, opts classify.Options) *Report {
	r := &Report{
		SchemaVersion:  SchemaVersion,
		HangdocVersion: rec.HangdocVersion,
		Host:           rec.Host,
		Target:         rec.Target,
		Sampling: Sampling{
			Samples:       len(rec.Samples),
			Requested:     rec.Requested,
			IntervalMS:    rec.Interval.Milliseconds(),
			Partial:       rec.PartialReason != "",
			PartialReason: rec.PartialReason,
			TargetExited:  rec.TargetExited,
			StackSource:   cmp.Or(rec.StackSource, "none"),
			Search:        rec.Search,
			Notes:         append([]string{}, rec.Notes...),
		},
		Diagnosis: classify.Classify(rec.Samples, classify.World{
			Peers:        rec.Peers,
			Resources:    rec.Resources,
			FamilyBefore: rec.FamilyBefore,
			Family:       rec.Family,
			BootTime:     rec.BootTime,
			Sources:      rec.Sources,
		}, opts),
	}
	if n := len(rec.Samples); n > 0 {
		r.Time = rec.Samples[0].Time.UTC()
		r.Sampling.DurationMS = rec.Samples[n-1].Time.Sub(rec.Samples[0].Time).Milliseconds()
	}
	if !rec.Search.Complete && len(rec.Resources) > 0 {
		r.Evidence = append(r.Evidence, fmt.Sprintf("the search for the other ends of pipes and sockets stopped at its %dms budget after %d processes: some ends may be missing",
			rec.Search.BudgetMS, rec.Search.Scanned))
	}
	if r.Sampling.Partial {
		r.Evidence = append(r.Evidence, "partial: "+rec.PartialReason)
	}
	return r
}

// WriteRecording saves a run's raw evidence as JSON.
func WriteRecording(path string, rec model.Recording) error {
	b, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the recording: %w", err)
	}
	return nil
}

// ReadRecording loads a recording written by WriteRecording.
func ReadRecording(path string) (model.Recording, error) {
	var rec model.Recording
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("reading recording %s: %w", path, err)
	}
	return rec, nil
}
