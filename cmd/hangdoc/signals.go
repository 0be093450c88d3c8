package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// interrupted is the cause of a run that SIGINT or SIGTERM ended.
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string {
	name := e.sig.String()
	if s, ok := e.sig.(syscall.Signal); ok {
		name = unix.SignalName(s)
	}
	return "interrupted by " + name
}

// interruptible is parent ended by SIGINT or SIGTERM, with interrupted as
// its cause. stop lets the signals kill hangdoc again.
func interruptible(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(interrupted{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// interruption is the signal that ended ctx, or nil.
func interruption(ctx context.Context) error {
	var in interrupted
	if errors.As(context.Cause(ctx), &in) {
		return in
	}
	return nil
}

// interruptGrace is how long, once a run is interrupted, a step may take
// to finish (the report of what was read) before hangdoc gives it up and
// ends; timeoutGrace the same once its --timeout is up, which has less
// hurry: what comes after it is the report the run was for.
const timeoutGrace = 10 * time.Second

var interruptGrace = graceFromEnv(2 * time.Second)

// interruptGraceEnv, in tests that run hangdoc as a process of their own,
// sets interruptGrace (a Go duration): long, so that a loaded machine
// cannot turn the partial report they wait for into its give-up.
const interruptGraceEnv = "HANGDOC_TEST_INTERRUPT_GRACE"

func graceFromEnv(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(interruptGraceEnv)); err == nil && d > 0 {
		return d
	}
	return def
}

// orAbandon runs f and returns its result, unless ctx ends and f takes
// longer than interruptGrace (timeoutGrace) after that: f may be blocked in the kernel
// (the open of a FIFO nobody writes to, a file on a hung mount) or be
// work that cannot stop midway (classifying), and a run ends at once.
// f is left behind, to end with the process. what names the step.
func orAbandon[T any](ctx context.Context, what string, f func() T) (T, error) {
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v, nil
	case <-ctx.Done():
	}
	in := interruption(ctx)
	grace := timeoutGrace
	if in != nil {
		grace = interruptGrace
	}
	select {
	case v := <-done:
		return v, nil
	case <-time.After(grace):
	}
	var zero T
	if in != nil {
		return zero, fmt.Errorf("%w: %s did not stop within %v of it", in, what, grace)
	}
	return zero, fmt.Errorf("%s did not stop within %v of the --timeout: a call is blocked in the kernel (an open of a FIFO nobody writes to, a file on a hung mount?)", what, grace)
}

// reported is what a run that wrote its report returns: nil, or for a run
// an interrupt cut short, its exit code.
func reported(sig context.Context) error {
	if interruption(sig) != nil {
		return exitError{ExitInterrupted}
	}
	return nil
}
