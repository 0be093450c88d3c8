package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/classify"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// letters marks where colour goes with a letter per colour, so golden
// files show it: {R…} bad, {Y…} warning, {G…} good, {D…} dim, {B…} bold.
var letters = Palette{
	Bad:  func(s string) string { return "{R" + s + "}" },
	Warn: func(s string) string { return "{Y" + s + "}" },
	Good: func(s string) string { return "{G" + s + "}" },
	Dim:  func(s string) string { return "{D" + s + "}" },
	Bold: func(s string) string { return "{B" + s + "}" },
}

// TestGolden renders every recording in testdata in the three formats.
// The recordings were made with `hangdoc PID --record` on the victims of
// testdata/victims; refresh the golden files with `go test ./report -update`.
func TestGolden(t *testing.T) {
	recs, err := filepath.Glob("testdata/*.recording.json")
	if err != nil || len(recs) == 0 {
		t.Fatalf("no recordings in testdata: %v", err)
	}
	for _, path := range recs {
		name := strings.TrimSuffix(filepath.Base(path), ".recording.json")
		t.Run(name, func(t *testing.T) {
			rec, err := ReadRecording(path)
			if err != nil {
				t.Fatal(err)
			}
			r := New(rec, classify.DefaultOptions())
			for _, f := range []struct {
				ext    string
				render func(*bytes.Buffer) error
			}{
				{"text", func(b *bytes.Buffer) error { return Text(b, r, Palette{}) }},
				{"color.text", func(b *bytes.Buffer) error { return Text(b, r, letters) }},
				{"md", func(b *bytes.Buffer) error { return Markdown(b, r) }},
				{"json", func(b *bytes.Buffer) error { return JSON(b, r) }},
			} {
				var b bytes.Buffer
				if err := f.render(&b); err != nil {
					t.Fatalf("%s: %v", f.ext, err)
				}
				golden := filepath.Join("testdata", "golden", name+"."+f.ext+".golden")
				if *update {
					os.MkdirAll(filepath.Dir(golden), 0o755)
					if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./report -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), b.String()); diff != "" {
					t.Errorf("%s differs from %s (-want +got):\n%s", f.ext, golden, diff)
				}
			}
		})
	}
}

// TestVerdictsOfRecordings pins what each recording must say, so an
// -update cannot quietly bless a wrong verdict.
func TestVerdictsOfRecordings(t *testing.T) {
	want := map[string]classify.Verdict{
		"deadlock":    classify.Deadlock,
		"pipe-holder": classify.Blocked,
		"spin-holder": classify.Spinning,
		"working":     classify.Working,
		"idle":        classify.Idle,
		"child-wait":  classify.Blocked,
		"exited":      classify.Idle,
		// Across processes.
		"popen-deadlock": classify.Deadlock,
		"pipeline":       classify.Blocked,
		"orphans":        classify.Idle,
		"tcp-stall":      classify.Blocked,
	}
	for name, v := range want {
		rec, err := ReadRecording(filepath.Join("testdata", name+".recording.json"))
		if err != nil {
			t.Fatal(err)
		}
		r := New(rec, classify.DefaultOptions())
		if r.Verdict != v {
			t.Errorf("%s: verdict %s, want %s (%s)", name, r.Verdict, v, r.Summary)
		}
		if name == "exited" && (!r.Sampling.Partial || !r.Sampling.TargetExited) {
			t.Errorf("exited: sampling %+v, want partial with the target exited", r.Sampling)
		}
	}
}

func TestJSONHasNoNullLists(t *testing.T) {
	rec, err := ReadRecording("testdata/idle.recording.json")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := JSON(&b, New(rec, classify.DefaultOptions())); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"locks": null`, `"cycles": null`, `"waits": null`, `"evidence": null`, `"threads": null`, `"notes": null`, `"holds": null`, `"stack": null`} {
		if strings.Contains(b.String(), key) {
			t.Errorf("JSON has %s:\n%s", key, b.String())
		}
	}
}

func TestThreadRowsGroupAndBound(t *testing.T) {
	r := &Report{}
	for i := range 500 {
		r.Threads = append(r.Threads, classify.Thread{TID: 1000 + i, Name: "worker-" + strconv.Itoa(i), Class: classify.ClassBlocked, State: "S", Wchan: "futex_do_wait", Waits: "futex:0x10"})
	}
	for i := range 30 {
		r.Threads = append(r.Threads, classify.Thread{TID: 5000 + i, Name: "odd", Class: classify.ClassIdle, State: "S", Wchan: "w" + string(rune('a'+i))})
	}
	r.Threads = append(r.Threads, classify.Thread{TID: 7, Name: "holder", Class: classify.ClassBlocked, State: "S", Holds: []string{"futex:0x10"}})
	rows, hidden := threadRows(r)
	if len(rows) != maxRows {
		t.Fatalf("%d rows, want %d", len(rows), maxRows)
	}
	if rows[0].TIDs[0] != 7 {
		t.Errorf("first row %+v, want the holder", rows[0])
	}
	if rows[1].Name != "worker-*" || len(rows[1].TIDs) != 500 {
		t.Errorf("second row %s ×%d, want worker-* ×500", rows[1].Name, len(rows[1].TIDs))
	}
	if hidden != 30-(maxRows-2) {
		t.Errorf("hidden = %d, want %d", hidden, 30-(maxRows-2))
	}
}
