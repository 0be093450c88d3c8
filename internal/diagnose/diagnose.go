// Package diagnose runs one diagnosis: it samples a live process over time,
// classifies the samples and builds the report. cmd/hangdoc wires flags to it.
package diagnose

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/internal/version"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/delve"
	"github.com/hangdoc/hangdoc/sampler/python"
)

// Options is one diagnosis as the command line asked for it.
type Options struct {
	PID      int
	Samples  int
	Interval time.Duration
	ProcRoot string // "" is /proc
	// Progress receives a progress line per sample (a terminal); nil for none.
	Progress io.Writer
	Classify classify.Options
	// SearchBudget bounds the time spent scanning other processes'
	// descriptors for the other ends of pipes and sockets; 0 is 1s.
	SearchBudget time.Duration
	// PySpy is py-spy's path ("" looks it up on PATH), for Python targets.
	PySpy string
	// NoStop forbids any source that stops the target: py-spy runs with
	// --nonblocking, Delve is not used.
	NoStop bool
	// Pprof is a Go target's pprof endpoint ("http://127.0.0.1:6060"); ""
	// looks for one on the target's listening sockets.
	Pprof string
	// Sigquit allows, for a Go target no other source can read, one
	// SIGQUIT dump at the end of the run: it kills the target. The dump is
	// read from SigquitLog, or the target's stderr if that is a file.
	Sigquit    bool
	SigquitLog string
}

// Run samples the target until it has Samples samples, ctx ends, or the
// target goes away; the last two give a partial report, marked so. Errors
// are for a target that cannot be diagnosed at all.
func Run(ctx context.Context, opts Options) (*report.Report, model.Recording, error) {
	rec, err := Record(ctx, opts)
	if err != nil {
		return nil, rec, err
	}
	return report.New(rec, classify.Classify(rec, opts.Classify)), rec, nil
}

// Record takes the samples and the facts around them, classifying nothing.
func Record(ctx context.Context, opts Options) (rec model.Recording, err error) {
	fs := sampler.NewFS(opts.ProcRoot)
	rec = model.Recording{
		HangdocVersion: version.Version,
		Host:           sampler.DescribeHost(),
		Requested:      opts.Samples,
		Interval:       opts.Interval,
		Samples:        []model.Sample{},
	}
	s, err := sampler.New(fs, opts.PID)
	if err != nil {
		return rec, explain(opts.PID, err)
	}
	defer s.Close()
	rec.Target = sampler.Describe(fs, opts.PID)
	if err := s.MemErr(); err != nil {
		rec.Notes = append(rec.Notes, "lock owners cannot be read: "+err.Error())
	}

	var stacks *pyStacks
	if rec.Target.Runtime == model.RuntimePython {
		var note string
		if stacks, note = newPyStacks(opts); note != "" {
			rec.Notes = append(rec.Notes, note)
		}
	}
	var goroutines *goStacks
	switch {
	case rec.Target.Runtime == model.RuntimeGo:
		goroutines = newGoStacks(fs, opts)
		// A Delve attach the run's end cut short detaches in the
		// background: wait for it, or this process may exit first and
		// leave the kernel to detach a target whose threads were being
		// stopped, and stay stopped.
		defer delve.Settle(settleTimeout)
	case opts.Pprof != "" || opts.Sigquit:
		rec.Notes = append(rec.Notes, fmt.Sprintf("--pprof and --sigquit are for Go programs; pid %d is not one (%s): ignored", opts.PID, orUnnamed(rec.Target.Runtime.String())))
	}
	defer clearProgress(opts.Progress)
	f := newFollower(fs, opts.PID, cmp.Or(opts.SearchBudget, time.Second))
	defer f.close()
	var firstScan []model.Proc
	defer func() {
		// Whatever ended the run, the world around the samples taken so far
		// goes with them.
		if len(rec.Samples) > 0 {
			if goroutines != nil {
				goroutines.finish(ctx, &rec)
			}
			f.scan()
			f.record(&rec, firstScan)
			if stacks != nil {
				rec.Sources = sources(rec.Samples, func(path string) ([]string, error) {
					return python.ReadSource(fs, opts.PID, path)
				})
			}
		}
	}()
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	for i := 0; i < opts.Samples; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				rec.PartialReason = fmt.Sprintf("stopped after %d of %d samples: %s", i, opts.Samples, stopReason(ctx))
				return rec, nil
			case <-tick.C:
			}
		}
		sample, err := s.Sample()
		if err != nil {
			switch {
			case i == 0:
				return rec, explain(opts.PID, err)
			case errors.Is(err, sampler.ErrNoProcess):
				rec.PartialReason = fmt.Sprintf("the target exited after %d of %d samples", i, opts.Samples)
			case errors.Is(err, sampler.ErrPIDReused):
				rec.PartialReason = fmt.Sprintf("pid %d was reused by another process after %d of %d samples; those samples are not mixed in", opts.PID, i, opts.Samples)
			default:
				return rec, err
			}
			rec.TargetExited = true
			return rec, nil
		}
		stacks.add(ctx, opts.PID, &sample, &rec)
		if goroutines != nil {
			goroutines.add(ctx, &sample, &rec)
			if sample.Frozen > 0 {
				// The next sample comes a full interval after the target
				// was let go: the time between samples must be mostly
				// time it could run, or its CPU says nothing.
				tick.Reset(opts.Interval)
			}
		}
		rec.Samples = append(rec.Samples, sample)
		if i == 0 {
			f.scan()
			firstScan = f.procs
			f.follow(opts.PID, sample, 0)
		} else {
			f.sample()
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "\rhangdoc: sampling %s: %d/%d, %d threads ", rec.Target, i+1, opts.Samples, len(sample.Threads))
		}
	}
	return rec, nil
}

func clearProgress(w io.Writer) {
	if w != nil {
		fmt.Fprint(w, "\r\033[K")
	}
}

func stopReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "--timeout reached"
	}
	return "interrupted"
}

// explain turns the sampler's sentinels into one line that says what to do.
func explain(pid int, err error) error {
	switch {
	case errors.Is(err, sampler.ErrNoProcess):
		return fmt.Errorf("no process with pid %d: it has exited, or lives in another pid namespace (run hangdoc in the target's namespace)", pid)
	case errors.Is(err, sampler.ErrKernelThread):
		return fmt.Errorf("%v: a kernel thread has no user-space hang to diagnose; look at what waits on it", err)
	case errors.Is(err, sampler.ErrZombie):
		return fmt.Errorf("%v: it has exited and waits for its parent to reap it; diagnose the parent (see PPid in /proc/%d/status)", err, pid)
	case errors.Is(err, sampler.ErrPermission):
		return fmt.Errorf("%v: %s", err, sampler.PermissionHint)
	}
	return err
}

// settleTimeout bounds the wait for Delve to detach after a run ends.
const settleTimeout = 5 * time.Second

// hangGrace is how long RunBounded waits past the deadline for the sampler
// to come back from a read before it gives up on it.
const hangGrace = 2 * time.Second

// RunBounded is Run with ctx's deadline as a hard bound: a /proc read can
// block (reading a process's memory waits for its memory-map lock, which a
// thread in uninterruptible sleep may hold), so the run is abandoned, not
// awaited, if it does not return in time.
func RunBounded(ctx context.Context, opts Options) (*report.Report, model.Recording, error) {
	type result struct {
		r   *report.Report
		rec model.Recording
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, rec, err := Run(ctx, opts)
		done <- result{r, rec, err}
	}()
	select {
	case res := <-done:
		return res.r, res.rec, res.err
	case <-ctx.Done():
	}
	select {
	case res := <-done:
		return res.r, res.rec, res.err
	case <-time.After(hangGrace):
		// A Delve attach may still be stopping the target's threads: let
		// it detach before this process exits and the kernel does it.
		delve.Settle(hangGrace)
		return nil, model.Recording{}, fmt.Errorf("reading /proc/%d did not return in time (%v): a thread of the target may be in uninterruptible sleep holding its memory map; check 'cat /proc/%d/task/*/stat' by hand", opts.PID, context.Cause(ctx), opts.PID)
	}
}
