package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
)

func TestAnalyzeStdinAndThreadMatching(t *testing.T) {
	dump := `Process 4242: python3 app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    _wait_for_tstate_lock (threading.py:1132)
    join (threading.py:1112)
    <module> (app.py:30)
Thread 4250 (idle): "worker-0"
    wait (threading.py:320)
    get (queue.py:171)
    work (app.py:12)
`
	rec, err := Dumps([]string{"-"}, strings.NewReader(dump), "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) != 1 || rec.Target.PID != 4242 || rec.Target.RuntimeVersion != "3.11.7" {
		t.Fatalf("recording: %d samples, target %+v", len(rec.Samples), rec.Target)
	}
	s := rec.Samples[0]
	if len(s.Threads) != 2 || s.Threads[1].TID != 4250 || s.Threads[1].Python.ThreadName != "worker-0" || !s.Threads[1].Syscall.Unknown {
		t.Errorf("threads %+v: want the OS thread ids, names, and no kernel evidence", s.Threads)
	}
}

// goDump is a runtime.Stack-style dump of n goroutines parked at one
// place, goroutine 1 writing it.
func goDump(n int, distinct bool) string {
	var b strings.Builder
	b.WriteString("goroutine 1 [running]:\nmain.main()\n\t/src/main.go:10 +0x1\n\n")
	for i := 2; i <= n; i++ {
		line := 20
		if distinct {
			line += i
		}
		fmt.Fprintf(&b, "goroutine %d [chan receive]:\nmain.worker(0xc000010000)\n\t/src/main.go:%d +0x2\ncreated by main.main in goroutine 1\n\t/src/main.go:12 +0x3\n\n", i, line)
	}
	return b.String()
}

// TestBoundedInput: whatever the input, the reading stops with a clear
// error or keeps a bounded amount, and says what it left out.
func TestBoundedInput(t *testing.T) {
	read := func(in []byte) (model.Recording, error) {
		return ReadDumps(context.Background(), DumpOptions{Paths: []string{"-"}, Stdin: bytes.NewReader(in), Version: "test"})
	}
	t.Run("binary", func(t *testing.T) {
		if _, err := read(make([]byte, 4096)); !errors.Is(err, ErrNotText) || strings.Contains(err.Error(), "\n") {
			t.Errorf("zeros: %v, want ErrNotText in one line", err)
		}
		junk := make([]byte, 4096)
		for i := range junk {
			junk[i] = byte(i*7+1) | 0x80
		}
		if _, err := read(junk); !errors.Is(err, ErrNotText) {
			t.Errorf("junk: %v, want ErrNotText", err)
		}
	})
	t.Run("gzip", func(t *testing.T) {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write([]byte(goDump(5, false)))
		w.Close()
		rec, err := read(z.Bytes())
		if err != nil || len(rec.Samples) != 1 || goroutineCount(rec.Samples[0]) != 5 {
			t.Fatalf("gzipped dump: %v, %+v", err, rec.Samples)
		}
	})
	t.Run("long lines", func(t *testing.T) {
		in := "junk " + strings.Repeat("x", maxLine+10) + "\n" + goDump(3, false)
		rec, err := read([]byte(in))
		if err != nil || goroutineCount(rec.Samples[0]) != 3 || !strings.Contains(strings.Join(report.NoteTexts(rec.Notes), "\n"), "longer than 1 MiB were skipped") {
			t.Errorf("%v; notes %q", err, rec.Notes)
		}
	})
	t.Run("twins are kept as ids", func(t *testing.T) {
		rec, err := read([]byte(goDump(1000, false)))
		if err != nil {
			t.Fatal(err)
		}
		if gs := rec.Samples[0].Goroutines; len(gs) != 2 || len(gs[1].Twins) != 998 || goroutineCount(rec.Samples[0]) != 1000 {
			t.Errorf("%d readings, want goroutine 1 and one worker with 998 twins", len(gs))
		}
	})
	t.Run("more than is kept", func(t *testing.T) {
		defer func(s, g, r int) { maxSamples, maxGoroutines, maxReadings = s, g, r }(maxSamples, maxGoroutines, maxReadings)
		maxGoroutines, maxReadings = 500, 50
		rec, err := read([]byte(goDump(400, true) + goDump(300, false)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range rec.Samples {
			n += goroutineCount(s)
			if len(s.Goroutines) > maxReadings {
				t.Errorf("%d readings kept, bound %d", len(s.Goroutines), maxReadings)
			}
		}
		if n > maxGoroutines || !strings.Contains(strings.Join(report.NoteTexts(rec.Notes), "\n"), "counted, not read") {
			t.Errorf("%d goroutines kept (bound %d); notes %q", n, maxGoroutines, rec.Notes)
		}
	})
	t.Run("a stream that never ends", func(t *testing.T) {
		// The writer hands over a dump and never closes: the reading ends
		// when its context does, with what was read, marked partial. An
		// io.Pipe write returns once the reader took it, and the reader
		// asks for more only when it has handed the last out: once the
		// second write returns, the dump is read, without a clock.
		pr, pw := io.Pipe()
		defer pw.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var rec model.Recording
		var err error
		go func() {
			defer close(done)
			rec, err = ReadDumps(ctx, DumpOptions{Paths: []string{"-"}, Stdin: pr, Version: "test"})
		}()
		for _, part := range []string{goDump(10, false), "\n"} {
			if _, err := pw.Write([]byte(part)); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		<-done
		if err != nil || rec.PartialReason == "" || goroutineCount(rec.Samples[0]) != 10 {
			t.Errorf("%v, partial %q, %+v: want the 10 goroutines written, marked partial", err, rec.PartialReason, rec.Samples)
		}
	})
}

func goroutineCount(s model.Sample) int {
	n := 0
	for _, g := range s.Goroutines {
		n += 1 + len(g.Twins)
	}
	return n
}

// TestExcerpt: a dump that may not hold every goroutine of its program is
// marked an excerpt, so that no "nobody left" rests on what it does not
// show; a whole one is not.
func TestExcerpt(t *testing.T) {
	worker := "goroutine 7 [chan receive]:\nmain.worker(0xc000010000)\n\t/src/main.go:20 +0x2\ncreated by main.main in goroutine 1\n\t/src/main.go:12 +0x3\n"
	for _, tc := range []struct {
		name    string
		dump    string
		excerpt bool
	}{
		{"whole runtime.Stack", goDump(5, false), false},
		{"whole SIGQUIT", "SIGQUIT: quit\nPC=0x1 m=0 sigcode=0\n\n" + goDump(3, false), false},
		{"cut mid-record", goDump(5, false) + "goroutine 9 [chan receive]:\nmain.wor", true},
		{"a paste without goroutine 1", worker + "\n" + strings.Replace(worker, "goroutine 7", "goroutine 8", 1), true},
		{"a panic's one goroutine", "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:10 +0x1\nexit status 2\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := Dumps([]string{"-"}, strings.NewReader(tc.dump), "test")
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Samples) != 1 || rec.Samples[0].Excerpt != tc.excerpt {
				t.Errorf("%d samples, excerpt %v; want 1, excerpt %v", len(rec.Samples), len(rec.Samples) > 0 && rec.Samples[0].Excerpt, tc.excerpt)
			}
		})
	}
}

// TestStdlibFromInterpreter: a py-spy dump names the standard library's
// files by short names and its interpreter on its header line; the files
// the reader does not find are read from that interpreter's lib/pythonX.Y
// (here a fake one), and nowhere else.
func TestStdlibFromInterpreter(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, "lib", "python3.11", "logging")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "__init__.py"), []byte("class Handler:\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dump := "Process 7: python3 app.py\nPython v3.11.7 (" + filepath.Join(root, "bin", "python3.11") + ")\n\n" +
		"Thread 7 (idle): \"MainThread\"\n    Handler.acquire (logging/__init__.py:1)\n    main (app.py:3)\n"
	rec, err := ReadDumps(context.Background(), DumpOptions{Paths: []string{"-"}, Stdin: strings.NewReader(dump), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Sources["logging/__init__.py"]; len(got) == 0 || got[0] != "class Handler:" {
		t.Errorf("logging/__init__.py read as %q, want the interpreter's", got)
	}
	if got := rec.Sources["app.py"]; got != nil {
		t.Errorf("app.py read as %q from somewhere: want nothing", got)
	}
	if rec.Target.Exe != filepath.Join(root, "bin", "python3.11") {
		t.Errorf("target exe %q", rec.Target.Exe)
	}
}
