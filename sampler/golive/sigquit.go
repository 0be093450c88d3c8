package golive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/goroutines"
)

// Polling intervals of SigquitDump: for the exit where pidfds are missing,
// and for the log to stop growing once the process is gone.
const (
	pollEvery = 20 * time.Millisecond
	settleFor = 100 * time.Millisecond
	settleMax = 2 * time.Second
)

// SigquitDump sends pid SIGQUIT and reads back the goroutine dump its Go
// runtime writes to stderr before exiting. This KILLS the target: callers
// do it only when the user asked.
//
// The dump is read from logPath, the file the target's stderr ends up in,
// or, when logPath is "", from the target's fd 2 if that is a regular file.
// Only what is written after the signal is read. SigquitDump waits, within
// ctx, for the process to exit and the file to stop growing; a process
// still alive when ctx ends (one that catches SIGQUIT) gives an error
// unless a whole dump is already there.
func SigquitDump(ctx context.Context, fsys sampler.FS, pid int, logPath string) ([]model.Goroutine, error) {
	f, where, err := sampler.OpenOutput(fsys, pid, 2, logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", where, err)
	}
	start := st.Size()

	pidfd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		defer unix.Close(pidfd)
		err = unix.PidfdSendSignal(pidfd, unix.SIGQUIT, nil, 0)
	case errors.Is(err, unix.ENOSYS):
		pidfd = -1 // Linux before 5.3
		err = unix.Kill(pid, unix.SIGQUIT)
	}
	if err != nil {
		return nil, fmt.Errorf("sending SIGQUIT to pid %d: %w", pid, signalErr(err))
	}

	exited := waitExit(ctx, fsys, pid, pidfd)
	if exited {
		settle(ctx, f)
	}
	st, err = f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", where, err)
	}
	if st.Size() < start {
		start = 0 // truncated or rotated since: the dump is somewhere in what is there
	}
	gs, complete, err := parseDump(io.NewSectionReader(f, start, st.Size()-start))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading the SIGQUIT dump of pid %d from %s: %w", pid, where, err)
	case !exited && !complete:
		return nil, fmt.Errorf("pid %d is still alive after SIGQUIT (%v) and wrote no whole goroutine dump to %s: it may catch SIGQUIT (signal.Notify); take a dump another way", pid, ctx.Err(), where)
	case gs == nil:
		return nil, fmt.Errorf("pid %d exited after SIGQUIT but wrote no goroutine dump to %s: is it a Go program, and does its stderr end up in that file?", pid, where)
	}
	return gs, nil
}

// waitExit waits, within ctx, for pid to exit (become a zombie or vanish)
// and reports whether it did.
func waitExit(ctx context.Context, fsys sampler.FS, pid, pidfd int) bool {
	for {
		if pidfd >= 0 {
			pfd := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
			n, err := unix.Poll(pfd, int(pollEvery/time.Millisecond))
			if err == nil && n > 0 {
				return true
			}
			if err != nil && err != unix.EINTR {
				pidfd = -1 // fall back to /proc
			}
		} else {
			if gone(fsys, pid) {
				return true
			}
			select {
			case <-ctx.Done():
			case <-time.After(pollEvery):
			}
		}
		if ctx.Err() != nil {
			return false
		}
	}
}

// gone reports whether pid has exited: its /proc/PID/stat is gone or says
// zombie.
func gone(fsys sampler.FS, pid int) bool {
	b, err := os.ReadFile(fsys.Path(strconv.Itoa(pid), "stat"))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
	}
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// settle waits until f has not grown for settleFor (at most settleMax, and
// within ctx): the runtime's writes are done once the process is gone, but
// a shared log may still be taking writes another process queued.
func settle(ctx context.Context, f *os.File) {
	deadline := time.Now().Add(settleMax)
	last, stable := int64(-1), time.Duration(0)
	for stable < settleFor && time.Now().Before(deadline) {
		st, err := f.Stat()
		if err != nil {
			return
		}
		if st.Size() == last {
			stable += pollEvery
		} else {
			last, stable = st.Size(), 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pollEvery):
		}
	}
}

// parseDump parses what the log gained and returns the goroutines of its
// last SIGQUIT dump, or failing that of its last dump with any; complete
// says that dump was not cut short.
func parseDump(r io.Reader) (gs []model.Goroutine, complete bool, err error) {
	var per [][]model.Goroutine
	dumps, err := goroutines.ParseFunc(r, func(i int, g goroutines.Goroutine) {
		for len(per) <= i {
			per = append(per, nil)
		}
		if g.ID != 0 {
			per[i] = append(per[i], g.Sample())
		}
	})
	if errors.Is(err, goroutines.ErrNoDump) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	pick := -1
	for i, d := range dumps {
		if i < len(per) && len(per[i]) > 0 && (pick < 0 || d.Producer == goroutines.ProducerSIGQUIT || dumps[pick].Producer != goroutines.ProducerSIGQUIT) {
			pick = i
		}
	}
	if pick < 0 {
		return nil, false, nil
	}
	return per[pick], !dumps[pick].Truncated && dumps[pick].Producer == goroutines.ProducerSIGQUIT, nil
}

func signalErr(err error) error {
	switch {
	case errors.Is(err, unix.ESRCH):
		return sampler.ErrNoProcess
	case errors.Is(err, unix.EPERM):
		return sampler.ErrPermission
	}
	return err
}
