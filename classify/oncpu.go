package classify

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// CPUProfile is where the kernel's CPU-clock sampling caught a thread
// running over a run (model.OnCPU, summed over the samples): where a
// spinning thread or goroutine loops, and what a working one does.
type CPUProfile struct {
	// Samples is how many times it was caught running, Kernel how many
	// of them in the kernel.
	Samples, Kernel int
	// Loop is the innermost function that LoopSamples of the samples
	// have on their stack: where a spinner stays. Its Line is the first
	// line caught in it, LastLine the last (0 without line tables: a
	// native function).
	Loop        model.Frame
	LastLine    int
	LoopSamples int
	// MostOn is how many samples have on their stack the function that
	// is on the most: a Python thread whose busiest C function above the
	// interpreter is on few runs Python code.
	MostOn int
	// Stack is the most frequent stack from Loop outwards: a running
	// goroutine's, whose own saved stack is stale.
	Stack []model.Frame
	// Top are the functions most often innermost, most first, at most
	// three: what a working thread spends its CPU on. Leaves are all of
	// them, most first (a run's functions are summed from them).
	Top    []FuncShare
	Leaves []FuncShare
}

// FuncShare is a function and how many samples caught it innermost.
type FuncShare struct {
	Func    string
	File    string
	Samples int
}

// loopShare is the least share of the samples a function must be on
// the stack of to be called the loop a thread stays in.
const loopShare = 0.9

// profileOf sums a thread's on-CPU profiles over its readings; nil when
// none caught it running.
func profileOf(readings []model.Thread) *CPUProfile {
	var stacks []model.CPUStack
	var funcs []model.FuncCount
	p := &CPUProfile{}
	counted := true // every reading counts its functions (Funcs)
	for _, r := range readings {
		if r.OnCPU == nil {
			continue
		}
		p.Samples += r.OnCPU.Samples
		p.Kernel += r.OnCPU.Kernel
		stacks = append(stacks, r.OnCPU.Stacks...)
		funcs = append(funcs, r.OnCPU.Funcs...)
		counted = counted && (len(r.OnCPU.Funcs) > 0 || len(r.OnCPU.Stacks) == 0)
	}
	if p.Samples == 0 || len(stacks) == 0 {
		return nil
	}
	// The most frequent stack first: the loop is looked for on it.
	slices.SortStableFunc(stacks, func(a, b model.CPUStack) int { return cmp.Compare(b.N, a.N) })
	top := map[string]*FuncShare{}
	on := map[string]int{} // by function: samples with it on their stack
	lines := map[string][2]int{}
	if !counted {
		// A recording from before Funcs: the kept stacks are all there is.
		funcs = model.CountFuncs(stacks)
	}
	// Counted over every stack caught, those not kept too: a loop that
	// never takes the same path twice spreads over more stacks than are
	// kept.
	for _, c := range funcs {
		if c.Leaf > 0 {
			if t := top[c.Func]; t != nil {
				t.Samples += c.Leaf
			} else {
				top[c.Func] = &FuncShare{Func: c.Func, File: c.File, Samples: c.Leaf}
			}
		}
		on[c.Func] += c.OnStack
		if c.FirstLine > 0 {
			l, ok := lines[c.Func]
			if !ok || c.FirstLine < l[0] {
				l[0] = c.FirstLine
			}
			l[1] = max(l[1], c.LastLine)
			lines[c.Func] = l
		}
	}
	for _, t := range top {
		p.Top = append(p.Top, *t)
	}
	slices.SortFunc(p.Top, func(a, b FuncShare) int {
		if c := cmp.Compare(b.Samples, a.Samples); c != 0 {
			return c
		}
		return strings.Compare(a.Func, b.Func)
	})
	p.Leaves = p.Top
	p.Top = p.Top[:min(3, len(p.Top))]
	// The loop: on the most frequent stack, the innermost function that
	// most samples have on theirs. The runtime's own frames (the
	// scheduler a loop is preempted into) are no loop.
	// A callee the loop calls each time round is on most samples' stacks
	// but not on all: the loop is the innermost function on (nearly) as
	// many as any, a few broken walks aside.
	most := 0
	for _, n := range on {
		most = max(most, n)
	}
	p.MostOn = most
	least := max(int(loopShare*float64(p.Samples)+0.5), most-p.Samples/50)
	first := stacks[0].Frames
	for i, f := range first {
		if on[f.Func] < least || i+1 < len(first) && strings.HasPrefix(f.Func, "runtime.") || f.File == "" {
			// Nor is code no file maps (a JIT's, named by its address
			// alone): the loop is the first function with a name.
			continue
		}
		p.Loop, p.LoopSamples, p.LastLine = f, on[f.Func], f.Line
		p.Stack = first[i:]
		break
	}
	if p.LoopSamples == 0 {
		return p
	}
	// Its lines: every line the loop's function was caught at.
	if l, ok := lines[p.Loop.Func]; ok {
		p.Loop.Line, p.LastLine = l[0], l[1]
	}
	return p
}
