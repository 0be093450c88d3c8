package classify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// verdict gives a Go program its answer from its goroutines, in the order
// an on-call engineer must hear it: a cycle, a mutex holder that spins or
// is stuck, a spinning goroutine, work, a channel deadlock the evidence
// suggests, a pool with nothing to feed it, blocked goroutines, idleness.
// The threads' evidence stays, after the goroutines'.
func (s *goScene) verdict(d *Diagnosis, locks []Lock, cycles [][]Ref, chanWhy map[int64]string) {
	byClass := map[Class][]*Goroutine{}
	runtime := 0
	for i := range d.Goroutines {
		g := &d.Goroutines[i]
		if s.aside[g.ID] {
			runtime++
			continue
		}
		byClass[g.Class] = append(byClass[g.Class], g)
	}
	var held *Lock
	for i := range locks {
		if locks[i].Holder != nil && (held == nil || len(locks[i].Waiters) > len(held.Waiters)) {
			held = &locks[i]
		}
	}
	var holder *Goroutine
	if held != nil {
		holder = s.byID[held.Holder.Goroutine]
	}
	ev := []string{fmt.Sprintf("%s in the last sample (%d of them the runtime's, the profiler's or an HTTP server's machinery), in %s; %s",
		plural(len(s.samples[len(s.samples)-1]), "goroutine", "goroutines"), runtime, plural(len(d.Groups), "group", "groups"), s.movedText(d))}

	senders := slices.DeleteFunc(slices.Clone(byClass[ClassBlocked]), func(g *Goroutine) bool { return !strings.HasPrefix(g.State, "chan send") })
	forever := slices.DeleteFunc(slices.Clone(byClass[ClassBlocked]), func(g *Goroutine) bool {
		return !strings.Contains(g.State, "(nil chan)")
	})
	var pool []*Goroutine
	for _, id := range s.pool {
		pool = append(pool, s.byID[id])
	}

	switch {
	case len(cycles) > 0:
		d.Verdict, d.Confidence = Deadlock, High
		d.Summary = s.cycleSummary(cycles[0], locks, chanWhy)
		if len(cycles) > 1 {
			d.Summary += fmt.Sprintf(" (and %d more cycles)", len(cycles)-1)
		}
		d.Hint = "Goroutines wait on each other: for mutexes, take them in one global order; for channels, one side must not block (a buffered channel, a select with the other case, or a goroutine per direction). Only a restart frees them."
	case holder != nil && holder.Class == ClassSpinning:
		d.Verdict, d.Confidence = Spinning, High
		d.Summary = fmt.Sprintf("goroutine %d spins in %s while probably holding %s; %s for it",
			holder.ID, goWhere(holder.Stack), held.ID, plural(len(held.Waiters), "goroutine waits", "goroutines wait"))
		d.Hint = "One goroutine loops while holding the mutex the others want: look for a loop whose exit condition never becomes true under this lock (its stack is in STACKS), and never hold a lock across a loop that waits for something."
	case holder != nil && holder.Class == ClassBlocked:
		d.Verdict, d.Confidence = Blocked, High
		what := fmt.Sprintf("%s in %s", goWaitText[holder.BlockedOn], goWhere(holder.Stack))
		if chain := s.ioChain(holder); chain != "" {
			what = fmt.Sprintf("blocked in %s on %s", goWhere(holder.Stack), chain)
			ev = append(ev, fmt.Sprintf("goroutine %d [IO wait] waits in the runtime's poller; the kernel says the descriptor is %s", holder.ID, chain))
		}
		d.Summary = fmt.Sprintf("goroutine %d probably holds %s and is %s; %s for the mutex",
			holder.ID, held.ID, what, plural(len(held.Waiters), "goroutine waits", "goroutines wait"))
		d.Hint = goHolderHint(holder)
	case len(byClass[ClassSpinning]) > 0:
		sp := byClass[ClassSpinning]
		d.Verdict, d.Confidence = Spinning, Medium
		d.Summary = fmt.Sprintf("goroutine %d spins in %s: %s", sp[0].ID, goWhere(sp[0].Stack), sp[0].Why)
		if len(sp) > 1 {
			d.Summary = fmt.Sprintf("%d goroutines spin, goroutine %d first, in %s", len(sp), sp[0].ID, goWhere(sp[0].Stack))
		}
		d.Hint = "A goroutine runs with the same stack in every sample while a core is pinned: a tight loop. Its stack is in STACKS; look for the loop's exit condition."
	case len(byClass[ClassWorking]) > 0:
		w := byClass[ClassWorking]
		d.Verdict, d.Confidence = Working, Medium
		d.Summary = fmt.Sprintf("%s working: their stacks move between samples; slow, not stopped", plural(len(w), "goroutine is", "goroutines are"))
		if g := biggestGroup(d, ClassBlocked); g != nil && g.Count > len(w) {
			// A few goroutines that move (a ticker, a health check) do not
			// make a pile of blocked ones healthy.
			d.Summary += fmt.Sprintf("; but %s did not move during the run, more than are working: look there first", g.Title)
			d.Confidence = Low
		}
		d.Hint = "It is making progress. Look for what makes it slow (go tool pprof on /debug/pprof/profile, or perf) rather than for a hang."
	case len(senders) > 0 && len(pool) == 0:
		d.Verdict, d.Confidence = Deadlock, Medium
		d.Summary = fmt.Sprintf("%s blocked sending on channels (%s), and no goroutine is running or can run to receive: a probable channel deadlock, which the runtime does not report because something (a listener, a timer) keeps the program alive",
			plural(len(senders), "goroutine is", "goroutines are"), goList(senders))
		d.Hint = "Goroutines wait on channels nobody will serve: find which goroutine was meant to receive (the dump does not say which channel each waits on; --no-stop off lets hangdoc read it with Delve). One side must not block: a buffered channel, or a select with a way out."
	case len(pool) > 0:
		d.Verdict, d.Confidence = Idle, High
		d.Summary = fmt.Sprintf("all %s wait in %s and no goroutine is left that could send: whatever feeds the pool stopped — the feeder goroutine is gone",
			plural(len(pool), "worker", "workers"), goWhere(pool[0].Stack)+" ["+pool[0].State+"]")
		d.Hint = "The goroutine that sent work to the pool returned or died without closing the channel: find why it stopped (a recovered panic, an early return on error), and close the channel (or cancel a context) on every exit path so the pool ends loudly."
	case len(byClass[ClassBlocked]) > 0:
		b := byClass[ClassBlocked]
		d.Verdict, d.Confidence = Blocked, High
		d.Summary = fmt.Sprintf("%s blocked and none runs; the biggest group: %s", plural(len(b), "goroutine is", "goroutines are"), biggestTitle(d, ClassBlocked))
		d.Hint = goBlockedHint(b)
	default:
		d.Verdict, d.Confidence = Idle, Medium
		d.Summary = fmt.Sprintf("all goroutines are parked waiting for work (%s): whatever feeds the program stopped", biggestTitle(d, ClassIdle))
		d.Hint = "Nothing here is stuck on anything of its own: look upstream, at whatever should hand it work (a producer, a connection, a timer) and why it stopped."
	}
	if len(s.samples) < 2 {
		d.Confidence = Low
		ev = append(ev, "only one goroutine dump: it cannot tell stopped from slow")
	}
	if len(forever) > 0 {
		ev = append(ev, fmt.Sprintf("%s can never wake: %s", plural(len(forever), "goroutine", "goroutines"), goList(forever)))
	}
	seen := map[int64]bool{}
	add := func(g *Goroutine) {
		if g == nil || seen[g.ID] {
			return
		}
		seen[g.ID] = true
		line := fmt.Sprintf("goroutine %d [%s]: %s; at %s", g.ID, g.State, g.Why, goWhere(g.Stack))
		if g.Thread != 0 {
			line += fmt.Sprintf(", on tid %d", g.Thread)
		}
		ev = append(ev, line)
	}
	for _, c := range cycles {
		for _, r := range c {
			add(s.byID[r.Goroutine])
		}
	}
	if holder != nil {
		add(holder)
	}
	for _, g := range byClass[ClassSpinning] {
		add(g)
	}
	for _, l := range locks {
		ev = append(ev, fmt.Sprintf("%s: %s on it; %s", l.ID, plural(len(l.Waiters), "goroutine waits", "goroutines wait"), l.Basis))
	}
	for _, g := range d.Groups {
		if g.Grew {
			ev = append(ev, fmt.Sprintf("pile-up: %s grew from %d to %d during the run", g.Title, g.Counts[0], g.Counts[len(g.Counts)-1]))
		}
	}
	if longest := longestWait(byClass[ClassBlocked]); longest != nil {
		ev = append(ev, fmt.Sprintf("goroutine %d has waited at least %d minutes; the runtime stamps wait times only at garbage collection, so every figure is a lower bound and a goroutine without one may have waited as long",
			longest.ID, longest.WaitMinutes))
	}
	d.Evidence = append(ev, d.Evidence...)
}

// movedText says how many goroutines came, went or moved during the run.
func (s *goScene) movedText(d *Diagnosis) string {
	if len(s.samples) < 2 {
		return "one dump"
	}
	first := map[int64]bool{}
	for _, g := range s.samples[0] {
		first[g.ID] = true
	}
	lastIDs := map[int64]bool{}
	for _, g := range s.samples[len(s.samples)-1] {
		lastIDs[g.ID] = true
	}
	came, went, moved := 0, 0, 0
	for _, g := range d.Goroutines {
		if !first[g.ID] {
			came++
		}
		if !lastIDs[g.ID] {
			went++
		}
		if g.Moved {
			moved++
		}
	}
	return fmt.Sprintf("across %d dumps %d moved, %d appeared and %d ended", len(s.samples), moved, came, went)
}

func (s *goScene) cycleSummary(c []Ref, locks []Lock, chanWhy map[int64]string) string {
	lockOf := map[int64]Lock{}
	for _, l := range locks {
		for _, w := range l.Waiters {
			lockOf[w.Goroutine] = l
		}
	}
	var parts []string
	for _, r := range c {
		g := s.byID[r.Goroutine]
		if l, ok := lockOf[r.Goroutine]; ok && l.Holder != nil {
			parts = append(parts, fmt.Sprintf("goroutine %d (%s) waits for %s, probably held by goroutine %d", g.ID, ownFunc(g.Stack), l.ID, l.Holder.Goroutine))
			continue
		}
		parts = append(parts, fmt.Sprintf("goroutine %d (%s) is blocked in %s", g.ID, ownFunc(g.Stack), chanWhy[g.ID]))
	}
	return fmt.Sprintf("deadlock between %s: %s", plural(len(c), "goroutine", "goroutines"), strings.Join(parts, "; "))
}

// ownFunc is the innermost function of the program's own code, else
// where the goroutine stands.
func ownFunc(stack []model.Frame) string {
	if u := userFrame(stack); u >= 0 {
		return stack[u].Func
	}
	return goWhere(stack)
}

func goHolderHint(h *Goroutine) string {
	switch h.BlockedOn {
	case "io", "syscall":
		return "One goroutine holds the mutex the others want and is itself blocked on I/O: never hold a lock across blocking I/O. Find who should drain (or answer) the other end and why it stopped, and put a deadline on the I/O."
	case "channel", "select":
		return "One goroutine holds the mutex the others want while it waits on a channel: release the lock before the channel operation, and look at who should serve that channel."
	case "mutex", "rwmutex":
		return "The holder waits for another mutex: a chain of locks. Follow the chain to its end (LOCKS)."
	}
	return "One goroutine holds the mutex the others want and is itself " + goWaitText[h.BlockedOn] + ": never hold a lock across a blocking call."
}

func goBlockedHint(b []*Goroutine) string {
	kinds := map[string]bool{}
	for _, g := range b {
		kinds[g.BlockedOn] = true
	}
	switch {
	case kinds["mutex"], kinds["rwmutex"]:
		return "Goroutines wait for a mutex whose holder the dumps do not show: look for a path that returns without Unlock (use defer mu.Unlock()), or a holder blocked elsewhere."
	case kinds["waitgroup"]:
		return "A WaitGroup waits for goroutines that will never call Done: look for a path that returns before Done (use defer wg.Done()), or workers blocked elsewhere."
	case kinds["io"], kinds["syscall"]:
		return "Goroutines wait on the outside world (a socket, a file, a child): the fix is a deadline or timeout on that I/O; find why the other end stopped."
	case kinds["channel"], kinds["select"]:
		return "Goroutines wait on channels nobody serves: find the goroutine that should send or receive and why it stopped."
	}
	return "Blocked: follow what the biggest group waits for."
}

// biggestTitle is the title of the biggest group of the class.
func biggestTitle(d *Diagnosis, c Class) string {
	if g := biggestGroup(d, c); g != nil {
		return g.Title
	}
	return "none"
}

// biggestGroup is the biggest group of the class, nil if none.
func biggestGroup(d *Diagnosis, c Class) *Group {
	for i := range d.Groups {
		if d.Groups[i].Class == c {
			return &d.Groups[i]
		}
	}
	return nil
}

// goList names goroutines compactly: "goroutine 7 (main.ping), goroutine 8 (main.pong)".
func goList(gs []*Goroutine) string {
	var parts []string
	for i, g := range gs {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(gs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("goroutine %d (%s)", g.ID, goWhere(g.Stack)))
	}
	return strings.Join(parts, ", ")
}

func longestWait(gs []*Goroutine) *Goroutine {
	var out *Goroutine
	for _, g := range gs {
		if g.WaitMinutes > 0 && (out == nil || g.WaitMinutes > out.WaitMinutes) {
			out = g
		}
	}
	return out
}
