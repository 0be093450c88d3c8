package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// What goroutines wait for: the mutexes and their probable holders, the
// cycles among them and through channels, and the pipe a goroutine in IO
// wait is stuck on.

// mutexFrames are where a mutex waiter's frames carry the mutex's address
// as their first argument, innermost first.
var mutexFrames = []string{"(*Mutex).lockSlow", "(*Mutex).Lock", "(*RWMutex).Lock", "(*RWMutex).RLock", "(*RWMutex).rLockSlow"}

// mutexAddress is the address of the mutex a waiter waits for, from the
// first argument of its Lock frames, "" when no frame vouches for one
// (register-ABI arguments print as "0x0?" or "...").
func mutexAddress(stack []model.Frame) string {
	for _, f := range stack {
		if !slices.ContainsFunc(mutexFrames, func(m string) bool { return strings.HasSuffix(f.Func, m) }) {
			continue
		}
		if a := firstArg(f.Args); a != "" {
			return a
		}
	}
	return ""
}

// firstArg is a frame's first argument word when the runtime vouches for
// it: "(0xc000012088, 0x1)" → "0xc000012088"; "" for "0x0?" or "...".
func firstArg(args string) string {
	a := strings.TrimPrefix(args, "(")
	a, _, _ = strings.Cut(a, ",")
	a = strings.TrimSuffix(strings.TrimSpace(a), ")")
	a = strings.TrimPrefix(a, "{")
	if !strings.HasPrefix(a, "0x") || strings.HasSuffix(a, "?") || a == "0x0" {
		return ""
	}
	return a
}

// mutexes groups mutex waiters by mutex and names each one's probable
// holder. The runtime does not record who holds a sync.Mutex, so the
// holder is inferred: a goroutine that is not waiting for the mutex but
// stands inside a function that locks it, past the Lock call.
func (s *goScene) mutexes() []Lock {
	type site struct {
		fn   string
		line int
		recv string
	}
	type group struct {
		kind, addr string
		waiters    []Ref
		sites      []site
	}
	var groups []*group
	index := map[string]*group{}
	for _, h := range s.hists {
		g := s.byID[h.id]
		if g.Class != ClassBlocked || (g.BlockedOn != "mutex" && g.BlockedOn != "rwmutex") {
			continue
		}
		u := userFrame(g.Stack)
		if u < 0 {
			continue
		}
		addr := mutexAddress(g.Stack)
		key := g.BlockedOn + "|" + addr
		if addr == "" {
			// No address: waiters at the same call site wait for the same
			// mutex as far as the dump can tell.
			key = fmt.Sprintf("%s|%s:%d", g.BlockedOn, g.Stack[u].Func, g.Stack[u].Line)
		}
		gr := index[key]
		if gr == nil {
			gr = &group{kind: "sync.Mutex", addr: addr}
			if g.BlockedOn == "rwmutex" {
				gr.kind = "sync.RWMutex"
			}
			index[key] = gr
			groups = append(groups, gr)
		}
		gr.waiters = append(gr.waiters, Ref{PID: s.pid, Goroutine: g.ID})
		st := site{fn: g.Stack[u].Func, line: g.Stack[u].Line, recv: firstArg(g.Stack[u].Args)}
		if !slices.Contains(gr.sites, st) {
			gr.sites = append(gr.sites, st)
		}
	}
	// Which goroutines stand in each function, so a lock's candidates are
	// looked for among those in its waiters' functions only.
	inFunc := map[string][]int64{}
	for _, h := range s.hists {
		for _, f := range s.byID[h.id].Stack {
			if l := inFunc[f.Func]; len(l) == 0 || l[len(l)-1] != h.id {
				inFunc[f.Func] = append(l, h.id)
			}
		}
	}
	locks := make([]Lock, 0, len(groups))
	for _, gr := range groups {
		l := Lock{Kind: gr.kind, Address: gr.addr, Waiters: gr.waiters}
		first := gr.sites[0]
		if l.Address == "" {
			l.Address = fmt.Sprintf("locked at %s:%d", first.fn, first.line)
		}
		l.ID = l.Kind + " " + l.Address
		waiting := map[int64]bool{}
		for _, w := range gr.waiters {
			waiting[w.Goroutine] = true
		}
		// Candidates stand in a locking function at another line than the
		// Lock calls, on the same receiver when both are known.
		type candidate struct {
			g     *Goroutine
			frame model.Frame
			recv  bool
			past  string
		}
		var cands []candidate
		var ids []int64
		for _, st := range gr.sites {
			ids = append(ids, inFunc[st.fn]...)
		}
		slices.Sort(ids)
		for _, id := range slices.Compact(ids) {
			g := s.byID[id]
			if waiting[g.ID] || g.Class == ClassIdle && g.BlockedOn != "sleep" {
				continue
			}
			other := mutexAddress(g.Stack)
			for _, f := range g.Stack {
				i := slices.IndexFunc(gr.sites, func(st site) bool { return st.fn == f.Func })
				if i < 0 {
					continue
				}
				// At a Lock line itself it is only past this mutex's Lock
				// if it waits there for another mutex (ABBA in one function).
				atLock := slices.ContainsFunc(gr.sites, func(st site) bool { return st.fn == f.Func && st.line == f.Line })
				if atLock && (gr.addr == "" || other == "" || other == gr.addr) {
					continue
				}
				// A method's receiver must match; a plain function's first
				// argument is just an argument.
				recv := firstArg(f.Args)
				if !strings.Contains(f.Func, ").") {
					recv = ""
				}
				if recv != "" && gr.sites[i].recv != "" && recv != gr.sites[i].recv {
					continue
				}
				c := candidate{g: g, frame: f, recv: recv != "" && recv == gr.sites[i].recv, past: "past the Lock call"}
				if atLock {
					c.past = fmt.Sprintf("waiting there for another mutex (%s), so past this one's Lock", other)
				}
				cands = append(cands, c)
				break
			}
		}
		where := fmt.Sprintf("%s, where the waiters call Lock at line %d", first.fn, first.line)
		switch len(cands) {
		case 0:
			l.Basis = fmt.Sprintf("no goroutine stands inside %s past its Lock call: the holder locked it elsewhere, or a path returned without Unlock (the runtime does not record mutex owners)", first.fn)
		case 1:
			c := cands[0]
			l.Holder = &Ref{PID: s.pid, Goroutine: c.g.ID}
			l.Basis = fmt.Sprintf("probable holder: goroutine %d is inside %s at line %d, %s (%s), and does not wait for this mutex", c.g.ID, c.frame.Func, c.frame.Line, c.past, where)
			if c.recv {
				l.Basis += fmt.Sprintf("; same receiver %s", firstArg(c.frame.Args))
			}
			l.Basis += "; the runtime does not record mutex owners, so this is an inference"
		default:
			var ids []string
			for _, c := range cands {
				ids = append(ids, fmt.Sprint(c.g.ID))
			}
			l.Basis = fmt.Sprintf("goroutines %s are all inside %s past its Lock call: one of them probably holds it (the runtime does not record mutex owners)", strings.Join(ids, ", "), first.fn)
		}
		locks = append(locks, l)
	}
	slices.SortStableFunc(locks, func(a, b Lock) int { return cmp.Compare(len(b.Waiters), len(a.Waiters)) })
	return locks
}

// lockCycles finds goroutines that wait for mutexes each other probably
// holds.
func (s *goScene) lockCycles(locks []Lock) [][]Ref {
	next := map[int64]int64{}
	for _, l := range locks {
		if l.Holder == nil {
			continue
		}
		for _, w := range l.Waiters {
			next[w.Goroutine] = l.Holder.Goroutine
		}
	}
	starts := make([]int64, 0, len(s.hists))
	for _, h := range s.hists {
		starts = append(starts, h.id)
	}
	return walkCycles(s.pid, starts, func(id int64) (int64, bool) {
		to, ok := next[id]
		return to, ok
	})
}

// walkCycles follows next from each start in turn until the walk ends or
// comes back to itself, and returns each cycle so closed once, as
// goroutines of pid in wait order.
func walkCycles(pid int, starts []int64, next func(int64) (int64, bool)) [][]Ref {
	var out [][]Ref
	done := map[int64]bool{}
	for _, start := range starts {
		var path []int64
		at := map[int64]int{}
		for id, ok := start, true; ok && !done[id]; id, ok = next(id) {
			if i, seen := at[id]; seen {
				var c []Ref
				for _, m := range path[i:] {
					c = append(c, Ref{PID: pid, Goroutine: m})
				}
				out = append(out, c)
				break
			}
			at[id] = len(path)
			path = append(path, id)
		}
		for _, id := range path {
			done[id] = true
		}
	}
	return out
}

// chanCycles finds goroutines blocked on channels that only other blocked
// goroutines refer to, from a source that reads memory (WaitChans and
// ChanRefs): a strongly connected set of such goroutines with no way out
// can never be woken. why says, per goroutine in a cycle, what it waits on.
func (s *goScene) chanCycles() ([][]Ref, map[int64]string) {
	blocked := map[int64]model.Goroutine{}
	refs := map[string][]int64{}
	for _, h := range s.hists {
		last := h.lastWaiting()
		g := s.byID[h.id]
		for _, c := range last.ChanRefs {
			refs[c] = append(refs[c], h.id)
		}
		if g.Class == ClassBlocked && (g.BlockedOn == "channel" || g.BlockedOn == "select") && len(last.WaitChans) > 0 {
			blocked[h.id] = last
		}
	}
	if len(blocked) == 0 {
		return nil, nil
	}
	// An edge a → b: b refers to a channel a waits on, so only b could
	// complete a's operation. A goroutine with an edge to one that is not
	// blocked on a channel can still be woken.
	edges := map[int64][]int64{}
	free := map[int64]bool{}
	for id, g := range blocked {
		for _, c := range g.WaitChans {
			for _, other := range refs[c] {
				// One that waits on the same channel the same way (another
				// receiver of an idle pool) cannot complete the operation.
				if o, ok := blocked[other]; other == id || ok && o.State == g.State && slices.Contains(o.WaitChans, c) {
					continue
				}
				if _, ok := blocked[other]; !ok {
					free[id] = true
				}
				if !slices.Contains(edges[id], other) {
					edges[id] = append(edges[id], other)
				}
			}
		}
	}
	// Free spreads backwards: whoever waits on a free goroutine is free.
	for changed := true; changed; {
		changed = false
		for id, out := range edges {
			if !free[id] && slices.ContainsFunc(out, func(o int64) bool { return free[o] }) {
				free[id], changed = true, true
			}
		}
	}
	ids := make([]int64, 0, len(blocked))
	for id := range blocked {
		if !free[id] && len(edges[id]) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	// Follow each one's first edge: inside a closed set every walk ends
	// in a cycle.
	cycles := walkCycles(s.pid, ids, func(id int64) (int64, bool) {
		if free[id] || len(edges[id]) == 0 {
			return 0, false
		}
		return edges[id][0], true
	})
	why := map[int64]string{}
	for _, id := range ids {
		g := blocked[id]
		var others []string
		for _, o := range edges[id] {
			others = append(others, fmt.Sprint(o))
		}
		why[id] = fmt.Sprintf("%s on chan %s, which only goroutine %s (itself blocked) refers to", g.State, strings.Join(g.WaitChans, ", "), strings.Join(others, ", "))
		if gr := s.byID[id]; gr != nil {
			gr.Why = fmt.Sprintf("%s; blocked %s", gr.Why, why[id])
		}
	}
	return cycles, why
}

// ioChain names the pipe a goroutine in IO wait is stuck on, from the
// kernel: among the pipes the runtime's poller watches, the full one the
// target writes to (or the empty one it reads), and the process at the
// other end: "pipe:[9417289] (fd 9), 65536/65536 bytes queued → read by
// pid 31160 (sleep 3600): sleeping in clock_nanosleep(…), 0% CPU". "" when
// the evidence names none, or more than one.
func (s *goScene) ioChain(g *Goroutine) string {
	if g.State != "IO wait" || s.graph == nil {
		return ""
	}
	write := slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return strings.HasSuffix(f.Func, "(*pollDesc).waitWrite") })
	read := slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return strings.HasSuffix(f.Func, "(*pollDesc).waitRead") })
	if !write && !read {
		return ""
	}
	var found []string
	seen := map[string]bool{}
	for _, t := range s.last.Threads {
		for _, w := range t.Watches {
			_, name, _ := strings.Cut(w, " ")
			res, ok := s.graph.w.Resources[name]
			if seen[name] || !ok || res.Pipe == nil {
				continue
			}
			seen[name] = true
			mode, other, verb := "w", "r", "read by"
			stuck := res.Pipe.Queued >= res.Pipe.Capacity && res.Pipe.Capacity > 0
			if read {
				mode, other, verb = "r", "w", "written by"
				stuck = res.Pipe.Queued == 0
			}
			if !stuck || !slices.Contains(holders(res, mode), s.pid) {
				continue
			}
			var ends []string
			for _, pid := range holders(res, other) {
				if pid != s.pid {
					ends = append(ends, fmt.Sprintf("%s%s: %s", s.graph.procName(pid), fdsOf(res, pid), s.graph.stateOf(pid)))
				}
			}
			if len(ends) == 0 {
				continue
			}
			found = append(found, fmt.Sprintf("%s%s, %s → %s %s", name, fdsOf(res, s.pid), resourceText(res), verb, strings.Join(ends, "; ")))
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}
