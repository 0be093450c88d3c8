package sampler

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// Opened is a live target made ready for a run: the target, its first
// sampler, its claim, and what opening it found that the report should
// say.
type Opened struct {
	Target *Target
	First  Process
	Claim  *Claim
	// PID is the process diagnosed: the one asked for, or the process a
	// thread id asked for belongs to.
	PID int
	// NoStop: nothing may stop the target this run (another diagnosis
	// holds it, or a tracer does).
	NoStop bool
	// Notes are what opening it found.
	Notes []model.Note
}

// OpenOptions are how Open waits for another diagnosis of the target.
type OpenOptions struct {
	// ClaimWait is how long to wait for another diagnosis of the same
	// target to finish before going on without stopping it.
	ClaimWait time.Duration
}

// Open makes a live process ready to be recorded: a thread's id is taken
// for its process, the target is opened and claimed for this diagnosis,
// and a tracer or another diagnosis holding it makes the run one that
// stops nothing. Its errors are the sampler's sentinels (ErrNoProcess,
// ErrPermission, ErrZombie, ErrKernelThread …) for a target that cannot
// be diagnosed at all. Close releases what it holds.
func Open(ctx context.Context, fs FS, pid int, opts OpenOptions) (*Opened, error) {
	o := &Opened{PID: pid}
	if tgid, err := ThreadGroup(fs, pid); err == nil && tgid > 0 && tgid != pid {
		o.Notes = append(o.Notes, model.NewNote(model.NoteThreadOf, pid, tgid))
		o.PID = tgid
	}
	t, first, err := OpenTarget(Live(fs), o.PID)
	if err != nil {
		return o, err
	}
	o.Target, o.First = t, first
	claim, err := t.Claim(ctx, opts.ClaimWait)
	switch {
	case errors.Is(err, ErrClaimed):
		o.Notes = append(o.Notes, model.NewNote(model.NoteOtherDiagnosis, err))
		o.NoStop = true
	case err != nil:
		o.Notes = append(o.Notes, model.NewNote(model.NoteUnclaimed, err))
	}
	o.Claim = claim
	if tracer := TracerPID(fs, o.PID); tracer != 0 && tracer != os.Getpid() {
		o.Notes = append(o.Notes, model.NewNote(model.NoteTraced, o.PID, tracer, Cmdline(fs, tracer)))
		o.NoStop = true
	}
	return o, nil
}

// Close releases the claim, the first sampler and the target.
func (o *Opened) Close() {
	if o.Claim != nil {
		o.Claim.Release()
	}
	if o.First != nil {
		o.First.Close()
	}
	if o.Target != nil {
		o.Target.Close()
	}
}
