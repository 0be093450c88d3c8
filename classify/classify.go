package classify

import (
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// Classify reads a recording — samples of one process, oldest first, and
// the world around it — and says what it is doing. One sample gives a
// low-confidence answer; two or more tell stopped from slow.
func Classify(rec model.Recording, opts Options) Diagnosis {
	d := Diagnosis{
		Evidence:   []Fact{},
		Threads:    []Actor{},
		Goroutines: []Actor{},
		Groups:     []Group{},
		Locks:      []Lock{},
		Cycles:     []Cycle{},
		Waits:      []Wait{},
		Memory:     memory(rec.Samples, opts),
		Processes:  []Process{},
		Orphans:    []Orphan{},
	}
	if len(rec.Samples) == 0 {
		d.Verdict, d.Confidence, d.Cause = Idle, Low, Cause{Rule: CauseNoSamples, Group: -1}
		return d
	}
	// The adapters: threads, then the locks Python source shows, then
	// goroutines.
	d.Machine = machineLoad(rec.Samples, rec.Host)
	opts.share = d.Machine.Share()
	p := newProc(rec.Samples, rec.Target.Runtime, rec.Resources, rec.Sources, opts)
	p.throttle = throttle(rec.Samples, rec.Target, rec.Host)
	d.Throttle = p.throttle
	p.gc = gcPressure(rec.Samples)
	d.GC = p.gc
	if rec.Target.Runtime != model.RuntimeJava {
		// A JVM dump records its locks' holders itself (java.go).
		p.pythonLocks(rec.Sources)
	}
	p.addGoroutines(opts, rec.Sources)

	g := newGraph(p, &rec, opts)
	for _, pid := range g.order[1:] {
		if peer := g.procs[pid]; len(peer.samples) > 0 {
			peer.verdict, _, _ = peer.ladder(peer.layer(ActorThread), nil, nil, opts)
		}
	}
	d.Cycles = g.cycles()
	p.markChanCycles(g)
	d.Processes = g.processes()
	d.Orphans = g.orphans()
	g.chains()

	d.Tasks, d.Loop = tasks(&rec)
	// One verdict step over both layers.
	tv, tcause := p.decide(&d, g, opts)
	d.Evidence = threadEvidence(p, g, &d, tv, tcause)
	if p.gsamples != nil {
		d.Evidence = append(goEvidence(p, &d, p.layer(ActorGoroutine)), d.Evidence...)
		if len(p.threads) > 0 {
			d.Evidence = append(d.Evidence, Fact{Kind: FactLayer, Cause: &tcause})
		}
	}
	d.Threads, d.Goroutines, d.Groups, d.Locks, d.Waits = p.threads, p.goroutines, p.groups, p.locks, p.waits
	if d.Goroutines == nil {
		d.Goroutines = []Actor{}
	}
	if d.Groups == nil {
		d.Groups = []Group{}
	}
	if d.Waits == nil {
		d.Waits = []Wait{}
	}
	return d
}

// decide is the one verdict step: the ladder over the layer that tells
// the program's story — its goroutines when a source gave them, else its
// threads — with what the other layer knows better: threads that work
// between dumps that caught every goroutine parked; a thread's lock or
// pipe behind goroutines blocked in system calls. It sets d's verdict,
// confidence and cause, and returns the threads' own verdict and cause
// (their evidence, and the layer's fact).
func (p *proc) decide(d *Diagnosis, g *graph, opts Options) (Verdict, Cause) {
	tv, tc, tcause := p.ladder(p.layer(ActorThread), d.Cycles, g, opts)
	if tcause.Rule == CauseBlocked && slices.ContainsFunc(tcause.Kinds, func(k KindCount) bool { return k.Kind == model.WaitPoolResult }) {
		tcause.PoolIdle, tcause.PoolLate = g.poolWaitsForTasks()
		// Each worker waits for a task the target would hand it: a wait
		// for work, idle, whatever its own threads' ladder said.
		for _, pid := range tcause.PoolIdle {
			for i := range d.Processes {
				if d.Processes[i].PID == pid {
					d.Processes[i].Verdict = Idle
				}
			}
		}
	}
	d.Verdict, d.Confidence, d.Cause = tv, tc, tcause
	if cy := taskCycles(d.Tasks); len(cy) > 0 && d.Verdict != Deadlock {
		// asyncio tasks wait for each other's locks: the loop's thread
		// sits in its selector, idle to the kernel, while nothing it runs
		// can ever go on. The worst proven state decides.
		d.Verdict, d.Confidence = Deadlock, Medium
		d.Cause = Cause{Rule: CauseTaskDeadlock, TaskCycle: cy[0], TaskCycles: len(cy), Group: -1}
	} else if d.Verdict == Idle {
		// The loop's thread waits for events, idle to the kernel; a task
		// that waits on a lock, an event or a condition waits for another
		// part of the program, not for work: never idle.
		// A loop nothing can wake but a signal leaves every waiting task
		// waiting for good, whatever it awaits.
		nobody := d.Loop.NobodyLeft()
		var stuck []int
		for i, t := range d.Tasks {
			switch t.Kind {
			case TaskLock, TaskEvent, TaskCondition, TaskSemaphore:
				stuck = append(stuck, i)
			case TaskRuns, TaskDone, TaskFailed:
			default:
				if nobody {
					stuck = append(stuck, i)
				}
			}
		}
		if len(stuck) > 0 {
			d.Verdict, d.Confidence = Blocked, Medium
			d.Cause = Cause{Rule: CauseTasksBlocked, TaskCycle: stuck, Group: -1, NobodyLeft: nobody}
			if nobody {
				d.Confidence = High
			}
		}
	}
	if p.gsamples == nil {
		return tv, tcause
	}
	d.Verdict, d.Confidence, d.Cause = p.ladder(p.layer(ActorGoroutine), d.Cycles, g, opts)
	if d.Verdict == Idle && tv == Working && d.Confidence != High && processCPU(p) >= opts.BusyCPU*100 {
		// Every dump caught the goroutines parked, but the threads use
		// CPU and move: the work happens between the dumps.
		d.Verdict, d.Confidence = Working, Medium
		d.Cause = Cause{Rule: CauseThreadsWork, Layer: ActorGoroutine, CPU: processCPU(p), Group: -1}
	}
	if d.Cause.Rule == CauseBlocked && inSyscalls(p, d.Cause.Actors) && threadsKnowMore(tcause) {
		// The goroutines are blocked in system calls: what they wait
		// for is their threads' wait, which the kernel shows — a lock
		// and its holder, a pipe and its reader.
		d.Verdict, d.Confidence, d.Cause = tv, tc, tcause
	}
	return tv, tcause
}

// inSyscalls reports goroutines that are mostly in system calls.
func inSyscalls(p *proc, refs []Ref) bool {
	n := 0
	for _, r := range refs {
		if a := p.actor(r); a != nil && a.Wait == model.WaitSyscall {
			n++
		}
	}
	return len(refs) > 0 && 2*n > len(refs)
}

// threadsKnowMore reports a threads' cause more telling than goroutines
// blocked in system calls: a lock's holder, a cycle.
func threadsKnowMore(c Cause) bool {
	switch c.Rule {
	case CauseHolderBlocked, CauseHolderSpins, CauseDeadlock, CauseCrossDeadlock:
		return true
	}
	return false
}

// goroutineCount is how many goroutines a sample read, twins included.
func goroutineCount(gs []model.Goroutine) int {
	n := len(gs)
	for i := range gs {
		n += len(gs[i].Twins)
	}
	return n
}

// processCPU is the process's CPU across its threads, the time they waited
// for one included, in percent of a core.
func processCPU(p *proc) float64 {
	cpu := 0.0
	for _, t := range p.threads {
		cpu += t.CPU.Percent + t.CPU.RunqueuePercent
	}
	return cpu
}

// markChanCycles says, of each goroutine the graph found deadlocked on a
// channel, which channels it waits on and who alone could serve them.
func (p *proc) markChanCycles(g *graph) {
	if len(p.chanWhy) == 0 {
		return
	}
	stuck := g.deadlocked()
	for id, why := range p.chanWhy {
		if gr := p.byGID[id]; gr != nil && stuck[gr.Ref] {
			gr.Why.ChanWait = why
		}
	}
}

// holderOf is the actor a cause names first, when it names one.
func holderOf(p *proc, c Cause) *Actor {
	if (c.Rule == CauseHolderSpins || c.Rule == CauseHolderBlocked) && len(c.Actors) > 0 {
		return p.actor(c.Actors[0])
	}
	return nil
}

// threadEvidence is what the threads say: the run, the threads that
// matter, the locks, memory, the GIL, the processes the waits lead to and
// those left behind.
func threadEvidence(p *proc, g *graph, d *Diagnosis, v Verdict, c Cause) []Fact {
	var ev []Fact
	ev = append(ev, Fact{Kind: FactRun, Run: p.layerRun(ActorThread)})
	if len(p.samples) < 2 {
		ev = append(ev, Fact{Kind: FactOneSample})
	}
	var spinning []*Actor
	for i := range p.threads {
		if p.threads[i].Class == ClassSpinning {
			spinning = append(spinning, &p.threads[i])
		}
	}
	add := storyActors(&ev, ActorThread, p, d, c, spinning)
	type waitKey struct {
		class       Class
		wchan, lock string
		call        string
	}
	perWait := map[waitKey]int{}
	for i := range p.threads {
		t := &p.threads[i]
		key := waitKey{t.Class, t.Wchan, t.WaitsFor, ""}
		if t.Syscall.InCall() {
			key.call = t.Syscall.Name
		}
		if (t.Class == ClassBlocked || t.Class == ClassWorking) && perWait[key] < 2 {
			perWait[key]++
			add(t)
		}
	}
	ev = append(ev, p.lockFacts(ActorThread)...)
	ev = append(ev, Fact{Kind: FactMemory, Verdict: v})
	if d.Throttle.Significant() {
		ev = append(ev, Fact{Kind: FactThrottle})
	}
	if t := d.Throttle; t != nil && t.GoMaxProcs > 0 && float64(t.GoMaxProcs) > t.QuotaCores {
		ev = append(ev, Fact{Kind: FactGoMaxProcs})
	}
	if d.Machine.Busy() {
		ev = append(ev, Fact{Kind: FactMachineBusy})
	}
	if d.GC != nil {
		ev = append(ev, Fact{Kind: FactGC})
	}
	for _, t := range p.threads {
		if t.Python != nil && t.Python.OwnsGIL {
			ev = append(ev, Fact{Kind: FactGIL, Ref: t.Ref})
		}
	}
	for _, t := range p.threads {
		if len(d.Tasks) > 0 {
			break // the tasks were read: the loop's thread hides none
		}
		if slices.ContainsFunc(t.Stack, func(f model.Frame) bool { return strings.Contains(f.File, "asyncio/") }) {
			// py-spy shows a thread's stack, which is its running task's:
			// tasks parked on an await (an asyncio.Lock) are not on it.
			ev = append(ev, Fact{Kind: FactAsyncio, Ref: t.Ref})
			break
		}
	}
	for _, pid := range g.order[1:] {
		ev = append(ev, Fact{Kind: FactProcess, Ref: Ref{PID: pid}})
	}
	if len(d.Orphans) > 0 {
		ev = append(ev, Fact{Kind: FactOrphans})
	}
	return ev
}

// layerRun is one layer's run, counted the same way for threads and
// goroutines: its samples and actors (a goroutine counted with its
// twins), and over its actors those not in the first sample (came), not
// in the last (went), and those that moved, each as many as it stands
// for.
func (p *proc) layerRun(kind ActorKind) *RunCounts {
	actors, samples := p.threads, len(p.samples)
	if kind == ActorGoroutine {
		actors, samples = p.goroutines, len(p.gsamples)
	}
	run := &RunCounts{Samples: samples}
	if kind == ActorGoroutine {
		run.Actors, run.Groups = goroutineCount(p.gsamples[samples-1]), len(p.groups)
	} else {
		run.Actors = len(actors)
	}
	for i := range actors {
		if a := &actors[i]; a.Aside.Machinery() {
			run.Aside += a.Count()
		}
	}
	if samples < 2 {
		return run
	}
	first, last := p.presentAt(kind, 0), p.presentAt(kind, samples-1)
	for i := range actors {
		a := &actors[i]
		if !first[a.Ref] {
			run.Came += a.Count()
		}
		if !last[a.Ref] {
			run.Went += a.Count()
		}
		if a.Moved {
			run.Moved += a.Count()
		}
	}
	return run
}

// lockFacts are the locks one layer's actors wait for: a Go mutex is the
// goroutines', every other lock the threads'.
func (p *proc) lockFacts(kind ActorKind) []Fact {
	var ev []Fact
	for _, lk := range p.locks {
		if (lk.Kind == LockGoMutex || lk.Kind == LockGoRWMutex) == (kind == ActorGoroutine) {
			ev = append(ev, Fact{Kind: FactLock, Lock: lk.ID})
		}
	}
	return ev
}

// presentAt is the actors of one layer that sample i holds: its threads
// that had not exited, its goroutines and their twins.
func (p *proc) presentAt(kind ActorKind, i int) map[Ref]bool {
	in := map[Ref]bool{}
	if kind == ActorThread {
		for _, t := range p.samples[i].Threads {
			in[Ref{PID: p.pid, TID: t.TID}] = !t.Exited
		}
		return in
	}
	for _, g := range p.gsamples[i] {
		in[Ref{PID: p.pid, Goroutine: g.ID}] = true
		for _, id := range g.Twins {
			in[Ref{PID: p.pid, Goroutine: id}] = true
		}
	}
	return in
}

// storyActors adds to ev, once each, the actors of one layer that tell the
// story: the cycles' members, the holder the cause names, and the
// spinning ones. It returns the function that adds more of that layer,
// each once too.
func storyActors(ev *[]Fact, kind ActorKind, p *proc, d *Diagnosis, c Cause, spinning []*Actor) func(*Actor) {
	seen := map[Ref]bool{}
	add := func(a *Actor) {
		if a == nil || a.Kind != kind || seen[a.Ref] {
			return
		}
		seen[a.Ref] = true
		*ev = append(*ev, Fact{Kind: FactActor, Ref: a.Ref})
	}
	for _, cy := range d.Cycles {
		for _, r := range cy {
			add(p.actor(r))
		}
	}
	add(holderOf(p, c))
	for _, a := range spinning {
		add(a)
	}
	return add
}

// goEvidence is what the goroutines say: how many there are and how they
// moved, the goroutines that matter, the mutexes, the pile-ups and the
// longest wait.
func goEvidence(p *proc, d *Diagnosis, l *layer) []Fact {
	gs := p.gsamples
	ev := []Fact{{Kind: FactGoroutines, Run: p.layerRun(ActorGoroutine)}}
	c := d.Cause
	if c.HolderIO != nil {
		ev = append(ev, Fact{Kind: FactHolderIO, Ref: c.Actors[0], IO: c.HolderIO})
	}
	if len(gs) < 2 {
		ev = append(ev, Fact{Kind: FactOneDump})
	}
	var forever []Ref
	for _, a := range l.byClass[ClassBlocked] {
		if a.GoWait.NilChan {
			forever = append(forever, a.Ref)
		}
	}
	if len(forever) > 0 {
		ev = append(ev, Fact{Kind: FactForever, Refs: forever})
	}
	storyActors(&ev, ActorGoroutine, p, d, c, l.byClass[ClassSpinning])
	ev = append(ev, p.lockFacts(ActorGoroutine)...)
	for i, g := range p.groups {
		if g.Grew {
			ev = append(ev, Fact{Kind: FactPileUp, Group: i})
		}
	}
	var longest *Actor
	for _, g := range l.byClass[ClassBlocked] {
		if g.WaitMinutes > 0 && (longest == nil || g.WaitMinutes > longest.WaitMinutes) {
			longest = g
		}
	}
	if longest != nil {
		ev = append(ev, Fact{Kind: FactLongestWait, Ref: longest.Ref})
	}
	return ev
}
