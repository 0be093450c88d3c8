package report

import (
	"bytes"
	"flag"
	"fmt"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/replay"
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
			rec, err := replay.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			r := New(rec, classify.Classify(rec, classify.DefaultOptions()))
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
		rec, err := replay.Read(filepath.Join("testdata", name+".recording.json"))
		if err != nil {
			t.Fatal(err)
		}
		r := New(rec, classify.Classify(rec, classify.DefaultOptions()))
		if r.TypedVerdict() != v {
			t.Errorf("%s: verdict %s, want %s (%s)", name, r.Verdict, v, r.Summary)
		}
		if name == "exited" && (!r.Sampling.Partial || !r.Sampling.TargetExited) {
			t.Errorf("exited: sampling %+v, want partial with the target exited", r.Sampling)
		}
	}
}

func TestJSONHasNoNullLists(t *testing.T) {
	rec, err := replay.Read("testdata/idle.recording.json")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := JSON(&b, New(rec, classify.Classify(rec, classify.DefaultOptions()))); err != nil {
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
		r.Threads = append(r.Threads, Thread{TID: 1000 + i, Name: "worker-" + strconv.Itoa(i), Class: "blocked", State: "S", Wchan: "futex_do_wait", Waits: "futex:0x10"})
	}
	for i := range 30 {
		r.Threads = append(r.Threads, Thread{TID: 5000 + i, Name: "odd", Class: "idle", State: "S", Wchan: "w" + string(rune('a'+i))})
	}
	r.Threads = append(r.Threads, Thread{TID: 7, Name: "holder", Class: "blocked", State: "S", Holds: []string{"futex:0x10"}})
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

func TestSyscallView(t *testing.T) {
	call := func(name string, args ...uint64) model.Syscall {
		sc := model.Syscall{Nr: 1, Name: name}
		copy(sc.Args[:], args)
		return sc
	}
	tests := []struct {
		sc   model.Syscall
		want string
	}{
		{model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{0x7e6e80, 128, 2}}, "futex(0x7e6e80, FUTEX_WAIT_PRIVATE, 2)"},
		{call("write", 8, 0xc000100000, 512), "write(8, 0xc000100000, 512)"},
		{call("wait4", 0xffffffff, 0x10), "wait4(-1, …)"},
		{call("epoll_pwait", 6, 0x10, 128), "epoll_pwait(6, …)"},
		{model.Syscall{Nr: 999, Args: [6]uint64{1, 0x7fff0000}}, "syscall_999(1, 0x7fff0000, 0)"},
	}
	for _, tt := range tests {
		if got := view(tt.sc).Text; got != tt.want {
			t.Errorf("view(%+v) = %q, want %q", tt.sc, got, tt.want)
		}
	}
	if view(model.Syscall{Running: true, Nr: -1}) != nil {
		t.Errorf("a running thread has no call to show")
	}
}

// TestEveryKindHasWords: a wait kind added to the model without words
// would print as an empty phrase.
func TestEveryKindHasWords(t *testing.T) {
	for _, k := range model.WaitKinds() {
		if kindWords(k) == "" {
			t.Errorf("wait kind %s has no words in report", k)
		}
	}
}

func TestEmptyRecordingHasNoNullLists(t *testing.T) {
	rec := model.Recording{}
	var b bytes.Buffer
	if err := JSON(&b, New(rec, classify.Classify(rec, classify.DefaultOptions()))); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "null") {
		t.Errorf("JSON of an empty recording has a null:\n%s", b.String())
	}
}

// TestGroupRowBounded: a group's row lists at most maxRowLocks locks its
// goroutines hold, and counts the rest; goroutines are found by id, a
// twin's too.
func TestGroupRowBounded(t *testing.T) {
	r := &Report{Groups: []Group{{Count: 8, State: "IO wait", Class: "blocked"}}}
	for i := range 8 {
		r.Goroutines = append(r.Goroutines, Goroutine{ID: int64(10 + i), Class: "blocked", State: "IO wait",
			Holds: []string{fmt.Sprintf("sync.Mutex 0x%d", i%7)}, Twins: []int64{int64(100 + i)}})
	}
	rows, _, _ := goroutineRows(r)
	want := "probably holds sync.Mutex 0x0, sync.Mutex 0x1, sync.Mutex 0x2, sync.Mutex 0x3, sync.Mutex 0x4 and 2 more"
	if len(rows) != 1 || rows[0].Note != want {
		t.Fatalf("rows %+v, want one noting %q", rows, want)
	}
	for _, id := range []int64{10, 17, 103} {
		if g := r.goroutine(id); g == nil || g != r.Goroutines.Find(id) {
			t.Errorf("goroutine %d: %v, Find says %v", id, g, r.Goroutines.Find(id))
		}
	}
	if g := r.goroutine(99); g != nil {
		t.Errorf("goroutine 99: %v, want none", g)
	}
}
