package sampler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// StackSource reads the stacks of a target's samples: py-spy's Python
// stacks joined to the threads, a Go program's goroutines. It is declared
// here, where Record uses it; sampler/sources builds them.
type StackSource interface {
	// Name is what the report's stack_source says.
	Name() model.Format
	// Stacks adds stacks to one sample. A source that stops the target
	// says so in the sample's Paused and Frozen.
	Stacks(ctx context.Context, s *model.Sample) error
}

// LastSampler is a StackSource that reads more on a run's last sample,
// where its cost is paid once: the memory reader's channel scan. Last is
// called before the Stacks of that sample.
type LastSampler interface {
	Last()
}

// Noter is a StackSource with something to say at the end of a run: how
// long it stopped the target, what it could not join.
type Noter interface {
	Notes() []model.Note
}

// Stacks is how a run gets its stacks.
type Stacks struct {
	// Sources are tried in order on the first sample; the first that
	// works is used for every sample.
	Sources []StackSource
	// Final, when no source worked, is used once after the last sample
	// (a SIGQUIT dump, which ends the target).
	Final StackSource
	// What the sources give, for the notes: "goroutines".
	What string
	// None words the note for a run no source could serve, from why each
	// was not used.
	None func(why []string) model.Note
	// Notes are said whatever happens (a missing py-spy).
	Notes []model.Note
	// ReadSource reads a source file that stacks point into, for the
	// classifier to find the blocks a thread waits at; nil for none.
	ReadSource func(path string) ([]string, error)
	// Close, when set, is called when the run ends, however it ends.
	Close func()
	// Each, when set, adds to every sample what the runtime publishes
	// without being asked (a JVM's counters file), whichever source
	// gives the stacks, and when none does.
	Each func(s *model.Sample)
}

// Clock is the time Record waits by; nil is the real one.
type Clock interface {
	Now() time.Time
	// After waits d, or until ctx ends.
	After(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) After(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Options is one recording.
type Options struct {
	Samples  int
	Interval time.Duration
	Stacks   Stacks
	// SearchBudget bounds the time spent scanning other processes'
	// descriptors for the other ends of pipes and sockets; 0 is 1s.
	SearchBudget time.Duration
	// Progress is told of each sample taken; nil for none.
	Progress func(n, of int, s model.Sample)
	Clock    Clock
	// Version is hangdoc's, for the recording.
	Version string
	// Notes go into the recording first: what the caller found before it.
	Notes []model.Note
	// Claim is the caller's claim on the target: when another diagnosis
	// holds it, each sample says so (model.ForeignStop). Nil for none.
	Claim *Claim
	// Profiler samples where the threads run between two samples
	// (sampler/oncpu); nil for none.
	Profiler Profiler
}

// Profiler gives each sample's threads their on-CPU profiles since the
// previous sample (model.Thread.OnCPU). It is declared here, where
// Record uses it; sampler/oncpu builds one.
type Profiler interface {
	Profile(s *model.Sample)
	Notes() []model.Note
	Close()
}

// maxStackFailures is how many failed reads in a row drop a stack source:
// one that cannot read the target will not start to.
const maxStackFailures = 2

// Record takes the samples of a target and the facts around them — the
// processes its waits lead to, the resources they share, its family —
// classifying nothing. It stops at opts.Samples samples, when ctx ends or
// when the target goes away; the last two make a partial recording,
// marked so. Its errors are for a target that cannot be sampled at all.
func Record(ctx context.Context, t *Target, first Process, opts Options) (rec model.Recording, err error) {
	clock := opts.Clock
	if clock == nil {
		clock = realClock{}
	}
	rec = model.Recording{
		HangdocVersion: opts.Version,
		Host:           t.Sys.Host(),
		Target:         t.Desc,
		Requested:      opts.Samples,
		Interval:       opts.Interval,
		Samples:        []model.Sample{},
		Notes:          append(append([]model.Note{}, opts.Notes...), opts.Stacks.Notes...),
	}
	if err := first.MemErr(); err != nil {
		rec.Notes = append(rec.Notes, model.NewNote(model.NoteNoLockOwners, err))
	}
	st := &stacks{plan: opts.Stacks}
	if opts.Stacks.Close != nil {
		defer opts.Stacks.Close()
	}
	if p := opts.Profiler; p != nil {
		defer func() {
			p.Close()
			rec.Notes = append(rec.Notes, p.Notes()...)
		}()
	}
	f := newFollower(t.Sys, t.PID, cmp.Or(opts.SearchBudget, time.Second))
	defer f.close()
	var firstScan []model.Proc
	prevOther := -1 // the pid holding the claim at the previous sample; -1 for none
	defer func() {
		// Whatever ended the run, the world around the samples taken so
		// far goes with them.
		if len(rec.Samples) == 0 {
			return
		}
		st.finish(ctx, &rec)
		f.scan()
		f.record(&rec, firstScan)
		if read := opts.Stacks.ReadSource; read != nil {
			var notes []model.Note
			var cut error
			rec.Sources, notes, cut = ReadSourcesContext(ctx, rec.Samples, read)
			rec.Notes = append(rec.Notes, notes...)
			if cut != nil && rec.PartialReason == "" {
				rec.PartialReason = "reading the source files the stacks name: " + stopReason(ctx)
			}
		}
		AddGoStdSources(&rec)
	}()
	for i := 0; i < opts.Samples; i++ {
		if i > 0 {
			if err := clock.After(ctx, opts.Interval); err != nil {
				rec.PartialReason = fmt.Sprintf("stopped after %d of %d samples: %s", i, opts.Samples, stopReason(ctx))
				return rec, nil
			}
		}
		sample, err := first.Sample()
		if err != nil {
			switch {
			case i == 0:
				return rec, err
			case errors.Is(err, ErrNoProcess):
				rec.PartialReason = fmt.Sprintf("the target exited after %d of %d samples", i, opts.Samples)
			case errors.Is(err, ErrPIDReused):
				rec.PartialReason = fmt.Sprintf("pid %d was reused by another process after %d of %d samples; those samples are not mixed in", t.PID, i, opts.Samples)
			default:
				return rec, err
			}
			rec.TargetExited = true
			return rec, nil
		}
		var prev *model.Sample
		if n := len(rec.Samples); n > 0 {
			prev = &rec.Samples[n-1]
		}
		if opts.Profiler != nil {
			opts.Profiler.Profile(&sample)
		}
		foreignAround(&sample, prev, opts.Claim, &prevOther)
		if opts.Stacks.Each != nil {
			opts.Stacks.Each(&sample)
		}
		st.add(ctx, &sample, &rec, i == opts.Samples-1)
		if sample.StackSource == model.SourceUnwind && rec.StackSource == model.FormatNone {
			rec.StackSource = model.SourceUnwind
		}
		rec.Samples = append(rec.Samples, sample)
		if i == 0 {
			f.scan()
			firstScan = f.procs
			f.follow(t.PID, sample, 0)
		} else {
			f.sample()
		}
		if opts.Progress != nil {
			opts.Progress(i+1, opts.Samples, sample)
		}
	}
	return rec, nil
}

func stopReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "--timeout reached"
	}
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c.Error() // the signal
	}
	return "interrupted"
}

// stacks is a run's use of its stack sources.
type stacks struct {
	plan     Stacks
	used     StackSource // the source in use; nil before one worked, and after all failed
	tried    bool
	failures int
	why      []string
}

// add reads the stacks of one sample. The first call picks the source.
func (s *stacks) add(ctx context.Context, sample *model.Sample, rec *model.Recording, last bool) {
	if !s.tried {
		s.tried = true
		for _, src := range s.plan.Sources {
			if l, ok := src.(LastSampler); ok && last {
				l.Last()
			}
			if err := src.Stacks(ctx, sample); err != nil {
				s.why = append(s.why, fmt.Sprintf("%s: %v", src.Name(), err))
				continue
			}
			s.use(src, sample, rec)
			return
		}
		if len(s.plan.Sources) > 0 && (s.plan.Final == nil) && s.plan.None != nil {
			rec.Notes = append(rec.Notes, s.plan.None(s.why))
		}
		return
	}
	if s.used == nil || s.failures >= maxStackFailures {
		return
	}
	if l, ok := s.used.(LastSampler); ok && last {
		l.Last()
	}
	if err := s.used.Stacks(ctx, sample); err != nil {
		s.failures++
		rec.Notes = append(rec.Notes, model.NewNote(model.NoteSampleUnread, s.used.Name(), s.plan.What, len(rec.Samples)+1, err))
		return
	}
	s.failures = 0
	sample.StackSource = s.used.Name()
}

func (s *stacks) use(src StackSource, sample *model.Sample, rec *model.Recording) {
	s.used = src
	sample.StackSource = src.Name()
	rec.StackSource = src.Name()
	if len(s.why) > 0 {
		rec.Notes = append(rec.Notes, model.NewNote(model.NoteStacksFrom, s.plan.What, src.Name(), strings.Join(s.why, "; ")))
	}
}

// finish says what the source in use has to say and, when none worked and
// there is one, uses the final source on the last sample.
func (s *stacks) finish(ctx context.Context, rec *model.Recording) {
	for _, src := range s.plan.Sources {
		if n, ok := src.(Noter); ok {
			rec.Notes = append(rec.Notes, n.Notes()...)
		}
	}
	if s.used != nil || s.plan.Final == nil || rec.TargetExited || ctx.Err() != nil {
		return
	}
	last := &rec.Samples[len(rec.Samples)-1]
	if err := s.plan.Final.Stacks(ctx, last); err != nil {
		s.why = append(s.why, fmt.Sprintf("%s: %v", s.plan.Final.Name(), err))
		if s.plan.None != nil {
			rec.Notes = append(rec.Notes, s.plan.None(s.why))
		}
		return
	}
	s.used = s.plan.Final
	last.StackSource = s.plan.Final.Name()
	rec.StackSource = s.plan.Final.Name()
	if n, ok := s.plan.Final.(Noter); ok {
		rec.Notes = append(rec.Notes, n.Notes()...)
	}
}
