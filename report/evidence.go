package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// evidence words the observations behind the verdict, in classify's order.
func (w *words) evidence(facts []classify.Fact) []string {
	out := make([]string, 0, len(facts))
	for _, f := range facts {
		if s := w.fact(f); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (w *words) fact(f classify.Fact) string {
	switch f.Kind {
	case classify.FactRun:
		if w.dumps() {
			return fmt.Sprintf("%s, %s; a dump has no CPU, scheduling state or syscalls: not in a dump", plural(f.Run.Samples, "dump", "dumps"), plural(f.Run.Actors, "thread", "threads"))
		}
		return runText(w.rec.Samples, f.Run)
	case classify.FactOneSample:
		if w.dumps() {
			return "only one dump: it cannot tell stopped from slow"
		}
		return "only one sample: it cannot tell stopped from slow, and CPU use is unknown"
	case classify.FactActor:
		a := w.actor(f.Ref)
		if a.Kind == classify.ActorGoroutine {
			return w.goroutineLine(a)
		}
		return w.threadLine(a)
	case classify.FactLock:
		l := w.lock(f.Lock)
		who := plural(len(l.Waiters), "thread waits", "threads wait")
		if l.Kind == classify.LockGoMutex || l.Kind == classify.LockGoRWMutex {
			who = plural(len(l.Waiters), "goroutine waits", "goroutines wait")
		}
		return fmt.Sprintf("%s: %s on it; %s", l.ID, who, w.basisText(l))
	case classify.FactMemory:
		if w.dumps() {
			return "memory: not in a dump"
		}
		return memoryEvidence(w.d.Memory, f.Verdict)
	case classify.FactGIL:
		t := w.actor(f.Ref)
		if len(t.Stack) == 0 {
			// Its stack moved under every read (it runs): the GIL says
			// who it is, not where.
			return fmt.Sprintf("tid %d (%s) holds the GIL (its stack changed under every read: not shown)", t.Ref.TID, t.Name)
		}
		return fmt.Sprintf("tid %d (%s) holds the GIL at %s", t.Ref.TID, t.Name, threadWhere(t.Stack))
	case classify.FactProcess:
		p := w.procs[f.Ref.PID]
		return fmt.Sprintf("pid %d (%s), %d wait(s) away: %s", p.PID, shortCmd(p.Cmdline), p.Depth, w.stateOf(p.PID))
	case classify.FactOrphans:
		var pids []string
		for _, o := range w.d.Orphans {
			pids = append(pids, fmt.Sprintf("%d (%s)", o.PID, o.Command))
		}
		return fmt.Sprintf("%s left behind in its process group, reparented when their parent exited: %s",
			plural(len(w.d.Orphans), "process", "processes"), strings.Join(pids, ", "))
	case classify.FactGoroutines:
		r := f.Run
		moved := "one dump"
		if r.Samples > 1 {
			moved = fmt.Sprintf("across %d dumps %d moved, %d appeared and %d ended", r.Samples, r.Moved, r.Came, r.Went)
		}
		return fmt.Sprintf("%s in the last sample (%d of them the runtime's, the profiler's or an HTTP server's machinery), in %s; %s",
			plural(r.Actors, "goroutine", "goroutines"), r.Aside, plural(r.Groups, "group", "groups"), moved)
	case classify.FactHolderIO:
		return fmt.Sprintf("goroutine %d [IO wait] waits in the runtime's poller; the kernel says the descriptor is %s", f.Ref.Goroutine, w.ioChainText(f.IO))
	case classify.FactOneDump:
		return "only one goroutine dump: it cannot tell stopped from slow"
	case classify.FactForever:
		return fmt.Sprintf("%s can never wake: %s", plural(len(f.Refs), "goroutine", "goroutines"), goList(w.actorsOf(f.Refs)))
	case classify.FactPileUp:
		g := w.d.Groups[f.Group]
		return fmt.Sprintf("pile-up: %s grew from %d to %d during the run", groupTitle(g), g.Counts[0], g.Counts[len(g.Counts)-1])
	case classify.FactLongestWait:
		g := w.actor(f.Ref)
		return fmt.Sprintf("goroutine %d has waited at least %d minutes; the runtime stamps wait times only at garbage collection, so every figure is a lower bound and a goroutine without one may have waited as long",
			g.Ref.Goroutine, g.WaitMinutes)
	case classify.FactThrottle:
		t := w.d.Throttle
		s := fmt.Sprintf("its cgroup %s (v%d) has a CPU quota of %s cores: throttled in %d of the run's %d periods (%.0f%%), %.1fs in all",
			t.Cgroup, t.Version, cores(t.QuotaCores), t.Throttled, t.Periods, t.Percent, t.ThrottledSeconds)
		if t.Alone {
			s += "; the target is the only process in it"
		}
		if t.PressurePercent >= 0 {
			s += fmt.Sprintf("; its CPU pressure: some task waited for a CPU %.0f%% of the time", t.PressurePercent)
		}
		return s
	case classify.FactGoMaxProcs:
		t := w.d.Throttle
		from := "the Go runtime's default for " + w.rec.Target.RuntimeVersion
		if t.GoMaxProcsFrom == "GOMAXPROCS" {
			from = "its GOMAXPROCS variable"
		}
		return fmt.Sprintf("GOMAXPROCS is %d (%s), more than its quota of %s cores: up to %d threads run at once and spend each period's quota in a burst, then all wait for the next",
			t.GoMaxProcs, from, cores(t.QuotaCores), t.GoMaxProcs)
	case classify.FactGC:
		g := w.d.GC
		s := fmt.Sprintf("the JVM's counters (hsperfdata): %.0f%% of the %.1fs between the first and last sample in garbage collection pauses (%d collections), %.0f%% in safepoints", g.Percent, g.Seconds, g.GCs, g.SafepointPercent)
		if g.HeapMax > 0 {
			s += fmt.Sprintf("; heap %s of %s", Bytes(g.HeapUsed), Bytes(g.HeapMax))
		}
		return s
	case classify.FactMachineBusy:
		m := w.d.Machine
		s := fmt.Sprintf("the machine is busy: %.0f%% of its %d CPUs' time was used during the run, load %.1f", m.BusyPercent, m.CPUs, m.Load1)
		if m.PressurePercent >= 0 {
			s += fmt.Sprintf("; some task waited for a CPU %.0f%% of the time", m.PressurePercent)
		}
		return s
	case classify.FactLayer:
		return "the OS threads alone: " + w.summary(*f.Cause)
	case classify.FactAsyncio:
		return fmt.Sprintf("%s runs an asyncio event loop: a stack shows only the task that is running, so tasks parked on an await (an asyncio.Lock, a queue, a future) are not seen here and cannot be named as waiters or holders", threadName(w.actor(f.Ref)))
	}
	return ""
}

func runText(samples []model.Sample, r *classify.RunCounts) string {
	s := plural(r.Samples, "sample", "samples")
	if len(samples) > 1 {
		s += fmt.Sprintf(" over %.1fs", samples[len(samples)-1].Time.Sub(samples[0].Time).Seconds())
	}
	s += ", " + plural(r.Actors, "thread", "threads")
	if r.Came+r.Went == 0 {
		return s + ", none came or went"
	}
	return s + fmt.Sprintf(", %d appeared and %d exited during the run", r.Came, r.Went)
}

// threadLine is a thread's readings in one line.
func (w *words) threadLine(t *classify.Actor) string {
	if !t.CPU.Known {
		// Read from a dump: its stack, and no kernel readings at all.
		line := fmt.Sprintf("%s: %s", threadName(t), w.whyText(t))
		if wh := threadWhere(t.Stack); wh != "" {
			line += "; at " + wh
		}
		return line + "; CPU, state and switches: not in a dump"
	}
	line := fmt.Sprintf("%s: %s; %.1f%% CPU", threadName(t), w.whyText(t), t.CPU.Percent)
	if t.State.Known() {
		line += ", state " + t.State.String()
	}
	if wh := threadWhere(t.Stack); wh != "" {
		line += ", at " + wh
	}
	if t.Wchan != "" {
		line += ", wchan " + t.Wchan
	}
	if c := callText(t.Syscall); c != "" {
		line += ", " + c
	}
	if t.FD != "" {
		line += " → " + t.FD
	}
	line += fmt.Sprintf(", %d voluntary switches", t.Voluntary)
	if t.OnCPU != nil {
		line += "; " + onCPULine(t)
	}
	return line
}

// goroutineLine is a goroutine's readings in one line.
func (w *words) goroutineLine(g *classify.Actor) string {
	line := fmt.Sprintf("goroutine %d [%s]: %s; at %s", g.Ref.Goroutine, g.GoState, w.whyText(g), Where(g.Stack))
	if l := labelText(w.labelsOf(g.Ref.Goroutine)); l != "" {
		line = fmt.Sprintf("goroutine %d [%s] %s: %s; at %s", g.Ref.Goroutine, g.GoState, l, w.whyText(g), Where(g.Stack))
	}
	if g.Thread != 0 {
		line += fmt.Sprintf(", on tid %d", g.Thread)
	}
	if g.OnCPU != nil {
		line += "; its thread " + onCPULine(g)
	}
	return line
}

func memoryEvidence(m classify.Memory, v classify.Verdict) string {
	if len(m.RSSBytes) == 0 || slices.Max(m.RSSBytes) == 0 {
		return "memory: not read"
	}
	first, last := m.RSSBytes[0], m.RSSBytes[len(m.RSSBytes)-1]
	switch m.Trend {
	case model.TrendFlat:
		s := fmt.Sprintf("RSS flat at %s", Bytes(last))
		if v == classify.Blocked || v == classify.Deadlock || v == classify.Idle || v == classify.Spinning {
			s += ": flat memory with flat waits, a stall"
		}
		return s
	case model.TrendGrowing:
		return fmt.Sprintf("RSS grows from %s to %s during the run", Bytes(first), Bytes(last))
	case model.TrendShrinking:
		return fmt.Sprintf("RSS shrinks from %s to %s during the run", Bytes(first), Bytes(last))
	}
	return fmt.Sprintf("RSS %s (one sample, no trend)", Bytes(last))
}

// Bytes prints a size the way people read it: 1.2 MiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// cpuLoopText says where the kernel's sampling caught an actor running:
// "main.(*Cache).Refresh (main.go:69–70), 100% of 37 samples on a CPU".
func cpuLoopText(p *classify.CPUProfile) string {
	return fmt.Sprintf("%s, %d%% of %s on a CPU", frameAt(p.Loop, p.LastLine), percentOf(p.LoopSamples, p.Samples), plural(p.Samples, "sample", "samples"))
}

// frameAt is a function with where it is: its file and lines for code
// with line tables, the file mapped there for native code without.
func frameAt(f model.Frame, last int) string {
	switch {
	case f.File == "":
		return f.Func
	case f.Line == 0:
		return fmt.Sprintf("%s (in %s)", f.Func, filepath.Base(f.File))
	case last > f.Line:
		return fmt.Sprintf("%s (%s:%d–%d)", f.Func, filepath.Base(f.File), f.Line, last)
	}
	return fmt.Sprintf("%s (%s:%d)", f.Func, filepath.Base(f.File), f.Line)
}

func percentOf(n, of int) int {
	if of == 0 {
		return 0
	}
	return (100*n + of/2) / of
}

// onCPULine is an actor's on-CPU samples in one evidence clause: the
// loop it stays in, or, for one that does not stay in one, the functions
// it was caught in most.
func onCPULine(a *classify.Actor) string {
	p := a.OnCPU
	s := fmt.Sprintf("caught on a CPU %s by the kernel's sampling", plural(p.Samples, "time", "times"))
	if p.Kernel > 0 {
		s += fmt.Sprintf(" (%d in the kernel)", p.Kernel)
	}
	if p.LoopSamples > 0 && a.Class == classify.ClassSpinning {
		return s + ": in " + cpuLoopText(p)
	}
	var top []string
	for _, t := range p.Top {
		top = append(top, fmt.Sprintf("%s %d%%", t.Func, percentOf(t.Samples, p.Samples)))
	}
	return s + ": most in " + strings.Join(top, ", ")
}
