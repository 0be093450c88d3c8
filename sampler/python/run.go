package python

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/internal/dstate"
	"github.com/hangdoc/hangdoc/internal/helper"
	"github.com/hangdoc/hangdoc/internal/reaper"
	"github.com/hangdoc/hangdoc/sampler"
)

// Options for one dump.
type Options struct {
	PySpy string // path from --py-spy; "" = look up "py-spy" on PATH
	// Timeout bounds the dump on top of the caller's context, whose
	// deadline is the dump's budget: 0 is that deadline alone (or
	// DefaultTimeout when the context has none).
	Timeout     time.Duration
	NonBlocking bool // --no-stop: pass --nonblocking (py-spy then does not pause the target)
	// Locals passes --locals: the frames' variables tell one lock from
	// another by its address (only objects' addresses are kept).
	Locals bool
}

// DefaultTimeout bounds a dump whose context has no deadline and whose
// Options.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// Sentinel errors, checked with errors.Is. The errors that wrap them say
// what to do. Permission and a vanished process are the sampler's own
// sentinels, so one errors.Is check answers for /proc and py-spy alike.
var (
	ErrNotFound   = errors.New("py-spy not found")
	ErrPermission = sampler.ErrPermission
	ErrNotPython  = errors.New("not a python process")
	ErrNoProcess  = sampler.ErrNoProcess
	ErrTimeout    = errors.New("py-spy did not finish in time")
	// ErrUninterruptible: a thread of the target is in uninterruptible
	// sleep (D), so a pausing dump was not started: py-spy would wait for
	// that thread with the others stopped, until killed. A --nonblocking
	// dump does not pause it.
	ErrUninterruptible = dstate.ErrUninterruptible
)

const (
	installHint    = "install it with `pip install py-spy`"
	permissionHint = "run hangdoc as root or with CAP_SYS_PTRACE (in a container: --cap-add SYS_PTRACE)"

	// maxDumpBytes bounds a dump held in memory; real dumps are kilobytes.
	maxDumpBytes = 64 << 20
	// maxStderrBytes is how much of py-spy's stderr is kept (the end of it).
	maxStderrBytes = 64 << 10
	// killGrace is how long RunPySpy waits, after SIGKILL, for py-spy to die
	// and its pipes to close before giving up on them.
	killGrace = time.Second
)

// budget gives the dump its context: the caller's, bounded by
// Options.Timeout when set, or by DefaultTimeout when the caller set no
// deadline. own is the bound hangdoc set itself (0 when the caller's
// deadline is the one that counts).
func (o Options) budget(ctx context.Context) (_ context.Context, cancel context.CancelFunc, own time.Duration) {
	timeout := o.Timeout
	if timeout <= 0 {
		if _, ok := ctx.Deadline(); ok {
			ctx, cancel = context.WithCancel(ctx)
			return ctx, cancel, 0
		}
		timeout = DefaultTimeout
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		ctx, cancel = context.WithCancel(ctx)
		return ctx, cancel, 0
	}
	ctx, cancel = context.WithTimeoutCause(ctx, timeout, errDeadline)
	return ctx, cancel, timeout
}

// Find resolves the py-spy binary: opts.PySpy if set (must exist and be
// executable), else PATH. The path it returns is absolute unless PATH
// holds a relative directory.
func Find(opts Options) (string, error) {
	if opts.PySpy == "" {
		p, err := exec.LookPath("py-spy")
		if err != nil {
			return "", fmt.Errorf("%w on PATH: %s, or give its path with --py-spy", ErrNotFound, installHint)
		}
		// pyenv's or asdf's shim: run the binary it would run.
		return helper.Resolve(p), nil
	}
	// Absolute, so that exec does not search PATH for a bare name.
	p, err := filepath.Abs(opts.PySpy)
	if err != nil {
		return "", fmt.Errorf("resolving --py-spy %s: %w", opts.PySpy, err)
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w at %s (--py-spy): %s, or fix the path", ErrNotFound, opts.PySpy, installHint)
	case err != nil:
		return "", fmt.Errorf("checking --py-spy %s: %w", opts.PySpy, err)
	case fi.IsDir():
		return "", fmt.Errorf("--py-spy %s is a directory, not the py-spy binary", opts.PySpy)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("--py-spy %s is not executable (mode %v): chmod +x it", opts.PySpy, fi.Mode().Perm())
	}
	return helper.Resolve(p), nil
}

// errDeadline is the cause of RunPySpy's own timeout, told apart from the
// caller's context ending.
var errDeadline = errors.New("py-spy timeout")

// RunPySpy runs `py-spy dump --pid PID --json` (and, if py-spy rejects --json,
// the text dump) and returns its stdout and which format it is ("json" or
// "text").
//
// hangdoc must not fall into the hang it diagnoses, so py-spy runs with
// stdin from /dev/null, in its own process group, and with SIGKILL as its
// parent-death signal, and the whole run (finding py-spy, starting it,
// both attempts) is bounded by ctx's deadline (and Options.Timeout): when
// py-spy is done, or when the time is up, the whole group is killed and
// py-spy reaped; RunPySpy returns within about a second of that even if
// something outside the group holds py-spy's stdout open (and at once if
// this process is a child subreaper, internal/reaper: it kills that
// holder). A pausing dump is not started on a target with a thread in
// uninterruptible sleep (ErrUninterruptible).
func RunPySpy(ctx context.Context, pid int, opts Options) (out []byte, format string, err error) {
	if pid <= 0 {
		return nil, "", fmt.Errorf("py-spy dump: bad pid %d", pid)
	}
	ctx, cancel, own := opts.budget(ctx)
	defer cancel()
	// Stat-ing --py-spy, or the PATH, blocks on a hung filesystem.
	bin, err := deadline.Run(ctx, "looking for py-spy", func() (string, error) { return Find(opts) })
	if err != nil {
		if errors.Is(err, deadline.ErrAbandoned) {
			if own > 0 && errors.Is(context.Cause(ctx), errDeadline) {
				return nil, "", fmt.Errorf("py-spy dump --pid %d: %w: %w", pid, ErrTimeout, err)
			}
			return nil, "", fmt.Errorf("py-spy dump --pid %d: %w", pid, err)
		}
		return nil, "", err
	}
	if !opts.NonBlocking {
		if err := dstate.Check(pid); err != nil {
			return nil, "", fmt.Errorf("py-spy dump --pid %d: not started: %w: py-spy's pause would wait for it with the other threads stopped (a --no-stop dump does not pause)", pid, err)
		}
	}

	args := []string{"dump", "--pid", strconv.Itoa(pid)}
	if opts.NonBlocking {
		args = append(args, "--nonblocking")
	}
	if opts.Locals {
		args = append(args, "--locals")
	}
	format = "json"
	r, err := runInGroup(ctx, bin, append(args[:len(args):len(args)], "--json"))
	if err == nil && rejectsJSON(r) {
		format = "text"
		r, err = runInGroup(ctx, bin, args)
	}
	if err != nil {
		return nil, "", stopErrorOf(pid, own, err)
	}
	if r.exitErr != nil {
		return nil, "", exitErrorOf(pid, r)
	}
	return r.stdout, format, nil
}

// runResult is what one py-spy run left behind.
type runResult struct {
	stdout  []byte
	stderr  []byte // the last maxStderrBytes bytes
	exitErr error  // from exec.Cmd.Wait: nil, or an *exec.ExitError
}

// errTooMuch stops a run whose stdout went over maxDumpBytes.
var errTooMuch = fmt.Errorf("py-spy wrote more than %d MiB to stdout: the output was cut there and dropped", maxDumpBytes>>20)

// stoppedRun is a run that RunPySpy killed before it finished: why is the
// context's cause or errTooMuch. unstarted is py-spy's path when its exec
// had not returned.
type stoppedRun struct {
	why       error
	unstarted string
}

func (s *stoppedRun) Error() string { return s.why.Error() }
func (s *stoppedRun) Unwrap() error { return s.why }

// runInGroup runs bin with args, in its own process group, until it exits or
// ctx ends, then kills the group and reaps it. Its error is non-nil only if
// the run could not start or was stopped (*stoppedRun); an exit status is
// in runResult.exitErr.
func runInGroup(ctx context.Context, bin string, args []string) (*runResult, error) {
	if ctx.Err() != nil {
		return nil, &stoppedRun{why: context.Cause(ctx)}
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer func() {
		if devnull != nil {
			devnull.Close()
		}
	}()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return nil, err
	}
	defer errR.Close()

	cmd := exec.Command(bin, args...)
	// Without a backtrace, py-spy's stderr is its one-line error.
	cmd.Env = append(os.Environ(), "RUST_BACKTRACE=0")
	// Files, not writers: exec then starts no copying goroutines that
	// Wait would block on while anything holds the pipes open.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, outW, errW
	// Start waits for the exec to succeed, which blocks while py-spy's
	// executable is on a hung filesystem: give up on it with the budget,
	// and kill and reap it if it ever starts.
	started := make(chan error, 1)
	go func() {
		// In its own group (the group id is py-spy's pid), SIGKILLed
		// when hangdoc dies, started from a locked thread (helper.Start).
		started <- helper.Start(cmd)
		outW.Close()
		errW.Close()
	}()
	select {
	case err = <-started:
	case <-ctx.Done():
		giveUp := context.Cause(ctx)
		dn := devnull
		go func() {
			if <-started == nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				_ = cmd.Wait()
			}
			dn.Close()
		}()
		devnull = nil // closed by the goroutine above, once Start is done with it
		return nil, &stoppedRun{why: giveUp, unstarted: bin}
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	pgid := cmd.Process.Pid

	var (
		stdout   headBuffer
		stderr   tailBuffer
		overflow = make(chan struct{})
		once     sync.Once
	)
	outDone := drain(outR, func(p []byte) {
		if !stdout.write(p, maxDumpBytes) {
			once.Do(func() { close(overflow) })
		}
	})
	errDone := drain(errR, func(p []byte) { stderr.write(p, maxStderrBytes) })

	// Wait for py-spy to exit without reaping it: while it is a zombie
	// its pid, and so its group id, cannot be reused, and killing the
	// group cannot hit another process.
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pgid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
	}()

	var stop error
	select {
	case <-exited:
	case <-ctx.Done():
		select {
		case <-exited: // it finished as the time ran out: keep its dump
		default:
			stop = context.Cause(ctx)
		}
	case <-overflow:
		stop = errTooMuch
	}
	// Always, even after a clean exit: nothing py-spy started may
	// outlive it, nor keep its pipes open.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)

	grace := time.NewTimer(killGrace)
	defer grace.Stop()
	select {
	case <-exited:
	case <-grace.C:
		// SIGKILL has not taken yet (py-spy stuck in the kernel). Reap
		// it when it dies, rather than hang with it.
		go func() {
			<-exited
			_ = cmd.Wait()
		}()
		if stop == nil {
			stop = errors.New("py-spy did not exit")
		}
		return nil, &stoppedRun{why: fmt.Errorf("%w; it did not die within %v of SIGKILL", stop, killGrace)}
	}
	waitErr := cmd.Wait()

	// The group is dead, so the pipes are closed unless a process that
	// left the group holds them. A subreaper has that process as its
	// child now (its parent died): kill it. Otherwise give it the rest of
	// the grace.
	pipes := bothDone(outDone, errDone)
	if reaper.Active() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
	waitPipes:
		for {
			select {
			case <-pipes:
				break waitPipes
			case <-grace.C:
				outR.Close()
				errR.Close()
				<-pipes
				break waitPipes
			default:
			}
			reaper.KillAdopted()
			select {
			case <-pipes:
				break waitPipes
			case <-tick.C:
			case <-grace.C:
				outR.Close()
				errR.Close()
				<-pipes
				break waitPipes
			}
		}
	} else {
		select {
		case <-pipes:
		case <-grace.C:
			outR.Close()
			errR.Close()
			<-pipes
		}
	}
	if stop == nil && stdout.over {
		stop = errTooMuch
	}
	if stop != nil {
		return nil, &stoppedRun{why: stop}
	}
	return &runResult{stdout: stdout.bytes(), stderr: stderr.bytes(maxStderrBytes), exitErr: waitErr}, nil
}

// drain reads r to its end (or until it is closed) into write, and closes
// the returned channel when done.
func drain(r *os.File, write func([]byte)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	return done
}

func bothDone(a, b <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		<-a
		<-b
		close(done)
	}()
	return done
}

// headBuffer keeps what is written to it, up to max bytes, in chunks:
// growing one slice by doubling would hold half again as much while it
// copies, and the dump is joined once, at the end, only if it fit.
type headBuffer struct {
	chunks [][]byte
	n      int
	over   bool
}

const chunkSize = 1 << 20

// write appends p and reports whether everything so far fit in max. Past
// max it drops what it held: a cut dump is not parsed.
func (h *headBuffer) write(p []byte, max int) bool {
	if h.over {
		return false
	}
	if h.n+len(p) > max {
		h.over, h.chunks, h.n = true, nil, 0
		return false
	}
	h.n += len(p)
	for len(p) > 0 {
		if len(h.chunks) == 0 || len(h.chunks[len(h.chunks)-1]) == cap(h.chunks[len(h.chunks)-1]) {
			h.chunks = append(h.chunks, make([]byte, 0, min(chunkSize, max)))
		}
		last := &h.chunks[len(h.chunks)-1]
		k := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	return true
}

// bytes joins what was written.
func (h *headBuffer) bytes() []byte {
	if len(h.chunks) == 1 {
		return h.chunks[0]
	}
	out := make([]byte, 0, h.n)
	for _, c := range h.chunks {
		out = append(out, c...)
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) write(p []byte, max int) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*max {
		t.b = append(t.b[:0], t.b[len(t.b)-max:]...)
	}
}

func (t *tailBuffer) bytes(max int) []byte {
	if len(t.b) > max {
		return t.b[len(t.b)-max:]
	}
	return t.b
}

// rejectsJSON reports whether py-spy failed on its --json flag (a py-spy
// from before it had one): clap exits with status 2 and names the flag,
// as "unexpected argument '--json' found" or, in older versions, "Found
// argument '--json' which wasn't expected".
func rejectsJSON(r *runResult) bool {
	var ee *exec.ExitError
	return errors.As(r.exitErr, &ee) && ee.ExitCode() == 2 && bytes.Contains(r.stderr, []byte("--json"))
}

// stopErrorOf explains a run that RunPySpy killed. own is the bound
// RunPySpy set itself (0: the caller's deadline was the bound).
func stopErrorOf(pid int, own time.Duration, err error) error {
	var s *stoppedRun
	if !errors.As(err, &s) {
		return fmt.Errorf("py-spy dump --pid %d: %w", pid, err)
	}
	if s.unstarted != "" {
		return fmt.Errorf("py-spy dump --pid %d: starting %s did not return (%w): is it on a hung filesystem? gave up; it is killed if it ever starts", pid, s.unstarted, s.why)
	}
	if errors.Is(s.why, errDeadline) {
		return &timeoutError{pid: pid, timeout: own}
	}
	return fmt.Errorf("py-spy dump --pid %d: %w: killed py-spy and its process group", pid, s.why)
}

// timeoutError is ErrTimeout with the dump and the limit in its message.
type timeoutError struct {
	pid     int
	timeout time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("py-spy dump --pid %d: py-spy did not finish within %v: killed it and its process group", e.pid, e.timeout)
}

func (e *timeoutError) Unwrap() error { return ErrTimeout }

// exitErrorOf explains a py-spy that exited with an error, from its stderr.
func exitErrorOf(pid int, r *runResult) error {
	stderr := strings.ToLower(string(r.stderr))
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(stderr, s) {
				return true
			}
		}
		return false
	}
	prefix := "py-spy dump --pid " + strconv.Itoa(pid)
	switch {
	case pidGone(pid):
		// Whatever py-spy tripped over, the process is not there now.
		return fmt.Errorf("%s: %w: the process exited", prefix, ErrNoProcess)
	case has("permission denied", "operation not permitted"):
		return fmt.Errorf("%s: %w: %s", prefix, ErrPermission, permissionHint)
	case has("failed to find python version", "failed to find a python interpreter"):
		return fmt.Errorf("%s: %w, or py-spy does not recognise its interpreter", prefix, ErrNotPython)
	case has("no such file or directory", "failed to open process", "no such process", "check that the process is running"):
		return fmt.Errorf("%s: %w: the process exited", prefix, ErrNoProcess)
	}
	if msg := pyspyErrorLine(r.stderr); msg != "" {
		return fmt.Errorf("%s: %v: %s", prefix, r.exitErr, msg)
	}
	return fmt.Errorf("%s: %v (no message on stderr)", prefix, r.exitErr)
}

// pidGone reports whether pid certainly does not exist.
func pidGone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// pyspyErrorLine returns py-spy's error line: the first line starting with
// "Error:" (without it), else the first non-blank line, at most 300 bytes.
func pyspyErrorLine(stderr []byte) string {
	var first string
	for line := range strings.Lines(string(stderr)) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if msg, ok := strings.CutPrefix(line, "Error:"); ok {
			first = strings.TrimSpace(msg)
			break
		}
		if first == "" {
			first = line
		}
	}
	if len(first) > 300 {
		first = first[:300] + "..."
	}
	return first
}
