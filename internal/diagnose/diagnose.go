// Package diagnose runs one diagnosis of a live process: it opens the
// target, records it with the stack sources its runtime allows, classifies
// the recording and words the report. cmd/hangdoc wires flags to it.
package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/internal/membudget"
	"github.com/hangdoc/hangdoc/internal/version"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/delve"
	"github.com/hangdoc/hangdoc/sampler/oncpu"
	"github.com/hangdoc/hangdoc/sampler/sources"
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
	// MaxMemory is hangdoc's memory budget in bytes (see Classify); 0 is
	// none.
	MaxMemory int64
	// SearchBudget bounds the time spent scanning other processes'
	// descriptors for the other ends of pipes and sockets; 0 is 1s.
	SearchBudget time.Duration
	Sources      sources.Options
	// NoOnCPU turns the kernel's on-CPU sampling of running threads off.
	NoOnCPU bool
	// OnCPUHz is the on-CPU sampling rate; 0 is oncpu.Freq.
	OnCPUHz int
	// Notes are the caller's, said with the run's own (a reaper that
	// could not start).
	Notes []model.Note
}

// Run records the target until it has Samples samples, ctx ends, or the
// target goes away (the last two give a partial report, marked so),
// classifies the recording and words it. Errors are for a target that
// cannot be diagnosed at all.
func Run(ctx context.Context, opts Options) (*report.Report, model.Recording, error) {
	fs := sampler.NewFS(opts.ProcRoot)
	o, err := sampler.Open(ctx, fs, opts.PID, sampler.OpenOptions{ClaimWait: claimWait(ctx)})
	if err != nil {
		return nil, model.Recording{}, explain(o.PID, err)
	}
	defer o.Close()
	t, first, claim, pid := o.Target, o.First, o.Claim, o.PID
	notes := append(slices.Clone(opts.Notes), o.Notes...)
	src := opts.Sources
	src.NoStop = src.NoStop || o.NoStop
	ropts := sampler.Options{
		Samples: opts.Samples, Interval: opts.Interval, SearchBudget: opts.SearchBudget,
		Stacks: sources.For(t, src), Version: version.Version, Notes: notes, Claim: claim,
	}
	native := t.Desc.Runtime == model.RuntimeNative
	python := t.Desc.Runtime == model.RuntimePython
	if (!opts.NoOnCPU || native || python) && opts.ProcRoot == "" {
		// Only the real /proc's threads are sampled: a tid of another
		// root may be any thread of this machine.
		ropts.Profiler = oncpu.New(fs, pid, oncpu.Options{NoSampling: opts.NoOnCPU, NativeStacks: native || python, PythonNative: python, Hz: opts.OnCPUHz})
	}
	if w := opts.Progress; w != nil {
		ropts.Progress = func(n, of int, s model.Sample) {
			fmt.Fprintf(w, "\rhangdoc: sampling %s: %d/%d, %d threads ", t.Desc, n, of, len(s.Threads))
		}
		defer fmt.Fprint(w, "\r\033[K")
	}
	rec, err := sampler.Record(ctx, t, first, ropts)
	if err != nil {
		return nil, rec, explain(opts.PID, err)
	}
	return Classify(rec, opts.Classify, opts.MaxMemory), rec, nil
}

// claimWait is how long a diagnosis waits for another one of the same
// target to finish: a third of what is left of the run, at most 10s.
func claimWait(ctx context.Context) time.Duration {
	wait := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)/3)
	}
	return max(wait, 0)
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
	case errors.Is(err, sampler.ErrPermission) && os.Geteuid() == 0:
		return fmt.Errorf("%v, even as root: pid %d is out of reach from here (another user namespace or container, or kernel.yama.ptrace_scope=3); run hangdoc inside the target's container, with CAP_SYS_PTRACE there", err, pid)
	case errors.Is(err, sampler.ErrPermission):
		return fmt.Errorf("%v: %s", err, sampler.PermissionHint)
	}
	return err
}

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
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.DeadlineExceeded) && !errors.Is(c, context.Canceled) {
			// An interrupt (the cause names the signal): it ends the run.
			return nil, model.Recording{}, fmt.Errorf("%w: the run did not wind down within %v of it (a read of /proc/%d may be blocked)", c, hangGrace, opts.PID)
		}
		return nil, model.Recording{}, fmt.Errorf("reading /proc/%d did not return in time (%v): a thread of the target may be in uninterruptible sleep holding its memory map; check 'cat /proc/%d/task/*/stat' by hand", opts.PID, context.Cause(ctx), opts.PID)
	}
}

// Classify classifies rec and words the report, within a memory budget
// of maxMemory bytes (0: none): past half of it once the evidence is
// read, classification is degraded as membudget.Degrade says, and the
// report says so. Live runs and hangdoc analyze both end here.
func Classify(rec model.Recording, opts classify.Options, maxMemory int64) *report.Report {
	heap, tight := membudget.Tight(maxMemory)
	if tight {
		opts = membudget.Degrade(opts)
	}
	r := report.New(rec, classify.Classify(rec, opts))
	if tight {
		r.Sampling.Notes = append(r.Sampling.Notes, report.MemoryBudgetNote(heap, maxMemory, opts.HolderLocks))
	}
	return r
}
