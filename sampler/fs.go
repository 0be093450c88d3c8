// Package sampler gathers evidence about a live process: what the kernel says
// about every thread (state, CPU, wchan, syscall, context switches) and about
// the process (RSS, start time, the owners of the futexes its threads wait on).
// It interprets nothing: classify reads the samples it produces.
package sampler

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// FS is a /proc tree. Tests point it at a captured tree under testdata.
type FS struct {
	root string
}

// NewFS returns the /proc tree at root; "" means /proc.
func NewFS(root string) FS {
	if root == "" {
		root = "/proc"
	}
	return FS{root: root}
}

// Path joins elements under the root: Path("4187", "task") is /proc/4187/task.
func (p FS) Path(elem ...string) string {
	return filepath.Join(append([]string{p.root}, elem...)...)
}

func (p FS) pidPath(pid int, elem ...string) string {
	return p.Path(append([]string{strconv.Itoa(pid)}, elem...)...)
}

func (p FS) taskPath(pid, tid int, elem ...string) string {
	return p.Path(append([]string{strconv.Itoa(pid), "task", strconv.Itoa(tid)}, elem...)...)
}

// Sentinel errors, checked with errors.Is.
var (
	ErrNoProcess    = errors.New("no such process")
	ErrPermission   = errors.New("permission denied")
	ErrKernelThread = errors.New("kernel thread")
	ErrZombie       = errors.New("zombie process")
	ErrPIDReused    = errors.New("pid reused by another process")
)

// PermissionHint is the fix for ErrPermission, said wherever it is reported.
const PermissionHint = "run hangdoc as the process owner or as root (or with CAP_SYS_PTRACE; in a container: --cap-add SYS_PTRACE); with kernel.yama.ptrace_scope=1 only root or a parent may read another process's syscalls"

// classifyErr maps a file error onto a sentinel, keeping the path in the message.
func classifyErr(op, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("%s %s: %w", op, path, ErrNoProcess)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return fmt.Errorf("%s %s: %w", op, path, ErrPermission)
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// pread reads a whole /proc file through an open descriptor, from offset 0.
// /proc files report size 0 or 4096 whatever they hold, so the size is never
// trusted: a read that fills the buffer is retried with a bigger one. A short
// read is the whole file: seq_file generates the content at once and copies
// all of it that fits.
//
// Raw descriptors, not *os.File: a sample of 1,000 threads is 4,000 reads, and
// os.File's ReadAt would add a second read per file to see EOF.
func pread(fd int, buf []byte) ([]byte, error) {
	buf = buf[:cap(buf)]
	if len(buf) == 0 {
		buf = make([]byte, 4096)
	}
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n < len(buf) {
			return buf[:n], nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

func open(path string) (int, error) { return openat(unix.AT_FDCWD, path) }

func openat(dir int, path string) (int, error) {
	for {
		fd, err := unix.Openat(dir, path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// readFile opens, reads to the end and closes one /proc file. It reads
// until a read returns nothing: files the kernel makes with seq_file
// (/proc/PID/net/tcp, maps, an epoll's fdinfo) give at most a page per
// read, however large the buffer, so one short read is not the end.
func readFile(path string, buf []byte) ([]byte, error) {
	fd, err := open(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf = buf[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, 4096)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
