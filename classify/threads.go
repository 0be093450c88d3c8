package classify

import (
	"slices"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// The thread adapter: every OS thread of a process is an actor, classified
// from the kernel's readings across the samples.

// history is one thread across the run: its readings in sample order.
type history struct {
	tid      int
	readings []model.Thread
	times    []time.Time
	paused   []bool // a stack source paused the process after this reading
	// foreign: something other than this diagnosis may have stopped the
	// process since the reading before (model.ForeignStop).
	foreign []bool
	// frozen is how long a stack source kept the process stopped after
	// this reading (Delve): time in which no thread could run.
	frozen []time.Duration
}

func (h *history) last() model.Thread { return h.readings[len(h.readings)-1] }

// lastWaiting is the last reading that caught the thread off a CPU, or the
// last reading if none did. A reading caught in a passing stop (state t or
// T where others are not: another diagnosis's pause) says nothing of the
// thread's wait.
func lastWaiting(readings []model.Thread) model.Thread {
	passing := passingStops(readings)
	for i := len(readings) - 1; i >= 0; i-- {
		if readings[i].State != model.StateRunning && !passing[i] {
			return readings[i]
		}
	}
	for i := len(readings) - 1; i >= 0; i-- {
		if !passing[i] {
			return readings[i]
		}
	}
	return readings[len(readings)-1]
}

// passingStops marks the readings that caught a thread stopped (t or T)
// when others did not: a stop that came and went, someone else's. A
// thread stopped in every reading is stopped; nil when none is marked.
func passingStops(readings []model.Thread) []bool {
	n := 0
	for _, r := range readings {
		if r.State.Stopped() {
			n++
		}
	}
	if n == 0 || n == len(readings) {
		return make([]bool, len(readings))
	}
	out := make([]bool, len(readings))
	for i, r := range readings {
		out[i] = r.State.Stopped()
	}
	return out
}

// proc is one sampled process and what the adapters made of it.
type proc struct {
	pid     int
	cmdline string
	depth   int
	err     string
	samples []model.Sample
	runtime model.Runtime
	res     map[string]model.Resource
	// sources are the source files the stacks point into (path → lines):
	// for a thread read from dumps, the line it stands at says what it
	// does.
	sources map[string][]string

	threads []Actor
	byTID   map[int]*Actor
	live    map[int]bool
	// waiting is each thread's last wait, from lastWaiting.
	waiting map[int]model.Thread
	// naps are the threads' last readings in a retry-length sleep
	// (lastNap).
	naps   map[int]model.Thread
	locks  []Lock
	lockOf map[int]*Lock // by waiter TID
	// lockIndex finds locks by id (lockByID).
	lockIndex lockIndex
	waits     []Wait

	// The goroutine adapter's, for a Go process with a stack source.
	goroutines []Actor
	byGID      map[int64]*Actor
	groups     []Group
	gsamples   [][]model.Goroutine
	// pool are the workers parked receiving with nothing to feed them.
	pool []Ref
	// chanEdges tie a goroutine blocked on a channel to the goroutines
	// that alone could serve it; chanWhy says which channels.
	chanEdges map[int64][]int64
	chanWhy   map[int64]*ChanWait
	// settledAt is each live thread's place when settle counted the
	// candidates, so the graph counts them the same way.
	settledAt map[int]place
	// chanProof is the channel scan's answer for each goroutine that
	// waits on channels (chanproof.go).
	chanProof map[int64]*Counterparts
	// verdict is a peer's own, from its threads.
	verdict Verdict
	// runtimeDeadlock: the Go runtime itself said no goroutine can ever
	// run again ("all goroutines are asleep - deadlock!").
	runtimeDeadlock bool
	// stop says how the process is stopped, when every live thread of it
	// is, by a signal or a tracer; nil when it runs.
	stop *StopFact
	// throttle is the target's cgroup quota's doing over the run (the
	// target only: peers are not judged by it).
	throttle *Throttle
	// gc is a live JVM's collector over the run (its counters).
	gc *GCPressure
	// retry is the record lock its sleeping threads retry, if any.
	retry *RetryLock
	// waitIdx indexes waits by TID (waitOf), for waitIdxOf waits at waitIdxAt.
	waitIdx   map[int]int
	waitIdxOf int
	waitIdxAt *Wait
}

// newProc runs the thread adapter over one process's samples, given its
// runtime, the resources the recording found and the source files its
// stacks point into (nil when none were read). It needs at least one
// sample.
func newProc(samples []model.Sample, rt model.Runtime, res map[string]model.Resource, sources map[string][]string, opts Options) *proc {
	p := &proc{pid: samples[0].PID, samples: samples, sources: sources, byTID: map[int]*Actor{}, live: map[int]bool{},
		waiting: map[int]model.Thread{}, naps: map[int]model.Thread{}, lockOf: map[int]*Lock{}, runtime: rt, res: res}
	hist := histories(samples)
	last := samples[len(samples)-1]
	p.locks = append(findLocks(p.pid, last), fileLocks(p.pid, last, res)...)
	if rt == model.RuntimeJava {
		p.locks = append(p.locks, javaLocks(p.pid, javaHeldBefore(samples))...)
		p.runtimeDeadlock = javaRuntimeDeadlock(last)
	}
	for i := range p.locks {
		for _, w := range p.locks[i].Waiters {
			p.lockOf[w.TID] = &p.locks[i]
		}
	}
	for _, t := range last.Threads {
		p.live[t.TID] = !t.Exited
	}
	for _, h := range hist {
		p.waiting[h.tid] = lastWaiting(h.readings)
		if nap, ok := lastNap(h.readings); ok {
			p.naps[h.tid] = nap
		}
	}
	p.threads = make([]Actor, 0, len(hist))
	for _, h := range hist {
		p.threads = append(p.threads, p.thread(h, opts))
	}
	for i := range p.threads {
		p.byTID[p.threads[i].Ref.TID] = &p.threads[i]
	}
	p.gilWaiters(hist)
	p.retryLock()
	for _, l := range p.locks {
		for _, w := range l.Waiters {
			// A waiter the lock's evidence names may be no thread of the
			// sample: a live JVM's dump, taken after /proc was read,
			// names threads that have exited or were started since.
			if t := p.byTID[w.TID]; t != nil {
				t.WaitsFor = l.ID
			}
		}
		if l.Holder != nil {
			if t := p.byTID[l.Holder.TID]; t != nil {
				t.Holds = append(t.Holds, l.ID)
			}
		}
	}
	n := 0
	for i := range p.threads {
		if c := p.threads[i].Class; c == ClassBlocked || c == ClassIdle {
			n++
		}
	}
	// Sized once: a Wait is large, and ten thousand parked threads (a
	// JVM's pools) would copy them through every doubling.
	p.waits = make([]Wait, 0, n)
	for i := range p.threads {
		if w, ok := p.wait(&p.threads[i]); ok {
			p.waits = append(p.waits, w)
		}
	}
	p.settle()
	p.stop = p.stopped()
	return p
}

// minGILWakes is the least rate (a second) at which a Python thread that
// wants the GIL wakes: it waits 5 ms at a time (the switch interval) and
// asks the holder to drop it, 200 times a second.
const minGILWakes = 50

// gilWaiters finds the Python threads that want the GIL a thread holds
// in every sample (py-spy's flag) without moving: the holder never let it
// go, so none of them ran Python code during the run, and their wakes,
// every 5 ms on one futex with no CPU, are asks for the GIL, no progress.
// Behind a spinning holder they wait (not idle: the GIL is a lock);
// behind a blocked or parked one (a C call that blocks or sleeps without
// releasing the GIL) they are blocked, and the GIL is a lock it holds
// that they wait for.
func (p *proc) gilWaiters(hist []*history) {
	var holder *Actor
	for _, h := range hist {
		t := p.byTID[h.tid]
		if t == nil || t.Class != ClassSpinning && t.Class != ClassBlocked && t.Class != ClassIdle || len(h.readings) < 2 {
			continue
		}
		held := true
		for _, r := range h.readings {
			held = held && r.Python != nil && r.Python.OwnsGIL
		}
		if held {
			holder = t
			break
		}
	}
	if holder == nil {
		return
	}
	var waiters []Ref
	for _, h := range hist {
		t := p.byTID[h.tid]
		if t == nil || t == holder || t.Python == nil || !(t.Class == ClassWorking && t.Why.Rule == WhySlow || t.Class == ClassBlocked && t.Why.Rule == WhyRewaits) {
			continue
		}
		elapsed := h.times[len(h.times)-1].Sub(h.times[0]).Seconds()
		if elapsed <= 0 || float64(t.Why.N) < minGILWakes*elapsed {
			continue
		}
		if holder.Class == ClassSpinning {
			t.Class, t.Why, t.Wait, t.Resource = ClassIdle, Why{Rule: WhyBehind, Kind: model.WaitGIL, Other: &holder.Ref, N: 1}, model.WaitGIL, ""
			continue
		}
		t.Class, t.Why, t.Wait, t.Resource = ClassBlocked, Why{Rule: WhyRewaits, Kind: model.WaitGIL, N: t.Why.N}, model.WaitGIL, ""
		waiters = append(waiters, t.Ref)
	}
	if len(waiters) > 0 {
		p.locks = append(p.locks, Lock{ID: "GIL", Kind: LockGIL, Address: "GIL", Holder: &holder.Ref, Waiters: waiters,
			Basis: Basis{Rule: BasisGILFlag, Kind: BasisExact, Owner: int64(holder.Ref.TID), PID: p.pid}})
		// The append may have moved the locks: lockOf points anew.
		for i := range p.locks {
			for _, w := range p.locks[i].Waiters {
				p.lockOf[w.TID] = &p.locks[i]
			}
		}
	}
}

// stopped says how the process is stopped, when every live thread is: by
// its tracer, or by a signal, which the kernel does not record. A
// background job of its terminal was stopped by job control: SIGTTIN if a
// thread was reading the terminal, SIGTTOU if writing it, else most likely
// SIGTSTP (Ctrl-Z).
func (p *proc) stopped() *StopFact {
	last := p.samples[len(p.samples)-1]
	if last.Stop == nil {
		return nil
	}
	n := 0
	for _, t := range p.threads {
		if t.Class == ClassExited {
			continue
		}
		if !t.State.Stopped() {
			return nil
		}
		n++
	}
	if n == 0 {
		return nil
	}
	st := last.Stop
	f := &StopFact{Tracer: st.TracerPID, ByHangdoc: st.ByHangdoc, Pending: st.Pending}
	for _, t := range p.threads {
		f.Traced = f.Traced || t.State == model.StateTraced
	}
	if st.Background && !f.Traced {
		f.Signal = StopSignalJob
		for _, t := range p.threads {
			if read, ok := ioDir[t.Syscall.Name]; ok && t.Syscall.InCall() && isTTY(t.FD) {
				f.Signal = StopSignalTTOU
				if read {
					f.Signal = StopSignalTTIN
				}
			}
		}
	}
	return f
}

// settle decides the waits that name nobody at their other end: a futex
// with no recorded owner (a condition, a semaphore), a Python queue's
// join, an event, a future, a join of a thread it cannot name, a lock
// with no recorded holder. Such a wait is no edge: nobody is proven to end
// it. Its candidates are the other live threads that could (every one but
// those waiting at its own place), counted, a few listed. None left: it
// waits for good. One of them moves, or waits for work: the wait is
// parked behind it, idle as that one is. All of them blocked: it stays
// blocked, and the graph says whether that is a lost wake-up. A lock with
// no recorded holder keeps its waiters blocked (the holder may be any of
// the others), and one whose recorded owner is no live thread can never be
// released. Candidates are counted by place, so settle is linear in
// threads.
func (p *proc) settle() {
	pl := p.places()
	var deps []*Wait
	for i := range p.waits {
		w := &p.waits[i]
		t := p.byTID[w.From.TID]
		if t == nil || t.Class != ClassBlocked {
			continue
		}
		lockWait := w.Kind == model.WaitLock || w.Kind == model.WaitPythonLock || w.Kind == model.WaitFileLock || javaLockWait(w.Kind)
		if w.Kind == model.WaitFileLock && (w.To == nil || w.To.PID != p.pid) {
			continue // held elsewhere, or by nobody it can name: the graph follows it
		}
		if w.Kind == model.WaitFileLock {
			// Its own process holds the lock through another descriptor:
			// only another of its threads can release it.
			w.To = nil
		}
		switch {
		case w.Kind == model.WaitThreadExit && w.Joined > 0:
			// A named thread: its edge is proven (wait set To).
		case w.Kind.Role() == model.RoleWokenBy || w.Kind == model.WaitThreadExit || lockWait && w.To == nil:
			w.CandidateCount, w.Candidates = pl.candidates(t)
			if l := p.lockOf[t.Ref.TID]; l != nil && l.Basis.Rule == BasisOwnerGone {
				w.CandidateCount, w.Candidates = 0, nil
			}
			if w.CandidateCount == 0 && w.Shared != nil {
				continue // another process that maps the word could end it
			}
			if w.CandidateCount == 0 {
				w.Nobody = true
				t.Why = Why{Rule: WhyNobodyLeft, Kind: w.Kind}
				continue
			}
		default:
			continue
		}
		if !lockWait {
			deps = append(deps, w)
		}
	}
	// Each pass frees the waits behind a thread that moves; a wait freed
	// frees those behind it in the next. Threads only ever leave blocked,
	// so this ends.
	for changed := true; changed; {
		changed = false
		for _, w := range deps {
			t := p.byTID[w.From.TID]
			if t.Class != ClassBlocked {
				continue
			}
			var o *Actor
			n := w.CandidateCount
			if w.Joined > 0 {
				if j := p.byTID[w.Joined]; j != nil && j.Class != ClassBlocked {
					o = j
				}
				n = 1
			} else {
				o = pl.firstFree(t)
			}
			if o != nil {
				t.Class, t.Why = ClassIdle, Why{Rule: WhyBehind, Kind: w.Kind, Other: &o.Ref, N: n}
				pl.freed(t)
				changed = true
			}
		}
	}
}

// place is where a thread waits, as far as telling a wait's candidates
// goes: the resource (a futex word), else the lock. Threads waiting at one
// place cannot end each other's wait (a condition's other waiters cannot
// signal it while they wait). The zero place is none.
type place struct{ resource, lock string }

func placeOf(t *Actor) place {
	if t.Resource != "" {
		return place{resource: t.Resource}
	}
	return place{lock: t.WaitsFor}
}

// places counts a process's live threads by place, all and free (not
// blocked), so that a wait's candidates — every live thread but those at
// its own place — are counted from the counts, not walked per waiter.
type places struct {
	live       []*Actor // in TID order
	all, free  int
	at, freeAt map[place]int
	listed     map[place][]Ref // the first candidates of a wait at a place
	freeList   []*Actor        // in TID order
	liveByTID  map[int]bool
}

func (p *proc) places() *places {
	pl := &places{at: map[place]int{}, freeAt: map[place]int{}, listed: map[place][]Ref{}, liveByTID: map[int]bool{}}
	p.settledAt = map[int]place{}
	for i := range p.threads {
		o := &p.threads[i]
		if o.Class == ClassExited || !p.live[o.Ref.TID] || o.Aside != AsideNone {
			// A JVM's own threads (GC, compilers) end no wait of the
			// program's.
			continue
		}
		pl.live = append(pl.live, o)
		pl.liveByTID[o.Ref.TID] = true
		k := placeOf(o)
		p.settledAt[o.Ref.TID] = k
		pl.all++
		pl.at[k]++
		if o.Class != ClassBlocked {
			pl.free++
			pl.freeAt[k]++
			pl.freeList = append(pl.freeList, o)
		}
	}
	return pl
}

// excludes reports a thread that cannot end t's wait: t itself, or one
// at its place.
func excludes(t, o *Actor, k place) bool {
	return o == t || k != (place{}) && placeOf(o) == k
}

// candidates counts the threads that could end t's wait and lists the
// first few. The listing is kept per place: walking the live threads
// skips only those at the place, so all walks together cost the threads
// once, plus a few per place.
func (pl *places) candidates(t *Actor) (int, []Ref) {
	k := placeOf(t)
	n := pl.all
	if k != (place{}) {
		n -= pl.at[k] // t among them, when it is live
	} else if pl.liveByTID[t.Ref.TID] {
		n--
	}
	if listed, ok := pl.listed[k]; ok && k != (place{}) {
		return n, listed
	}
	var out []Ref
	for _, o := range pl.live {
		if len(out) == maxCandidates {
			break
		}
		if !excludes(t, o, k) {
			out = append(out, o.Ref)
		}
	}
	if k != (place{}) {
		pl.listed[k] = out
	}
	return n, out
}

// firstFree is the first thread, by TID, that could end t's wait and is
// not blocked; nil when there is none.
func (pl *places) firstFree(t *Actor) *Actor {
	k := placeOf(t)
	n := pl.free
	if k != (place{}) {
		n -= pl.freeAt[k]
	}
	if n <= 0 {
		return nil
	}
	for _, o := range pl.freeList {
		if !excludes(t, o, k) {
			return o
		}
	}
	return nil
}

// freed counts t, blocked until now, as free.
func (pl *places) freed(t *Actor) {
	if !pl.liveByTID[t.Ref.TID] {
		return
	}
	pl.free++
	pl.freeAt[placeOf(t)]++
	i, _ := slices.BinarySearchFunc(pl.freeList, t, func(a, b *Actor) int { return a.Ref.TID - b.Ref.TID })
	pl.freeList = slices.Insert(pl.freeList, i, t)
}

// histories groups every thread's readings, in TID order. Readings of a
// thread that had exited are dropped: its absence is the data.
func histories(samples []model.Sample) []*history {
	byTID := map[int]*history{}
	var order []int
	foreign := foreignIntervals(samples)
	for i, s := range samples {
		for _, t := range s.Threads {
			h := byTID[t.TID]
			if h == nil {
				h = &history{tid: t.TID}
				byTID[t.TID] = h
				order = append(order, t.TID)
			}
			if !t.Exited {
				if n := len(h.readings); n > 0 {
					// A recording made before the sampler named resumed
					// calls: the earlier reading names it.
					t.Syscall = model.Resumed(t.Syscall, h.readings[n-1].Syscall)
				}
				h.readings = append(h.readings, t)
				h.times = append(h.times, s.Time)
				h.paused = append(h.paused, s.Paused)
				h.foreign = append(h.foreign, foreign[i])
				h.frozen = append(h.frozen, s.Frozen)
			}
		}
	}
	slices.Sort(order)
	var out []*history
	for _, tid := range order {
		if len(byTID[tid].readings) > 0 {
			out = append(out, byTID[tid])
		}
	}
	return out
}

// foreignIntervals marks each sample whose interval since the one before
// may hold a stop that is not this diagnosis's own: one it notes, or one
// the sample before caught in progress (a stopped thread, a tracer), which
// ended after it.
func foreignIntervals(samples []model.Sample) []bool {
	out := make([]bool, len(samples))
	for i, s := range samples {
		out[i] = out[i] || len(s.Foreign) > 0
		if i+1 < len(samples) && slices.ContainsFunc(s.Foreign, func(f model.ForeignStop) bool {
			return f.Kind == model.ForeignStopped || f.Kind == model.ForeignTracer
		}) {
			out[i+1] = true
		}
	}
	return out
}

// thread classifies one thread from its readings.
func (p *proc) thread(h *history, opts Options) Actor {
	first, last := h.readings[0], h.last()
	// Its wait is the last one seen: a parked thread caught on a CPU in the
	// last sample (a runtime's housekeeping) still waits where it was.
	waiting := lastWaiting(h.readings)
	t := Actor{
		Kind:    ActorThread,
		Ref:     Ref{PID: p.pid, TID: h.tid},
		Name:    last.Name,
		State:   waiting.State,
		Wchan:   waiting.Wchan,
		Syscall: waiting.Syscall,
		FD:      waiting.FD,
		Seen:    len(h.readings),
		Stack:   last.Stack,
		Native:  last.Native,
		Python:  last.Python,
		Java:    last.Java,
		Vars:    last.Vars,
		NSTID:   last.NSTID,
		OnCPU:   profileOf(h.readings),
	}
	switch {
	case t.OnCPU == nil || t.OnCPU.LoopSamples == 0:
	case len(t.Stack) == 0:
		// A running native thread has no stack read: where the kernel's
		// samples caught it is where it is.
		t.Stack = t.OnCPU.Stack
	case t.Native == nil && last.Python != nil:
		// A Python thread running C (its samples are cut to the frames
		// above the interpreter): that C is above its Python frames, as
		// a blocked thread's native frames are.
		t.Native = t.OnCPU.Stack
	}
	if last.Python != nil && last.Python.ThreadName != "" {
		// The OS name of a Python thread is the interpreter's (before 3.14).
		t.Name = last.Python.ThreadName
	}
	t.Voluntary = last.Voluntary - first.Voluntary
	t.Involuntary = last.Involuntary - first.Involuntary
	// Switches a stack source's pauses caused are not the thread's own;
	// across an interval in which another may have stopped it (another
	// diagnosis, a tracer), none is.
	pauses, switches := uint64(0), uint64(0)
	for i := 1; i < len(h.readings); i++ {
		a, b := h.readings[i-1].Voluntary, h.readings[i].Voluntary
		if h.foreign[i] || b < a {
			continue
		}
		switches += b - a
		if h.paused[i-1] {
			pauses++
		}
	}
	own := switches - min(switches, pauses*opts.PauseSwitches)
	// CPU is shared out over the time the thread could run: the time a
	// stack source kept the process stopped is not idleness.
	elapsed := h.times[len(h.times)-1].Sub(h.times[0])
	for _, f := range h.frozen[:len(h.frozen)-1] {
		elapsed -= f
	}
	elapsed = max(elapsed, h.times[len(h.times)-1].Sub(h.times[0])/10)
	share := 0.0
	if elapsed > 0 {
		share = float64(last.CPUTime-first.CPUTime) / float64(elapsed)
		t.CPU.Percent = percent(share)
	}
	t.CPU.Known = last.State.Known()
	// wanted adds the time it waited for a CPU: a spinning thread on a
	// crowded machine wants a core it does not always get.
	wanted := share
	if elapsed > 0 && first.RunDelay > 0 && last.RunDelay > first.RunDelay {
		wanted += float64(last.RunDelay-first.RunDelay) / float64(elapsed)
	}
	t.CPU.RunqueuePercent = percent(wanted - share)
	// Movement: a wait that changed, a stack that changed. A reading
	// caught in someone else's passing stop is no wait of the thread's,
	// nor is one on a CPU or a run queue just after another may have
	// stopped the process (the stop woke it; on a loaded machine it waits
	// a while to re-enter its call); and a wait or a stack read across
	// such an interval is no evidence that it moved (the other's stop
	// broke its call, which it re-entered by another path).
	stackMoved, waitMoved := false, false
	passing := passingStops(h.readings)
	prev, crossed := -1, false // the last reading counted; a foreign interval since
	for i, r := range h.readings {
		crossed = crossed || i > 0 && h.foreign[i]
		if passing[i] || h.foreign[i] && r.State == model.StateRunning {
			continue
		}
		if prev >= 0 && !crossed && !sameWait(r, h.readings[prev]) && !(pausedIn(h.paused, prev, i) && resumedWait(h.readings[prev], r)) {
			waitMoved = true
		}
		prev, crossed = i, false
	}
	ref, across := -1, false // the last reading with a stack; a foreign interval since
	for i, r := range h.readings {
		across = across || i > 0 && h.foreign[i]
		if len(r.Stack) == 0 {
			continue
		}
		if ref >= 0 && !across && !sameStack(r.Stack, h.readings[ref].Stack) {
			stackMoved = true
		}
		ref, across = i, false
	}
	t.Moved = t.Moved || waitMoved || own > 0 || stackMoved
	// Woken now and then, and back in the same wait every sample (a futex,
	// a lock, a pipe), with no CPU to speak of: a timed wait that keeps
	// timing out (a JVM monitor's waiter rechecks about once a second), a
	// wake that found nothing to do, or a wait broken by a stop of
	// someone else's that the sampler could not see. Its switches show no
	// progress.
	rewaits := !waitMoved && !stackMoved && own > 0 && share < 0.005 &&
		float64(own) <= maxRewaits*elapsed.Seconds()+1
	one := len(h.readings) == 1

	kind, res := p.waitKind(waiting)
	if co, ok := blockedLoop(waiting.Stack); ok && (kind.Idle() || kind == model.WaitFutex || kind == model.WaitPython) {
		// A coroutine's synchronous call holds the event loop: its sleep
		// or wait is not the loop waiting for work.
		kind, t.Coroutine = model.WaitLoopBlocked, co
	} else if ok {
		t.Coroutine = co
	}
	t.Wait, t.Resource = kind, res
	switch {
	case !p.live[h.tid]:
		// Gone before the last sample: it came and went (a reporter, a
		// short task) and says nothing about what the process is stuck on.
		t.Class, t.Why = ClassExited, Why{Rule: WhyExited, N: t.Seen}
	case !t.CPU.Known && last.Java != nil:
		// Read from JVM dumps: their states, locks and cpu=.
		t.Class, t.Why, kind = p.javaThread(h, kind, stackMoved)
		t.Wait = kind
		if javaMachinery(last) && !javaLockWait(kind) {
			t.Aside, t.Class, t.Why = AsideRuntime, ClassIdle, Why{Rule: WhyJavaMachinery}
		}
	case !t.CPU.Known && len(last.Stack) > 0:
		// Read from dumps: no kernel evidence, only the stacks, the source
		// lines they stand at and py-spy's flags.
		t.Class, t.Why, kind = p.dumpThread(h, kind, stackMoved)
		t.Wait = kind
	case one && last.State == model.StateRunning:
		t.Class, t.Why = ClassWorking, Why{Rule: WhyOnCPUOnce}
	case (wanted >= opts.SpinCPU && (opts.crowded() >= 1 || share >= opts.SpinCPU*opts.crowded()/2) || share >= opts.SpinCPU*opts.crowded()) && !stackMoved && float64(own) <= opts.SpinSwitchesPerSecond*elapsed.Seconds():
		// A loop wants a whole core: it got one, waited on a run queue
		// for the rest, or got what a crowded machine gives any task. On
		// a crowded machine, a thread that waited on the run queue but
		// hardly ran (less than half what the machine gave any task)
		// shows no loop: every task waits there, and one that never ran
		// had no chance to sleep, so its lack of switches proves nothing.
		t.Class, t.Why = ClassSpinning, Why{Rule: WhySpins, N: t.Seen}
		if share < opts.SpinCPU {
			t.Why.Crowded = percent(opts.crowded())
		}
	case share >= opts.BusyCPU:
		t.Class, t.Why = ClassWorking, Why{Rule: WhyBusy}
	case stackMoved:
		t.Class, t.Why = ClassWorking, Why{Rule: WhyStackMoved}
	case waiting.State == model.StateRunning:
		t.Class, t.Why = ClassWorking, Why{Rule: WhyRunnable, N: t.Seen}
	case kind.Idle():
		t.Class, t.Why = ClassIdle, Why{Rule: WhyParked, Kind: kind}
	case rewaits && !one:
		t.Class, t.Why = ClassBlocked, Why{Rule: WhyRewaits, Kind: kind, N: int(own)}
	case !one && !stackMoved && share < 0.005 && javaMonitorWait(h.readings) != "":
		// BLOCKED on the same monitor in every dump, with no CPU: the
		// wakes are HotSpot's own. One waiter of a contended monitor
		// parks with a timeout to recheck it (the "responsible" thread:
		// 1 ms, growing eightfold to 1 s), so early in a hang it wakes
		// many times a second and gets nowhere.
		t.Class, t.Why = ClassBlocked, Why{Rule: WhyRewaits, Kind: kind, N: int(own)}
	case t.Moved:
		t.Class, t.Why = ClassWorking, Why{Rule: WhySlow, Kind: kind, N: int(own)}
	case one:
		t.Class, t.Why = ClassBlocked, Why{Rule: WhyBlockedOnce, Kind: kind}
	default:
		t.Class, t.Why = ClassBlocked, Why{Rule: WhyBlocked, Kind: kind, N: t.Seen}
	}
	if t.CPU.Known && p.runtime == model.RuntimeJava && t.Class != ClassSpinning && t.Class != ClassExited && !javaLockWait(kind) &&
		(last.Java != nil && javaMachinery(last) || last.Java == nil && javaMachineryName(last.Name)) {
		// A live JVM's own thread (its VM thread, compilers, collectors,
		// service threads) wakes for the JVM's own work — and for each
		// thread dump's safepoint: machinery, like the Go runtime's, not
		// the program's story. A spinning one is kept (a collector that
		// never stops is news). The process reaper waits for every
		// child the JVM started, always: the program's own wait for one
		// is its thread in Process.waitFor.
		t.Aside, t.Class, t.Why = AsideRuntime, ClassIdle, Why{Rule: WhyJavaMachinery}
	}
	if t.Class == ClassWorking || t.Class == ClassSpinning {
		t.Wait, t.Resource = model.WaitNone, ""
	}
	return t
}

// javaMonitorWait is the monitor a Java thread waited to enter in every
// reading: each with its JVM dump's state BLOCKED and its first "waiting
// to lock" line on the same object. "" when a reading has no dump, or
// another state or object.
func javaMonitorWait(rs []model.Thread) string {
	addr := ""
	for _, r := range rs {
		if r.Java == nil || !strings.HasPrefix(r.Java.State, "BLOCKED") {
			return ""
		}
		a := ""
		for _, l := range r.Java.Locks {
			if l.Kind == "waiting to lock" {
				a = l.Addr
				break
			}
		}
		if a == "" || addr != "" && a != addr {
			return ""
		}
		addr = a
	}
	return addr
}

// maxRewaits bounds the wakes per second of a thread that goes back to
// the same wait each time for its switches to count as no progress.
const maxRewaits = 2

// sameStack compares two stacks as a loop sees them: the innermost frame by
// function and file only, since a loop over two lines is caught on either.
func sameStack(a, b []model.Frame) bool {
	if len(a) != len(b) || len(a) == 0 {
		return len(a) == len(b)
	}
	if a[0].Func != b[0].Func || a[0].File != b[0].File {
		return false
	}
	return slices.Equal(a[1:], b[1:])
}

// sameWait is whether two readings of a thread show it in the same wait:
// where it sleeps and the call it is in. A call resumed after a stop
// (restart_syscall) or re-entered after an interruption with a new
// timeout is the same wait (model.SameWait): a stop is no movement.
func sameWait(a, b model.Thread) bool {
	if a.State == model.StateRunning || b.State == model.StateRunning {
		// On a CPU or preempted: the syscall file says "running" or "-1"
		// by chance of timing.
		return a.State == b.State
	}
	return a.State == b.State && a.Wchan == b.Wchan && model.SameWait(a.Syscall, b.Syscall)
}

// resumedWait: b is a's read or write called again for the rest after a
// break (model.ResumedTransfer), in the same state and kernel function.
// Across a pause of hangdoc's own, the pause explains the break: a
// blocking pipe or socket transfer returns early only when broken.
func resumedWait(a, b model.Thread) bool {
	return a.State == b.State && a.Wchan == b.Wchan && model.ResumedTransfer(a.Syscall, b.Syscall)
}

// pausedIn reports a stack source's pause of the process between readings
// i and j (i < j): a stop of hangdoc's own, which breaks a blocking call
// part-way.
func pausedIn(paused []bool, i, j int) bool {
	return slices.Contains(paused[i:j], true)
}

// memory reads the RSS of every sample and names its trend.
func memory(samples []model.Sample, opts Options) Memory {
	m := Memory{RSSBytes: []int64{}, Trend: model.TrendUnknown}
	for _, s := range samples {
		m.RSSBytes = append(m.RSSBytes, s.RSSBytes)
	}
	if len(m.RSSBytes) < 2 || slices.Max(m.RSSBytes) == 0 {
		return m // one sample, or dumps from files: no trend
	}
	first, last := m.RSSBytes[0], m.RSSBytes[len(m.RSSBytes)-1]
	delta := last - first
	limit := max(opts.RSSGrowthBytes, int64(float64(first)*opts.RSSGrowth))
	switch {
	case delta > limit:
		m.Trend = model.TrendGrowing
	case -delta > limit:
		m.Trend = model.TrendShrinking
	default:
		m.Trend = model.TrendFlat
	}
	return m
}

// percent turns a share of a core into a percentage with one decimal.
func percent(share float64) float64 { return float64(int(share*1000+0.5)) / 10 }

// wchanKind names a wait from the kernel function alone, for threads whose
// syscall file cannot be read. Names change between kernels (pipe_write
// became anon_pipe_write, futex_wait_queue_me futex_do_wait): wchanKindOf
// also matches on the part that stays.
var wchanKind = map[string]model.WaitKind{
	"do_wait":           model.WaitChildExit,
	"hrtimer_nanosleep": model.WaitSleep, "do_nanosleep": model.WaitSleep,
	"ep_poll": model.WaitPoll, "do_sys_poll": model.WaitPoll, "do_select": model.WaitPoll, "core_sys_select": model.WaitPoll,
	"sk_wait_data": model.WaitSocketRead, "unix_stream_read_generic": model.WaitSocketRead,
	"inet_csk_accept": model.WaitAccept, "n_tty_read": model.WaitTTYRead, "wait_woken": model.WaitSocketRead,
	"sigsuspend": model.WaitSignal, "do_sigtimedwait": model.WaitSignal,
}

// callKind names the waits a syscall alone says.
var callKind = map[string]model.WaitKind{
	"wait4": model.WaitChildExit, "waitid": model.WaitChildExit,
	"nanosleep": model.WaitSleep, "clock_nanosleep": model.WaitSleep,
	"epoll_wait": model.WaitPoll, "epoll_pwait": model.WaitPoll, "epoll_pwait2": model.WaitPoll,
	"poll": model.WaitPoll, "ppoll": model.WaitPoll, "select": model.WaitPoll, "pselect6": model.WaitPoll,
	"pause": model.WaitSignal, "rt_sigsuspend": model.WaitSignal, "rt_sigtimedwait": model.WaitSignal,
}

// ioDir says whether a call on a descriptor reads or writes it.
var ioDir = map[string]bool{ // true: read
	"read": true, "readv": true, "pread64": true, "preadv": true, "preadv2": true, "recvfrom": true, "recvmsg": true, "recvmmsg": true,
	"write": false, "writev": false, "pwrite64": false, "pwritev": false, "pwritev2": false, "sendto": false, "sendmsg": false,
	"sendmmsg": false, "sendfile": false, "splice": false, "tee": false,
}

// waitKind names what a thread waits for, from its call, its descriptor and
// its wchan, and the resource (a descriptor's target or a futex address).
func (p *proc) waitKind(t model.Thread) (kind model.WaitKind, resource string) {
	lock := p.lockOf[t.TID]
	sc := t.Syscall
	if !t.State.Known() && t.Java != nil {
		// A JVM dump: its lock lines and frames say what it waits in.
		return p.javaWaitKind(t)
	}
	if !t.State.Known() && len(t.Stack) > 0 {
		// A stack from a file, with no kernel evidence: the stack alone
		// says what the thread waits in.
		return stackKind(t.Stack), ""
	}
	switch {
	case t.State == model.StateTraced:
		return model.WaitTraced, ""
	case t.State == model.StateStopped:
		return model.WaitStopped, ""
	case t.State == model.StateDisk:
		return model.WaitUninterruptible, t.FD
	case sc.Running:
		return model.WaitRunning, ""
	case !sc.InCall():
		return wchanKindOf(t.Wchan), ""
	}
	if addr, ok := model.FutexWait(sc); ok {
		if t.Java != nil {
			// A live JVM's thread with its dump joined: parked in a futex
			// of its own, for what the dump names (a monitor, a lock, a
			// latch, a pool's queue).
			if k, r := p.javaWaitKind(t); k != model.WaitNone {
				return k, r
			}
		}
		if lock != nil {
			return model.WaitLock, lock.ID
		}
		if p.joined(sc, addr) > 0 {
			return model.WaitThreadExit, ""
		}
		if k, _ := libraryWait(model.RuntimePython, t.Stack); t.Python != nil && k != model.WaitNone {
			// A Python thread's stack says what its futex is: a queue, a
			// join, an event, a future.
			return k, "futex:" + model.FutexKey(addr)
		}
		if k, _ := nativeLibraryWait(t.Native); t.Python != nil && k != model.WaitNone {
			// A library call that is C (queue.SimpleQueue.get): no Python
			// frame names it, its native frames do.
			return k, "futex:" + model.FutexKey(addr)
		}
		if p.runtime == model.RuntimeGo {
			// An M the Go scheduler parked until a goroutine is runnable:
			// the goroutines' waits are not the kernel's to see.
			return model.WaitRuntime, ""
		}
		return model.WaitFutex, "futex:" + model.FutexKey(addr)
	}
	if sc.Name == "futex_waitv" && len(t.Waitv) > 0 {
		// Any of several futex words ends it: one wait on all of them.
		keys := make([]string, len(t.Waitv))
		for i, a := range t.Waitv {
			keys[i] = model.FutexKey(a)
		}
		return model.WaitFutex, "futex:" + strings.Join(keys, " or ")
	}
	if k, res, ok := anonWait(t); ok {
		return k, res
	}
	if k, res, ok := sysvWait(t); ok {
		return k, res
	}
	if _, _, _, _, _, ok := model.PollArgs(sc); (ok || epollWait(sc)) && p.pollResolves(t.Polled) {
		return model.WaitPollFDs, t.Polled[0].Target
	}
	if k, ok := callKind[sc.Name]; ok {
		return k, ""
	}
	switch sc.Name {
	case "accept", "accept4":
		return model.WaitAccept, t.FD
	case "connect":
		return model.WaitSocketConnect, t.FD
	case "flock":
		return model.WaitFileLock, t.FD
	case "fcntl":
		if sc.Args[1] == 7 || sc.Args[1] == 38 { // F_SETLKW, F_OFD_SETLKW
			return model.WaitFileLock, t.FD
		}
	}
	if t.FIFO != nil {
		return model.WaitFIFO, "fifo:" + t.FIFO.Path
	}
	fd, isFD := model.FDArg(sc)
	if !isFD {
		return model.WaitSyscall, ""
	}
	read, isIO := ioDir[sc.Name]
	if !isIO {
		return model.WaitSyscall, t.FD
	}
	switch {
	case read && fd == 0 && (isPipe(t.FD) || isTTY(t.FD)):
		return model.WaitStdin, t.FD
	case isPipe(t.FD) && read:
		return model.WaitPipeRead, t.FD
	case isPipe(t.FD):
		return model.WaitPipeWrite, t.FD
	case strings.HasPrefix(t.FD, "socket:") && read:
		return model.WaitSocketRead, t.FD
	case strings.HasPrefix(t.FD, "socket:"):
		return model.WaitSocketWrite, t.FD
	case isTTY(t.FD) && read:
		return model.WaitTTYRead, t.FD
	case isTTY(t.FD):
		return model.WaitTTYWrite, t.FD
	case read:
		return model.WaitFileRead, t.FD
	}
	return model.WaitFileWrite, t.FD
}

// pollResolves says whether a poll or select waits on other processes, as
// a read or write on each of its descriptors would: every one is a pipe
// or a connected TCP socket, and none's other end is in the poller's own
// process (another of its threads would end the wait: a self-pipe, a
// worker's notification pipe). A listener, a terminal, an eventfd or a
// socket with no TCP connection on record make it a wait for work.
func (p *proc) pollResolves(polled []model.PolledFD) bool {
	if len(polled) == 0 {
		return false
	}
	for _, fd := range polled {
		res, ok := p.res[fd.Target]
		switch {
		case !ok:
			return false
		case isPipe(fd.Target):
			if fd.Read && slices.Contains(holders(res, "w"), p.pid) || fd.Write && slices.Contains(holders(res, "r"), p.pid) {
				return false
			}
		case strings.HasPrefix(fd.Target, "socket:"):
			if res.TCP == nil || res.TCP.State == "LISTEN" {
				return false
			}
			if peer, ok := p.res[res.Peer]; ok && slices.Contains(holders(peer, ""), p.pid) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func wchanKindOf(wchan string) model.WaitKind {
	switch {
	case strings.HasSuffix(wchan, "pipe_write"):
		return model.WaitPipeWrite
	case strings.HasSuffix(wchan, "pipe_read"):
		return model.WaitPipeRead
	case strings.HasPrefix(wchan, "futex_"):
		return model.WaitFutex
	}
	if k, ok := wchanKind[wchan]; ok {
		return k
	}
	return model.WaitUnknown
}

func isPipe(fd string) bool { return strings.HasPrefix(fd, "pipe:") }

func isTTY(fd string) bool {
	return strings.HasPrefix(fd, "/dev/pts/") || strings.HasPrefix(fd, "/dev/tty") || fd == "/dev/console"
}

// joined returns the thread a pthread_join waits for: glibc sleeps on the
// joined thread's TID word, expecting the TID itself, until the kernel clears
// it at exit. 0 when the wait is not a join.
func (p *proc) joined(sc model.Syscall, addr uint64) int {
	cmd, val := sc.Args[1]&0x7f, int(int32(sc.Args[2]))
	if sc.Name != "futex" || (cmd != 0 && cmd != 9) || val <= 0 || !p.live[val] {
		return 0
	}
	f := p.samples[len(p.samples)-1].Futexes[model.FutexKey(addr)]
	if f.Err != "" || int(f.Word) != val {
		return 0
	}
	return val
}

// wait says what a blocked or parked thread waits for.
func (p *proc) wait(t *Actor) (Wait, bool) {
	if t.Class != ClassBlocked && t.Class != ClassIdle {
		return Wait{}, false
	}
	last := p.waiting[t.Ref.TID]
	w := Wait{From: t.Ref, Kind: t.Wait, Resource: t.Resource, Syscall: last.Syscall, Path: last.Path, FIFO: last.FIFO, Anon: last.Anon, SysV: last.SysV}
	p.sharedWord(&w, last.Syscall)
	switch w.Kind {
	case model.WaitLock:
		l := p.lockOf[t.Ref.TID]
		w.Lock, w.To = l.ID, l.Holder
	case model.WaitFileLock, model.WaitJavaMonitor, model.WaitJavaLock, model.WaitGIL:
		if l := p.lockOf[t.Ref.TID]; l != nil {
			w.Lock, w.To = l.ID, l.Holder
		}
	case model.WaitThreadExit:
		if w.Joined = p.joined(last.Syscall, last.Syscall.Args[0]); w.Joined > 0 {
			w.To = &Ref{PID: p.pid, TID: w.Joined}
		}
	case model.WaitPidfd:
		if a := last.Anon; a != nil && a.PID > 0 {
			w.To = &Ref{PID: a.PID}
		}
	case model.WaitChildExit:
		if child := model.WaitedChild(last); child > 0 {
			w.Child = child
			w.To = &Ref{PID: child}
		}
	case model.WaitPoll:
		w.Watches = last.Watches
	case model.WaitPollFDs:
		for _, fd := range last.Polled {
			w.Polled = append(w.Polled, Polled{FD: fd.FD, Read: fd.Read, Write: fd.Write, Resource: fd.Target})
		}
	case model.WaitLockRetry:
		if r := p.retry; r != nil {
			w.Retry, w.To = r, &Ref{PID: r.Holder}
		}
	case model.WaitUninterruptible:
		w.KernelStack = last.KernelStack
	case model.WaitTraced:
		if st := p.samples[len(p.samples)-1].Stop; st != nil && st.TracerPID > 0 && !st.ByHangdoc {
			w.To = &Ref{PID: st.TracerPID}
		}
	}
	return w, true
}

// keyThread is the thread that says what a process is doing: its first
// blocked thread, else its main thread, else its first.
func (p *proc) keyThread() *Actor {
	if len(p.threads) == 0 {
		return nil
	}
	for i := range p.threads {
		if p.threads[i].Class == ClassBlocked {
			return &p.threads[i]
		}
	}
	if t := p.byTID[p.pid]; t != nil {
		return t
	}
	return &p.threads[0]
}

func (p *proc) waitOf(tid int) *Wait {
	if p.waitIdx == nil || p.waitIdxOf != len(p.waits) || len(p.waits) > 0 && p.waitIdxAt != &p.waits[0] {
		// An index, rebuilt when the waits changed: thousands of
		// threads' chains each look up the waits they pass.
		p.waitIdx, p.waitIdxOf = make(map[int]int, len(p.waits)), len(p.waits)
		if len(p.waits) > 0 {
			p.waitIdxAt = &p.waits[0]
		}
		for i := len(p.waits) - 1; i >= 0; i-- {
			p.waitIdx[p.waits[i].From.TID] = i
		}
	}
	if i, ok := p.waitIdx[tid]; ok {
		return &p.waits[i]
	}
	return nil
}
