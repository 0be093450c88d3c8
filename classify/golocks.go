package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// What goroutines wait for: the mutexes and their probable holders, the
// channels that tie blocked goroutines to each other, and the pipe a
// goroutine in IO wait is stuck on.

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
		kind    LockKind
		addr    string
		waiters []Ref
		sites   []site
	}
	type key struct {
		kind model.WaitKind
		addr string
		fn   string
		line int
	}
	var groups []*group
	index := map[key]*group{}
	gs := s.p.goroutines
	for i := range gs {
		g := &gs[i]
		if g.Class != ClassBlocked || (g.Wait != model.WaitMutex && g.Wait != model.WaitRWMutex) {
			continue
		}
		u := UserFrame(g.Stack)
		if u < 0 {
			continue
		}
		addr := mutexAddress(g.Stack)
		k := key{kind: g.Wait, addr: addr}
		if addr == "" {
			// No address: waiters at the same call site wait for the same
			// mutex as far as the dump can tell.
			k.fn, k.line = g.Stack[u].Func, g.Stack[u].Line
		}
		gr := index[k]
		if gr == nil {
			gr = &group{kind: LockGoMutex, addr: addr}
			if g.Wait == model.WaitRWMutex {
				gr.kind = LockGoRWMutex
			}
			index[k] = gr
			groups = append(groups, gr)
		}
		gr.waiters = append(gr.waiters, g.Ref)
		st := site{fn: g.Stack[u].Func, line: g.Stack[u].Line, recv: firstArg(g.Stack[u].Args)}
		if !slices.Contains(gr.sites, st) {
			gr.sites = append(gr.sites, st)
		}
	}
	// Which goroutines stand in each function, so a lock's candidates are
	// looked for among those in its waiters' functions only.
	inFunc := map[string][]int{}
	for i := range gs {
		for _, f := range gs[i].Stack {
			if l := inFunc[f.Func]; len(l) == 0 || l[len(l)-1] != i {
				inFunc[f.Func] = append(l, i)
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
		l.ID = l.Kind.String() + " " + l.Address
		waiting := map[int64]bool{}
		for _, w := range gr.waiters {
			waiting[w.Goroutine] = true
		}
		// Candidates stand in a locking function at another line than the
		// Lock calls, on the same receiver when both are known.
		type candidate struct {
			g     *Actor
			frame model.Frame
			recv  bool
			other string
		}
		var cands []candidate
		var idx []int
		for _, st := range gr.sites {
			idx = append(idx, inFunc[st.fn]...)
		}
		slices.Sort(idx)
		for _, i := range slices.Compact(idx) {
			g := &gs[i]
			if waiting[g.Ref.Goroutine] || g.Class == ClassIdle && g.Wait != model.WaitSleep {
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
				c := candidate{g: g, frame: f, recv: recv != "" && recv == gr.sites[i].recv}
				if atLock {
					c.other = other
				}
				cands = append(cands, c)
				break
			}
		}
		l.Basis = Basis{WaitFunc: first.fn, WaitLine: first.line}
		switch len(cands) {
		case 0:
			l.Basis.Rule = BasisGoNone
		case 1:
			c := cands[0]
			l.Holder = &c.g.Ref
			l.Basis.Rule, l.Basis.Owner = BasisGoProbable, c.g.Ref.Goroutine
			l.Basis.Frame, l.Basis.Line, l.Basis.Other = c.frame.Func, c.frame.Line, c.other
			if c.recv {
				l.Basis.Receiver = firstArg(c.frame.Args)
			}
		default:
			l.Basis.Rule = BasisGoCandidates
			for _, c := range cands {
				l.Basis.Candidates = append(l.Basis.Candidates, c.g.Ref.Goroutine)
			}
		}
		locks = append(locks, l)
	}
	slices.SortStableFunc(locks, func(a, b Lock) int { return cmp.Compare(len(b.Waiters), len(a.Waiters)) })
	return locks
}

// chanEdges ties goroutines blocked on channels to the goroutines that
// refer to those channels, from a source that reads memory (WaitChans and
// ChanRefs): only one of those could complete the operation. The graph
// decides which of them can never be woken.
func (s *goScene) chanEdges() {
	blocked := map[int64]model.Goroutine{}
	refs := map[string][]int64{}
	for _, h := range s.hists {
		last := h.lastWaiting()
		g := s.p.byGID[h.id]
		for _, c := range last.ChanRefs {
			refs[c] = append(refs[c], h.id)
		}
		if g.Class == ClassBlocked && (g.Wait == model.WaitChannel || g.Wait == model.WaitSelect) && len(last.WaitChans) > 0 {
			blocked[h.id] = last
		}
	}
	if len(blocked) == 0 {
		return
	}
	s.p.chanEdges = map[int64][]int64{}
	s.p.chanWhy = map[int64]*ChanWait{}
	for id, g := range blocked {
		var out []int64
		for _, c := range g.WaitChans {
			for _, other := range refs[c] {
				// One that waits on the same channel the same way (another
				// receiver of an idle pool) cannot complete the operation.
				if o, ok := blocked[other]; other == id || ok && o.State == g.State && slices.Contains(o.WaitChans, c) {
					continue
				}
				if !slices.Contains(out, other) {
					out = append(out, other)
				}
			}
		}
		if len(out) > 0 {
			s.p.chanEdges[id] = out
			s.p.chanWhy[id] = &ChanWait{State: g.State, Chans: g.WaitChans, Only: out}
		}
	}
}

// ioChain finds the pipe a goroutine in IO wait is stuck on, from the
// kernel: among the pipes the runtime's poller watches, the full one the
// target writes to (or the empty one it reads), with a process at the
// other end. nil when the evidence names none, or more than one.
func (p *proc) ioChain(g *Actor, resources map[string]model.Resource) *IOChain {
	if g.GoState != "IO wait" {
		return nil
	}
	write := slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return strings.HasSuffix(f.Func, "(*pollDesc).waitWrite") })
	read := slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return strings.HasSuffix(f.Func, "(*pollDesc).waitRead") })
	if !write && !read {
		return nil
	}
	var found []*IOChain
	seen := map[string]bool{}
	last := p.samples[len(p.samples)-1]
	for _, t := range last.Threads {
		for _, w := range t.Watches {
			_, name, _ := strings.Cut(w, " ")
			res, ok := resources[name]
			if seen[name] || !ok || res.Pipe == nil {
				continue
			}
			seen[name] = true
			mode, other := "w", "r"
			stuck := res.Pipe.Queued >= res.Pipe.Capacity && res.Pipe.Capacity > 0
			if read {
				mode, other = "r", "w"
				stuck = res.Pipe.Queued == 0
			}
			if !stuck || !slices.Contains(holders(res, mode), p.pid) {
				continue
			}
			var ends []int
			for _, pid := range holders(res, other) {
				if pid != p.pid {
					ends = append(ends, pid)
				}
			}
			if len(ends) == 0 {
				continue
			}
			found = append(found, &IOChain{Pipe: name, Write: !read, Ends: ends})
		}
	}
	if len(found) != 1 {
		return nil
	}
	return found[0]
}

// holders lists the processes holding a resource open in the given mode
// ("r", "w", or "" for any), without repeats, in order found.
func holders(res model.Resource, mode string) []int {
	var pids []int
	for _, h := range res.Holders {
		if mode != "" && !strings.Contains(h.Mode, mode) {
			continue
		}
		if !slices.Contains(pids, h.PID) {
			pids = append(pids, h.PID)
		}
	}
	return pids
}
