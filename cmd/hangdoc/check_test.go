package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/internal/reportcheck"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// Every live victim's report is checked too (issue 18, item 7): a live
// diagnosis run by the tests (its first argument a pid) also records its
// samples (--record), and checkLive renders that recording as text,
// Markdown and JSON and runs internal/reportcheck on them.

// withRecord adds --record to a live diagnosis's arguments; file is ""
// when it is not one, or records already.
func withRecord(t *testing.T, args []string) (out []string, file string) {
	t.Helper()
	if len(args) == 0 || slices.Contains(args, "--record") {
		return args, ""
	}
	if _, err := strconv.Atoi(args[0]); err != nil {
		return args, ""
	}
	file = filepath.Join(t.TempDir(), "check.recording.json")
	return append(append([]string{}, args...), "--record", file), file
}

// checkLive renders the recording a live diagnosis made and fails the
// test on an empty slot or a word the JSON contradicts. A run that made
// no recording (an error, a refusal) is not checked.
func checkLive(t *testing.T, file string) {
	t.Helper()
	if file == "" {
		return
	}
	rec, err := replay.Read(file)
	if err != nil {
		return
	}
	r := report.New(rec, classify.Classify(rec, classify.DefaultOptions()))
	var text, md, js bytes.Buffer
	if report.Text(&text, r, report.Palette{}) != nil || report.Markdown(&md, r) != nil || report.JSON(&js, r) != nil {
		t.Errorf("rendering the recording %s failed", file) // not Fatal: a diagnosis may run on a goroutine of the test's
		return
	}
	for _, p := range reportcheck.Check(text.Bytes(), md.Bytes(), js.Bytes()) {
		t.Errorf("the report of pid %d: %s", rec.Target.PID, p)
	}
}
