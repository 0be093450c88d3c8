package golive

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/sampler"
)

// pprofPkg prefixes every function of net/http/pprof (Index, Cmdline,
// Profile, Symbol, Trace, handler.ServeHTTP, init).
const pprofPkg = "net/http/pprof."

// LinksPprof reports whether pid's executable links net/http/pprof: its
// symbol table has a net/http/pprof function, or, in a stripped binary,
// the Go function-name table (.gopclntab) has one. A binary that links it
// serves it only if it also serves http.DefaultServeMux (or mounts the
// handlers) on some port, so a true says "worth looking", no more.
//
// The executable is read through /proc/PID/exe, which blocks on a hung
// filesystem: LinksPprof gives up after ExeTimeout (see
// LinksPprofContext).
func LinksPprof(fsys sampler.FS, pid int) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ExeTimeout)
	defer cancel()
	return LinksPprofContext(ctx, fsys, pid)
}

// ExeTimeout bounds LinksPprof's read of the executable.
const ExeTimeout = 2 * time.Second

// LinksPprofContext is LinksPprof given up when ctx ends (the reading
// goroutine is left blocked: internal/deadline).
func LinksPprofContext(ctx context.Context, fsys sampler.FS, pid int) (bool, error) {
	path := fsys.Path(strconv.Itoa(pid), "exe")
	return deadline.Run(ctx, "reading "+path, func() (bool, error) { return linksPprof(path) })
}

func linksPprof(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, exeErr(path, err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err == nil {
		for _, s := range syms {
			if strings.HasPrefix(s.Name, pprofPkg) {
				return true, nil
			}
		}
		return false, nil
	}
	if !errors.Is(err, elf.ErrNoSymbols) {
		return false, fmt.Errorf("reading the symbols of %s: %w", path, err)
	}
	for _, name := range []string{".gopclntab", ".data.rel.ro.gopclntab"} {
		if sec := f.Section(name); sec != nil && sec.Type != elf.SHT_NOBITS {
			found, err := holdsName(sec.Open(), pprofPkg)
			if err != nil {
				return false, fmt.Errorf("reading %s of %s: %w", name, path, err)
			}
			return found, nil
		}
	}
	return false, nil // no symbols, no Go function names: not a Go program hangdoc can tell
}

// holdsName reports whether r, a pclntab, has a function name that begins
// with prefix. The function-name table is NUL-separated names, so a name
// is prefix right after a NUL. It reads in chunks that overlap by the
// length of what it looks for.
func holdsName(r io.Reader, prefix string) (bool, error) {
	want := []byte("\x00" + prefix)
	br := bufio.NewReaderSize(r, 1<<16)
	buf := make([]byte, 0, 1<<16+len(want))
	chunk := make([]byte, 1<<16)
	for {
		n, err := br.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if bytes.Contains(buf, want) {
			return true, nil
		}
		if len(buf) >= len(want) {
			buf = append(buf[:0], buf[len(buf)-len(want)+1:]...)
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// exeErr says why an executable could not be read, with the sampler's
// sentinels for a gone process and a refused read.
func exeErr(path string, err error) error {
	var fe *elf.FormatError
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("reading %s: %w", path, sampler.ErrNoProcess)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return fmt.Errorf("reading %s: %w", path, sampler.ErrPermission)
	case errors.As(err, &fe):
		return fmt.Errorf("reading %s: not an ELF executable (%v): only Go programs for Linux serve goroutine profiles", path, err)
	}
	return fmt.Errorf("reading %s: %w", path, err)
}
