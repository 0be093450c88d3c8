package delve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/model"

	"github.com/go-delve/delve/pkg/proc"
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/internal/dstate"
	"github.com/hangdoc/hangdoc/sampler"
)

// Options bound what one stop of the target may cost it and hangdoc.
type Options struct {
	// MaxStop bounds how long one Dump keeps the target stopped: a read
	// that would pass it is given up and the target let go. 0 is
	// DefaultMaxStop.
	MaxStop time.Duration
	// MaxGoroutines bounds how many goroutines one Dump reads, the first
	// ones of the runtime's list (oldest first); the Result says how many
	// there were. 0 is DefaultMaxGoroutines; negative is no bound.
	MaxGoroutines int
}

const (
	// DefaultMaxStop: a target that serves requests notices a 2 s stall
	// but survives it; most reads take milliseconds (BenchmarkSessionFreeze:
	// 15 ms at 20 goroutines, 0.86 s at 10,000; about 17,000 goroutines
	// fit in 2 s on this project's machine).
	DefaultMaxStop = 2 * time.Second
	// DefaultMaxGoroutines keeps hangdoc's memory bounded whatever the
	// target and however long a stop is allowed: a whole read of 100,000
	// goroutines peaked at 151 MiB (BenchmarkDumpRSS), so 200,000 stay
	// under 512 MiB.
	DefaultMaxGoroutines = 200000
)

// defaultMaxStop is DefaultMaxStop; the package's tests raise it, since
// under the race detector a read takes ten times as long.
var defaultMaxStop = DefaultMaxStop

func (o Options) maxStop() time.Duration {
	if o.MaxStop <= 0 {
		return defaultMaxStop
	}
	return o.MaxStop
}

func (o Options) maxGoroutines() int {
	switch {
	case o.MaxGoroutines == 0:
		return DefaultMaxGoroutines
	case o.MaxGoroutines < 0:
		return int(^uint(0) >> 1)
	}
	return o.MaxGoroutines
}

// Result is one Dump.
type Result struct {
	Goroutines []model.Goroutine
	// Frozen is how long the target was stopped, from the first thread's
	// interrupt to the last thread's detach.
	Frozen time.Duration
	// Total is how many live goroutines the target had (0 when its list
	// could not be read); Goroutines may hold fewer: see Cut.
	Total int
	// Cut says the bound on goroutines per dump left Goroutines the
	// first of Total (a stop bound cut short is ErrMaxStop).
	Cut bool
}

// ErrMaxStop: a Dump gave up at Options.MaxStop and let the target go.
var ErrMaxStop = errors.New("stop bound reached")

// ErrUninterruptible: a thread of the target is in uninterruptible sleep
// (state D), so it was not stopped; the error is a *dstate.Error naming
// the thread and its wchan.
var ErrUninterruptible = dstate.ErrUninterruptible

// MaxStopError is a Dump given up at its stop bound.
type MaxStopError struct {
	PID   int
	Bound time.Duration
	// Read of Total goroutines were read before the bound (Total 0:
	// the stop itself did not complete).
	Read, Total int
}

func (e *MaxStopError) Error() string {
	if e.Total == 0 && e.Read == 0 {
		return fmt.Sprintf("pid %d: not every thread stopped within the %v stop bound (--max-stop): gave up, the target was let go", e.PID, e.Bound)
	}
	return fmt.Sprintf("pid %d: read %d of %d goroutines within the %v stop bound (--max-stop): gave up, the target was let go; raise --max-stop to read them all",
		e.PID, e.Read, e.Total, e.Bound)
}

func (e *MaxStopError) Is(target error) bool { return target == ErrMaxStop }

// Session reads one target's goroutines, one stop per Dump. Open loads
// the binary's DWARF with the target running; each Dump stops it only to
// read. A Session holds no process resources (no tracer between Dumps,
// no file descriptor): dropping it is enough, Close only says so.
type Session struct {
	pid  int
	opts Options
	p    *process
	t    *proc.Target
	lay  layout
	// strings read once from the target (they do not change).
	waitReasons, statuses []string
	system                map[uint64]bool
	// broken is set when a Dump gave up on a read that did not return:
	// its goroutine may still be using t.
	broken error
}

// Open checks that pid is a Go program Delve can read and loads its
// binary's debug information, without stopping it. The executable is read
// through /proc/PID/exe, which blocks on a hung filesystem: Open gives up
// when ctx ends (the reading goroutine is left behind, see
// internal/deadline).
func Open(ctx context.Context, pid int, opts Options) (*Session, error) {
	quiet()
	return deadline.Run(ctx, fmt.Sprintf("reading pid %d's executable (/proc/%d/exe)", pid, pid), func() (*Session, error) {
		return open(ctx, pid, opts)
	})
}

func open(ctx context.Context, pid int, opts Options) (*Session, error) {
	if err := check(pid); err != nil {
		return nil, err
	}
	p := newProcess(pid)
	entry, err := entryPoint(pid)
	if err != nil {
		return nil, fileErr(pid, err)
	}
	p.entry = entry
	_, addTarget := proc.NewGroup(group{}, proc.NewTargetGroupConfig{StopReason: proc.StopAttached})
	t, err := addTarget(p, pid, p.main, fmt.Sprintf("/proc/%d/exe", pid), proc.StopAttached, "")
	if err != nil {
		return nil, attachErr(pid, err)
	}
	if n := len(t.Breakpoints().M); n != 0 {
		// WriteBreakpoint refuses every one: none can be in the target.
		return nil, fmt.Errorf("pid %d: internal error: Delve holds %d breakpoints", pid, n)
	}
	p.iscgo = t.IsCgo()
	hook(ctx, "opened", pid)
	return &Session{pid: pid, opts: opts, p: p, t: t, lay: layoutOf(t.BinInfo()), statuses: statusWords, system: map[uint64]bool{}}, nil
}

// Close ends the session. It never touches the target.
func (s *Session) Close() error {
	s.t, s.p = nil, nil
	if s.broken == nil {
		s.broken = errors.New("session closed")
	}
	return nil
}

// readSlack is how long past the stop bound a read may take to notice
// the bound before Dump stops waiting for it: it checks between
// goroutines, and one goroutine takes well under a millisecond, so a
// read a second late is blocked (a memory read stuck in the kernel).
const readSlack = time.Second

// Dump stops the target, reads its goroutines and lets it go. It does not
// stop a target with a thread in uninterruptible sleep (ErrUninterruptible),
// and gives up a stop that would pass Options.MaxStop (ErrMaxStop: the
// Result then holds what was read). On every path, the target is left as
// it would be without hangdoc: running, or stopped if someone else stopped
// it; nothing was written to it and no signal sent.
func (s *Session) Dump(ctx context.Context) (Result, error) {
	if s.broken != nil {
		return Result{}, fmt.Errorf("reading goroutines of pid %d: %w", s.pid, s.broken)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("reading goroutines of pid %d: %w", s.pid, err)
	}
	if err := dstate.Check(s.pid); err != nil && !hooks.skipDCheck {
		return Result{}, fmt.Errorf("not stopping pid %d: %w: it would stop only when that thread wakes, which on a hung filesystem may be never", s.pid, err)
	}
	bound := s.opts.maxStop()
	// The stop ends at the bound or the caller's deadline; the read
	// checks it against clock (which tests replace), the stop and the
	// wait for a stuck read against real time.
	realUntil := time.Now().Add(bound)
	if d, ok := ctx.Deadline(); ok && d.Before(realUntil) {
		realUntil = d
	}
	until := clock().Add(time.Until(realUntil))

	tr := newTracer()
	inflight.Add(1)
	defer func() {
		// Every stopped thread is detached by now; the thread's exit
		// lets go of any seized but not stopped (one in D, or one the
		// stop was given up before it reached). Wait for it: when Dump
		// returns the target is wholly let go.
		if tr.exitWait(time.Second) {
			inflight.Done()
			return
		}
		go func() {
			<-tr.done
			inflight.Done()
		}()
	}()

	st := &stopper{pid: s.pid, deadline: realUntil, seized: map[int]bool{}, cancelled: func() bool { return ctx.Err() != nil }}
	st.onSeized = func() {
		hook(ctx, "seized", s.pid)
		if hooks.seized != nil {
			hooks.seized()
		}
	}
	var (
		threads []stoppedThread
		stopErr error
		start   time.Time
	)
	if err := tr.do(func() {
		start = time.Now()
		stopErr = st.stopAll()
		if stopErr == nil {
			threads, stopErr = readRegisters(st.stopped, s.p.iscgo)
		}
		if stopErr != nil {
			_ = detachAll(st.stopped, st.held)
		}
	}); err != nil {
		return Result{}, err
	}
	if stopErr != nil {
		return Result{Frozen: time.Since(start)}, s.stopErr(stopErr, bound, ctx)
	}
	hook(ctx, "stopped", s.pid)
	if hooks.stopped != nil {
		hooks.stopped()
	}

	s.p.setStopped(threads)
	s.t.ClearCaches()
	if _, ok := s.p.threads[s.p.main.tid]; !ok {
		_ = s.t.SwitchThread(threads[0].tid)
	} else {
		_ = s.t.SwitchThread(s.p.main.tid)
	}

	// The read gets the test points as values: a read given up goes on
	// running, and must not race a test resetting them.
	now, each := clock, testHook
	type readResult struct {
		res      Result
		err      error
		panicked any
	}
	done := make(chan readResult, 1)
	go func() {
		var rr readResult
		defer func() {
			if r := recover(); r != nil {
				rr.panicked = r
			}
			done <- rr
		}()
		rr.res, rr.err = s.read(ctx, until, now, each)
	}()
	var rr readResult
	slack := time.NewTimer(time.Until(realUntil) + readSlack)
	defer slack.Stop()
	select {
	case rr = <-done:
	case <-slack.C:
		_ = tr.do(func() { _ = detachAll(st.stopped, st.held) })
		frozen := time.Since(start)
		s.broken = fmt.Errorf("an earlier read of its memory did not return")
		return Result{Frozen: frozen}, fmt.Errorf("reading goroutines of pid %d: a read of its memory did not return within the %v stop bound: %w; the target was let go", s.pid, bound, ErrMaxStop)
	}
	hook(ctx, "read", s.pid)
	if hooks.beforeDetach != nil {
		hooks.beforeDetach()
	}
	var derr error
	if err := tr.do(func() { derr = detachAll(st.stopped, st.held) }); err != nil {
		derr = err
	}
	rr.res.Frozen = time.Since(start)
	s.p.setStopped(nil)
	s.t.ClearCaches()
	hook(ctx, "detached", s.pid)

	if rr.panicked != nil {
		panic(rr.panicked)
	}
	if derr != nil {
		// The tracer thread's exit (deferred) detaches what this missed.
		return Result{Frozen: rr.res.Frozen}, fmt.Errorf("detaching from pid %d: %v", s.pid, derr)
	}
	if rr.err != nil {
		var ms *MaxStopError
		if errors.As(rr.err, &ms) {
			ms.Bound = bound
			return rr.res, rr.err
		}
		return Result{Frozen: rr.res.Frozen}, fmt.Errorf("reading goroutines of pid %d: %w", s.pid, rr.err)
	}
	return rr.res, nil
}

// stopErr explains a stop that did not complete.
func (s *Session) stopErr(err error, bound time.Duration, ctx context.Context) error {
	var d *dstate.Error
	switch {
	case errors.As(err, &d):
		return fmt.Errorf("stopping pid %d: %w, so not every thread stopped: gave up, the target was let go", s.pid, err)
	case errors.Is(err, ErrMaxStop):
		if ctx.Err() != nil {
			return fmt.Errorf("stopping pid %d: %w", s.pid, ctx.Err())
		}
		return &MaxStopError{PID: s.pid, Bound: bound}
	case errors.Is(err, errCancelled):
		return fmt.Errorf("stopping pid %d: %w", s.pid, ctx.Err())
	case errors.Is(err, errGone):
		return fmt.Errorf("stopping pid %d: %w", s.pid, sampler.ErrNoProcess)
	case errors.Is(err, errPermission):
		return fmt.Errorf("stopping pid %d: %w: %s", s.pid, sampler.ErrPermission, sampler.PermissionHint)
	}
	return err
}

// readRegisters reads every stopped thread's registers, on the tracer
// thread, so that Delve's reading needs no ptrace request at all.
func readRegisters(tids []int, iscgo bool) ([]stoppedThread, error) {
	out := make([]stoppedThread, 0, len(tids))
	for _, tid := range tids {
		regs, err := registers(tid, iscgo)
		if err != nil {
			continue // it exited while stopped (a SIGKILL)
		}
		out = append(out, stoppedThread{tid: tid, regs: regs})
	}
	if len(out) == 0 {
		return nil, errGone
	}
	return out, nil
}

// inflight counts the tracer threads not yet exited.
var inflight sync.WaitGroup

// Settle waits up to timeout for every tracer thread to have exited, and
// reports whether all had. A Dump lets the target go before it returns, on
// every path, so there is nothing left to detach: this only confirms it
// (and keeps the entry point callers already use).
func Settle(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// clock is the time the stop bound is checked against; tests replace it.
var clock = time.Now

// hooks are test points inside a Dump, nil outside tests.
var hooks struct {
	seized, stopped, beforeDetach func()
	// beforeInterrupt runs between the first thread's seize and its
	// interrupt; held when a thread's signal is held.
	beforeInterrupt func(tid int)
	held            func(tid int, sig unix.Signal)
	// skipDCheck skips the check for threads in D before a stop, so that
	// a test can meet one during the stop.
	skipDCheck bool
}

// TestHookEnv names the environment variable that, in tests of the
// hangdoc binary, makes a Dump announce a point of its work on stderr,
// "hangdoc-test-hook: POINT pid=P", and then act there. The points, in
// order: opened (DWARF loaded, nothing stopped), seized (the first thread
// seized and interrupted), stopped (every thread stopped), read
// (goroutines read, not yet detached), detached. The value is POINT
// (block there until killed: a kill test kills hangdoc on the line, so
// the kill lands at that point whatever the timing), POINT:wait (block
// until the run's context ends) or POINT:interrupt (send this process
// SIGINT, then wait for the context to end: the run is cut short exactly
// there).
const TestHookEnv = "HANGDOC_TEST_HOOK"

var hookPoint, hookMode, _ = strings.Cut(os.Getenv(TestHookEnv), ":")

func hook(ctx context.Context, point string, pid int) {
	if hookPoint == "" || hookPoint != point {
		return
	}
	os.Stderr.WriteString("hangdoc-test-hook: " + point + " pid=" + strconv.Itoa(pid) + "\n")
	switch {
	case hookMode == "interrupt":
		_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
		<-ctx.Done()
	case hookMode == "wait":
		<-ctx.Done()
	default:
		select {} // until killed
	}
}
