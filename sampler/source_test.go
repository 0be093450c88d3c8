package sampler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/fusehang"
	"github.com/hangdoc/hangdoc/model"
)

// A source file is whatever a dump names: only a regular file is read,
// and nothing else may block (a FIFO's open waits for a writer) or fill
// memory (/dev/zero never ends).
func TestSourceOnlyRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "x.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "main.go")
	if err := os.WriteFile(good, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.go")
	if err := os.WriteFile(big, make([]byte, maxSource+1), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.go")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	// Generous: these return at once; the bound only stops a broken test.
	src := SourceFiles{Timeout: time.Minute}
	if lines, err := src.Local(good); err != nil || len(lines) != 3 || lines[2] != "func main() {}" {
		t.Errorf("Local(%s) = %q, %v", good, lines, err)
	}
	for _, path := range []string{fifo, link, "/dev/zero", dir, big} {
		if lines, err := src.Local(path); err == nil || lines != nil {
			t.Errorf("Local(%s) = %d lines, %v; want an error", path, len(lines), err)
		} else if errors.Is(err, ErrHungMount) {
			t.Errorf("Local(%s): %v, not a hung mount", path, err)
		}
	}
}

// A file on a filesystem that never answers is given up at its deadline,
// once: the other files on that mount are not tried, and the notes say
// so.
func TestSourceOnHungMount(t *testing.T) {
	fs, err := fusehang.Mount(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	src := SourceFiles{Timeout: 200 * time.Millisecond}
	sample := model.Sample{Goroutines: []model.Goroutine{{ID: 1, Stack: []model.Frame{
		{Func: "main.a", File: fs.Dir + "/hang-a.go", Line: 3},
		{Func: "main.b", File: fs.Dir + "/hang-b.go", Line: 4},
		{Func: "main.c", File: fs.Dir + "/hang-c.go", Line: 5},
	}}}}
	out, notes, cut := ReadSourcesContext(context.Background(), []model.Sample{sample}, src.Local)
	if cut != nil {
		t.Errorf("cut short: %v", cut)
	}
	if len(out) != 3 || out[fs.Dir+"/hang-a.go"] != nil {
		t.Errorf("sources %v: want the three files, none read", out)
	}
	if len(notes) != 1 || notes[0].Kind != model.NoteSourceUnreadMore || !strings.HasSuffix(notes[0].Args[0], "hang-a.go") ||
		!strings.Contains(notes[0].Args[1], "did not return in time") || notes[0].Args[2] != "2" || notes[0].Args[3] != fs.Dir {
		t.Errorf("notes %q: want one saying hang-a.go was given up and the 2 others on %s not tried", notes, fs.Dir)
	}
	if held := fs.Held(); held > 1 {
		t.Errorf("%d requests held by the filesystem: the mount was tried more than once", held)
	}
	if _, err := src.Local(fs.Dir + "/hang-d.go"); !errors.Is(err, ErrHungMount) {
		t.Errorf("a later read on the mount: %v, want %v", err, ErrHungMount)
	}
}

// An interrupt ends the reading of sources at once, a read left blocked.
func TestSourcesInterrupted(t *testing.T) {
	fs, err := fusehang.Mount(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if fs.WaitHeld(1, time.Minute) == nil {
			cancel()
		}
	}()
	sample := model.Sample{Threads: []model.Thread{{TID: 1, Stack: []model.Frame{{Func: "a", File: fs.Dir + "/hang.py", Line: 1}}}}}
	// The file's own deadline is far: only the cancel can end this.
	out, notes, cut := ReadSourcesContext(ctx, []model.Sample{sample}, SourceFiles{Timeout: time.Hour}.Local)
	if ctx.Err() == nil || !errors.Is(cut, context.Canceled) {
		t.Fatalf("returned before the cancel, or not saying so: %v", cut)
	}
	if len(out) != 0 || len(notes) != 0 {
		t.Errorf("sources %v, notes %q: want nothing read and nothing said", out, notes)
	}
}
