package goroutines

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hangdoc/hangdoc/model"
)

func parseFile(t *testing.T, name string) []Dump {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dumps, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return dumps
}

func find(d Dump, id int64) *Goroutine {
	for i := range d.Goroutines {
		if d.Goroutines[i].ID == id {
			return &d.Goroutines[i]
		}
	}
	return nil
}

func frame(fn, file string, line int, args, off string) Frame {
	return Frame{Frame: model.Frame{Func: fn, File: file, Line: line}, Args: args, Offset: off, Inlined: args == "(...)"}
}

// want is what a test checks of one dump file; the check funcs look at
// single goroutines picked out by reading the file.
type want struct {
	producer  model.Format
	n         int
	truncated bool
	aggr      bool
	check     func(t *testing.T, d Dump)
}

func TestFiles(t *testing.T) {
	tests := map[string]want{
		"corpus/docker-for-linux-397-containerd-shim-kill.txt": {ProducerUnknown, 1, true, false, func(t *testing.T, d Dump) {
			g := d.Goroutines[0]
			if g.ID != 2339 || g.State != "select" || g.WaitMinutes != 9557 || len(g.Frames) != 5 {
				t.Errorf("got %+v", g)
			}
			if f := g.Frames[0]; f.File != "/go/src/github.com/containerd/containerd/vendor/github.com/stevvooe/ttrpc/client.go" || f.Line != 102 || f.Offset != "+0x24c" {
				t.Errorf("frame 0: %+v", f)
			}
			// The last frame's location line was cut: the function is kept.
			if f := g.Frames[4]; f.Func != "github.com/containerd/containerd/services/tasks.(*local).Kill" || f.File != "" {
				t.Errorf("frame 4: %+v", f)
			}
		}},
		"corpus/golang-20170-main-chan-send-no-receiver.txt": {ProducerSIGQUIT, 2, true, false, func(t *testing.T, d Dump) {
			if g := d.Goroutines[0]; g.ID != 0 || g.State != "idle" || len(g.Frames) != 10 || g.Frames[9].Func != "runtime.morestack" {
				t.Errorf("goroutine 0: %+v", g)
			}
			if g := d.Goroutines[1]; g.ID != 1 || g.State != "chan send" || g.WaitMinutes != 3 || len(g.Frames) != 4 {
				t.Errorf("goroutine 1: %+v", g)
			}
		}},
		"corpus/golang-33425-http2-blocked-write-waiter.txt": {ProducerUnknown, 1, true, false, func(t *testing.T, d Dump) {
			g := d.Goroutines[0]
			if g.ID != 46 || g.State != "semacquire" || g.WaitMinutes != 0 {
				t.Errorf("got %+v", g)
			}
			want := frame("sync.(*Mutex).Lock", "/home/prashant/.gimme/versions/go1.12.7.linux.amd64/src/sync/mutex.go", 134, "(0xc000195050)", "+0x109")
			if diff := cmp.Diff(want, g.Frames[1]); diff != "" {
				t.Errorf("frame 1 (-want +got):\n%s", diff)
			}
		}},
		"corpus/golang-49377-http2-proxy-holder-iowait.txt": {ProducerUnknown, 1, true, false, func(t *testing.T, d Dump) {
			g := d.Goroutines[0]
			if g.ID != 172921412 || g.State != "IO wait" || g.WaitMinutes != 2 || len(g.Frames) != 9 {
				t.Errorf("got %+v", g)
			}
			// Eight-space indentation (a paste) and an inlined frame.
			want := frame("internal/poll.(*pollDesc).waitWrite", "/usr/local/go/src/internal/poll/fd_poll_runtime.go", 96, "(...)", "")
			if diff := cmp.Diff(want, g.Frames[2]); diff != "" {
				t.Errorf("frame 2 (-want +got):\n%s", diff)
			}
		}},
		"corpus/k8s-70819-kcm-http2-pool-waiter.txt": {ProducerUnknown, 1, true, false, func(t *testing.T, d Dump) {
			g := d.Goroutines[0]
			if g.ID != 1776 || g.State != "semacquire" || g.WaitMinutes != 3556 || len(g.Frames) != 4 {
				t.Errorf("got %+v", g)
			}
			if f := g.Frames[2]; f.Func != "k8s.io/kubernetes/vendor/golang.org/x/net/http2.(*ClientConn).CanTakeNewRequest" || f.Line != 611 {
				t.Errorf("frame 2: %+v", f)
			}
		}},
		"corpus/panicparse-panicweb-pprof-debug2.txt": {ProducerPprofDebug2, 71, false, false, func(t *testing.T, d Dump) {
			g := d.Goroutines[0]
			if g.ID != 135 || g.State != "running" || len(g.Frames) != 9 {
				t.Errorf("goroutine 135: %+v", g)
			}
			want := &Frame{Frame: model.Frame{Func: "net/http.(*Server).Serve", File: "/goroot/src/net/http/server.go", Line: 2933}, Offset: "+0x35c"}
			if diff := cmp.Diff(want, g.CreatedBy); diff != "" {
				t.Errorf("created by (-want +got):\n%s", diff)
			}
			g1 := find(d, 1)
			if g1 == nil || g1.State != "chan receive" || g1.WaitMinutes != 2 || g1.CreatedBy != nil ||
				len(g1.Frames) != 1 || g1.Frames[0].Func != "main.main" || g1.Frames[0].Args != "()" {
				t.Errorf("goroutine 1: %+v", g1)
			}
		}},
		"corpus/prometheus-9169-loadwal-sleep-poll.txt": {ProducerUnknown, 3, true, false, func(t *testing.T, d Dump) {
			g := d.Goroutines[0]
			if g.ID != 8 || g.State != "sleep" || len(g.Frames) != 6 || g.CreatedBy == nil ||
				g.CreatedBy.Func != "testing.(*B).run1" || g.CreatedBy.Line != 225 || g.CreatorID != 0 {
				t.Errorf("goroutine 8: %+v", g)
			}
			if g := d.Goroutines[2]; g.ID != 86 || g.State != "chan receive" || len(g.Frames) != 0 {
				t.Errorf("goroutine 86: %+v", g)
			}
		}},
		"corpus/zonedb-compile-hang-regalloc-sigquit.txt": {ProducerSIGQUIT, 3, false, false, func(t *testing.T, d Dump) {
			if g := find(d, 1); g == nil || g.State != "semacquire" || g.WaitMinutes != 1 {
				t.Errorf("goroutine 1: %+v", g)
			}
			g := find(d, 11)
			if g == nil || g.State != "runnable" || len(g.Frames) != 9 || g.CreatedBy.Func != "cmd/compile/internal/gc.compileFunctions" {
				t.Errorf("goroutine 11: %+v", g)
			}
		}},
		"gen-sigquit.txt": {ProducerSIGQUIT, 12, false, false, func(t *testing.T, d Dump) {
			g0 := d.Goroutines[0]
			want := frame("runtime.futex", "/usr/local/go/src/runtime/sys_linux_amd64.s", 569, "(0x636758, 0x80, 0x0, 0x0, 0x0, 0x0)", "+0x21")
			if g0.ID != 0 || g0.State != "idle" || len(g0.Frames) == 0 {
				t.Fatalf("goroutine 0: %+v", g0)
			}
			if diff := cmp.Diff(want, g0.Frames[0]); diff != "" {
				t.Errorf("goroutine 0 frame 0, fp= dropped (-want +got):\n%s", diff)
			}
			g := find(d, 11)
			if g == nil || g.State != "select (no cases)" || !cmp.Equal(g.Labels, map[string]string{"request_id": "a]b, c: d"}) {
				t.Errorf("goroutine 11, labels: %+v", g)
			}
			if g := find(d, 10); g == nil || !g.ElidedFrames || len(g.Frames) != 100 || g.CreatorID != 1 {
				t.Errorf("goroutine 10, elided: %+v", g)
			}
			if g := find(d, 2); g == nil || g.State != "force gc (idle)" || g.CreatedBy.Func != "runtime.init.7" {
				t.Errorf("goroutine 2: %+v", g)
			}
		}},
		"gen-panic.txt": {ProducerPanic, 5, false, false, func(t *testing.T, d Dump) {
			if g := d.Goroutines[0]; g.ID != 1 || g.State != "running" || g.Frames[1].Func != "main.main" {
				t.Errorf("goroutine 1: %+v", g)
			}
			if g := find(d, 9); g == nil || g.State != "chan receive" || !g.LockedToThread {
				t.Errorf("goroutine 9: %+v", g)
			}
			if g := find(d, 7); g == nil || g.State != "sync.Mutex.Lock" || g.Frames[2].Func != "internal/sync.(*Mutex).Lock" || !g.Frames[2].Inlined {
				t.Errorf("goroutine 7: %+v", g)
			}
		}},
		"gen-stack.txt": {ProducerStack, 5, false, false, func(t *testing.T, d Dump) {
			if g := find(d, 24); g == nil || g.State != "sync.WaitGroup.Wait" || g.CreatorID != 1 {
				t.Errorf("goroutine 24: %+v", g)
			}
		}},
		"gen-pprof-debug2.txt": {ProducerPprofDebug2, 5, false, false, nil},
		"gen-pprof-debug1.txt": {ProducerPprofDebug1, 0, false, true, nil},
		"gen-deadlock.txt": {ProducerFatal, 5, false, false, func(t *testing.T, d Dump) {
			if g := find(d, 10); g == nil || !g.ElidedFrames || len(g.Frames) != 100 {
				t.Errorf("goroutine 10: %+v", g)
			}
		}},
		"gen-test-timeout.txt": {ProducerTestTimeout, 3, false, false, func(t *testing.T, d Dump) {
			g := d.Goroutines[0]
			if g.State != "running" || g.Frames[0].Func != "testing.(*M).startAlarm.func1" || g.CreatedBy.Func != "time.goFunc" {
				t.Errorf("alarm goroutine: %+v", g)
			}
			if g := find(d, 17); g == nil || g.State != "sync.Mutex.Lock" || g.Frames[4].Func != "hang.TestHang" {
				t.Errorf("goroutine 17: %+v", g)
			}
		}},
	}
	// Every file in testdata is covered.
	files, _ := filepath.Glob("testdata/*.txt")
	corpus, _ := filepath.Glob("testdata/corpus/*.txt")
	for _, f := range append(files, corpus...) {
		rel, _ := filepath.Rel("testdata", f)
		if _, ok := tests[rel]; !ok {
			t.Errorf("%s has no test", rel)
		}
	}
	for name, w := range tests {
		t.Run(name, func(t *testing.T) {
			dumps := parseFile(t, name)
			if len(dumps) != 1 {
				t.Fatalf("got %d dumps, want 1", len(dumps))
			}
			d := dumps[0]
			if d.Producer != w.producer || len(d.Goroutines) != w.n || d.Truncated != w.truncated || d.Aggregated != w.aggr {
				t.Fatalf("got producer %q, %d goroutines, truncated %v, aggregated %v; want %q, %d, %v, %v",
					d.Producer, len(d.Goroutines), d.Truncated, d.Aggregated, w.producer, w.n, w.truncated, w.aggr)
			}
			for _, g := range d.Goroutines {
				if g.State == "" {
					t.Errorf("goroutine %d has no state", g.ID)
				}
			}
			if w.check != nil {
				w.check(t, d)
			}
		})
	}
}

func TestHeader(t *testing.T) {
	tests := []struct {
		name, line string
		want       Goroutine
		ok         bool
	}{
		{"plain", "goroutine 1 [IO wait]:", Goroutine{ID: 1, State: "IO wait"}, true},
		{"minutes locked", "goroutine 26 [chan send, 12 minutes, locked to thread]:", Goroutine{ID: 26, State: "chan send", WaitMinutes: 12, LockedToThread: true}, true},
		{"gp m=nil", "goroutine 22 gp=0x26ea7240ab40 m=nil [sync.Mutex.Lock]:", Goroutine{ID: 22, State: "sync.Mutex.Lock"}, true},
		{"gp m mp", "goroutine 0 gp=0xa2c6a0 m=0 mp=0xa2d640 [idle]:", Goroutine{ID: 0, State: "idle"}, true},
		{"scan dropped", "goroutine 5 [select (scan), 3 minutes]:", Goroutine{ID: 5, State: "select", WaitMinutes: 3}, true},
		{"bubble", "goroutine 9 [sync.WaitGroup.Wait (durable), synctest bubble 1]:", Goroutine{ID: 9, State: "sync.WaitGroup.Wait (durable)"}, true},
		{"labels", `goroutine 24 [select (no cases), 2 minutes labels:{"a": "x]:y", "b\"": "\u00e9\n"}]:`,
			Goroutine{ID: 24, State: "select (no cases)", WaitMinutes: 2, Labels: map[string]string{"a": "x]:y", `b"`: "é\n"}}, true},
		{"go1.27 labels", `goroutine 25 gp=0xcb2fa2810e0 m=nil [chan receive] {request: r4, tenant: "acme, inc. [eu]"}:`,
			Goroutine{ID: 25, State: "chan receive", Labels: map[string]string{"request": "r4", "tenant": "acme, inc. [eu]"}}, true},
		{"go1.27 labels after minutes", `goroutine 7 [sync.Mutex.Lock, 3 minutes] {a.b/c_d: "x\ty"}:`,
			Goroutine{ID: 7, State: "sync.Mutex.Lock", WaitMinutes: 3, Labels: map[string]string{"a.b/c_d": "x\ty"}}, true},
		{"leaked", "goroutine 8 gp=0x1 m=nil [chan send (leaked)]:", Goroutine{ID: 8, State: "chan send (leaked)"}, true},
		{"leaked, bubble, locked", "goroutine 9 [sync.Mutex.Lock (leaked), 2 minutes, locked to thread, synctest bubble 3]:",
			Goroutine{ID: 9, State: "sync.Mutex.Lock (leaked)", WaitMinutes: 2, LockedToThread: true}, true},
		{"durable", "goroutine 10 [chan receive (durable), synctest bubble 1]:", Goroutine{ID: 10, State: "chan receive (durable)"}, true},
		{"trailing space", "goroutine 3 [runnable]: ", Goroutine{ID: 3, State: "runnable"}, true},
		{"go1.27 labels unquoted junk", "goroutine 3 [runnable] {a: b c}:", Goroutine{}, false},
		{"go1.27 labels no brace", "goroutine 3 [runnable] x:", Goroutine{}, false},
		{"no colon", "goroutine 3 [runnable]", Goroutine{}, false},
		{"no id", "goroutine [runnable]:", Goroutine{}, false},
		{"empty state", "goroutine 3 []:", Goroutine{}, false},
		{"bad labels", `goroutine 3 [select labels:{"a" "b"}]:`, Goroutine{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseHeader(tc.line)
			if ok != tc.ok {
				t.Fatalf("parseHeader(%q) ok = %v, want %v", tc.line, ok, tc.ok)
			}
			if ok {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("parseHeader(%q) (-want +got):\n%s", tc.line, diff)
				}
			}
		})
	}
}

func TestLocation(t *testing.T) {
	tests := []struct {
		in   string
		file string
		line int
		off  string
		ok   bool
	}{
		{"/usr/local/go/src/runtime/proc.go:462 +0xce fp=0x26ea723daa98 sp=0x26ea723daa78 pc=0x489b2e", "/usr/local/go/src/runtime/proc.go", 462, "+0xce", true},
		{"C:/Users/me/pprof.go:693 +0x1d", "C:/Users/me/pprof.go", 693, "+0x1d", true},
		{"<autogenerated>:1", "<autogenerated>", 1, "", true},
		{"/my dir/x.go:7", "/my dir/x.go", 7, "", true},
		{"/x/y.c:12 pc=0x4a", "/x/y.c", 12, "", true},
		{"goroutine running on other thread; stack unavailable", "", 0, "", false},
		{"/go/src/github.com/co", "", 0, "", false},
		{"/x.go:+3", "", 0, "", false},
	}
	for _, tc := range tests {
		f, ok := parseLocation(tc.in)
		if ok != tc.ok || ok && (f.File != tc.file || f.Line != tc.line || f.Offset != tc.off) {
			t.Errorf("parseLocation(%q) = %+v, %v; want %q %d %q, %v", tc.in, f, ok, tc.file, tc.line, tc.off, tc.ok)
		}
	}
}

// TestMixed: several dumps in one log, with log lines around and inside
// them, container prefixes, ancestors and a goroutine on another thread.
func TestMixed(t *testing.T) {
	in := strings.Join([]string{
		"2024-05-01 10:00:00 INFO starting",
		"panic: boom",
		"\tpanic: again [recovered, repanicked]",
		"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4b3c25]",
		"",
		"goroutine 1 [running]:",
		"main.main()",
		"\t/tmp/main.go:53 +0x265",
		"",
		"goroutine 7 [running]:",
		"\tgoroutine running on other thread; stack unavailable",
		"created by main.main in goroutine 1",
		"\t/tmp/main.go:40 +0x10",
		"exit status 2",
		"some log line",
		"goroutine 1 [running]:", // runtime.Stack output in a later log line
		"main.dump()",
		"\t/tmp/main.go:9 +0x1",
		"unrelated log line in between",
		"main.main()",
		"\t/tmp/main.go:10 +0x2",
		"",
		"goroutine 26 [sleep]:",
		"time.Sleep(0x34630b8a000)",
		"\t/usr/local/go/src/runtime/time.go:363 +0x165",
		"...additional frames elided...",
		"created by main.main.func3 in goroutine 25",
		"\t/tmp/gdump2/main.go:46 +0x1a",
		"[originating from goroutine 25]:",
		"main.main.func3(...)",
		"\t/tmp/gdump2/main.go:47 +0x1a",
		"created by main.main",
		"\t/tmp/gdump2/main.go:45 +0x145",
		"",
		"goroutine 1 [running]:", // a second Stack call
		"main.dump()",
		"\t/tmp/main.go:9 +0x1",
		"",
		"2024-05-01T10:00:00.123Z stderr F SIGQUIT: quit",
		"2024-05-01T10:00:00.123Z stderr F PC=0x492da1 m=0 sigcode=0",
		"2024-05-01T10:00:00.123Z stderr F ",
		"2024-05-01T10:00:00.123Z stderr F goroutine 1 gp=0x26ea723961e0 m=nil [IO wait, 5 minutes]:",
		"2024-05-01T10:00:00.123Z stderr F runtime.gopark(0x0?, 0x0?)",
		"2024-05-01T10:00:00.123Z stderr F \t/usr/local/go/src/runtime/proc.go:462 +0xce fp=0x26ea723daa98 sp=0x26ea723daa78 pc=0x489b2e",
		"2024-05-01T10:00:00.123Z stderr F ",
		"Mar 12 22:12:09  goroutine 18 [GC worker (idle), 160 minutes]:",
		"Mar 12 22:12:09 host app[12]: runtime.gcBgMarkWorker(0x0?)",
		"Mar 12 22:12:09 host app[12]: \t/usr/local/go/src/runtime/mgc.go:1423 +0xe9",
		"2024-05-01T10:00:00.123Z stderr F rax    0xca",
		"goroutine profile: total 2",
		"2 @ 0x489b2e 0x466346",
		"#\t0x6735d0\tmain.main.func1.1+0x10\t/tmp/gdump/main.go:55",
		"",
	}, "\n")
	dumps, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	type short struct {
		Producer   model.Format
		IDs        []int64
		Frames     []int
		Aggregated bool
	}
	var got []short
	for _, d := range dumps {
		s := short{Producer: d.Producer, Aggregated: d.Aggregated}
		for _, g := range d.Goroutines {
			s.IDs = append(s.IDs, g.ID)
			s.Frames = append(s.Frames, len(g.Frames))
		}
		got = append(got, s)
	}
	want := []short{
		{ProducerPanic, []int64{1, 7}, []int{1, 0}, false},
		{ProducerStack, []int64{1, 26}, []int{2, 1}, false},
		{ProducerStack, []int64{1}, []int{1}, false},
		{ProducerSIGQUIT, []int64{1, 18}, []int{1, 1}, false},
		{ProducerPprofDebug1, nil, nil, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("dumps (-want +got):\n%s", diff)
	}
	g26 := dumps[1].Goroutines[1]
	if !g26.ElidedFrames || g26.CreatorID != 25 || g26.CreatedBy.Func != "main.main.func3" || g26.CreatedBy.Line != 46 {
		t.Errorf("goroutine 26, ancestors must not leak in: %+v", g26)
	}
	if g7 := dumps[0].Goroutines[1]; g7.CreatedBy == nil || g7.CreatorID != 1 {
		t.Errorf("goroutine 7: %+v", g7)
	}
	g18 := dumps[3].Goroutines[1]
	if g18.State != "GC worker (idle)" || g18.WaitMinutes != 160 || g18.Frames[0].Line != 1423 {
		t.Errorf("goroutine 18 (journald prefix): %+v", g18)
	}
	if g1 := dumps[3].Goroutines[0]; g1.WaitMinutes != 5 || g1.Frames[0].Offset != "+0xce" {
		t.Errorf("goroutine 1 (CRI prefix): %+v", g1)
	}
}

// TestForms: what the toolchains and the tools around them print, each
// read as the dumps it holds.
func TestForms(t *testing.T) {
	type short struct {
		Producer  model.Format
		IDs       []int64
		Frames    []int
		Bad       int
		Repeats   int
		Message   string
		Truncated bool
	}
	tests := []struct {
		name string
		in   []string
		want []short
	}{
		{"several running, no header: one dump", []string{
			"goroutine 5 [running]:", "main.a()", "\t/x.go:1 +0x1", "",
			"goroutine 7 [running]:", "main.b()", "\t/x.go:2 +0x1", "",
			"goroutine 1 [chan receive]:", "main.main()", "\t/x.go:3 +0x1", "",
		}, []short{{Producer: ProducerStack, IDs: []int64{5, 7, 1}, Frames: []int{1, 1, 1}}}},
		{"runtime.Stack twice: a repeated id starts the next", []string{
			"goroutine 1 [running]:", "main.a()", "\t/x.go:1 +0x1", "",
			"goroutine 6 [select]:", "main.b()", "\t/x.go:2 +0x1", "",
			"goroutine 1 [running]:", "main.a()", "\t/x.go:1 +0x1", "",
		}, []short{{Producer: ProducerStack, IDs: []int64{1, 6}, Frames: []int{1, 1}}, {Producer: ProducerStack, IDs: []int64{1}, Frames: []int{1}}}},
		{"GOTRACEBACK=crash: the sections are one dump, repeats read once", []string{
			"SIGQUIT: quit", "PC=0x1 m=0 sigcode=0", "",
			"goroutine 22 gp=0x1 m=0 mp=0x2 [running]:", "main.spin()", "\t/x.go:1 +0x1", "",
			"goroutine 1 gp=0x3 m=nil [IO wait]:", "main.main()", "\t/x.go:2 +0x1", "",
			"rax    0x0", "rip    0x1", "", "-----", "",
			"SIGQUIT: quit", "PC=0x2 m=2 sigcode=0", "",
			"goroutine 0 gp=0x4 m=2 mp=0x5 [idle]:", "runtime.usleep(0x2710)", "\t/r.s:1 +0x1", "",
			"goroutine 22 gp=0x1 m=0 mp=0x2 [running]:", "main.spin()", "\t/x.go:1 +0x1", "",
			"rax    0x0", "", "-----", "",
		}, []short{{Producer: ProducerSIGQUIT, IDs: []int64{22, 1, 0}, Frames: []int{1, 1, 1}, Repeats: 1, Message: "SIGQUIT"}}},
		{"a terminal's ^\\ echo, CR LF ends", []string{
			"Script started on 2026-12-01 [COMMAND=\"./x\"]\r", "ready pid=1\r", "^\\SIGQUIT: quit\r", "PC=0x40b2ee m=0 sigcode=128\r", "\r",
			"goroutine 1 gp=0x1 m=nil [IO wait]:\r", "main.main()\r", "\t/x.go:2 +0x1\r", "\r",
		}, []short{{Producer: ProducerSIGQUIT, IDs: []int64{1}, Frames: []int{1}, Message: "SIGQUIT"}}},
		{"indented by t.Logf", []string{
			"=== RUN   TestX",
			"    x_test.go:49: goroutines:",
			"        goroutine 20 [running]:",
			"        main.TestX(0x1)",
			"        \t/x_test.go:48 +0x30d",
			"        created by testing.(*T).Run in goroutine 1",
			"        \t/testing.go:2101 +0x4c5",
			"        ",
			"        goroutine 21 [chan receive]:",
			"        main.(*pool).drain(0x0?)",
			"        \t/x_test.go:25 +0x9c",
			"        ",
			"--- FAIL: TestX (0.00s)",
		}, []short{{Producer: ProducerStack, IDs: []int64{20, 21}, Frames: []int{1, 1}}}},
		{"go log package prefix", []string{
			"2026/12/01 23:03:51.112294 app[14973]: SIGQUIT: quit",
			"2026/12/01 23:03:51.112470 app[14973]: PC=0x40b2ee m=0 sigcode=0",
			"2026/12/01 23:03:51.112472 app[14973]: ",
			"2026/12/01 23:03:51.112503 app[14973]: goroutine 1 gp=0x10a41024c1e0 m=nil [IO wait]:",
			"2026/12/01 23:03:51.112504 app[14973]: runtime.gopark(0x0?, 0x0?)",
			"2026/12/01 23:03:51.112505 app[14973]: \t/proc.go:462 +0xce fp=0x1 sp=0x2 pc=0x3",
			"2026/12/01 23:03:51.112505 app[14973]: ",
		}, []short{{Producer: ProducerSIGQUIT, IDs: []int64{1}, Frames: []int{1}, Message: "SIGQUIT"}}},
		{"an unreadable header is counted, its frames not given to another", []string{
			"goroutine 1 [running]:", "main.a()", "\t/x.go:1 +0x1", "",
			"goroutine 2 <future form> [chan receive]:", "main.b()", "\t/x.go:2 +0x1", "",
			"goroutine 3 [select]:", "main.c()", "\t/x.go:3 +0x1", "",
		}, []short{{Producer: ProducerStack, IDs: []int64{1, 3}, Frames: []int{1, 1}, Bad: 1}}},
		{"only unreadable headers", []string{
			"goroutine 2 <future form> [chan receive]:", "main.b()", "\t/x.go:2 +0x1", "",
		}, []short{{Producer: ProducerUnknown, Bad: 1}}},
		{"a function line without its location, anywhere", []string{
			"goroutine 1 [running]:", "main.a()", "main.b()", "\t/x.go:1 +0x1", "main.c()", "",
			"goroutine 2 [select]:", "main.d()", "\t/x.go:4 +0x1", "created by main.main in goroutine 1", "",
		}, []short{{Producer: ProducerStack, IDs: []int64{1, 2}, Frames: []int{3, 1}}}},
		{"fatal error message kept", []string{
			"fatal error: all goroutines are asleep - deadlock!", "",
			"goroutine 1 [sync.Mutex.Lock]:", "main.main()", "\t/x.go:3 +0x1", "",
		}, []short{{Producer: ProducerFatal, IDs: []int64{1}, Frames: []int{1}, Message: "all goroutines are asleep - deadlock!"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Join(tc.in, "\n") + "\n"
			dumps, err := Parse(strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			var got []short
			for _, d := range dumps {
				s := short{Producer: d.Producer, Bad: d.BadHeaders, Repeats: d.Repeats, Message: d.Message, Truncated: d.Truncated}
				for _, g := range d.Goroutines {
					s.IDs = append(s.IDs, g.ID)
					s.Frames = append(s.Frames, len(g.Frames))
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("dumps (-want +got):\n%s\ninput:\n%s", diff, in)
			}
		})
	}
}

func TestUnescapedNames(t *testing.T) {
	in := "goroutine 1 [running]:\ngopkg.in/yaml%2ev2.(*decoder).unmarshal(0x1)\n\t/y.go:1 +0x1\ncreated by gopkg.in/yaml%2ev2.run in goroutine 2\n\t/y.go:2 +0x1\n"
	dumps, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	g := dumps[0].Goroutines[0]
	if g.Frames[0].Func != "gopkg.in/yaml.v2.(*decoder).unmarshal" || g.CreatedBy.Func != "gopkg.in/yaml.v2.run" {
		t.Errorf("got %q, created by %q", g.Frames[0].Func, g.CreatedBy.Func)
	}
}

func TestTruncated(t *testing.T) {
	full := "goroutine 1 [running]:\nmain.main()\n\t/tmp/main.go:53 +0x265\n\ngoroutine 2 [select]:\nmain.f(0x1)\n\t/tmp/main.go:9 +0x1\ncreated by main.main in goroutine 1\n\t/tmp/main.go:8 +0x2\n"
	// Cut at every byte: never an error, and a cut inside a record says so.
	for i := 1; i < len(full); i++ {
		dumps, err := Parse(strings.NewReader(full[:i]))
		if i < len("goroutine 1 [running]:") {
			if err == nil {
				t.Errorf("cut at %d: want ErrNoDump, got %+v", i, dumps)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut at %d: %v", i, err)
		}
		if len(dumps) != 1 {
			t.Fatalf("cut at %d: %d dumps", i, len(dumps))
		}
		end := full[:i]
		complete := strings.HasSuffix(end, "+0x265\n") || strings.HasSuffix(end, "+0x265\n\n") ||
			strings.HasSuffix(end, "+0x1\n") || strings.HasSuffix(end, "+0x2\n")
		if dumps[0].Truncated == complete {
			t.Errorf("cut at %d (%q): truncated = %v", i, end[max(0, len(end)-12):], dumps[0].Truncated)
		}
	}
}

func TestNoDump(t *testing.T) {
	for _, in := range []string{"", "hello\nworld\n", "\x00\x01"} {
		if _, err := Parse(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), ErrNoDump.Error()) {
			t.Errorf("Parse(%q) error = %v, want ErrNoDump", in, err)
		}
	}
}

func TestLongLine(t *testing.T) {
	in := "goroutine 1 [running]:\nmain.main(" + strings.Repeat("0x1, ", maxLine) + ")\n\t/x.go:1\nmain.g()\n\t/x.go:2 +0x1\n"
	dumps, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	g := dumps[0].Goroutines[0]
	if len(g.Frames) != 1 || g.Frames[0].Func != "main.g" {
		t.Errorf("got %+v", g.Frames)
	}
	if dumps[0].LongLines != 1 {
		t.Errorf("%d long lines counted, want 1", dumps[0].LongLines)
	}
}

// genReader produces a pprof debug=2-style dump of n goroutines on the fly.
type genReader struct {
	left, total int64
	buf         []byte
	i           int
}

func (r *genReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.left <= 0 {
			return 0, io.EOF
		}
		r.left--
		id := r.total - r.left
		r.buf = fmt.Appendf(r.buf[:0], "goroutine %d [chan receive, %d minutes]:\n", id, id%100)
		for j := range 8 {
			r.buf = fmt.Appendf(r.buf, "example.com/pkg.(*Server).handle%d(0xc000010000, {0x1, 0x2}, 0x%x?)\n\t/src/example.com/pkg/server.go:%d +0x%x\n", j, id, j+10, j)
		}
		r.buf = fmt.Appendf(r.buf, "created by example.com/pkg.Serve in goroutine 1\n\t/src/example.com/pkg/server.go:3 +0x5\n\n")
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// TestStreamingMemory: ParseFunc with a caller that keeps only a count
// holds the heap to a record's worth however long the input is.
func TestStreamingMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("50 MB of input")
	}
	const goroutines = 53_000 // about 50 MB
	r := &genReader{left: goroutines, total: goroutines}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var count, frames int
	var peak uint64
	var read int64
	cr := &countingReader{r: r, n: &read}
	dumps, err := ParseFunc(cr, func(_ int, g Goroutine) {
		count++
		frames += len(g.Frames)
		if count%5000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dumps) != 1 || dumps[0].Producer != ProducerUnknown || count != goroutines || frames != 8*goroutines {
		t.Fatalf("got %d dumps, %d goroutines, %d frames", len(dumps), count, frames)
	}
	if read < 40<<20 {
		t.Fatalf("only %d bytes generated", read)
	}
	grown := int64(peak) - int64(base)
	t.Logf("input %d MB, heap peak %+d KB over the start", read>>20, grown>>10)
	// Garbage between GCs counts too; the bound is what keeps the point:
	// far below the input, not growing with it.
	if grown > 16<<20 {
		t.Errorf("heap grew %d bytes for %d bytes of input", grown, read)
	}
}

type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

func BenchmarkParseFunc(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r := &genReader{left: 1000, total: 1000}
		if _, err := ParseFunc(r, func(int, Goroutine) {}); err != nil {
			b.Fatal(err)
		}
	}
}
