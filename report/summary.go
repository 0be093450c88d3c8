package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// The verdict's cause in words: the summary line that names what the
// process is stuck on, and the hint that says what to do next.

func (w *words) actorsOf(refs []classify.Ref) []*classify.Actor {
	out := make([]*classify.Actor, 0, len(refs))
	for _, r := range refs {
		if a := w.actor(r); a != nil {
			out = append(out, a)
		}
	}
	return out
}

func (w *words) groupTitle(i int) string {
	if i < 0 || i >= len(w.d.Groups) {
		return "none"
	}
	return groupTitle(w.d.Groups[i])
}

// groupTitle is a group in one line: "412 goroutines [sync.Mutex.Lock] in
// sync.(*Mutex).Lock ← db.(*Pool).Get".
func groupTitle(g classify.Group) string {
	return fmt.Sprintf("%s [%s] in %s", plural(g.Count, "goroutine", "goroutines"), g.State, Where(g.Stack))
}

// surely words a holder as surely as its lock's basis: "" for an exact
// holder (an owner the lock records, the same address), "probably " for a
// probable or inferred one.
func surely(l *classify.Lock) string {
	if l != nil && l.Basis.Kind == classify.BasisExact {
		return ""
	}
	return "probably "
}

// summary is the cause in one line, for a ticket's title.
func (w *words) summary(c classify.Cause) string {
	as := w.actorsOf(c.Actors)
	goroutines := c.Layer == classify.ActorGoroutine
	switch c.Rule {
	case classify.CauseNoSamples:
		return "no samples were taken"
	case classify.CauseStopped:
		return w.stoppedSummary(c)
	case classify.CauseStarved:
		return w.starvedSummary(c, as)
	case classify.CauseGCThrash:
		return gcSummary(c.GC)
	case classify.CauseCrossDeadlock:
		return w.crossDeadlock(w.d.Cycles[c.Cycle])
	case classify.CauseDeadlock:
		return w.deadlockSummary(c)
	case classify.CauseTaskDeadlock:
		return w.taskDeadlockSummary(c)
	case classify.CauseTasksBlocked:
		return w.tasksBlockedSummary(c)
	case classify.CauseHolderSpins:
		h, l := as[0], w.lock(c.Lock)
		if goroutines {
			return fmt.Sprintf("goroutine %d spins in %s while %sholding %s; %s for it",
				h.Ref.Goroutine, spinWhere(h), surely(l), l.ID, plural(len(l.Waiters), "goroutine waits", "goroutines wait"))
		}
		return fmt.Sprintf("%s spins%s (%s) while %sholding %s %s; %s for it",
			threadName(h), spinIn(h), w.cpuWords(h), surely(l), lockKindWord(l.Kind.String()), l.Address, plural(len(l.Waiters), "thread waits", "threads wait"))
	case classify.CauseHolderBlocked:
		h, l := as[0], w.lock(c.Lock)
		if goroutines {
			what := fmt.Sprintf("%s in %s", goKindWords(h.Wait), Where(h.Stack))
			switch {
			case c.HolderIO != nil:
				what = fmt.Sprintf("blocked in %s on %s", Where(h.Stack), w.ioChainText(c.HolderIO))
			case h.Class == classify.ClassIdle && h.GoWait.Kind == model.GoSelectEmpty:
				what = "parked for good in select {} in " + Where(h.Stack)
			case h.Class == classify.ClassIdle:
				what = fmt.Sprintf("parked (%s) in %s", goKindWords(h.Wait), Where(h.Stack))
			}
			return fmt.Sprintf("goroutine %d %sholds %s and is %s; %s for the mutex%s",
				h.Ref.Goroutine, surely(l), l.ID, what, plural(len(l.Waiters), "goroutine waits", "goroutines wait"), w.beside(c))
		}
		what := kindWords(h.Wait)
		if call := callText(h.Syscall); call != "" {
			what = "blocked in " + call
		}
		if h.Resource != "" && !strings.HasPrefix(h.Resource, "futex:") {
			what += " on " + h.Resource
		}
		return fmt.Sprintf("%s %sholds %s %s and is %s; %s for the lock%s",
			threadName(h), surely(l), lockKindWord(l.Kind.String()), l.Address, what, plural(len(l.Waiters), "thread waits", "threads wait"), w.beyond(h.Ref))
	case classify.CauseSpinning:
		if goroutines {
			if len(as) > 1 {
				return fmt.Sprintf("%d goroutines spin, goroutine %d first, in %s", len(as), as[0].Ref.Goroutine, spinWhere(as[0]))
			}
			return fmt.Sprintf("goroutine %d spins in %s: %s", as[0].Ref.Goroutine, spinWhere(as[0]), w.whyText(as[0]))
		}
		who := threadName(as[0]) + " spins" + spinIn(as[0])
		if len(as) > 1 {
			who = fmt.Sprintf("%d threads spin, %s first%s,", len(as), threadName(as[0]), spinIn(as[0]))
		}
		if !as[0].CPU.Known {
			return fmt.Sprintf("%s in %s: %s", who, threadWhere(as[0].Stack), w.whyText(as[0]))
		}
		return fmt.Sprintf("%s (%s) with no syscall wait and no voluntary switch in any sample", who, w.cpuText(as[0]))
	case classify.CauseWorking:
		if len(w.rec.Samples) == 1 && w.dumps() {
			return w.runningInOneDump(as, c)
		}
		if goroutines {
			s := fmt.Sprintf("%s working: their stacks move between samples; slow, not stopped", plural(len(as), "goroutine is", "goroutines are"))
			if c.Group >= 0 {
				s += fmt.Sprintf("; but %s did not move during the run, more than are working: look there first", w.groupTitle(c.Group))
			}
			return s + w.cpuGoesTo()
		}
		if len(as) > 0 && !as[0].CPU.Known {
			return fmt.Sprintf("%s working: their stacks move between the dumps; slow, not stopped", plural(len(as), "thread is", "threads are"))
		}
		return fmt.Sprintf("%s working (%.0f%% CPU in all) and the waits move: slow, not stopped", plural(len(as), "thread is", "threads are"), c.CPU) + w.cpuGoesTo()
	case classify.CauseSendersStuck:
		if c.Leaked {
			return fmt.Sprintf("%s blocked sending on channels (%s) that no live goroutine can reach: the Go runtime's leak detector marked them leaked, so they never proceed — a partial deadlock",
				plural(len(as), "goroutine is", "goroutines are"), goList(as))
		}
		return fmt.Sprintf("%s blocked sending on channels (%s), and no goroutine is running to receive: the receiver returned or is parked elsewhere (the runtime does not call it a deadlock: something, a listener or a timer, keeps the program alive)",
			plural(len(as), "goroutine is", "goroutines are"), goList(as))
	case classify.CausePool:
		if goroutines && c.NobodyLeft {
			if proof := w.poolProof(as); proof != "" {
				return fmt.Sprintf("all %s wait in %s and %s: nobody is left that could send — whatever fed them is gone",
					plural(len(as), "worker", "workers"), Where(as[0].Stack)+" ["+as[0].GoState+"]", proof)
			}
			return fmt.Sprintf("all %s wait in %s and no goroutine is left that could send: whatever feeds the pool stopped — the feeder goroutine is gone",
				plural(len(as), "worker", "workers"), Where(as[0].Stack)+" ["+as[0].GoState+"]")
		}
		if goroutines {
			return fmt.Sprintf("%s wait in %s for work and no goroutine is sending to them; %s",
				plural(len(as), "worker", "workers"), Where(as[0].Stack)+" ["+as[0].GoState+"]", w.poolUnproven(c))
		}
		if len(c.Joiners) > 0 {
			var js []string
			for _, r := range c.Joiners {
				js = append(js, threadName(w.actor(r)))
			}
			verb := "waits"
			if len(js) > 1 {
				verb = "wait"
			}
			return fmt.Sprintf("%s %s in join() for workers that never finish: all %d workers (%s) wait in queue.get() for work no thread is left to put — the feeder thread is gone, but the join still waits",
				strings.Join(js, ", "), verb, len(as), namesOf(as))
		}
		return fmt.Sprintf("all %d workers (%s) wait in queue.get() and no thread is left that could feed the queue: whatever feeds the pool stopped — the feeder thread is gone", len(as), namesOf(as))
	case classify.CauseStranded:
		return w.strandedSummary(as)
	case classify.CauseLostWakeup:
		return w.lostSummary(as)
	case classify.CauseBlocked:
		if goroutines {
			if s := w.goroutineBeyond(as); s != "" {
				return s + w.beside(c)
			}
			if s := w.chanHeldSummary(as); s != "" {
				return s + w.beside(c)
			}
			if s := w.blockedLead(c, len(as)); s != "" {
				return fmt.Sprintf("%s blocked and none runs; %s%s", plural(len(as), "goroutine is", "goroutines are"), s, w.beside(c))
			}
			if len(as) == 1 && c.Beside != nil {
				// One goroutine stops work (a join, a wait) beside an idle
				// crowd: it leads.
				return fmt.Sprintf("goroutine %d is %s in %s, and none runs%s", as[0].Ref.Goroutine, goKindWords(as[0].Wait), ownFunc(as[0].Stack), w.beside(c))
			}
			return fmt.Sprintf("%s blocked and none runs; the biggest group: %s%s", plural(len(as), "goroutine is", "goroutines are"), w.groupTitle(c.Group), w.beside(c))
		}
		if w.dumps() {
			// A dump has no CPU: it cannot say none is used.
			if len(as) == 1 {
				return fmt.Sprintf("%s is blocked, %s, in %s%s", threadName(as[0]), blockedText(as[0]), w.everyDump(), w.beyond(as[0].Ref))
			}
			return fmt.Sprintf("%s blocked (%s) and none runs, in %s", plural(len(as), "thread is", "threads are"), kindsText(c.Kinds), w.everyDump())
		}
		if wt := w.waitOf[as[0].Ref]; len(as) == 1 && wt != nil && wt.FIFO != nil {
			return fmt.Sprintf("%s is blocked for the whole run and %s; no thread uses CPU", threadName(as[0]), w.fifoText(wt))
		}
		if len(as) == 1 {
			return fmt.Sprintf("%s is blocked, %s, for the whole run; no thread uses CPU%s%s", threadName(as[0]), blockedText(as[0]), w.beyond(as[0].Ref), poolIdleText(c.PoolIdle, c.PoolLate))
		}
		return fmt.Sprintf("%s blocked (%s); no thread uses CPU%s", plural(len(as), "thread is", "threads are"), kindsText(c.Kinds), poolIdleText(c.PoolIdle, c.PoolLate))
	case classify.CauseIdle:
		if goroutines {
			return fmt.Sprintf("all goroutines are parked waiting for work (%s): whatever feeds the program stopped", w.groupTitle(c.Group))
		}
		who := fmt.Sprintf("all %d threads are", len(as))
		if len(as) == 1 {
			who = "its only thread is"
		}
		if w.dumps() {
			if c.SleepOnly {
				return fmt.Sprintf("%s sleeping, in %s: a loop that polls, retries or backs off", who, w.everyDump())
			}
			return fmt.Sprintf("%s parked waiting for work (%s), in %s: whatever feeds the process stopped", who, kindsText(c.Kinds), w.everyDump())
		}
		if c.SleepOnly {
			return fmt.Sprintf("%s sleeping (nanosleep) with no CPU: a loop that polls, retries or backs off", who)
		}
		return fmt.Sprintf("%s parked waiting for work (%s) with no CPU: whatever feeds the process stopped", who, kindsText(c.Kinds))
	case classify.CauseThreadsWork:
		return fmt.Sprintf("the goroutines were parked in every dump, but the threads use %.0f%% CPU and their waits move: the work happens between the dumps; slow, not stopped", c.CPU)
	case classify.CauseNoLive:
		return "no live thread was seen: the process exited"
	case classify.CauseRuntimeDeadlock:
		said := "all goroutines are asleep - deadlock!"
		for _, s := range w.rec.Samples {
			if s.Message != "" {
				said = s.Message // synctest's words for a bubble, say
			}
		}
		return fmt.Sprintf("the Go runtime reported %q: %s blocked and none can ever run again; the biggest group: %s",
			said, plural(len(as), "goroutine is", "goroutines are"), w.groupTitle(c.Group))
	}
	return ""
}

// blockedLead words the group a blocked verdict on goroutines leads with,
// when it is not just the biggest: requests in flight, or, among other
// blocked goroutines (total in all), the waiters of a lock whose holder
// is not named. "" otherwise.
func (w *words) blockedLead(c classify.Cause, total int) string {
	if c.Group < 0 || c.Group >= len(w.d.Groups) {
		return ""
	}
	g := w.d.Groups[c.Group]
	if c.Handler != "" {
		if g.Count < c.Requests {
			return fmt.Sprintf("%s in flight have not returned, %d of them in the handler %s, waiting [%s] in %s",
				plural(c.Requests, "request", "requests"), g.Count, c.Handler, g.State, Where(g.Stack))
		}
		return fmt.Sprintf("%s in flight %s not returned: their handler %s waits [%s] in %s",
			plural(c.Requests, "request", "requests"), map[bool]string{true: "has", false: "have"}[c.Requests == 1], c.Handler, g.State, Where(g.Stack))
	}
	for i := range w.d.Goroutines {
		a := &w.d.Goroutines[i]
		if a.Group != c.Group || a.WaitsFor == "" {
			continue
		}
		l := w.lock(a.WaitsFor)
		verb := "wait"
		if g.Count == 1 {
			verb = "waits"
		}
		switch {
		case l != nil && l.Basis.Rule == classify.BasisCopiedLock:
			return fmt.Sprintf("first %s, which %s for %s, a copy of %s that %s's value receiver made (go vet: copylocks), locked as it was copied: no stack holds it", groupTitle(g), verb, l.ID, l.Basis.Expr, shortFunc(l.Basis.WaitFunc))
		case l != nil && g.Count < total:
			return fmt.Sprintf("first %s, which %s for %s, whose holder the stacks do not name", groupTitle(g), verb, l.ID)
		}
	}
	return ""
}

// beside says what else waits around the chain that stops work: the
// biggest idle group of the program's goroutines; "" for none.
func (w *words) beside(c classify.Cause) string {
	if c.Beside == nil {
		return ""
	}
	if c.BesidePool {
		return fmt.Sprintf("; beside it, %s wait for work, and no goroutine is sending to them", groupTitle(*c.Beside))
	}
	return fmt.Sprintf("; beside it, %s wait for work", groupTitle(*c.Beside))
}

// poolUnproven says why an idle pool's feeder is not said to be gone: the
// dump is an excerpt, or goroutines of the program outside the pool are
// alive and may yet send.
func (w *words) poolUnproven(c classify.Cause) string {
	if c.Excerpt {
		return "the dump is an excerpt, so it cannot show whether a goroutine that could send is left"
	}
	var parts []string
	for _, a := range w.actorsOf(c.Outside) {
		parts = append(parts, fmt.Sprintf("goroutine %d [%s] in %s", a.Ref.Goroutine, a.GoState, Where(a.Stack)))
	}
	if more := c.OutsideN - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("%d more", more))
	}
	if len(parts) == 0 {
		return "whether one is left that could, the evidence does not show"
	}
	return fmt.Sprintf("whether one is left that could, the evidence does not show: other goroutines of the program are alive (%s)", strings.Join(parts, ", "))
}

// runningInOneDump words a working verdict from one dump: what is on a CPU
// in it, which cannot tell a loop from work.
func (w *words) runningInOneDump(as []*classify.Actor, c classify.Cause) string {
	if len(as) == 0 {
		return "something runs in the only dump; one dump cannot tell a loop from work"
	}
	a := as[0]
	who := threadName(a)
	where := threadWhere(a.Stack)
	if a.Kind == classify.ActorGoroutine {
		who, where = fmt.Sprintf("goroutine %d [%s]", a.Ref.Goroutine, a.GoState), Where(a.Stack)
	}
	if len(as) > 1 {
		who = fmt.Sprintf("%d %s, %s first,", len(as), map[bool]string{true: "goroutines", false: "threads"}[a.Kind == classify.ActorGoroutine], who)
	}
	s := fmt.Sprintf("%s on a CPU in %s in the only dump: one dump cannot tell a loop from work; take another to see if it moves", who, where)
	if c.Group >= 0 {
		s += fmt.Sprintf("; %s wait beside it", w.groupTitle(c.Group))
	}
	return s
}

// everyDump is "the only dump", or "all 3 dumps".
func (w *words) everyDump() string {
	if n := len(w.rec.Samples); n > 1 {
		return fmt.Sprintf("all %d dumps", n)
	}
	return "the only dump"
}

// cpuWords is a thread's CPU as a spinning holder's summary says it: the
// measured share, or what a dump shows instead.
func (w *words) cpuWords(a *classify.Actor) string {
	if !a.CPU.Known {
		return w.whyText(a)
	}
	return w.cpuText(a)
}

// hint says what to do next, drawn from the cause.
func (w *words) hint(c classify.Cause) string {
	as := w.actorsOf(c.Actors)
	goroutines := c.Layer == classify.ActorGoroutine
	switch c.Rule {
	case classify.CauseStopped:
		return w.stoppedHint(c.Stop, w.targetPID())
	case classify.CauseGCThrash:
		return "Give the JVM more heap (-Xmx), or find what keeps it full: its live data nearly fills the heap, so each collection frees little and the next comes at once. Take a heap histogram (jcmd PID GC.class_histogram, which stops it for a moment) to see what holds it, and turn on GC logging (-Xlog:gc) to watch it."
	case classify.CauseStarved:
		s := "Give it more CPU — raise its cgroup's quota (cpu.max, or cpu.cfs_quota_us; a container's CPU limit) — or make it need less. Under a quota a loop and slow work look alike: if it should have finished long ago, take two stacks a second apart to see whether it moves."
		if t := c.Throttle; t.GoMaxProcs > 0 && float64(t.GoMaxProcs) > t.QuotaCores {
			s += fmt.Sprintf(" For Go, set GOMAXPROCS=%d (the quota rounded up) so its threads do not use each period's quota in a burst.", max(1, int(t.QuotaCores+0.999)))
		}
		return s
	case classify.CauseCrossDeadlock:
		return crossHint(w.cycleKinds(w.d.Cycles[c.Cycle]))
	case classify.CauseTasksBlocked:
		if c.NobodyLeft {
			return "Nothing is left in the process that could wake its event loop: no timer, no ready callback, no other thread, no descriptor but its own wake-up socket — so every task that awaits waits for good. Find the code that should have resolved what they await: a future nobody keeps to set (its setter gone, or waiting itself for the task that awaits it, as a TaskGroup's owner does for its children), an event whose setter failed. Give such awaits a timeout (asyncio.timeout) so that the hang becomes an error."
		}
		if w.lockAcrossIO(c) {
			return "An asyncio task holds an asyncio.Lock across an await on a socket (a read, a write, a connect) that did not complete while hangdoc watched, and the tasks that want the lock wait behind it. Look at the process at the other end (named above, where it is on this host) and why it neither answers nor drains; give the socket call a timeout (asyncio.timeout) and do not hold a lock across network I/O."
		}
		return "asyncio tasks wait on a lock, an event or a condition that nothing released or set while hangdoc watched: find the code that should (a task that failed — asyncio logs \"Task exception was never retrieved\" —, a callback that never ran, a holder that awaits something slow), and give such waits a timeout (asyncio.timeout) so that the hang becomes an error."
	case classify.CauseTaskDeadlock:
		if !taskCycleLocks(w.d.Tasks, c.TaskCycle) {
			return "asyncio tasks await each other (directly, or through gather): none can finish before the others do. A task must not await a task that awaits it; hand the result over through a future or a queue instead, and give the outer await a timeout (asyncio.timeout) so that the hang becomes an error. Only cancelling one of them (or a restart) frees them."
		}
		if len(c.TaskCycle) == 1 {
			return "An asyncio task acquires an asyncio.Lock it already holds (asyncio.Lock is not reentrant): it waits for itself. Acquire it once, in the outer coroutine, and give the inner code a variant that expects it held; only cancelling the task (or a restart) frees it."
		}
		return "asyncio tasks take the same asyncio.Locks in opposite orders: take them in one order in every task, or guard both with one lock. The event loop itself is not blocked (its thread waits in its selector), so the process answers nothing those tasks serve; only cancelling one of them (or a restart) frees them. asyncio.timeout() around the inner acquire turns the hang into an error."
	case classify.CauseDeadlock:
		cy := w.d.Cycles[c.Cycle]
		switch {
		case len(cy) == 1 && cy[0].Goroutine != 0:
			return "A goroutine locks a sync.Mutex it already holds (Go mutexes are not reentrant): it can never get it. Take the lock once, in the outer call, and give the inner code a variant that expects it held; only a restart frees it."
		case cy[0].Goroutine != 0:
			return "Goroutines wait on each other: for mutexes, take them in one global order; for channels, one side must not block (a buffered channel, a select with the other case, or a goroutine per direction). Only a restart frees them."
		case len(cy) == 1 && w.isPythonLockWaiter(cy[0]):
			return "A thread waits for a lock it already holds: a non-reentrant lock taken again on the same thread, by a path that locks twice or by a signal handler running code that the code it interrupted was inside (logging from a handler, the Patroni hang). Use an RLock where re-entry is meant; in a signal handler only set a flag and do the work outside it. Only a restart frees it."
		case w.cycleKinds(cy)[model.WaitThreadExit]:
			return "A thread joins a thread that waits for it (joins it back, or waits for a lock it holds): neither can end. Join from a thread the joined one never waits for, and release what it needs before joining; only a restart frees them."
		case len(cy) == 1 && w.lockCycle(cy):
			return "A thread locks a non-recursive mutex it already holds: it can never get it. Unlock before relocking, or restructure the call path; only a restart frees it."
		case len(cy) > 1 && w.lockCycle(cy):
			return "Threads take the same locks in opposite orders: fix one global lock order (or try-lock and back off); only a restart frees these threads."
		}
		// A cycle that is not all locks with holders: the facts are the
		// waits themselves, not an order of locks.
		return "These threads wait on each other in a cycle (CYCLES, WAITS): none can move until one is killed. Look at each wait of the cycle for the one that should not block, or should come after the other's release, and give it a timeout."
	case classify.CauseHolderSpins:
		if goroutines {
			return "One goroutine loops while holding the mutex the others want: look for a loop whose exit condition never becomes true under this lock (its stack is in STACKS), and never hold a lock across a loop that waits for something."
		}
		return "One thread spins while holding the lock the others want: look for a loop whose exit condition never becomes true in the code that runs under this lock. Take two stacks of the holder a second apart (gdb -p PID -batch -ex 'thread apply all bt') to see the loop."
	case classify.CauseHolderBlocked:
		if goroutines {
			return goHolderHint(as[0])
		}
		if l := w.lock(c.Lock); l != nil && l.Kind == classify.LockGIL {
			call := "a C call"
			if as[0].Syscall.InCall() {
				call = as[0].Syscall.Name + "()"
			}
			return fmt.Sprintf("A thread holds the GIL while it blocks in %s: a C extension or driver that does not release it around blocking work (Py_BEGIN_ALLOW_THREADS), or a ctypes.PyDLL call, which keeps it. No other thread can run Python until the call returns. Release the GIL around the call (ctypes.CDLL does; a C extension wraps it in Py_BEGIN_ALLOW_THREADS … Py_END_ALLOW_THREADS), and give it a timeout; only the call's return or a restart frees this one.", call)
		}
		return holderHint(as[0])
	case classify.CauseSpinning:
		if goroutines {
			return "A goroutine runs with the same stack in every sample while a core is pinned: a tight loop. Its stack is in STACKS; look for the loop's exit condition."
		}
		return spinningHint(as[0])
	case classify.CauseWorking, classify.CauseThreadsWork:
		if len(w.rec.Samples) == 1 && w.dumps() && w.rec.Target.Runtime == model.RuntimeJava {
			return "One JVM dump shows it RUNNABLE, and cannot show whether it gets anywhere: take two or three more a second apart (jstack -l PID, or jcmd PID Thread.print -l) and analyze them together: the same stack in each, with a cpu= that grows, is a loop that spins; a moving one is work."
		}
		if len(w.rec.Samples) == 1 && w.dumps() {
			return "One dump shows it on a CPU, and cannot show whether it gets anywhere: take two or three more a second apart (py-spy dump, kill -QUIT, or curl …/debug/pprof/goroutine?debug=2) and analyze them together: the same stack in each is a loop that spins, a moving one is work."
		}
		if goroutines {
			return "It is making progress. Look for what makes it slow (go tool pprof on /debug/pprof/profile, or perf) rather than for a hang."
		}
		return "It is making progress. Look for what makes it slow (perf top -p PID, a profiler) rather than for a hang."
	case classify.CauseSendersStuck:
		return "Goroutines wait on channels nobody will serve: find which goroutine was meant to receive (a goroutine profile does not say which channel each waits on; --source delve reads it, stopping the target for an instant). One side must not block: a buffered channel, or a select with a way out."
	case classify.CausePool:
		if goroutines && !c.NobodyLeft {
			return "The workers wait for work nobody sends. Find the goroutine meant to feed them: if it returned or died, close the channel (or cancel a context) on every exit path so the pool ends loudly; if one of those alive should send, look at why it does not."
		}
		if goroutines {
			return "The goroutine that sent work to the pool returned or died without closing the channel: find why it stopped (a recovered panic, an early return on error), and close the channel (or cancel a context) on every exit path so the pool ends loudly."
		}
		return "The thread that put work on the queue died or returned: look for the exception that ended it (set threading.excepthook, check the logs), and make a feeder's failure stop the pool loudly."
	case classify.CauseStranded:
		return w.strandedHint(as[0])
	case classify.CauseLostWakeup:
		return w.lostHint(as)
	case classify.CauseBlocked:
		if goroutines && c.Handler != "" {
			return "Requests in flight do not return: their handler waits for something that does not come. Find who should answer what " + c.Handler + " waits for, and give the handler a way out (select on r.Context().Done(), a deadline) so a stuck request ends instead of piling up."
		}
		if goroutines && slices.ContainsFunc(w.d.Locks, func(l classify.Lock) bool { return l.Basis.Rule == classify.BasisCopiedLock }) {
			return "A goroutine locks a copy of a mutex: a method with a value receiver copies the struct, its mutex with it, locked if the original was locked at the call, and nothing ever unlocks the copy. Give the method a pointer receiver (func (c *T) …) and never copy a struct that holds a lock; go vet's copylocks check finds every such copy. Only a restart frees the waiters."
		}
		if goroutines {
			return goBlockedHint(c.Kinds)
		}
		if len(c.PoolLate) > 0 {
			return "A multiprocessing pool lost a task with a worker that exited: every worker waits for a task, and one of them (pid " + fmt.Sprint(c.PoolLate[0].PID) + ") replaced a worker that exited. That worker most likely died while it ran the task (killed — by the OOM killer? look in dmesg or the journal — or os._exit, a crash in C; a worker retired by maxtasksperchild loses nothing), and multiprocessing.Pool replaces a dead worker but never reruns or fails its task. Find why it died; use concurrent.futures.ProcessPoolExecutor, which fails the task with BrokenProcessPool, or pass a timeout to get(). Only a restart frees this call."
		}
		if len(c.PoolIdle) > 0 {
			return "A multiprocessing pool waits for the result of a task that no worker has: every worker waits for a task. Most likely a worker died while it ran the task (killed — by the OOM killer? look in dmesg or the journal for its pid — or os._exit, a crash in C), and multiprocessing.Pool replaces a dead worker but never reruns or fails its task. Find why it died; use concurrent.futures.ProcessPoolExecutor, which fails the task with BrokenProcessPool, or pass a timeout to get(). Only a restart frees this call."
		}
		return blockedHint(c.Kinds, w.ownPipes(as))
	case classify.CauseIdle:
		if !goroutines && c.SleepOnly {
			return "It waits for time, not for a resource: find what the loop polls for (a file, a flag, a service) and why it never comes."
		}
		return "Nothing here is stuck on anything of its own: look upstream, at whatever should hand it work (a producer, a connection, a timer) and why it stopped."
	case classify.CauseRuntimeDeadlock:
		return "The runtime found every goroutine blocked for good and killed the program: " + goBlockedHint(c.Kinds)
	case classify.CauseNoLive:
		return "The process exited during the run: there is no hang left to diagnose. Look at how it ended (its exit status, its logs, dmesg for a kill), and diagnose it again if it hangs again."
	case classify.CauseNoSamples:
		return "No sample was taken, so there are no facts to go on: see the notes for why (permissions, a process that ended), and run hangdoc again."
	}
	return ""
}

// starvedSummary says it is starved, not hung, by what quota and how much.
func (w *words) starvedSummary(c classify.Cause, as []*classify.Actor) string {
	t := c.Throttle
	who := "it"
	if len(as) > 0 {
		a := as[0]
		who = fmt.Sprintf("%s wants a whole core and gets %.0f%% of one", w.actorName(a), a.CPU.Percent)
		if len(as) > 1 {
			who += fmt.Sprintf(" (and %s)", plural(len(as)-1, "more", "more"))
		}
		if a.Kind == classify.ActorGoroutine {
			who = fmt.Sprintf("%s working, and its threads want more CPU than the %.0f%% of a core they get", plural(len(as), "goroutine is", "goroutines are"), c.CPU)
		}
	}
	return fmt.Sprintf("starved, not hung: %s; throttled in %.0f%% of periods by its cgroup's CPU quota of %s cores (%s, %.1fs throttled during the run)",
		who, t.Percent, cores(t.QuotaCores), t.Cgroup, t.ThrottledSeconds)
}

// stopSignalText says what stopped a process, as far as the evidence goes.
var stopSignalText = map[classify.StopSignal]string{
	classify.StopSignalUnknown: "a signal (SIGSTOP, or SIGTSTP)",
	classify.StopSignalJob:     "job control: it is a background job of its terminal (Ctrl-Z's SIGTSTP, or SIGTTIN/SIGTTOU)",
	classify.StopSignalTTIN:    "SIGTTIN: it is a background job that read its terminal",
	classify.StopSignalTTOU:    "SIGTTOU: it is a background job that wrote to its terminal (stty tostop)",
}

// stoppedSummary says that, and how, the process is stopped, and what its
// threads were doing when it stopped: no lock or wait of theirs is the
// story while nothing can run.
func (w *words) stoppedSummary(c classify.Cause) string {
	st, pid := c.Stop, w.targetPID()
	var s string
	switch {
	case st.Traced && st.ByHangdoc:
		s = fmt.Sprintf("pid %d is stopped by a tracer that is this hangdoc itself (a stack source not yet detached)", pid)
	case st.Traced && st.Tracer > 0:
		s = fmt.Sprintf("pid %d is stopped by its tracer %s, which is %s: nothing in it runs until the tracer lets it go", pid, w.procName(st.Tracer), w.stateOf(st.Tracer))
	case st.Traced:
		s = fmt.Sprintf("pid %d is stopped by a tracer: nothing in it runs until the tracer lets it go", pid)
	default:
		s = fmt.Sprintf("pid %d is stopped by %s; nothing in it runs until it is continued", pid, stopSignalText[st.Signal])
	}
	var was []string
	for _, a := range w.actorsOf(c.Actors) {
		if call := callText(a.Syscall); call != "" {
			was = append(was, fmt.Sprintf("%s in %s", threadName(a), call))
		}
		if len(was) == 3 {
			break
		}
	}
	if len(was) > 0 {
		s += "; when it stopped " + strings.Join(was, ", ")
		if len(c.Actors) > len(was) {
			s += ", …"
		}
	}
	if len(st.Pending) > 0 {
		s += "; pending, to act on once continued: " + strings.Join(st.Pending, ", ")
	}
	return s
}

func (w *words) targetPID() int {
	if len(w.rec.Samples) > 0 {
		return w.rec.Samples[0].PID
	}
	return w.rec.Target.PID
}

func (w *words) stoppedHint(st *classify.StopFact, pid int) string {
	switch {
	case st.Traced && st.Tracer > 0 && !st.ByHangdoc:
		return fmt.Sprintf("Detach the debugger or tracer (gdb: detach, or quit; strace: Ctrl-C), or end %s: the process then runs on from where it stopped. Only then diagnose it again.", w.procName(st.Tracer))
	case st.Traced:
		return "Detach the tracer (gdb: detach; strace: Ctrl-C): the process then runs on from where it stopped."
	case st.Signal == classify.StopSignalTTIN || st.Signal == classify.StopSignalTTOU || st.Signal == classify.StopSignalJob:
		return fmt.Sprintf("Continue it: fg in the shell whose job it is, or kill -CONT %d; a background job that reads the terminal stops again: give it stdin from /dev/null (or run it with nohup, or under a service manager).", pid)
	}
	return fmt.Sprintf("Continue it: kill -CONT %d (or fg in the shell that stopped it). Then find who stopped it: a SIGSTOP from a script, Ctrl-Z, or a supervisor's pause.", pid)
}

// lockCycle reports a cycle every member of which waits for a lock whose
// holder is named: the one shape that is locks taken in opposite orders
// (or, alone, a lock taken twice).
func (w *words) lockCycle(cy classify.Cycle) bool {
	for _, r := range cy {
		a := w.actor(r)
		if a == nil {
			return false
		}
		if l := w.lock(a.WaitsFor); l == nil || l.Holder == nil {
			return false
		}
	}
	return len(cy) > 0
}

// goroutineBeyond names the first blocked goroutine whose wait leads to
// another process: a client waiting for a server that never answers.
func (w *words) goroutineBeyond(as []*classify.Actor) string {
	for _, g := range as {
		wt := w.waitOf[g.Ref]
		if wt == nil || wt.To == nil || !wt.To.IsProcess() || wt.To.PID == g.Ref.PID {
			continue
		}
		from := ""
		if res := w.rec.Resources[wt.Resource]; res.TCP != nil {
			from = " from " + res.TCP.Remote.String()
		} else if peer := w.rec.Resources[res.Peer].Unix; res.Unix != nil && peer != nil && peer.Path != "" {
			from = " from unix:" + peer.Path
		}
		return fmt.Sprintf("goroutine %d (%s) is %s%s on %s; %s %s, which is %s",
			g.Ref.Goroutine, ownFunc(g.Stack), goKindWords(g.Wait), from, wt.Resource,
			roleWords(wt.Kind), w.endName(wt, wt.To.PID), w.stateOf(wt.To.PID))
	}
	return ""
}

// lostSummary names threads that wait on each other through waits no one
// is named for: each wait once, those at one place (a condition several
// workers wait on) together, the waits nobody is named for first.
func (w *words) lostSummary(as []*classify.Actor) string {
	type at struct {
		first *classify.Actor
		n     int
	}
	var order []string
	byPlace := map[string]*at{}
	for pass := 0; pass < 2; pass++ {
		for _, a := range as {
			wt := w.waitOf[a.Ref]
			if wt == nil || (wt.Basis == classify.EdgeCandidate) != (pass == 0) {
				continue
			}
			key := fmt.Sprint(a.Wait, "|", a.Resource, "|", a.WaitsFor)
			if a.Resource == "" && a.WaitsFor == "" || wt.Basis != classify.EdgeCandidate {
				key = fmt.Sprint(a.Ref) // alone at its place
			}
			if p := byPlace[key]; p != nil {
				p.n++
				continue
			}
			byPlace[key] = &at{first: a, n: 1}
			order = append(order, key)
		}
	}
	var parts []string
	for _, key := range order {
		p := byPlace[key]
		a, wt := p.first, w.waitOf[p.first.Ref]
		what := w.detail(wt)
		if wt.Basis == classify.EdgeCandidate {
			k := a.Wait
			if l := w.lock(a.WaitsFor); l != nil && l.Holder == nil && l.Basis.SharedFutex() {
				k = model.WaitFutex // several on one futex word that is no mutex: a condition as likely
			}
			what = kindWords(k)
			if addr, ok := strings.CutPrefix(a.Resource, "futex:"); ok {
				what += " at " + addr
			}
		}
		if p.n > 1 {
			parts = append(parts, fmt.Sprintf("%d threads, %s first, %s", p.n, threadName(a), what))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", threadName(a), what))
	}
	return fmt.Sprintf("%s wait on each other and no thread is proven to end their waits: every thread that could, waits itself — a lost wake-up, or a deadlock through waits that record no owner; not proven either way: %s",
		plural(len(as), "thread", "threads"), strings.Join(parts, "; "))
}

// lostHint says where to look for the wake-up that never came, by what
// the waits no one is named for are: a join only when the joined thread
// waits for its joiner alone.
func (w *words) lostHint(as []*classify.Actor) string {
	kinds := map[model.WaitKind]bool{}
	joinsItsWaker := false
	for _, a := range as {
		wt := w.waitOf[a.Ref]
		if wt == nil {
			continue
		}
		if wt.Basis == classify.EdgeCandidate {
			kinds[wt.Kind] = true
		}
		if wt.Kind != model.WaitThreadExit {
			continue
		}
		target := wt.To
		if target == nil && len(wt.Candidates) == 1 {
			target = &wt.Candidates[0]
		}
		if target == nil {
			continue
		}
		if tw := w.waitOf[*target]; tw != nil && tw.Basis == classify.EdgeCandidate && tw.CandidateCount == 1 && tw.Candidates[0] == a.Ref {
			joinsItsWaker = true
		}
	}
	switch {
	case kinds[model.WaitJavaLock] || kinds[model.WaitJavaMonitor]:
		// Locks, not wake-ups: their owners are what the dump left out.
		return javaLockNoOwnerHint()
	case kinds[model.WaitJavaFuture]:
		return "A CompletableFuture is waited for that nothing is going to complete: every thread that could complete it waits itself. Look at who should complete it (a complete() call, the task that supplies it) and why it did not, and wait with a timeout (get(timeout), orTimeout)."
	case kinds[model.WaitFuture]:
		return "A future is waited for that nothing is going to run: a task waits for a future submitted to its own executor, which has no free worker. Look at who submits and who waits: never wait for a future from inside the executor that runs it (submit the follow-up from outside, or chain it with add_done_callback), and give result() a timeout."
	case joinsItsWaker:
		return "A thread is joined while it waits for something only its joiner would do (set an event, notify a condition, put a sentinel) after the join: look at the joined thread's wait, and signal before joining, or join with a timeout and say why it did not end."
	case kinds[model.WaitEvent]:
		return "An event waits for a set() that no running thread is going to make: each thread that could set it waits itself. Look at who should have set it and what it waits for instead; set events before waiting on what they guard, and wait with a timeout."
	}
	return "Each of these threads waits for a wake-up (a condition's signal, a semaphore's post) that another of them would send, and none sends it: a lost wake-up — a signal sent before its waiter began to wait is lost, or the one meant to send it waits itself. Look at who should have signalled each condition (the threads named above): signal under the lock that guards the predicate, set the predicate before signalling, and wait in a loop on the predicate, with a timeout."
}

// strandedSummary names waits no live actor is left to end.
func (w *words) strandedSummary(as []*classify.Actor) string {
	a := as[0]
	more := ""
	if len(as) > 1 {
		more = fmt.Sprintf(" (and %s)", plural(len(as)-1, "more like it", "more like it"))
	}
	if l := w.lock(a.WaitsFor); l != nil && l.Basis.Rule == classify.BasisOwnerGone && a.Kind == classify.ActorThread {
		return fmt.Sprintf("%s waits for the lock at %s, whose owner tid %d is not a live thread of pid %d: nothing is left that could release it — it was locked by a thread that is gone (before a fork, only the forking thread lives on in the child)%s",
			threadName(a), l.Address, l.Basis.Owner, l.Basis.PID, more)
	}
	what := kindWords(a.Wait) + anyFutex(a.Resource)
	if a.Kind == classify.ActorGoroutine {
		what = goKindWords(a.Wait)
	} else if c := callText(a.Syscall); c != "" {
		what += " in " + c
	}
	only := ""
	if a.Kind == classify.ActorThread && w.liveThreads() == 1 {
		only = ": it is the process's only thread"
	}
	return fmt.Sprintf("%s is %s, and no live %s is left that could %s%s%s", w.actorName(a), what, actorNoun(a), missingWords(a.Wait), only, more)
}

func (w *words) liveThreads() int {
	n := 0
	for _, t := range w.d.Threads {
		if t.Class != classify.ClassExited {
			n++
		}
	}
	return n
}

// strandedHint is the fix for a wait nobody is left to end.
func (w *words) strandedHint(a *classify.Actor) string {
	if l := w.lock(a.WaitsFor); l != nil && l.Basis.Rule == classify.BasisOwnerGone {
		return "A lock was held by a thread that no longer exists: one that exited without unlocking it, or one of the parent's threads when the process forked (the child has only the forking thread, and inherits the lock held). Do not fork a threaded process except to exec at once (posix_spawn); release locks on every exit path, or use a robust mutex. Only a restart frees it."
	}
	switch a.Wait {
	case model.WaitFileLock:
		return "The process waits for a file lock it holds itself through another open of the same file (flock locks belong to each open, so a second open blocks on the first): take the lock once, or pass the descriptor that holds it; only a restart frees it."
	case model.WaitQueueJoin:
		return "queue.join() waits for one task_done() per put(), and the workers that should call it are gone (a worker that raised ends without it): call task_done() in a finally: block, and let a worker's death stop the program loudly."
	case model.WaitEvent:
		return "Event.wait() without a timeout waits for a set() that no thread is left to call: the thread meant to set it is gone. Set the event in a finally: block, and wait with a timeout."
	case model.WaitCondition, model.WaitFutex:
		return "It waits for a wake-up (a condition's notify, a semaphore's post, a lock's release) that no thread is left to send: the thread that should have sent it exited. Find why it ended (its exceptions, an early return) and make it signal on every path; wait with a timeout."
	case model.WaitFuture:
		return "Future.result() waits for a future that nothing is left to run: the pool's workers are gone or busy waiting themselves. Never wait for a future from inside the pool that runs it, and pass a timeout to result()."
	case model.WaitWaitGroup:
		return "A WaitGroup waits for Done calls no goroutine is left to make: a path returned without Done. Call defer wg.Done() first thing in each goroutine, and Add before the go statement."
	case model.WaitDBConn:
		return "Every connection of the database/sql pool is held and no goroutine is left to return one: a goroutine that keeps rows or a transaction open while it asks for another connection deadlocks itself once MaxOpenConns are out. Close rows (defer rows.Close()) before the next query, or raise SetMaxOpenConns."
	case model.WaitCond:
		return "sync.Cond.Wait waits for a Signal or Broadcast no goroutine is left to send: signal on every path that changes the condition."
	}
	return "It waits for something no live thread or goroutine is left to do: the one that should have done it is gone. Find why it ended, and make it finish its part on every path."
}

// readersPart words a goroutine's step of a cycle through a sync.RWMutex
// held for reading: a reader that read-locks it again behind a queued
// writer, or the writer that waits for the readers. "" for another lock.
func readersPart(g *classify.Actor, l *classify.Lock) string {
	if l == nil || len(l.Readers) == 0 {
		return ""
	}
	var readers []string
	for _, r := range l.Readers {
		readers = append(readers, fmt.Sprint(r.Goroutine))
	}
	var writers []string
	for _, r := range l.Waiters {
		if !slices.Contains(l.ReadWaiters, r) {
			writers = append(writers, fmt.Sprint(r.Goroutine))
		}
	}
	switch {
	case slices.Contains(l.Readers, g.Ref) && len(writers) > 0:
		return fmt.Sprintf("goroutine %d (%s) holds %s for reading and read-locks it again, queued behind the writer (goroutine %s)", g.Ref.Goroutine, ownFunc(g.Stack), l.ID, strings.Join(writers, ", "))
	case !slices.Contains(l.ReadWaiters, g.Ref):
		return fmt.Sprintf("goroutine %d (%s) waits to lock %s for writing, held for reading by goroutine %s", g.Ref.Goroutine, ownFunc(g.Stack), l.ID, strings.Join(readers, ", "))
	}
	return ""
}

func (w *words) deadlockSummary(c classify.Cause) string {
	cycle := w.d.Cycles[c.Cycle]
	more := ""
	if c.Cycles > 1 {
		more = fmt.Sprintf(" (and %d more cycles)", c.Cycles-1)
	}
	var parts []string
	if len(cycle) > 0 && cycle[0].Goroutine != 0 {
		for _, r := range cycle {
			g := w.actor(r)
			if l := w.lock(g.WaitsFor); l != nil && l.Holder != nil {
				parts = append(parts, fmt.Sprintf("goroutine %d (%s) waits for %s, %sheld by goroutine %d", g.Ref.Goroutine, ownFunc(g.Stack), l.ID, surely(l), l.Holder.Goroutine))
				continue
			} else if p := readersPart(g, l); p != "" {
				parts = append(parts, p)
				continue
			}
			// Without a channel's evidence, the wait's kind: never an
			// empty "is blocked in ".
			why := goKindWords(g.Wait)
			if g.Why.ChanWait != nil {
				why = "blocked in " + chanWaitText(g.Why.ChanWait)
			}
			parts = append(parts, fmt.Sprintf("goroutine %d (%s) is %s", g.Ref.Goroutine, ownFunc(g.Stack), why))
		}
		said := ""
		if c.RuntimeSaid {
			said = "; the Go runtime itself reported it (all goroutines are asleep)"
		}
		if len(cycle) == 1 {
			if l := w.lock(w.actor(cycle[0]).WaitsFor); l != nil && len(l.Basis.Reentry) > 0 {
				said = "; it came back to the mutex through " + reentryText(l.Basis.Reentry) + said
			}
			return fmt.Sprintf("self-deadlock: %s%s", strings.Join(parts, "; "), said)
		}
		return fmt.Sprintf("deadlock between %s: %s%s%s", plural(len(cycle), "goroutine", "goroutines"), strings.Join(parts, "; "), more, said)
	}
	for _, r := range cycle {
		t := w.actor(r)
		if t != nil {
			if l := w.lock(t.WaitsFor); l != nil && l.Holder != nil {
				parts = append(parts, fmt.Sprintf("%s waits for %s %s %sheld by %s", threadName(t), lockKindWord(l.Kind.String()), l.Address, surely(l), threadName(w.actor(*l.Holder))))
				continue
			}
		}
		detail := ""
		if wt := w.waitOf[r]; wt != nil {
			detail = w.detail(wt)
		}
		if detail == "" && t != nil {
			detail = "is " + blockedText(t)
		}
		parts = append(parts, strings.TrimSpace(threadName(t)+" "+detail))
	}
	if len(cycle) == 1 {
		back := ""
		if t := w.actor(cycle[0]); t != nil {
			if l := w.lock(t.WaitsFor); l != nil && len(l.Basis.Reentry) > 0 {
				back = "; it came back to the lock through " + reentryText(l.Basis.Reentry) + handlerText(l.Basis.Handler)
			}
		}
		return fmt.Sprintf("self-deadlock: %s (itself)%s%s", strings.Join(parts, "; "), back, more)
	}
	if c.RuntimeSaid {
		more += "; the JVM itself reported it (Found one Java-level deadlock)"
	}
	return fmt.Sprintf("deadlock between %s: %s%s", plural(len(cycle), "thread", "threads"), strings.Join(parts, "; "), more)
}

// crossDeadlock names a cycle across processes.
func (w *words) crossDeadlock(cycle classify.Cycle) string {
	var parts []string
	for _, r := range cycle {
		wt := w.waitOf[r]
		if wt == nil {
			continue
		}
		what := kindWords(wt.Kind)
		if t := w.actor(r); t != nil {
			if c := callText(t.Syscall); c != "" {
				what += " in " + c
			}
		}
		if wt.Kind == model.WaitPollFDs {
			var fds []string
			for _, p := range wt.Polled {
				fds = append(fds, w.polledText(p))
			}
			parts = append(parts, fmt.Sprintf("%s tid %d is %s: %s", w.procName(r.PID), r.TID, what, strings.Join(fds, "; ")))
			continue
		}
		if wt.Resource != "" && !strings.HasPrefix(wt.Resource, "futex:") {
			what += " on " + wt.Resource
			if extra := resourceText(w.rec.Resources[wt.Resource]); extra != "" {
				what += " (" + extra + ")"
			}
		}
		if wt.To != nil {
			what += ", " + roleWords(wt.Kind) + " " + w.endName(wt, wt.To.PID)
		}
		parts = append(parts, fmt.Sprintf("%s tid %d is %s", w.procName(r.PID), r.TID, what))
	}
	var pids []int
	for _, r := range cycle {
		if !slices.Contains(pids, r.PID) {
			pids = append(pids, r.PID)
		}
	}
	return fmt.Sprintf("deadlock across %d processes: %s", len(pids), strings.Join(parts, "; "))
}

func (w *words) cycleKinds(cycle classify.Cycle) map[model.WaitKind]bool {
	kinds := map[model.WaitKind]bool{}
	for _, r := range cycle {
		if wt := w.waitOf[r]; wt != nil {
			kinds[wt.Kind] = true
		}
	}
	return kinds
}

// crossHint is the fix a cross-process cycle's shape points at.
func crossHint(kinds map[model.WaitKind]bool) string {
	switch {
	case kinds[model.WaitChildExit] && kinds[model.WaitPipeWrite]:
		return "The parent waits for its child to exit while the child waits for the parent to read the pipe it filled: read the pipes while waiting — Python: communicate() instead of wait(); Go: read StdoutPipe/StderrPipe to EOF before cmd.Wait(); or send the output to a file."
	case kinds[model.WaitChildExit] && (kinds[model.WaitStdin] || kinds[model.WaitPipeRead]):
		return "The child waits for input on a pipe that the parent, waiting for it to exit, never writes or closes: give the child stdin from /dev/null (stdin=subprocess.DEVNULL), or close the pipe after writing (for git: GIT_TERMINAL_PROMPT=0)."
	case kinds[model.WaitPollFDs] && (kinds[model.WaitStdin] || kinds[model.WaitPipeRead] || kinds[model.WaitTTYRead]):
		return "The child waits for input on a stdin pipe that the parent holds open and never writes, while the parent waits for the child's output (communicate(), subprocess.run(capture_output=True)): give the child stdin=subprocess.DEVNULL (or input=b\"\"), or close the parent's end; for git, also GIT_TERMINAL_PROMPT=0 so it never prompts."
	case kinds[model.WaitPollFDs] && kinds[model.WaitPipeWrite]:
		return "Each side waits for the other to drain a pipe: read the child's output while writing its input (communicate(input=…) does both), or send one side to a file."
	}
	return "Processes wait on each other in a cycle: none can move until one is killed. Break the cycle where a wait can get a timeout or a non-blocking read."
}

func holderHint(holder *classify.Actor) string {
	call := "a blocking call"
	if holder.Syscall.InCall() {
		call = holder.Syscall.Name + "()"
	}
	switch holder.Wait {
	case model.WaitPipeWrite, model.WaitSocketWrite, model.WaitTTYWrite, model.WaitFileWrite:
		fd := holder.FD
		if fd == "" {
			fd = "the descriptor"
		}
		return fmt.Sprintf("One thread holds the lock the others want and is itself blocked in %s: never hold a lock across blocking I/O. Find who should drain %s and why it stopped.", call, fd)
	case model.WaitPipeRead, model.WaitSocketRead, model.WaitStdin, model.WaitTTYRead:
		return fmt.Sprintf("One thread holds the lock the others want and waits in %s for input that does not come: never hold a lock across blocking I/O, and put a timeout on the read.", call)
	case model.WaitChildExit:
		return "One thread holds the lock the others want while it waits for a child process: release the lock first, and look at the child."
	case model.WaitLock:
		return "The lock holder waits for another lock: a chain of locks. Follow the chain to its end."
	}
	return fmt.Sprintf("One thread holds the lock the others want and is itself %s: never hold a lock across a blocking call.", kindWords(holder.Wait))
}

func goHolderHint(h *classify.Actor) string {
	if h.GoWait.Kind == model.GoSelectEmpty {
		return "One goroutine holds the mutex the others want and has parked for good in select {}: it never unlocks it. Unlock before parking (or take the lock in a function that returns), and keep a goroutine that parks for ever from holding anything."
	}
	switch h.Wait {
	case model.WaitIO, model.WaitSyscall:
		return "One goroutine holds the mutex the others want and is itself blocked on I/O: never hold a lock across blocking I/O. Find who should drain (or answer) the other end and why it stopped, and put a deadline on the I/O."
	case model.WaitChannel, model.WaitSelect:
		return "One goroutine holds the mutex the others want while it waits on a channel: release the lock before the channel operation, and look at who should serve that channel."
	case model.WaitMutex, model.WaitRWMutex:
		return "The holder waits for another mutex: a chain of locks. Follow the chain to its end (LOCKS)."
	}
	return "One goroutine holds the mutex the others want and is itself " + goKindWords(h.Wait) + ": never hold a lock across a blocking call."
}

// javaLockNoOwnerHint is for Java lock waits whose owner the dump does
// not record.
func javaLockNoOwnerHint() string {
	return "Threads wait for a Java lock whose owner this dump does not record: a JSON thread dump (Thread.dump_to_file) names what a thread parks on but not its owner, and a jstack without -l prints no ownable synchronizers. Take jstack -l PID (or jcmd PID Thread.print -l): its \"Locked ownable synchronizers\" name the owner."
}

func hasKind(kinds []classify.KindCount, ks ...model.WaitKind) bool {
	return slices.ContainsFunc(kinds, func(kc classify.KindCount) bool { return slices.Contains(ks, kc.Kind) })
}

// ownPipes reports blocked threads whose pipe reads all lead back to their
// own process: another of its threads should write, not the outside world.
func (w *words) ownPipes(as []*classify.Actor) bool {
	own := false
	for _, a := range as {
		if a.Wait != model.WaitPipeRead && a.Wait != model.WaitTTYRead {
			continue
		}
		wt := w.waitOf[a.Ref]
		if wt == nil || wt.To == nil || wt.To.PID != a.Ref.PID {
			return false
		}
		own = true
	}
	return own
}

// poolIdleText is "; every worker of its multiprocessing pool (pids …)
// waits on it for a task, so none runs the task whose result it awaits",
// or "".
func poolIdleText(workers []int, late []classify.PoolWorker) string {
	if len(workers) == 0 {
		return ""
	}
	var ps []string
	for _, p := range workers {
		ps = append(ps, fmt.Sprint(p))
	}
	noun := "pids"
	if len(workers) == 1 {
		noun = "pid"
	}
	s := fmt.Sprintf("; every worker of its multiprocessing pool (%s %s) waits on it for a task, so none runs the task whose result it awaits", noun, strings.Join(ps, ", "))
	for _, l := range late {
		s += fmt.Sprintf("; pid %d started %s after the pool's first worker: the pool started it to replace a worker that exited", l.PID, msText(l.AfterMS))
	}
	return s
}

// blockedHint is the hint for threads blocked with no holder, cycle or
// stop to name: by what they wait on. ownPipes: their pipe reads lead
// back to their own process.
func blockedHint(kinds []classify.KindCount, ownPipes bool) string {
	switch {
	case hasKind(kinds, model.WaitLoopBlocked):
		return "A coroutine makes a synchronous call (time.sleep, a blocking read, a sync HTTP client) that holds the asyncio event loop: nothing else on the loop runs. Await the async form (await asyncio.sleep, an async client), or run the call in a thread (await asyncio.to_thread(fn) / loop.run_in_executor)."
	case hasKind(kinds, model.WaitPoolResult):
		return "A multiprocessing pool's worker process does not finish its task: diagnose the workers (they are this process's children), and pass a timeout to get() so the caller learns of it."
	case hasKind(kinds, model.WaitFuture):
		return "A future's result never comes: the worker running it is stuck (follow it), or nothing runs it. Pass a timeout to result()."
	case hasKind(kinds, model.WaitUninterruptible):
		return "A thread is in uninterruptible sleep: nothing in user space will move it, not even SIGKILL. Look at the device or filesystem it waits on (as root: cat /proc/PID/task/TID/stack)."
	case hasKind(kinds, model.WaitStopped):
		return "A thread is stopped by a signal or a tracer: send SIGCONT, or detach the debugger."
	case hasKind(kinds, model.WaitChildExit):
		return "It waits for a child process to exit: diagnose the child (hangdoc CHILD_PID); if the child writes to a pipe this process never reads, read while waiting (communicate())."
	case hasKind(kinds, model.WaitFileLock):
		return "It waits for a file lock another process holds (two runs of one job, a package manager's lock): find why the holder does not finish, and let a second run fail fast (flock -n, or -w SECONDS) instead of queueing behind it."
	case hasKind(kinds, model.WaitStdin):
		return "It waits for input on its standard input that nobody sends: run it with stdin from /dev/null (for git: GIT_TERMINAL_PROMPT=0)."
	case hasKind(kinds, model.WaitPipeWrite, model.WaitSocketWrite):
		return "It is blocked writing because the other end does not drain: look at the reader, and put a timeout on the write."
	case hasKind(kinds, model.WaitJavaLock, model.WaitJavaMonitor):
		return javaLockNoOwnerHint()
	case hasKind(kinds, model.WaitJavaSemaphore, model.WaitJavaPark, model.WaitJavaFuture, model.WaitObjectWait):
		return "Threads wait on a Java synchronizer that records no owner (a Semaphore's permit, a CountDownLatch, a CompletableFuture, Object.wait): the evidence stops at the wait. Look at the threads that should release, count down, complete or notify it (WAITS lists who could), and give the wait a timeout (tryAcquire, await or get with a timeout, orTimeout)."
	case hasKind(kinds, model.WaitLock):
		return "Threads wait on a lock whose holder is not recorded (not a glibc mutex): take stacks to see who holds it."
	case hasKind(kinds, model.WaitSocketRead, model.WaitSocketConnect, model.WaitHTTPResponse) ||
		hasKind(kinds, model.WaitPipeRead, model.WaitTTYRead) && !ownPipes:
		// Only a wait that names an outside call: a socket, a pipe to
		// another process, a terminal.
		return "Blocked on the outside world: the fix is a timeout, not a lock change. It waits on a socket, or on a pipe or terminal that another process should write: follow the other end (WAITS) to see why it does not answer."
	case hasKind(kinds, model.WaitPipeRead, model.WaitTTYRead):
		return "It reads a pipe whose other end only this process holds: one of its own threads should write it or close it. Find which (ls -l /proc/PID/fd, the WAITS) and what that thread waits for instead."
	case hasKind(kinds, model.WaitFileRead, model.WaitFileWrite):
		return "A read or write of a file does not return, on a descriptor the evidence does not follow: find what it is (ls -l /proc/PID/fd; findmnt -T PATH for a file) — a pipe that another thread or process should write, a file on a network or FUSE mount, a device — and why it does not answer; the fix is there, or a timeout around the call."
	case hasKind(kinds, model.WaitPythonLock):
		return "Threads wait for a Python lock whose holder no stack shows: look for an acquire() without a release() on some path (use with), or a thread that took the lock again from a signal handler or a callback. py-spy dump --locals shows which lock each thread waits for."
	case hasKind(kinds, model.WaitFutex, model.WaitCondition, model.WaitEvent, model.WaitThreadExit, model.WaitQueueJoin):
		return "Threads wait for a wake-up (a condition, a semaphore, an event, a join) that no named thread is about to send: the evidence stops at the wait. Look next at the threads that should send it (WAITS lists who could) and at whether it was sent before the wait began (a lost wake-up)."
	}
	// The facts stop at the wait: no holder, no other end, no outside call.
	return "Blocked, and the evidence stops at the wait itself: it names no holder and no other end. Look next at the blocked threads' stacks (py-spy dump --pid PID, or gdb -p PID -batch -ex 'thread apply all bt') to see what each waits for and who should end it."
}

func goBlockedHint(kinds []classify.KindCount) string {
	switch {
	case hasKind(kinds, model.WaitHTTPResponse):
		return "An HTTP client waits for a response with no timeout: give the client one (http.Client{Timeout: …}, or a context deadline per request), and find why the server does not answer (its process is named above)."
	case hasKind(kinds, model.WaitDBConn):
		return "Goroutines wait for a free connection of a full database/sql pool: find who holds the connections (rows or transactions left open: defer rows.Close(), tx.Rollback on every path), or raise SetMaxOpenConns; give queries a context deadline."
	case hasKind(kinds, model.WaitSemaphore, model.WaitSingleflight, model.WaitErrgroup):
		return "Goroutines wait on a semaphore, a singleflight call or an errgroup whose work does not finish: follow the goroutines that hold the slots or run the call, and give them a context deadline."
	case hasKind(kinds, model.WaitMutex, model.WaitRWMutex):
		return "Goroutines wait for a mutex whose holder the dumps do not show: look for a path that returns without Unlock (use defer mu.Unlock()), or a holder blocked elsewhere."
	case hasKind(kinds, model.WaitWaitGroup):
		return "A WaitGroup waits for goroutines that will never call Done: look for a path that returns before Done (use defer wg.Done()), or workers blocked elsewhere."
	case hasKind(kinds, model.WaitIO):
		// netpoll: a socket or a pipe, an outside call.
		return "Goroutines wait on the outside world (a socket or a pipe, through netpoll): the fix is a deadline or timeout on that I/O; find why the other end stopped."
	case hasKind(kinds, model.WaitSyscall):
		return "Goroutines are in system calls that do not return: the threads running them (THREADS: their syscall and wchan) say on what. Look there before choosing a fix."
	case hasKind(kinds, model.WaitChannel, model.WaitSelect):
		return "Goroutines wait on channels nobody serves: find the goroutine that should send or receive and why it stopped."
	}
	return "Blocked: follow what the biggest group waits for."
}

// kindsText says what a set of threads waits for: "7 waiting for a lock, 1
// writing to a full pipe".
func kindsText(kinds []classify.KindCount) string {
	var parts []string
	for _, kc := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", kc.N, kindWords(kc.Kind)))
	}
	return strings.Join(parts, ", ")
}

func blockedText(t *classify.Actor) string {
	text := kindWords(t.Wait)
	if c := callText(t.Syscall); c != "" {
		text += " in " + c
	}
	if co := t.Coroutine; co != nil {
		text += ", made by the coroutine " + threadWhere([]model.Frame{*co})
	}
	if t.Resource != "" {
		text += " on " + t.Resource
	}
	return text
}

// namesOf lists thread names compactly: "worker-0…worker-7".
func namesOf(ts []*classify.Actor) string {
	if len(ts) == 0 {
		return ""
	}
	if len(ts) > 2 {
		return ts[0].Name + "…" + ts[len(ts)-1].Name
	}
	return ts[0].Name + ", " + ts[len(ts)-1].Name
}

// goList names goroutines compactly: "goroutine 7 (main.ping), goroutine 8 (main.pong)".
func goList(gs []*classify.Actor) string {
	var parts []string
	for i, g := range gs {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(gs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("goroutine %d (%s)", g.Ref.Goroutine, Where(g.Stack)))
	}
	return strings.Join(parts, ", ")
}

// isPythonLockWaiter reports a thread that waits for a Python lock.
func (w *words) isPythonLockWaiter(r classify.Ref) bool {
	a := w.actor(r)
	if a == nil {
		return false
	}
	l := w.lock(a.WaitsFor)
	return l != nil && l.Kind == classify.LockPython
}

// spinWhere is where a spinning goroutine loops: the loop the kernel's
// sampling caught its thread in, else where its stack stands.
func spinWhere(a *classify.Actor) string {
	if p := a.OnCPU; p != nil && p.LoopSamples > 0 {
		return cpuLoopText(p)
	}
	return Where(a.Stack)
}

// spinningHint is the hint for a spinning thread, by what the kernel's
// samples caught it in: a Python thread's C call (a regular expression's
// engine, which only its input ends), a loop in one function, or nothing
// (no sampling: the stack alone cannot tell a loop from a long call).
func spinningHint(a *classify.Actor) string {
	p := a.OnCPU
	switch {
	case pythonCode(a):
		return fmt.Sprintf("A Python thread runs Python code on every sample, its stack unchanged at %s: a loop whose exit condition never becomes true, or a computation far longer than meant. Look at that loop and what should end it (py-spy dump --locals shows its variables); it holds the GIL whenever it runs.", threadWhere(a.Stack))
	case p == nil || p.LoopSamples == 0:
	case len(a.Native) > 0 && slices.ContainsFunc(a.Native, func(f model.Frame) bool {
		return strings.HasPrefix(f.Func, "sre_") || strings.HasPrefix(f.Func, "_sre_")
	}):
		return fmt.Sprintf("A regular expression backtracks without end: %s runs Python's regex engine (%s) on every sample, called from %s. A pattern with nested or overlapping quantifiers ((a+)+, (.*)*) takes exponential time on an input that almost matches. Rewrite the pattern without them, bound the input's length, or match in a process you can time out; only a restart stops this call, which holds the GIL.",
			threadName(a), p.Loop.Func, pyCaller(a.Stack))
	case len(a.Native) > 0 && len(a.Stack) > 0:
		return fmt.Sprintf("A Python thread is inside one C call that does not return: %s, called from %s, on every sample. Python cannot interrupt it (no signal handler or timeout runs until it returns): look at what the Python frame passes it (py-spy dump --locals), bound that input, or run the call in a process you can time out; only a restart stops it.",
			frameAt(p.Loop, p.LastLine), pyCaller(a.Stack))
	default:
		return fmt.Sprintf("One thread loops in %s on nearly every sample, with no system call and no voluntary switch: look there for a loop whose exit condition never becomes true; its stack is in STACKS.", frameAt(p.Loop, p.LastLine))
	}
	return "A core is pinned and nothing moves: a tight loop, or a long computation or C call the kernel cannot see into. Two stacks a second apart tell which (gdb, py-spy dump, or a goroutine dump)."
}

// pythonCode reports a Python thread the kernel's samples caught in no
// one C function above the interpreter on most samples: it runs Python
// code (the interpreter's own frames, and the helpers they call, an
// addition or a free, caught in turn).
func pythonCode(a *classify.Actor) bool {
	p := a.OnCPU
	return p != nil && p.LoopSamples == 0 && a.Python != nil && len(a.Stack) > 0 && 2*p.MostOn < p.Samples
}

// pyCaller is where a Python thread calls into C: its innermost frame,
// and where the library it is in was called from the program's own code
// ("match (__init__.py:166) ← render (app.py:21)").
func pyCaller(stack []model.Frame) string {
	s := threadWhere(stack)
	if len(stack) == 0 || !classify.PythonLib(stack[0].File) {
		return s
	}
	if i := slices.IndexFunc(stack, func(f model.Frame) bool { return !classify.PythonLib(f.File) }); i > 0 {
		s += " ← " + frameWhere(stack[i])
	}
	return s
}

// spinIn is " in LOOP" for a spinning thread the kernel's sampling
// caught in one loop; where its stacks could not be walked to one (code
// without frame pointers), the functions it was caught in most; else "".
func spinIn(a *classify.Actor) string {
	p := a.OnCPU
	switch {
	case p == nil:
		return ""
	case p.LoopSamples > 0 && len(a.Native) > 0 && len(a.Stack) > 0:
		// A Python thread's C, above its Python frames.
		return " in " + cpuLoopText(p) + ", in a C call from " + pyCaller(a.Stack)
	case p.LoopSamples > 0:
		return " in " + cpuLoopText(p)
	case pythonCode(a):
		// The interpreter itself on most samples: it runs Python code
		// (the helpers it calls, an addition or a free, caught in turn).
		return fmt.Sprintf(" in Python code at %s, no C function above the interpreter on more than %d%% of its %s on a CPU", threadWhere(a.Stack), percentOf(p.MostOn, p.Samples), plural(p.Samples, "sample", "samples"))
	case len(p.Top) > 0:
		t := p.Top[0]
		s := fmt.Sprintf(" in %s, %d%% of %s on a CPU", frameAt(model.Frame{Func: t.Func, File: t.File}, 0), percentOf(t.Samples, p.Samples), plural(p.Samples, "sample", "samples"))
		var more []string
		for _, t := range p.Top[1:] {
			more = append(more, fmt.Sprintf("%s %d%%", t.Func, percentOf(t.Samples, p.Samples)))
		}
		if len(more) > 0 {
			s += " (no one function on most of them; also " + strings.Join(more, ", ") + ")"
		}
		if a.Python != nil && len(a.Stack) > 0 {
			s += ", in C called from " + pyCaller(a.Stack)
		}
		return s
	}
	return ""
}

// cpuGoesTo is "; the kernel's samples caught it most in F1 (N%), F2,
// F3": the functions the threads were caught running in, summed over
// every thread, most first; "" without on-CPU samples.
func (w *words) cpuGoesTo() string {
	by := map[string]int{}
	total := 0
	for i := range w.d.Threads {
		p := w.d.Threads[i].OnCPU
		if p == nil {
			continue
		}
		total += p.Samples
		for _, t := range p.Leaves {
			by[t.Func] += t.Samples
		}
	}
	if total == 0 || len(by) == 0 {
		return ""
	}
	funcs := slices.Collect(maps.Keys(by))
	slices.SortFunc(funcs, func(a, b string) int {
		if c := cmp.Compare(by[b], by[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for i, f := range funcs[:min(3, len(funcs))] {
		if i == 0 {
			f += fmt.Sprintf(" (%d%% of %s)", percentOf(by[f], total), plural(total, "sample", "samples"))
		}
		parts = append(parts, f)
	}
	return "; on a CPU, the kernel's samples caught them most in " + strings.Join(parts, ", ")
}

// gcSummary: working, but hardly, for a JVM that collects more than it
// runs.
func gcSummary(g *classify.GCPressure) string {
	s := fmt.Sprintf("working, but %.0f%% of the last %.1fs went to garbage collection pauses (%d collections)", g.Percent, g.Seconds, g.GCs)
	if g.HeapMax > 0 {
		s += fmt.Sprintf(", its heap %s of %s full", Bytes(g.HeapUsed), Bytes(g.HeapMax))
	}
	return s + ": the JVM's own counters say it spends its time collecting, not running the program — starved by its own heap, not hung"
}
