// Package deadline runs a call that may block in the kernel for good (an
// open or read on a hung filesystem: NFS gone away, a FUSE daemon that
// never answers) under a deadline, and gives up waiting for it when the
// deadline passes.
//
// A goroutine blocked in such a syscall cannot be interrupted: Run leaks
// it, still blocked, and says so; it ends by itself if the call ever
// returns. Each one pins an OS thread, so at most MaxStuck may be left
// behind at a time; past that Run refuses new calls at once rather than
// add more.
package deadline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxStuck bounds the calls given up on and still blocked.
const MaxStuck = 16

// ErrAbandoned: the call did not return before the deadline and was left
// running. Errors wrapping it also wrap the context's error.
var ErrAbandoned = errors.New("did not return in time")

// ErrTooManyStuck: MaxStuck calls given up on are still blocked.
var ErrTooManyStuck = errors.New("too many earlier calls still blocked")

var stuck atomic.Int32

// Stuck is how many calls given up on are still blocked.
func Stuck() int { return int(stuck.Load()) }

// Error is a call given up on.
type Error struct {
	What  string        // "reading /proc/4187/exe"
	After time.Duration // how long Run waited
	Err   error         // the context's error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %v after %v (a hung filesystem?): gave up waiting, the call is left blocked", e.What, ErrAbandoned, e.After.Round(time.Millisecond))
}

func (e *Error) Is(target error) bool { return target == ErrAbandoned }
func (e *Error) Unwrap() error        { return e.Err }

// Run calls f and returns its result, or gives up when ctx ends first and
// returns an *Error naming what (a phrase such as "reading /proc/4187/exe").
// f must not touch anything the caller uses afterwards unless it is safe
// to share: after a give-up f is still running.
func Run[T any](ctx context.Context, what string, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	if stuck.Load() >= MaxStuck {
		return zero, fmt.Errorf("%s: not tried: %w (%d)", what, ErrTooManyStuck, MaxStuck)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	var gaveUp atomic.Bool
	go func() {
		v, err := callMasked(f)
		done <- result{v, err}
		// Whichever of this and the give-up's own late check below
		// clears gaveUp takes the call off the stuck count.
		if gaveUp.CompareAndSwap(true, false) {
			stuck.Add(-1)
		}
	}()
	start := time.Now()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	// The call may have finished as the time ran out.
	select {
	case r := <-done:
		return r.v, r.err
	default:
	}
	stuck.Add(1)
	gaveUp.Store(true)
	// Finished between the two checks: not stuck after all.
	select {
	case r := <-done:
		if gaveUp.CompareAndSwap(true, false) {
			stuck.Add(-1)
		}
		return r.v, r.err
	default:
	}
	return zero, &Error{What: what, After: time.Since(start), Err: context.Cause(ctx)}
}

// Do is Run for a call without a result.
func Do(ctx context.Context, what string, f func() error) error {
	_, err := Run(ctx, what, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// Within is Run under a timeout of its own, on top of ctx's deadline.
func Within[T any](ctx context.Context, timeout time.Duration, what string, f func() (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return Run(ctx, what, f)
}

// DoWithin is Within for a call without a result.
func DoWithin(ctx context.Context, timeout time.Duration, what string, f func() error) error {
	_, err := Within(ctx, timeout, what, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// callMasked calls f on a thread of its own with SIGINT and SIGTERM
// blocked. A thread asleep in the kernel for good (state D) never takes a
// signal, yet the kernel may hand it a signal sent to the process (it
// prefers the main thread): left pending there, the signal would never
// reach os/signal, and an interrupt would not end the run. Blocked here,
// they go to another thread. The thread is kept to the call: if the call
// never returns, the thread stays with it.
func callMasked[T any](f func() (T, error)) (T, error) {
	runtime.LockOSThread()
	var set, old unix.Sigset_t
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		set.Val[(s-1)/64] |= 1 << ((uint(s) - 1) % 64)
	}
	if unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old) != nil {
		runtime.UnlockOSThread()
		return f()
	}
	v, err := f()
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	runtime.UnlockOSThread()
	return v, err
}
