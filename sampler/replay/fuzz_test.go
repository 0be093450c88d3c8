package replay_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// FuzzAnalyze runs the whole of `hangdoc analyze -` on any input: read it
// as dumps, classify the recording, word the report and render it in
// every format. Whatever the input, it either reads as a recording and
// renders, or is refused with one error; never a panic. Crashers live in
// testdata/fuzz/FuzzAnalyze.
func FuzzAnalyze(f *testing.F) {
	seeds, _ := filepath.Glob("../../testdata/corpus/dumps/*/*.txt")
	json, _ := filepath.Glob("../../testdata/corpus/dumps/*/*.json")
	small, _ := filepath.Glob("../goroutines/testdata/*.txt")
	py, _ := filepath.Glob("../python/testdata/live/*.t*")
	// One of each kind of dump, not all 800: the seeds run as a unit test.
	picked := map[string]bool{}
	for _, name := range append(append(append(seeds, json...), small...), py...) {
		kind := filepath.Base(filepath.Dir(name)) + "/" + strings.SplitN(filepath.Base(name), ".", 2)[0]
		if picked[kind] {
			continue
		}
		picked[kind] = true
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// A --record recording, which analyze reads back.
	for _, name := range []string{"../../report/testdata/deadlock.recording.json", "../../report/testdata/go-mutex-pipe.recording.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte("\x1f\x8b"))
	f.Add(bytes.Repeat([]byte{0}, 100))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := replay.ReadDumps(context.Background(), replay.DumpOptions{Paths: []string{"-"}, Stdin: bytes.NewReader(b), Version: "fuzz"})
		if err != nil {
			if msg := err.Error(); msg == "" || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line", msg)
			}
			return
		}
		if len(rec.Samples) == 0 {
			t.Fatalf("a recording with no samples and no error")
		}
		r := report.New(rec, classify.Classify(rec, classify.DefaultOptions()))
		if err := report.Text(io.Discard, r, report.Palette{}); err != nil {
			t.Fatal(err)
		}
		if err := report.Markdown(io.Discard, r); err != nil {
			t.Fatal(err)
		}
		if err := report.JSON(io.Discard, r); err != nil {
			t.Fatal(err)
		}
	})
}
