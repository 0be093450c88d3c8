package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// TestAnalyzeRecording: a live run's --record file, analyzed later, gives
// the live run's report byte for byte and its exit code, gzipped too, for
// each family of target: C threads, a pipe to another process, Go, Python
// and a JVM.
func TestAnalyzeRecording(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) *testvictim.Victim
	}{
		{"C", func(t *testing.T) *testvictim.Victim { return testvictim.Start(t, testvictim.Build(t, "abba")) }},
		{"cross-process", func(t *testing.T) *testvictim.Victim { return testvictim.Start(t, testvictim.Build(t, "pipeholder")) }},
		{"Go", func(t *testing.T) *testvictim.Victim {
			return testvictim.Start(t, testvictim.BuildGo(t, "gomutexpipe"))
		}},
		{"Python", func(t *testing.T) *testvictim.Victim { return testvictim.StartPython(t, "py_lock_identity.py", "abba") }},
		{"Java", func(t *testing.T) *testvictim.Victim {
			jdk := jdks[0]
			classes := testvictim.BuildJava(t, jdk, "SyncAbba")
			return testvictim.StartCmd(t, exec.Command(filepath.Join(jdk, "bin", "java"), "-Xmx64m", "-cp", classes, "SyncAbba"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.start(t)
			dir := t.TempDir()
			rec := filepath.Join(dir, "run.json")
			live, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--samples", "2", "--interval", "300ms", "--record", rec)
			if code == ExitError || code == ExitUsage {
				t.Fatalf("live run: exit %d: %s", code, stderr)
			}
			again, stderr2, code2 := hangdoc(t, "analyze", rec)
			if again != live || code2 != code {
				t.Errorf("analyze of the recording: exit %d, want the live run's %d; stderr %s\n--- live\n%s\n--- replayed\n%s", code2, code, stderr2, live, again)
			}
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(b)
			zw.Close()
			gz := rec + ".gz"
			if err := os.WriteFile(gz, z.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, _, c := hangdoc(t, "analyze", gz); got != live || c != code {
				t.Errorf("analyze of the gzipped recording differs from the live run (exit %d, want %d)", c, code)
			}
		})
	}
}

// TestAnalyzeRecordingRefused: a recording is analyzed alone, and one that
// is garbled, empty of samples or of a newer format gets a one-line
// error that says what is wrong.
func TestAnalyzeRecordingRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"recording_version": 1, "hangdoc_version": "x", "target": {"pid": 7}, "samples": [{"pid": 7, "threads": [{"tid": 7, "state": "S"}]}]}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"newer", []string{write("newer.json", `{"recording_version": 99, "hangdoc_version": "x", "samples": []}`)}, "upgrade hangdoc"},
		{"garbled", []string{write("garbled.json", `{"hangdoc_version": "x", "samples": [{"threads": [}`)}, "not a readable hangdoc recording"},
		{"no samples", []string{write("empty.json", `{"hangdoc_version": "x", "samples": []}`)}, "no samples"},
		{"with a dump", []string{good, good}, "analyzed alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := hangdoc(t, append([]string{"analyze"}, tc.args...)...)
			if code != ExitUsage && code != ExitError || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("exit %d, stderr %q, stdout %q: want one line saying %q", code, stderr, out, tc.want)
			}
		})
	}
	if _, stderr, code := hangdoc(t, "analyze", good); code == ExitError || code == ExitUsage || stderr != "" {
		t.Errorf("a small recording: exit %d, %s", code, stderr)
	}
	// Version 1's notes are sentences; version 2's are facts, worded by
	// the reader, and a kind it does not know is said as kind and values.
	v1 := write("v1.json", `{"recording_version": 1, "hangdoc_version": "x", "notes": ["an old note, in words"], "target": {"pid": 7}, "samples": [{"pid": 7, "threads": [{"tid": 7, "state": "S"}]}]}`)
	v2 := write("v2.json", `{"recording_version": 2, "hangdoc_version": "x", "notes": [{"kind": "traced", "args": ["7", "9", "gdb -p 7"]}, {"kind": "from_the_future", "args": ["a", "b"]}], "target": {"pid": 7}, "samples": [{"pid": 7, "threads": [{"tid": 7, "state": "S"}]}]}`)
	for file, want := range map[string][]string{
		v1: {"an old note, in words"},
		v2: {"pid 7 is traced by pid 9 (gdb -p 7): nothing here stops it", "from_the_future: a; b"},
	} {
		out, stderr, _ := hangdoc(t, "analyze", "--json", file)
		c := tdecode(t, out)
		for _, w := range want {
			if !slices.ContainsFunc(c.Sampling.Notes, func(n string) bool { return strings.HasPrefix(n, w) }) {
				t.Errorf("%s: notes %q lack %q (%s)", filepath.Base(file), c.Sampling.Notes, w, stderr)
			}
		}
	}
}
