package sampler

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
	"golang.org/x/sys/unix"
)

// ErrNotPipe says a descriptor is not an anonymous pipe, so its fill cannot
// be read without opening something that might notice.
var ErrNotPipe = errors.New("not an anonymous pipe")

// ReadPipeFill says how full the anonymous pipe behind descriptor fd of pid
// is. It opens the pipe, asks, and closes it; it never reads or writes.
//
// The open adds a reader to the pipe for an instant, which is harmless:
// for an anonymous pipe the kernel's fifo_open only counts the new reader,
// and waking anyone there needs it to be the first one; a writer is blocked
// only while a reader exists (with none, write fails with EPIPE), so ours
// is never the first. Closing it, pipe_release wakes waiters only when the
// last reader or writer goes (older kernels woke them on every close, and
// a woken writer finds the pipe still full and sleeps again). On a pipe
// with no reader at all, where no writer can be blocked, a write that
// races the open is buffered instead of failing, and the writer sees EPIPE
// on its next write. Named FIFOs are refused: there the first reader to open
// releases a writer blocked opening the FIFO, which would then die of
// SIGPIPE once this reader closed.
//
// The descriptor is opened first with O_PATH, which reaches no driver, and
// checked to be a pipe; the pipe is then reopened through that O_PATH
// descriptor, so a descriptor closed and reused meanwhile (for a terminal,
// a tape) is never opened for reading.
func ReadPipeFill(fs FS, pid, fd int) (model.PipeFill, error) {
	path := fs.pidPath(pid, "fd", strconv.Itoa(fd))
	ofd, err := openFlags(unix.AT_FDCWD, path, unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		return model.PipeFill{}, fdErr(fs, pid, "opening", path, err)
	}
	defer unix.Close(ofd)
	self := "/proc/self/fd/" + strconv.Itoa(ofd)
	var st unix.Stat_t
	if err := unix.Fstat(ofd, &st); err != nil {
		return model.PipeFill{}, fmt.Errorf("stat %s: %w", path, err)
	}
	link, err := readMagicLink(self)
	if err != nil {
		return model.PipeFill{}, fmt.Errorf("reading link %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO || !strings.HasPrefix(link, "pipe:[") {
		return model.PipeFill{}, fmt.Errorf("%s is %s: %w", path, link, ErrNotPipe)
	}
	p, err := openFlags(unix.AT_FDCWD, self, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return model.PipeFill{}, classifyErr("opening", path, err)
	}
	defer unix.Close(p)
	// TIOCINQ is FIONREAD's name in x/sys/unix, with each architecture's value.
	queued, err := unix.IoctlGetInt(p, unix.TIOCINQ)
	if err != nil {
		return model.PipeFill{}, fmt.Errorf("FIONREAD on %s: %w", path, err)
	}
	capacity, err := unix.FcntlInt(uintptr(p), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		return model.PipeFill{}, fmt.Errorf("F_GETPIPE_SZ on %s: %w", path, err)
	}
	return model.PipeFill{Queued: queued, Capacity: capacity}, nil
}

func openFlags(dir int, path string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dir, path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readMagicLink reads a /proc magic link; pipe and socket names are short.
func readMagicLink(path string) (string, error) {
	var buf [256]byte
	n, err := unix.Readlink(path, buf[:])
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
