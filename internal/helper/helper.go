// Package helper starts the processes hangdoc runs to help it — py-spy,
// a version manager's `which` — so that none of them outlives hangdoc,
// however hangdoc ends (SIGKILL included): each runs in its own process
// group (killed as a group), with stdin from /dev/null, and with a
// parent-death signal, SIGKILL, that the kernel sends it when hangdoc's
// thread that started it exits. A helper reached through a version
// manager's shim (a script that runs the real binary) is run as the real
// binary (Resolve): the shim's own children get no parent-death signal.
package helper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Prepare sets what every helper runs with: its own process group (its
// group id is its pid) and SIGKILL when its parent dies. A nil Stdin is
// /dev/null already (os/exec).
func Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// Start prepares cmd and starts it from a goroutine locked to its OS
// thread until the helper exits.
//
// The parent-death signal is sent when the *thread* that forked the
// helper exits, not the process. Go keeps its threads for the life of
// the process with one exception: a goroutine that exits while locked to
// its thread takes the thread with it. A helper started from an ordinary
// goroutine could so be forked by a thread that another, locked goroutine
// later ends, and die of its parent-death signal with hangdoc still
// running. Locked here, the starting thread runs nothing else and stays
// in waitid until the helper has exited; then it is let go.
func Start(cmd *exec.Cmd) error {
	Prepare(cmd)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		errc <- err
		if err == nil {
			// Wait without reaping: the caller reaps (cmd.Wait). If it
			// already has, waitid fails at once (ECHILD).
			var info unix.Siginfo
			for unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
			}
		}
		runtime.UnlockOSThread()
	}()
	return <-errc
}

// KillGroup kills a started helper's process group.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// maxOutput bounds what Output keeps of a helper's stdout.
const maxOutput = 64 << 10

// ErrTimeout: the helper did not finish in time, and was killed.
var ErrTimeout = errors.New("helper did not finish in time")

// Output runs a helper to its end, within timeout (and ctx), and returns
// the start of its stdout. Its group is killed when it exits (nothing it
// started may outlive it) or when the time is up, before it is reaped, so
// that the group id is still its own.
func Output(ctx context.Context, timeout time.Duration, name string, args ...string) ([]byte, error) {
	return outputWith(ctx, timeout, nil, name, args...)
}

// outputWith is Output with an environment (nil: hangdoc's).
func outputWith(ctx context.Context, timeout time.Duration, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	return Run(ctx, timeout, cmd, maxOutput)
}

// Run runs cmd, made by the caller with what it needs (a directory,
// credentials, an environment) but not started, as a helper to its end,
// within timeout (and ctx), and returns the first max bytes of its
// stdout; more is an error. A failure's error ends with the last line it
// wrote to stderr (the first 4 KiB are kept).
func Run(ctx context.Context, timeout time.Duration, cmd *exec.Cmd, max int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out, errb bytes.Buffer
	lout := &limited{b: &out, n: max}
	cmd.Stdout = lout
	if cmd.Stderr == nil {
		cmd.Stderr = &limited{b: &errb, n: 4 << 10}
	}
	// A process that left the group may hold stdout open: Wait gives up
	// on it this long after the helper exits.
	cmd.WaitDelay = time.Second
	if err := Start(cmd); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
	}()
	select {
	case <-exited:
		KillGroup(cmd)
		err := cmd.Wait()
		if err != nil {
			if last := lastLine(errb.Bytes()); last != "" {
				err = fmt.Errorf("%w: %s", err, last)
			}
		} else if lout.over {
			err = fmt.Errorf("%s wrote more than %d bytes", filepath.Base(cmd.Path), max)
		}
		return out.Bytes(), err
	case <-ctx.Done():
		KillGroup(cmd)
		// Reaped when it dies: SIGKILL may not take at once (a helper
		// stuck in the kernel).
		go func() { _ = cmd.Wait() }()
		return nil, ErrTimeout
	}
}

// limited keeps the first n bytes written and drops the rest.
type limited struct {
	b    *bytes.Buffer
	n    int
	over bool // more than n bytes were written
}

func (l *limited) Write(p []byte) (int, error) {
	room := l.n - l.b.Len()
	if room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	l.over = l.over || len(p) > room
	return len(p), nil
}

// lastLine is the last non-blank line of b.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
