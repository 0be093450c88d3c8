package sampler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/model"
)

// A source file is named by a dump or a target's stacks, which may name
// anything: a FIFO (whose open waits for a writer), a device that never
// ends (/dev/zero), a file on a filesystem that never answers. It is read
// only if it is a regular file (opened O_NONBLOCK, then fstat), at most
// maxSource bytes, and under a deadline; a read given up marks its mount
// hung, and no other file there is tried.

// maxSource bounds a source file read to find the locks a frame holds.
const maxSource = 1 << 20

// DefaultSourceTimeout bounds the read of one source file.
const DefaultSourceTimeout = 3 * time.Second

// ErrHungMount: the file is on a mount where an earlier read was given up.
var ErrHungMount = errors.New("on a mount where an earlier read did not return")

// SourceFiles reads source files. Its zero value reads with
// DefaultSourceTimeout.
type SourceFiles struct {
	// Timeout bounds the read of one file; 0 is DefaultSourceTimeout.
	Timeout time.Duration
}

// Local reads a source file from this machine's filesystem, for dumps
// analysed offline on the host that took them. Lines are returned without
// their newlines, line 1 first.
func (s SourceFiles) Local(path string) ([]string, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("reading source %q: not an absolute path", path)
	}
	return s.read(filepath.Clean(path), "", "/proc/self/mountinfo", filepath.Clean(path))
}

// Target reads a source file a stack points into, as the target sees it:
// through /proc/PID/root, so a file inside a container is the container's.
func (s SourceFiles) Target(fs FS, pid int, path string) ([]string, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("reading source %q: not an absolute path", path)
	}
	p := strconv.Itoa(pid)
	root := fs.Path(p, "root")
	return s.read(root+filepath.Clean(path), root, fs.Path(p, "mountinfo"), filepath.Clean(path))
}

// ReadSource is SourceFiles{}.Target.
func ReadSource(fs FS, pid int, path string) ([]string, error) {
	return SourceFiles{}.Target(fs, pid, path)
}

// ReadLocalSource is SourceFiles{}.Local.
func ReadLocalSource(path string) ([]string, error) { return SourceFiles{}.Local(path) }

// read reads full, which is seen as path through root, with the mounts of
// mountinfo.
func (s SourceFiles) read(full, root, mountinfo, path string) ([]string, error) {
	if m := hung.of(full); m != "" {
		return nil, &HungMountError{Path: full, Mount: m}
	}
	lines, err := deadline.Within(context.Background(), cmpDuration(s.Timeout, DefaultSourceTimeout), "reading source "+full, func() ([]string, error) {
		return readLines(full)
	})
	var de *deadline.Error
	if errors.As(err, &de) {
		m := root + mountOf(mountinfo, path)
		hung.add(m)
		return nil, &HungMountError{Path: full, Mount: m, First: true, Err: err}
	}
	return lines, err
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// HungMountError is a source file not read because its mount does not
// answer: First for the read given up, else a file not tried.
type HungMountError struct {
	Path, Mount string
	First       bool
	Err         error
}

func (e *HungMountError) Error() string {
	if e.First {
		return e.Err.Error()
	}
	return fmt.Sprintf("reading source %s: not tried: %v (%s)", e.Path, ErrHungMount, e.Mount)
}

func (e *HungMountError) Is(target error) bool { return target == ErrHungMount }
func (e *HungMountError) Unwrap() error        { return e.Err }

// hung is the mounts where a read was given up, for the whole process:
// a filesystem that does not answer one read will not answer the next.
var hung hungMounts

type hungMounts struct {
	mu sync.Mutex
	m  map[string]bool
}

func (h *hungMounts) add(mount string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]bool{}
	}
	h.m[mount] = true
}

// of is the hung mount full is under, or "".
func (h *hungMounts) of(full string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	best := ""
	for m := range h.m {
		if under(full, m) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

func under(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir) && path[len(dir)] == '/'
}

// mountOf is the mount point path is under, from a mountinfo file, which
// asks the filesystems nothing; the path's directory when it cannot be
// read.
func mountOf(mountinfo, path string) string {
	best := ""
	b, err := os.ReadFile(mountinfo)
	if err == nil {
		for line := range bytes.Lines(b) {
			f := strings.Fields(string(line))
			if len(f) < 5 {
				continue
			}
			if m := unescapeMount(f[4]); under(path, m) && len(m) > len(best) {
				best = m
			}
		}
	}
	if best == "" {
		best = filepath.Dir(path)
	}
	return best
}

// readLines reads a regular file's lines. The open does not wait (a
// FIFO's for a writer), and only a regular file is read.
func readLines(full string) ([]string, error) {
	fd, err := unix.Open(full, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("reading source %s: %w", full, &os.PathError{Op: "open", Path: full, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("reading source %s: %w", full, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("reading source %s: not a regular file", full)
	}
	if st.Size > maxSource {
		unix.Close(fd)
		return nil, fmt.Errorf("reading source %s: larger than %d bytes", full, maxSource)
	}
	f := os.NewFile(uintptr(fd), full)
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSource+1))
	if err != nil {
		return nil, fmt.Errorf("reading source %s: %w", full, err)
	}
	if len(b) > maxSource {
		return nil, fmt.Errorf("reading source %s: larger than %d bytes", full, maxSource)
	}
	var lines []string
	for line := range bytes.Lines(b) {
		lines = append(lines, string(bytes.TrimRight(line, "\r\n")))
	}
	return lines, nil
}

// Bounds on the source files read for a recording: how many, and how
// much in all (each is also bounded, by maxSource).
const (
	maxSourceFiles = 256
	maxSourceLines = 1 << 20
)

// ReadSources reads the files the last sample's stacks point into — every
// frame of every thread and goroutine, but the Go standard library's — so
// the classifier can find the locks each frame holds. A file that cannot
// be read maps to nil.
func ReadSources(samples []model.Sample, read func(path string) ([]string, error)) map[string][]string {
	out, _, _ := ReadSourcesContext(context.Background(), samples, read)
	return out
}

// lateSources is how long past ctx's deadline the sources may still be
// read: a run whose time ran out reports what it sampled, and the
// sources name the locks in it.
const lateSources = time.Second

// ReadSourcesContext is ReadSources that stops when ctx is cancelled (an
// interrupt) or lateSources past its deadline, and then says why (the
// sources read by then are returned). Its notes are on the files not read
// because their filesystem did not answer.
func ReadSourcesContext(ctx context.Context, samples []model.Sample, read func(path string) ([]string, error)) (map[string][]string, []model.Note, error) {
	out := map[string][]string{}
	if len(samples) == 0 {
		return out, nil, nil
	}
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	if d, ok := ctx.Deadline(); ok {
		var stop func()
		rctx, stop = context.WithDeadline(rctx, d.Add(lateSources))
		defer stop()
	}
	defer context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel(context.Cause(ctx))
		}
	})()
	last := samples[len(samples)-1]
	lines := 0
	var givenUp []*HungMountError
	skipped := map[string]int{} // by mount
	var stuck error
	add := func(f model.Frame) {
		if f.File == "" || len(out) >= maxSourceFiles || lines >= maxSourceLines || rctx.Err() != nil {
			return
		}
		if _, done := out[f.File]; done {
			return
		}
		// The read is bounded by its own deadline; this one is the run's
		// (an interrupt), which may end first.
		ls, err := deadline.Run(rctx, "reading source "+f.File, func() ([]string, error) { return read(f.File) })
		if rctx.Err() != nil {
			return
		}
		out[f.File] = ls
		lines += len(ls)
		var he *HungMountError
		switch {
		case errors.As(err, &he) && he.First:
			givenUp = append(givenUp, he)
		case errors.As(err, &he):
			skipped[he.Mount]++
		case errors.Is(err, deadline.ErrTooManyStuck) && stuck == nil:
			stuck = err
		}
	}
	for _, t := range last.Threads {
		for _, f := range t.Stack {
			add(f)
		}
	}
	for _, g := range last.Goroutines {
		for _, f := range g.Stack {
			if !model.GoStd(f.Func) {
				add(f)
			}
		}
	}
	for _, t := range last.Tasks {
		for _, f := range t.Stack {
			add(f)
		}
	}
	var notes []model.Note
	for _, he := range givenUp {
		n := model.NewNote(model.NoteSourceUnread, he.Path, he.Err)
		if k := skipped[he.Mount]; k > 0 {
			n = model.NewNote(model.NoteSourceUnreadMore, he.Path, he.Err, k, he.Mount)
			delete(skipped, he.Mount)
		}
		notes = append(notes, n)
	}
	for _, m := range slices.Sorted(maps.Keys(skipped)) {
		notes = append(notes, model.NewNote(model.NoteSourcesSkipped, skipped[m], m))
	}
	if stuck != nil {
		notes = append(notes, model.NewNote(model.NoteSourcesStuck, stuck))
	}
	if rctx.Err() != nil {
		return out, notes, ctx.Err()
	}
	return out, notes, nil
}
