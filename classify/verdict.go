package classify

import (
	"slices"

	"github.com/hangdoc/hangdoc/model"
)

// layer is the actors of one kind that a ladder judges: a process's
// threads, or its goroutines (the runtime's own set aside).
type layer struct {
	kind    ActorKind
	actors  []*Actor
	byClass map[Class][]*Actor
	// samples is how many samples the layer was seen in.
	samples int
}

func (p *proc) layer(kind ActorKind) *layer {
	l := &layer{kind: kind, byClass: map[Class][]*Actor{}, samples: len(p.samples)}
	list := p.threads
	if kind == ActorGoroutine {
		list, l.samples = p.goroutines, len(p.gsamples)
	}
	for i := range list {
		a := &list[i]
		if a.Aside != AsideNone {
			continue
		}
		l.actors = append(l.actors, a)
		l.byClass[a.Class] = append(l.byClass[a.Class], a)
	}
	return l
}

// actor finds one of the process's actors by reference.
func (p *proc) actor(r Ref) *Actor {
	if r.PID != p.pid {
		return nil
	}
	if r.Goroutine != 0 {
		return p.byGID[r.Goroutine]
	}
	return p.byTID[r.TID]
}

// ladder gives a layer of a process its verdict, in the order an on-call
// engineer must hear it: a cycle; a lock holder that spins; a lock holder
// that is stuck; something that spins; work; goroutines blocked sending
// with nothing left to receive; a pool with nothing to feed it; something
// blocked; idleness. It is the one verdict ladder: threads, goroutines and
// Python threads all climb it. cycles are the graph's (nil for a peer,
// judged on its own samples).
func (p *proc) ladder(l *layer, cycles []Cycle, g *graph, opts Options) (Verdict, Confidence, Cause) {
	c := Cause{Layer: l.kind, Group: -1, Cycles: len(cycles)}
	v, conf := Idle, Medium

	// The lock whose holder matters most: the one with the most waiters.
	var held *Lock
	var holder *Actor
	for i := range p.locks {
		lk := &p.locks[i]
		who := lk.Holder
		if who == nil && len(lk.Readers) > 0 {
			// A sync.RWMutex held for reading: its readers hold it.
			who = &lk.Readers[0]
		}
		if who == nil || (who.Goroutine != 0) != (l.kind == ActorGoroutine) {
			continue
		}
		if h := p.actor(*who); h != nil && (held == nil || len(lk.Waiters) > len(held.Waiters)) {
			held, holder = lk, h
		}
	}
	// A cycle makes the process deadlocked only if it is in it. Goroutines
	// run on the threads, so a cycle of the process's threads stops its
	// goroutines too; the threads alone know nothing of goroutine cycles.
	cycle := slices.IndexFunc(cycles, func(cy Cycle) bool {
		return slices.ContainsFunc(cy, func(r Ref) bool { return r.PID == p.pid && (l.kind == ActorGoroutine || r.Goroutine == 0) })
	})
	var senders, stranded []*Actor
	for _, a := range l.byClass[ClassBlocked] {
		if a.GoWait.Kind == model.GoChanSend {
			senders = append(senders, a)
		}
		if a.Why.Rule == WhyNobodyLeft {
			stranded = append(stranded, a)
		}
	}
	pool := p.pool
	var lost []Ref
	if l.kind == ActorThread {
		pool = p.threadPool()
		if g != nil {
			lost = g.lostWakeup(p)
		}
	}

	runtimeSays := l.kind == ActorGoroutine && p.runtimeDeadlock
	// The JVM's own deadlock report: its word for the cycle it names.
	jvmSays := l.kind == ActorThread && p.runtime == model.RuntimeJava && p.runtimeDeadlock
	switch {
	case p.stop != nil:
		// Nothing in a stopped process runs until it is continued, what
		// ever its threads were waiting for when it stopped.
		v, conf = Blocked, High
		c.Rule, c.Stop = CauseStopped, p.stop
		for _, a := range p.threads {
			if a.State.Stopped() {
				c.Actors = append(c.Actors, a.Ref)
			}
		}
	case cycle >= 0:
		v, conf = Deadlock, p.cycleConfidence(cycles[cycle])
		c.Rule, c.Cycle, c.Actors = CauseDeadlock, cycle, cycles[cycle]
		if g != nil && slices.ContainsFunc(cycles[cycle], func(r Ref) bool { return r.PID != p.pid }) {
			c.Rule = CauseCrossDeadlock
		}
		if runtimeSays || jvmSays {
			conf, c.RuntimeSaid = High, true
		}
	case runtimeSays:
		// The runtime found no goroutine that could ever run again: that
		// is a deadlock whatever the stacks name.
		v, conf = Deadlock, High
		c.Rule, c.Actors, c.Kinds = CauseRuntimeDeadlock, refs(l.byClass[ClassBlocked]), kindCounts(l.byClass[ClassBlocked])
		c.Group = p.biggestGroup(ClassBlocked)
	case p.gc.Significant() && l.kind == ActorThread:
		// The JVM collects more than it runs the program: every thread
		// stops for the pauses, so what looks blocked or slow is the
		// collector's doing. Working, starved by its own heap.
		v, conf = Working, Medium
		c.Rule, c.GC = CauseGCThrash, p.gc
	case holder != nil && holder.Class == ClassSpinning:
		v, conf = Spinning, basisConfidence(held.Basis.Kind)
		c.Rule, c.Actors, c.Lock = CauseHolderSpins, []Ref{holder.Ref}, held.ID
	case holder != nil && (holder.Class == ClassBlocked || holder.Class == ClassIdle):
		// A holder parked for good (select {}, a sleep, a receive nothing
		// feeds; a thread asleep in a loop) keeps its waiters blocked: it
		// does not make them idle.
		v, conf = Blocked, basisConfidence(held.Basis.Kind)
		c.Rule, c.Actors, c.Lock = CauseHolderBlocked, []Ref{holder.Ref}, held.ID
		if holder.Kind == ActorGoroutine && g != nil {
			c.HolderIO = p.ioChain(holder, g.rec.Resources)
		}
	case p.throttle.Significant() && p.wantsCPU() && (len(l.byClass[ClassSpinning]) > 0 || len(l.byClass[ClassWorking]) > 0):
		// It wants more CPU than its cgroup's quota gives: starved, not
		// hung (a loop cannot be told from work it is not let finish).
		// Only threads say how much CPU they wanted; goroutines run on
		// them.
		v, conf = Working, Medium
		c.Rule, c.Throttle = CauseStarved, p.throttle
		c.Actors = refs(l.byClass[ClassSpinning])
		for _, a := range l.byClass[ClassWorking] {
			if wantsMore(a) || l.kind == ActorGoroutine {
				c.Actors = append(c.Actors, a.Ref)
			}
		}
		for _, t := range p.threads {
			c.CPU += t.CPU.Percent
		}
	case len(stranded) > 0:
		// Nothing that could end these waits is left alive: a lock whose
		// owner is gone, a condition with nobody to signal it.
		v, conf = Blocked, High
		c.Rule, c.Actors, c.Kinds = CauseStranded, refs(stranded), kindCounts(stranded)
	case len(lost) > 0:
		// Threads wait on each other through waits nobody is named for:
		// no cycle is proved (any of them could be the one to signal),
		// but nothing outside them is left to, and each that could waits.
		v, conf = Blocked, Medium
		as := make([]*Actor, 0, len(lost))
		for _, r := range lost {
			as = append(as, p.actor(r))
		}
		c.Rule, c.Actors, c.Kinds = CauseLostWakeup, lost, kindCounts(as)
	case len(l.byClass[ClassSpinning]) > 0:
		sp := l.byClass[ClassSpinning]
		v, conf = Spinning, Medium
		c.Rule, c.Actors = CauseSpinning, refs(sp)
		if l.kind == ActorThread && !slices.ContainsFunc(sp, func(a *Actor) bool { return len(a.Stack) == 0 || !a.CPU.Known }) {
			// Measured CPU and a stack that did not move; a dump's flags
			// say less.
			conf = High
		}
	case len(l.byClass[ClassWorking]) > 0:
		w := l.byClass[ClassWorking]
		v, conf = Working, Medium
		c.Rule, c.Actors = CauseWorking, refs(w)
		for _, a := range w {
			c.CPU += a.CPU.Percent
		}
		if l.kind == ActorGoroutine {
			// A few goroutines that move (a ticker, a health check) do not
			// make a pile of blocked ones healthy.
			if gr := p.biggestGroup(ClassBlocked); gr >= 0 && p.groups[gr].Count > len(w) {
				c.Group, conf = gr, Low
			}
		}
	case len(senders) > 0 && len(pool) == 0:
		// Blocked, not deadlocked: no cycle is proved (a parked goroutine
		// may yet receive; a listener may start one), and the runtime,
		// which would know, has not said so.
		v, conf = Blocked, Medium
		c.Rule, c.Actors = CauseSendersStuck, refs(senders)
		if slices.ContainsFunc(senders, func(a *Actor) bool { return a.GoWait.Leaked }) {
			// The leak detector proved it: nothing live can reach their
			// channels.
			v, conf, c.Leaked = Deadlock, High, true
			runtimeSays = true
		}
	case len(pool) > 0 && !slices.ContainsFunc(l.byClass[ClassBlocked], stopsWork):
		v, conf = Idle, High
		c.Rule, c.Actors = CausePool, pool
		if l.kind == ActorGoroutine {
			p.poolProof(l, &c)
		} else if c.Joiners = p.poolJoiners(pool); len(c.Joiners) > 0 {
			// A thread alive in a join waits for one of the others, who
			// all wait: it never returns. The feeder is gone, but the
			// program still waits for its workers.
			v = Blocked
		}
	case len(l.byClass[ClassBlocked]) > 0:
		// The worst proven state decides: goroutines blocked behind a
		// holder, requests in flight, a join beside an idle pool make the
		// verdict blocked, whatever idle crowd stands around them.
		b := l.byClass[ClassBlocked]
		v, conf = Blocked, High
		c.Rule, c.Actors, c.Kinds = CauseBlocked, refs(b), kindCounts(b)
		c.Group = p.biggestGroup(ClassBlocked)
		if l.kind == ActorGoroutine {
			p.leadGroup(b, &c)
		}
	default:
		idle := l.byClass[ClassIdle]
		c.Rule, c.Actors, c.Kinds = CauseIdle, refs(idle), kindCounts(idle)
		c.SleepOnly = len(idle) > 0 && !slices.ContainsFunc(idle, func(a *Actor) bool { return a.Wait != model.WaitSleep })
		if l.kind == ActorGoroutine {
			c.Group = p.biggestGroup(ClassIdle)
		} else if len(idle) == 0 {
			c.Rule, conf = CauseNoLive, Low
		}
	}
	if l.samples < 2 && !runtimeSays && !(jvmSays && v == Deadlock) {
		conf = Low
	}
	if v == Blocked && l.kind == ActorGoroutine {
		c.Beside, c.BesidePool = p.idleBeside(l)
	}
	return v, conf, c
}

// stopsWork reports a blocked goroutine that an idle pool beside it does
// not excuse: one waiting for a lock, a join (a WaitGroup, a condition:
// others it waits for), I/O or a request in flight — anything but a plain
// receive or select of its own.
func stopsWork(a *Actor) bool {
	if a.Kind != ActorGoroutine {
		return false
	}
	return a.WaitsFor != "" || InFlight(a.Stack) >= 0 || a.Wait != model.WaitChannel && a.Wait != model.WaitSelect && a.Wait != model.WaitOther
}

// leadGroup picks the group a blocked verdict on goroutines leads with:
// the chain that stops work first — the waiters of the lock most wait
// for, then the requests in flight, then the biggest blocked group — and
// counts the requests in flight and names their handler.
func (p *proc) leadGroup(blocked []*Actor, c *Cause) {
	waiters := map[int]int{} // group → goroutines in it that wait for a lock
	requests := map[int]int{}
	for _, a := range blocked {
		if a.WaitsFor != "" {
			waiters[a.Group] += a.Count()
		}
		if InFlight(a.Stack) >= 0 {
			requests[a.Group] += a.Count()
			c.Requests += a.Count()
		}
	}
	pick := func(m map[int]int) int {
		best := -1
		for g, n := range m {
			if best < 0 || n > m[best] || n == m[best] && g < best {
				best = g
			}
		}
		return best
	}
	if g := pick(waiters); g >= 0 {
		c.Group = g
		return
	}
	if g := pick(requests); g >= 0 {
		c.Group = g
		if st := p.groups[g].Stack; InFlight(st) >= 0 {
			c.Handler = st[InFlight(st)].Func
		}
	}
}

// idleBeside is the biggest group of the program's idle goroutines (with
// frames of its own: a library's connection loops are not its crowd), for
// a blocked verdict to say what else waits, and whether they are a pool's
// workers; nil for none.
func (p *proc) idleBeside(l *layer) (*Group, bool) {
	best, pool := -1, false
	for _, a := range l.byClass[ClassIdle] {
		if UserFrame(a.Stack) >= 0 && a.Group >= 0 && a.Group < len(p.groups) && (best < 0 || p.groups[a.Group].Count > p.groups[best].Count) {
			best, pool = a.Group, a.Why.Rule == WhyGoPool || a.Why.Rule == WhyGoIdleWorkers
		}
	}
	if best < 0 || p.groups[best].Count < 2 {
		return nil, false
	}
	g := p.groups[best]
	return &g, pool
}

// poolProof says what a pool's verdict rests on: whether the evidence
// proves nobody is left to feed it (classify's WhyGoPool), and if not why
// not — an excerpt of a dump, or the program's goroutines outside the
// pool, which may yet feed it.
func (p *proc) poolProof(l *layer, c *Cause) {
	c.Excerpt = p.excerpt()
	c.NobodyLeft = !c.Excerpt
	for _, a := range l.actors {
		if a.Why.Rule == WhyGoPool || a.Why.Rule == WhyGoIdleWorkers || parkedForGood(a) {
			continue
		}
		c.NobodyLeft = false
		c.OutsideN += a.Count()
		if len(c.Outside) < 3 {
			c.Outside = append(c.Outside, a.Ref)
		}
	}
	// A live program's memory scan proves it whatever else is alive: no
	// goroutine but the workers refers to their channel.
	for _, a := range l.actors {
		if a.Why.Rule == WhyGoPool && p.chanCounterparts(a).Nobody() {
			c.NobodyLeft = true
			break
		}
	}
}

func refs(as []*Actor) []Ref {
	out := make([]Ref, 0, len(as))
	for _, a := range as {
		out = append(out, a.Refs()...) // a goroutine's twins too
	}
	return out
}

// kindCounts says what a set of actors waits for, most common first: "7
// waiting for a lock, 1 writing to a full pipe".
func kindCounts(as []*Actor) []KindCount {
	var out []KindCount
	for _, a := range as {
		k := a.Wait
		if a.WaitsFor != "" && a.Kind == ActorThread && a.Wait != model.WaitFileLock && !javaLockWait(a.Wait) {
			k = model.WaitLock
		}
		if i := slices.IndexFunc(out, func(kc KindCount) bool { return kc.Kind == k }); i >= 0 {
			out[i].N += a.Count()
			continue
		}
		out = append(out, KindCount{Kind: k, N: a.Count()})
	}
	slices.SortStableFunc(out, func(a, b KindCount) int { return b.N - a.N })
	return out
}

// biggestGroup is the index of the biggest group of the class, -1 if none.
func (p *proc) biggestGroup(c Class) int {
	for i := range p.groups {
		if p.groups[i].Class == c {
			return i
		}
	}
	return -1
}

// basisConfidence is how far a verdict that rests on a lock's holder goes:
// as far as the holder is known.
func basisConfidence(k BasisKind) Confidence {
	switch k {
	case BasisProbable:
		return Medium
	case BasisInferred:
		return Low
	}
	return High
}

// cycleConfidence is a cycle's: that of its weakest edge. Lock edges are as
// sure as their holders; the kernel's (pipes, children) are sure.
func (p *proc) cycleConfidence(c Cycle) Confidence {
	conf := High
	for _, r := range c {
		a := p.actor(r)
		if a == nil {
			continue
		}
		if l := p.lockByID(a.WaitsFor); l != nil && l.Holder != nil {
			conf = max(conf, basisConfidence(l.Basis.Kind))
		}
		if w := p.waitOf(r.TID); r.Goroutine == 0 && w != nil && w.Basis == EdgeInferred {
			conf = max(conf, Medium) // the only candidate left, not a proof
		}
	}
	return conf
}
