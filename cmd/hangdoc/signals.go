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

	"github.com/hangdoc/hangdoc/report"
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

// interruptGrace is how long, after an interrupt, the report of what was
// read may take to be made before hangdoc gives it up and ends.
const interruptGrace = 2 * time.Second

// classifyOrInterrupt makes the report, unless an interrupt comes (or
// came: sig is ended by one only) and it takes longer than
// interruptGrace after it: classifying cannot be stopped midway, and an
// interrupt ends a run at once.
func classifyOrInterrupt(sig context.Context, f func() *report.Report) (*report.Report, error) {
	done := make(chan *report.Report, 1)
	go func() { done <- f() }()
	select {
	case r := <-done:
		return r, nil
	case <-sig.Done():
	}
	select {
	case r := <-done:
		return r, nil
	case <-time.After(interruptGrace):
		return nil, fmt.Errorf("%w: the report of what was read was not ready within %v of it", interruption(sig), interruptGrace)
	}
}

// reported is what a run that wrote its report returns: nil, or for a run
// an interrupt cut short, its exit code.
func reported(sig context.Context) error {
	if interruption(sig) != nil {
		return exitError{ExitInterrupted}
	}
	return nil
}
