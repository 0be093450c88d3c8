package report

import (
	"fmt"
	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// The report's tables, built from classify's actors, locks and groups.

func frames(fs []model.Frame) []Frame {
	out := make([]Frame, len(fs))
	for i, f := range fs {
		out[i] = Frame{Func: f.Func, File: f.File, Line: f.Line, Args: f.Args}
	}
	return out
}

// nativeFrames are a Python thread's native frames, marked; nil for none.
func nativeFrames(native []model.Frame) []Frame {
	if len(native) == 0 {
		return nil
	}
	out := frames(native)
	for i := range out {
		out[i].Native = true
	}
	return out
}

// sharedFrames converts each distinct stack once: threads that share
// their stack (a JVM dump's parked pool) share its report frames.
type sharedFrames map[*model.Frame][]Frame

func (m sharedFrames) of(fs []model.Frame) []Frame {
	if len(fs) == 0 {
		return frames(fs)
	}
	key := &fs[0]
	if out, ok := m[key]; ok && len(out) == len(fs) {
		return out
	}
	out := frames(fs)
	m[key] = out
	return out
}

func refs(rs []classify.Ref) []Ref {
	out := make([]Ref, len(rs))
	for i, r := range rs {
		out[i] = ref(r)
	}
	return out
}

func (w *words) threads() []Thread {
	out := make([]Thread, 0, len(w.d.Threads))
	shared := sharedFrames{}.of
	for i := range w.d.Threads {
		t := &w.d.Threads[i]
		x := Thread{
			TID: t.Ref.TID, NSTID: t.NSTID, Name: t.Name, Class: classWord(t),
			CPUPercent: t.CPU.Percent, RunqueuePercent: t.CPU.RunqueuePercent,
			State: t.State.String(), Wchan: t.Wchan, Syscall: view(t.Syscall), FD: t.FD,
			Voluntary: t.Voluntary, Involuntary: t.Involuntary, Moved: t.Moved, Seen: t.Seen,
			Why: w.whyText(t), Holds: append([]string{}, t.Holds...), Waits: t.WaitsFor, Stack: shared(t.Stack), NativeStack: nativeFrames(t.Native),
			where: threadWhere(t.Stack),
		}
		if p := t.Python; p != nil {
			x.Python = &Python{ThreadName: p.ThreadName, OwnsGIL: p.OwnsGIL, Active: p.Active, ActiveRead: p.ActiveRead}
			if p.Ident != 0 {
				x.Python.Ident = fmt.Sprintf("0x%016x", p.Ident)
			}
		}
		x.Java = javaThread(t)
		x.OnCPU = onCPUView(t.OnCPU)
		out = append(out, x)
	}
	return out
}

func (w *words) goroutines() GoroutineList {
	out := make(GoroutineList, 0, len(w.d.Goroutines))
	for i := range w.d.Goroutines {
		g := &w.d.Goroutines[i]
		x := Goroutine{
			ID: g.Ref.Goroutine, State: g.GoState, WaitMinutes: g.WaitMinutes, Class: g.Class.String(),
			BlockedOn: g.Wait.String(), Thread: g.Thread, System: g.Aside.Machinery(), Moved: g.Moved, Seen: g.Seen,
			Why: w.whyText(g), Waits: g.WaitsFor, Holds: append([]string{}, g.Holds...), Group: g.Group,
			Stack: frames(g.Stack), where: Where(g.Stack),
		}
		if g.CreatedBy != nil {
			c := frames([]model.Frame{*g.CreatedBy})[0]
			x.CreatedBy = &c
		}
		x.Labels = w.labelsOf(g.Ref.Goroutine)
		x.Twins = g.Twins
		out = append(out, x)
	}
	return out
}

func (w *words) groups() []Group {
	out := make([]Group, 0, len(w.d.Groups))
	for _, g := range w.d.Groups {
		out = append(out, Group{Count: g.Count, State: g.State, Class: g.Class.String(), Title: groupTitle(g),
			IDs: append([]int64{}, g.IDs...), Counts: g.Counts, Grew: g.Grew, Stack: frames(g.Stack)})
	}
	return out
}

func (w *words) locks() []Lock {
	out := make([]Lock, 0, len(w.d.Locks))
	for i := range w.d.Locks {
		l := &w.d.Locks[i]
		x := Lock{ID: l.ID, Kind: l.Kind.String(), Address: l.Address, Waiters: refs(l.Waiters), Basis: w.basisText(l), Readers: refs(l.Readers)}
		if l.Holder != nil || len(l.Readers) > 0 {
			x.BasisKind = l.Basis.Kind.String()
		}
		if len(x.Readers) == 0 {
			x.Readers = nil
		}
		if l.Holder != nil {
			h := ref(*l.Holder)
			x.Holder = &h
		}
		out = append(out, x)
	}
	return out
}

var stopSignalWords = map[classify.StopSignal]string{
	classify.StopSignalUnknown: "signal", classify.StopSignalJob: "job-control",
	classify.StopSignalTTIN: "SIGTTIN", classify.StopSignalTTOU: "SIGTTOU",
}

func (w *words) stop(st *classify.StopFact) *Stop {
	if st == nil {
		return nil
	}
	s := &Stop{Signal: stopSignalWords[st.Signal], Pending: append([]string{}, st.Pending...)}
	if st.Traced {
		s.Signal = "tracer"
		if st.Tracer > 0 {
			s.Tracer = &Tracer{PID: st.Tracer, Hangdoc: st.ByHangdoc}
			if p := w.procs[st.Tracer]; p != nil {
				s.Tracer.Cmdline = p.Cmdline
			}
		}
	}
	return s
}

func cpuBlock(t *classify.Throttle, m *classify.MachineLoad) *CPU {
	if t == nil && m == nil {
		return nil
	}
	pct := func(p float64) *float64 {
		if p < 0 {
			return nil
		}
		return &p
	}
	c := &CPU{}
	if t != nil {
		c.Throttled = &Throttled{Cgroup: t.Cgroup, Version: t.Version, QuotaCores: t.QuotaCores, Periods: t.Periods, Throttled: t.Throttled,
			Percent: t.Percent, ThrottledSeconds: t.ThrottledSeconds, Starved: t.Significant(), Alone: t.Alone, PressurePercent: pct(t.PressurePercent),
			GoMaxProcs: t.GoMaxProcs, GoMaxProcsFrom: t.GoMaxProcsFrom}
	}
	if m != nil {
		c.Machine = &MachineCPU{CPUs: m.CPUs, BusyPercent: m.BusyPercent, Load1: m.Load1, PressurePercent: pct(m.PressurePercent), Busy: m.Busy()}
	}
	return c
}

func (w *words) cycles() [][]Ref {
	out := make([][]Ref, 0, len(w.d.Cycles))
	for _, c := range w.d.Cycles {
		out = append(out, refs(c))
	}
	return out
}

func onCPUView(p *classify.CPUProfile) *OnCPU {
	if p == nil {
		return nil
	}
	v := &OnCPU{Samples: p.Samples, Kernel: p.Kernel, Top: []CPUFunc{}}
	if p.LoopSamples > 0 {
		v.Loop = &CPULoop{Func: p.Loop.Func, File: p.Loop.File, FirstLine: p.Loop.Line, LastLine: p.LastLine, Samples: p.LoopSamples}
	}
	for _, t := range p.Top {
		v.Top = append(v.Top, CPUFunc{Func: t.Func, File: t.File, Samples: t.Samples})
	}
	return v
}
