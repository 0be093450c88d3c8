package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Who holds the locks that Python threads and goroutines wait for. The
// runtimes record no owner for a threading.Lock or a sync.Mutex, so each
// actor's stack is read frame by frame: where it waits to take a lock, and
// which locks each of its frames holds, named as exactly as the evidence
// allows. A lock's holder is then the actor whose holds name it, with the
// basis of the match:
//
//   - exact: the same object — an address the waiter waits on equals the
//     one the holder locked (frame arguments, py-spy's --locals, a
//     receiver and a field that starts it);
//   - probable: the same lock expression in source — a module global by
//     name, a field of one type;
//   - inferred: the only candidate the others leave — the one actor that
//     holds a lock nobody else could be named for.
//
// Without the source, a frame that stands in the waiters' function past
// the line they lock at is a probable holder (the same site).

// lockRef is a lock as one frame names it.
type lockRef struct {
	// keys name the lock object: "addr:0x…" (an address), "obj:0x…:mu" (a
	// field of an object at an address), "global:pkg.mu", "field:T.mu".
	// The first two kinds are exact, the others probable.
	keys []string
	text string // the expression as written, "" without the source
	fn   string
	line int
	read bool // a read lock (RLock)
	// sourced: the expression was read from the source.
	sourced bool
	// Without the source: recv is the method's receiver word, and
	// waitAddr the mutex a frame waits for at its own Lock line; stale,
	// the source was there but does not match the stack.
	recv, waitAddr string
	stale          bool
	// copied: the lock is a copy the waiting frame made (a mutex field of
	// its value receiver): nothing else holds it, nothing unlocks it.
	copied bool
}

func exactKey(k string) bool { return strings.HasPrefix(k, "addr:") || strings.HasPrefix(k, "obj:") }

// lockWait is an actor waiting to take a lock at one of its frames.
type lockWait struct {
	a     *Actor
	frame int
	lock  lockRef
}

// lockHold is a lock an actor holds at one of its frames.
type lockHold struct {
	a     *Actor
	frame int
	lock  lockRef
}

// match says how far a hold names a waited-for lock.
func match(w, h lockRef) BasisKind {
	probable := false
	for _, wk := range w.keys {
		for _, hk := range h.keys {
			if wk != hk {
				continue
			}
			if exactKey(wk) {
				return BasisExact
			}
			probable = true
		}
	}
	if probable && !conflict(w, h) {
		return BasisProbable
	}
	return BasisUnknown
}

// conflict: both name the object the same way (its address; a field of an
// object at an address) and the addresses differ, so the same expression
// names two objects.
func conflict(w, h lockRef) bool {
	for _, wk := range w.keys {
		for _, hk := range h.keys {
			if exactKey(wk) && exactKey(hk) && hk != wk && comparable(wk, hk) {
				return true
			}
		}
	}
	return false
}

// comparable: two exact keys of one kind, naming the same field.
func comparable(a, b string) bool {
	ka, ra, _ := strings.Cut(a, ":")
	kb, rb, _ := strings.Cut(b, ":")
	if ka != kb {
		return false
	}
	if ka != "obj" {
		return true
	}
	_, pa, _ := strings.Cut(ra, ":")
	_, pb, _ := strings.Cut(rb, ":")
	return pa == pb
}

// lockGroup is the waiters of one lock.
type lockGroup struct {
	kind    LockKind
	waits   []lockWait
	keys    []string
	hasKey  map[string]bool
	id      string
	address string
}

// groupWaits puts waiters of the same lock together: by an exact key when
// they have one, else by the expression's probable key, else by the site
// they wait at when the source was not read (nothing better is known), and
// alone when the source names a lock no key identifies (a parameter, a
// local: the same line may lock different objects).
func groupWaits(waits []lockWait, kindOf func(lockWait) LockKind) []*lockGroup {
	var groups []*lockGroup
	index := map[string]*lockGroup{}
	for i, w := range waits {
		key := ""
		for _, k := range w.lock.keys {
			if exactKey(k) {
				key = k
				break
			}
		}
		if key == "" && len(w.lock.keys) > 0 {
			key = w.lock.keys[0]
		}
		if key == "" && !w.lock.sourced {
			key = fmt.Sprintf("site:%s:%d", w.lock.fn, w.lock.line)
		}
		if key == "" {
			key = fmt.Sprintf("alone:%d", i)
		}
		key = fmt.Sprintf("%d|%s", kindOf(w), key)
		g := index[key]
		if g == nil {
			g = &lockGroup{kind: kindOf(w)}
			index[key] = g
			groups = append(groups, g)
		}
		g.waits = append(g.waits, w)
		for _, k := range w.lock.keys {
			if !g.hasKey[k] {
				if g.hasKey == nil {
					g.hasKey = map[string]bool{}
				}
				g.hasKey[k] = true
				g.keys = append(g.keys, k)
			}
		}
	}
	return groups
}

// candidate is an actor that may hold a lock, and on what basis.
type candidate struct {
	hold  *lockHold
	basis BasisKind
	site  bool // matched by site, not by name
	arg   bool // matched by an argument word, with no source
	word  bool // matched by a word of its stack (a memory read)
}

// argMatch: the hold's frame, read without its source, prints among its
// arguments the address the waiters wait on ("arg:0x…" against
// "addr:0x…"), or its goroutine's stack refers to it ("word:0x…", a
// memory read's).
func argMatch(w, h lockRef) (arg, word bool) {
	for _, wk := range w.keys {
		a, ok := strings.CutPrefix(wk, "addr:")
		if !ok {
			continue
		}
		if slices.Contains(h.keys, "arg:"+a) {
			return true, false
		}
		if slices.Contains(h.keys, "word:"+a) {
			return false, true
		}
	}
	return false, false
}

// Bounds on the holder search, so that it stays linear in the holds
// whatever the input: a lock weighs every hold that names its object
// (an exact key) and at most maxWeighed others (by a probable key, by
// site), the first found; it ranks at most maxRanked candidates and
// counts the rest (Basis.Unranked).
const (
	maxWeighed = 256
	maxRanked  = 10
)

// holdIndex finds the holds that may name a lock without a pass over all
// of them: by each key a hold names, and by the function of a hold read
// without the source (the same-site rule).
type holdIndex struct {
	byKey map[string][]int32
	byFn  map[string][]int32
	// bySite are the holds of byFn with a receiver, by function and
	// receiver, and noRecv those without: a waiter whose receiver is
	// known stands where only those may hold its lock.
	bySite map[[2]string][]int32
	noRecv map[string][]int32
	// mark is the last group that took each hold: a hold named twice
	// is weighed once.
	mark []int32
}

func newHoldIndex(holds []lockHold) *holdIndex {
	x := &holdIndex{byKey: map[string][]int32{}, byFn: map[string][]int32{}, bySite: map[[2]string][]int32{}, noRecv: map[string][]int32{},
		mark: make([]int32, len(holds))}
	for i := range holds {
		h := &holds[i]
		for _, k := range h.lock.keys {
			x.byKey[k] = append(x.byKey[k], int32(i))
		}
		if !h.lock.sourced && h.lock.fn != "" {
			x.byFn[h.lock.fn] = append(x.byFn[h.lock.fn], int32(i))
			if h.lock.recv != "" {
				k := [2]string{h.lock.fn, h.lock.recv}
				x.bySite[k] = append(x.bySite[k], int32(i))
			} else {
				x.noRecv[h.lock.fn] = append(x.noRecv[h.lock.fn], int32(i))
			}
		}
	}
	return x
}

// candidates are the indexes of the holds group n (its first waiter w)
// weighs, in the holds' order: all those of its own object (one of w's
// exact keys; at its site, on its receiver), and the first maxWeighed of
// the others that share a key or its site.
func (x *holdIndex) candidates(n int32, w lockWait) []int32 {
	var exact, other []int32
	all := func(list []int32) {
		for _, i := range list {
			if x.mark[i] != n {
				x.mark[i] = n
				exact = append(exact, i)
			}
		}
	}
	for _, k := range w.lock.keys {
		if exactKey(k) {
			all(x.byKey[k])
		}
		if a, ok := strings.CutPrefix(k, "addr:"); ok {
			all(x.byKey["arg:"+a])
			all(x.byKey["word:"+a])
		}
	}
	site := !w.lock.sourced && w.lock.fn != ""
	if site && w.lock.recv != "" {
		all(x.bySite[[2]string{w.lock.fn, w.lock.recv}])
	}
	// Each list is in the holds' order: its first maxWeighed unmarked
	// are all that the merged first maxWeighed can take from it.
	take := func(list []int32) {
		got := 0
		for _, i := range list {
			if got == maxWeighed {
				break
			}
			if x.mark[i] != n {
				x.mark[i] = n
				other = append(other, i)
				got++
			}
		}
	}
	for _, k := range w.lock.keys {
		if !exactKey(k) {
			take(x.byKey[k])
		}
	}
	switch {
	case site && w.lock.recv != "":
		// Holds on another receiver cannot hold it (sameSite).
		take(x.noRecv[w.lock.fn])
	case site:
		take(x.byFn[w.lock.fn])
	}
	slices.Sort(other)
	if len(other) > maxWeighed {
		other = other[:maxWeighed]
	}
	out := append(exact, other...)
	slices.Sort(out)
	return out
}

// findHolders names each group's holder from the holds, and returns the
// locks. unseen are the actors whose stacks could not be read (a running
// goroutine read from memory): the last candidates, when nothing else is.
func findHolders(pid int, groups []*lockGroup, holds []lockHold, unseen []*Actor) []Lock {
	locks := make([]Lock, 0, len(groups))
	matched := make([]bool, len(holds))
	index := newHoldIndex(holds)
	type pending struct {
		l *Lock
		g *lockGroup
	}
	todo := make([]pending, 0, len(groups))
	seen := &seenActors{top: map[*Actor]int32{}, ranked: map[*Actor]int32{}}
	for n, g := range groups {
		l := Lock{Kind: g.kind}
		first := g.waits[0]
		l.Address, l.ID = lockName(g, first)
		waiting := make(map[*Actor]int, len(g.waits))
		for _, w := range g.waits {
			l.Waiters = append(l.Waiters, w.a.Refs()...) // a goroutine's twins wait too
			waiting[w.a] = w.frame
			if w.lock.read {
				l.ReadWaiters = append(l.ReadWaiters, w.a.Refs()...)
			}
		}
		if first.lock.copied {
			// No one holds a copy made while the original was locked.
			l.Basis = Basis{Rule: BasisCopiedLock, WaitFunc: first.lock.fn, WaitLine: first.lock.line, Expr: first.lock.text, ReadLock: first.lock.read, Sourced: true, Waiters: len(g.waits)}
			locks = append(locks, l)
			todo = append(todo, pending{l: &locks[len(locks)-1], g: g})
			continue
		}
		var cands []candidate
		for _, i := range index.candidates(int32(n+1), first) {
			h := &holds[i]
			// A waiter's frames below the one that waits cannot hold what
			// it waits for; its frames above it can: a self-deadlock.
			if f, ok := waiting[h.a]; ok && h.frame < f {
				continue
			}
			if b := match(first.lock, h.lock); b != BasisUnknown {
				cands = append(cands, candidate{hold: h, basis: b})
				matched[i] = true
				continue
			}
			if sameSite(first, *h) {
				cands = append(cands, candidate{hold: h, basis: BasisProbable, site: true})
				matched[i] = true
				continue
			}
			if arg, word := argMatch(first.lock, h.lock); arg || word {
				// Its stack refers to the lock, and the source shows
				// the frame locked the expression the waiters lock:
				// probable; the address alone: inferred.
				b := BasisInferred
				if word && h.lock.sourced && first.lock.sourced && h.lock.text != "" && h.lock.text == first.lock.text {
					b = BasisProbable
				}
				cands = append(cands, candidate{hold: h, basis: b, arg: arg, word: word})
				matched[i] = true
			}
		}
		l.Basis = pickHolder(&l, g, cands, seen, int32(n+1))
		locks = append(locks, l)
		todo = append(todo, pending{l: &locks[len(locks)-1], g: g})
	}
	// Inferred: a lock with no holder, and exactly one actor (not one of
	// its waiters at the waiting frame) that holds a lock no other lock
	// was matched to. The actors that hold such a lock, each once, in
	// the holds' order:
	var loose []*Actor
	isLoose := map[*Actor]bool{}
	for i := range holds {
		h := &holds[i]
		if !matched[i] && h.lock.sourced && !isLoose[h.a] {
			isLoose[h.a] = true
			loose = append(loose, h.a)
		}
	}
	for _, p := range todo {
		if p.l.Holder != nil || len(p.l.Basis.Ranked) > 0 || p.l.Basis.Rule == BasisCopiedLock {
			continue
		}
		waiters := make(map[*Actor]bool, len(p.g.waits))
		for _, w := range p.g.waits {
			waiters[w.a] = true
		}
		// Two are as good as many: no single one is left. The actors
		// passed over are this lock's waiters, so the walk is as long as
		// its waiters.
		var who []*Actor
		for _, a := range loose {
			if len(who) == 2 {
				break
			}
			// Nobody is inferred to wait for itself: a self-deadlock needs
			// a name.
			if !waiters[a] {
				who = append(who, a)
			}
		}
		switch {
		case len(who) == 1:
			p.l.Holder = &who[0].Ref
			p.l.Basis.Kind, p.l.Basis.Rule, p.l.Basis.Owner = BasisInferred, BasisOnlyCandidate, refID(who[0].Ref)
		case len(who) == 0 && len(unseen) == 1:
			// Nothing seen holds it, and one actor is not seen at all.
			p.l.Holder = &unseen[0].Ref
			p.l.Basis.Kind, p.l.Basis.Rule, p.l.Basis.Owner = BasisInferred, BasisUnseen, refID(unseen[0].Ref)
		}
	}
	slices.SortStableFunc(locks, func(a, b Lock) int { return cmp.Compare(len(b.Waiters), len(a.Waiters)) })
	return locks
}

// sameSite: neither was read from the source, and the hold stands in the
// function the waiter locks in past its Lock: at another line, or at that
// line waiting for another mutex (two locked in one function, in opposite
// orders); on the same receiver when both are known.
func sameSite(w lockWait, h lockHold) bool {
	if w.lock.sourced || h.lock.sourced || w.lock.fn == "" || h.lock.fn != w.lock.fn {
		return false
	}
	if w.lock.recv != "" && h.lock.recv != "" && w.lock.recv != h.lock.recv {
		return false
	}
	if h.lock.line != w.lock.line {
		return true
	}
	addr := ""
	for _, k := range w.lock.keys {
		if a, ok := strings.CutPrefix(k, "addr:"); ok {
			addr = a
		}
	}
	return addr != "" && h.lock.waitAddr != "" && h.lock.waitAddr != addr
}

// seenActors are the actors pickHolder has taken, each marked with the
// lock (its number) that took it last: one pair of maps for all the locks,
// never cleared.
type seenActors struct {
	top, ranked map[*Actor]int32
}

// pickHolder names the holder: the one actor with the strongest basis; the
// candidates ranked when several share it. n is the lock's number, for
// seen.
func pickHolder(l *Lock, g *lockGroup, cands []candidate, seen *seenActors, n int32) Basis {
	first := g.waits[0].lock
	b := Basis{Rule: BasisNoCandidate, WaitFunc: first.fn, WaitLine: first.line, Expr: first.text, ReadLock: first.read, Sourced: first.sourced, Stale: first.stale, Waiters: len(g.waits)}
	for _, k := range g.keys {
		if f, ok := strings.CutPrefix(k, "futex:"); ok && len(g.waits) > 1 {
			b.Futex = f
		}
	}
	if len(cands) == 0 {
		return b
	}
	slices.SortStableFunc(cands, func(x, y candidate) int { return cmp.Compare(x.basis, y.basis) })
	best := cands[0].basis
	var top []candidate
	for _, c := range cands {
		if c.basis == best && seen.top[c.hold.a] != n {
			seen.top[c.hold.a] = n
			top = append(top, c)
		}
	}
	readers := l.Kind == LockGoRWMutex && slices.ContainsFunc(top, func(c candidate) bool { return c.hold.lock.read })
	for _, c := range cands {
		if seen.ranked[c.hold.a] == n {
			continue
		}
		seen.ranked[c.hold.a] = n
		for _, ref := range c.hold.a.Refs() { // twins stand there too
			if len(b.Ranked) == maxRanked {
				b.Unranked++
				continue
			}
			b.Ranked = append(b.Ranked, RankedHolder{Ref: ref, Kind: c.basis, Frame: c.hold.a.Stack[c.hold.frame].Func,
				Line: c.hold.a.Stack[c.hold.frame].Line, Expr: c.hold.lock.text, Read: c.hold.lock.read, Site: c.site})
		}
	}
	switch {
	case readers:
		// A read lock is held by many at once: every reader holds it.
		for _, c := range top {
			if c.hold.lock.read {
				l.Readers = append(l.Readers, c.hold.a.Refs()...)
			}
		}
		b.Kind, b.Rule = best, BasisReaders
	case len(top) == 1 && len(top[0].hold.a.Twins) == 0:
		c := top[0]
		l.Holder = &c.hold.a.Ref
		b.Kind, b.Owner = best, refID(c.hold.a.Ref)
		b.Rule = BasisSameExpr
		switch {
		case best == BasisExact:
			b.Rule = BasisSameObject
		case c.site:
			b.Rule = BasisSameSite
		case c.arg:
			b.Rule = BasisArgAddress
			b.Address = l.Address
		case c.word:
			b.Rule = BasisStackWord
			b.Address = l.Address
		}
		b.Frame, b.Line, b.HeldExpr = c.hold.a.Stack[c.hold.frame].Func, c.hold.a.Stack[c.hold.frame].Line, c.hold.lock.text
		if c.site && first.recv != "" && first.recv == c.hold.lock.recv {
			b.Receiver = first.recv
		}
		if i := slices.IndexFunc(g.waits, func(w lockWait) bool { return w.a == c.hold.a }); i >= 0 {
			b.Self = true
			// The calls between the frame that holds it and the one that
			// waits for it, outermost first: how it came back to the lock
			// (a callback, a signal handler run on top of it).
			between := c.hold.a.Stack[g.waits[i].frame+1 : c.hold.frame]
			for k := len(between) - 1; k >= 0; k-- {
				b.Reentry = append(b.Reentry, between[k])
			}
		}
	default:
		b.Kind, b.Rule = best, BasisCandidates
	}
	return b
}

// lockName is a lock's address and id, from what its waiters say.
func lockName(g *lockGroup, w lockWait) (address, id string) {
	for _, k := range g.keys {
		if strings.HasPrefix(k, "addr:") {
			address = strings.TrimPrefix(k, "addr:")
			break
		}
	}
	if address == "" && w.lock.text != "" {
		address = w.lock.text
	}
	if address == "" {
		address = fmt.Sprintf("locked at %s:%d", w.lock.fn, w.lock.line)
	} else if w.lock.text != "" && address == w.lock.text && w.lock.fn != "" {
		address = fmt.Sprintf("%s (locked at %s:%d)", w.lock.text, w.lock.fn, w.lock.line)
	}
	return address, g.kind.String() + " " + address
}

func refID(r Ref) int64 {
	if r.Goroutine != 0 {
		return r.Goroutine
	}
	return int64(r.TID)
}
