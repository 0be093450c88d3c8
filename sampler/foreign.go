package sampler

import (
	"os"
	"slices"

	"github.com/hangdoc/hangdoc/internal/procstatus"
	"github.com/hangdoc/hangdoc/model"
)

// Stops that are not this diagnosis's own. Another diagnosis of the same
// target (py-spy's pauses, a Delve attach) or a debugger wakes every
// thread it stops: the switches, the waits resumed as restart_syscall and
// the stacks read mid-way are not the target's progress. Each sample says
// what showed such a stop since the one before (model.ForeignStop), and
// classify counts nothing across that interval as movement.

// foreign adds what the kernel shows at this sample: a tracer that is not
// this process or its child, a process or a thread in state t or T.
func (s *Sampler) foreign(sample *model.Sample) {
	if tracer := TracerPID(s.fs, s.pid); tracer != 0 && !s.ours(tracer) {
		sample.Foreign = addForeign(sample.Foreign, model.ForeignStop{Kind: model.ForeignTracer, PID: tracer})
	}
	if sample.State.Stopped() {
		sample.Foreign = addForeign(sample.Foreign, model.ForeignStop{Kind: model.ForeignStopped})
		return
	}
	for _, th := range sample.Threads {
		if th.State.Stopped() {
			sample.Foreign = addForeign(sample.Foreign, model.ForeignStop{Kind: model.ForeignStopped, TID: th.TID})
			return
		}
	}
}

// ours reports a tracer that is this process, one of its threads (Delve
// traces from a thread of its own, and TracerPid names the thread) or a
// child of it (a py-spy it ran).
func (s *Sampler) ours(tracer int) bool {
	me := os.Getpid()
	if tracer == me {
		return true
	}
	st, err := ReadStatus(s.fs, tracer)
	return err == nil && (st.Has&procstatus.HasTgid != 0 && st.Tgid == me || st.Has&procstatus.HasPPid != 0 && st.PPid == me)
}

// foreignAround adds what only the run can tell: another diagnosis holding
// the claim now or at the previous sample (it was free to stop the target
// in between), and a thread that came back in restart_syscall since the
// previous sample when this run did not stop the target after it.
func foreignAround(sample *model.Sample, prev *model.Sample, claim *Claim, prevOther *int) {
	pid, held := claim.Other()
	if held {
		sample.Foreign = addForeign(sample.Foreign, model.ForeignStop{Kind: model.ForeignClaim, PID: pid})
	}
	if *prevOther >= 0 {
		sample.Foreign = addForeign(sample.Foreign, model.ForeignStop{Kind: model.ForeignClaim, PID: *prevOther})
	}
	*prevOther = -1
	if held {
		*prevOther = pid
	}
	if prev == nil || prev.Paused {
		return
	}
	was := map[int]bool{}
	for _, th := range prev.Threads {
		was[th.TID] = th.Syscall.Restarted
	}
	for _, th := range sample.Threads {
		if restarted, seen := was[th.TID]; th.Syscall.Restarted && seen && !restarted {
			sample.Foreign = addForeign(sample.Foreign, model.ForeignStop{Kind: model.ForeignRestart, TID: th.TID})
			return
		}
	}
}

// addForeign adds f unless it is there already (a replayed sample carries
// what the recording's run found).
func addForeign(fs []model.ForeignStop, f model.ForeignStop) []model.ForeignStop {
	if slices.Contains(fs, f) {
		return fs
	}
	return append(fs, f)
}
