package sampler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// OpenOutput opens the file a runtime's SIGQUIT dump will be read back
// from (a Go program's stderr, a JVM's stdout): logPath (--sigquit-log),
// or else the target's descriptor fd when it is a regular file. where
// names it in errors.
func OpenOutput(fsys FS, pid, fd int, logPath string) (f *os.File, where string, err error) {
	stream := "stdout"
	if fd == 2 {
		stream = "stderr"
	}
	if logPath != "" {
		f, err := os.Open(logPath)
		if err != nil {
			return nil, "", fmt.Errorf("opening the SIGQUIT log: %w", err)
		}
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			f.Close()
			return nil, "", fmt.Errorf("the SIGQUIT log %s is not a regular file: pass the file pid %d's %s is written to", logPath, pid, stream)
		}
		return f, logPath, nil
	}
	link := fsys.Path(strconv.Itoa(pid), "fd", strconv.Itoa(fd))
	target, err := os.Readlink(link)
	if err != nil {
		if _, serr := os.Stat(fsys.Path(strconv.Itoa(pid))); serr != nil {
			return nil, "", fmt.Errorf("reading %s: %w", link, ErrNoProcess)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("pid %d has no %s (fd %d is closed), so its SIGQUIT dump goes nowhere: pass --sigquit-log PATH if it writes it elsewhere", pid, stream, fd)
		}
		return nil, "", fmt.Errorf("reading %s: %w", link, fileErr(err))
	}
	// Stat before opening: opening a pipe's /proc link would make hangdoc
	// one of its readers.
	st, err := os.Stat(link)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", link, fileErr(err))
	}
	if !st.Mode().IsRegular() {
		return nil, "", fmt.Errorf("pid %d's %s is %s, not a file the SIGQUIT dump can be read back from: pass --sigquit-log PATH naming the file its %s ends up in", pid, stream, target, stream)
	}
	f, err = os.Open(link)
	if err != nil {
		return nil, "", fmt.Errorf("opening pid %d's %s %s: %w", pid, stream, link, fileErr(err))
	}
	if st2, err := f.Stat(); err != nil || !os.SameFile(st, st2) {
		f.Close()
		return nil, "", fmt.Errorf("pid %d's %s changed while hangdoc opened it: try again", pid, stream)
	}
	return f, fmt.Sprintf("pid %d's %s (%s)", pid, stream, target), nil
}

func fileErr(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		return ErrNoProcess
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return ErrPermission
	}
	return err
}
