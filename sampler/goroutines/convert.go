package goroutines

import "github.com/hangdoc/hangdoc/model"

// Sample returns g as a stack source hands it to the sampler: its frames
// with their argument words, no offsets.
func (g Goroutine) Sample() model.Goroutine {
	out := model.Goroutine{
		ID: g.ID, State: g.State, WaitMinutes: g.WaitMinutes, LockedToThread: g.LockedToThread,
		Labels: g.Labels, CreatorID: g.CreatorID, Stack: make([]model.Frame, len(g.Frames)),
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
