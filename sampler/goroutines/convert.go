package goroutines

import (
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// Sample returns g as a stack source hands it to the sampler: its frames
// with their argument words, no offsets.
func (g Goroutine) Sample() model.Goroutine {
	out := model.Goroutine{
		ID: g.ID, State: g.State, WaitMinutes: g.WaitMinutes, LockedToThread: g.LockedToThread,
		Labels: g.Labels, CreatorID: g.CreatorID, Stack: make([]model.Frame, len(g.Frames)),
		System: IsSystem(g),
	}
	for i, f := range g.Frames {
		out.Stack[i] = f.Frame
		if f.Args != "(...)" {
			out.Stack[i].Args = f.Args
		}
	}
	if g.CreatedBy != nil {
		c := g.CreatedBy.Frame
		out.CreatedBy = &c
	}
	return out
}

// Samples converts a dump's goroutines, dropping the scheduler stacks (id
// 0) that SIGQUIT and crash dumps print per M.
func Samples(gs []Goroutine) []model.Goroutine {
	out := make([]model.Goroutine, 0, len(gs))
	for _, g := range gs {
		if g.ID != 0 {
			out = append(out, g.Sample())
		}
	}
	return out
}

// IsSystem reports a goroutine the runtime started for itself: its stack
// is all runtime frames and it was created by the runtime (or nothing),
// as with the GC workers, the finalizer and the timer goroutines the
// traceback shows under GOTRACEBACK=system or in crash dumps.
func IsSystem(g Goroutine) bool {
	if g.CreatedBy != nil && !strings.HasPrefix(g.CreatedBy.Func, "runtime.") {
		return false
	}
	for _, f := range g.Frames {
		if !strings.HasPrefix(f.Func, "runtime.") {
			return false
		}
	}
	return len(g.Frames) > 0
}
