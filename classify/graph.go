package classify

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// maxChain bounds how far a chain of waits is followed.
const maxChain = 4

// graph is the one wait-for graph over actors (threads and goroutines) and
// processes. An actor points at what it waits for — a lock's holder, a
// joined thread, the process at the other end of a pipe or socket, a
// waited-for child, the goroutines that alone could complete its channel
// operation — and a process in which no thread works points at its
// blocked threads, since only they could do what the others wait for.
//
// Every wait is an "or": it ends when any one of the nodes it points at
// moves. So a set of actors is deadlocked when every node in it waits only
// for nodes in it, none of which can move.
type graph struct {
	target int
	rec    *model.Recording
	procs  map[int]*proc
	order  []int // target first, then peers by depth and pid
	edges  map[Ref][]Ref
	// free are the nodes that can move: an actor that works, a process
	// with a thread that does.
	free map[Ref]bool
	// and are the nodes that wait for every node they point at, not any
	// one: a writer waiting for all the readers of a sync.RWMutex.
	and map[Ref]bool
	// nobody are the actors whose wait no live actor is left to end: an
	// "or" over nothing, stuck for good.
	nobody map[Ref]bool
	// cand are the blocked threads whose wait names no one (a condition,
	// a semaphore, a future): no edge, but an "or" over its candidates
	// for whether it is stuck — stuck while every candidate is. Cycles
	// never run through them.
	cand map[Ref]*Wait
	// first and last are the times of the target's first and last samples.
	first, last time.Time
}

func newGraph(target *proc, rec *model.Recording, opts Options) *graph {
	g := &graph{target: target.pid, rec: rec, procs: map[int]*proc{}, edges: map[Ref][]Ref{}, free: map[Ref]bool{}, and: map[Ref]bool{}, nobody: map[Ref]bool{}, cand: map[Ref]*Wait{},
		first: target.samples[0].Time, last: target.samples[len(target.samples)-1].Time}
	g.procs[target.pid] = target
	g.order = append(g.order, target.pid)
	peers := slices.Clone(rec.Peers)
	slices.SortFunc(peers, func(a, b model.Process) int {
		return cmp.Or(cmp.Compare(a.Depth, b.Depth), cmp.Compare(a.PID, b.PID))
	})
	for _, pe := range peers {
		if g.procs[pe.PID] != nil {
			continue
		}
		p := &proc{pid: pe.PID, cmdline: pe.Cmdline, depth: pe.Depth, err: pe.Err}
		if len(pe.Samples) > 0 {
			p = newProc(pe.Samples, pe.Runtime, rec.Resources, nil, opts)
			p.cmdline, p.depth, p.err = pe.Cmdline, pe.Depth, pe.Err
		}
		g.procs[pe.PID] = p
		g.order = append(g.order, pe.PID)
	}
	for _, pid := range g.order {
		g.addProcess(g.procs[pid])
	}
	return g
}

// addProcess adds a process's actors and waits to the graph.
func (g *graph) addProcess(p *proc) {
	busy := false
	for _, t := range p.threads {
		busy = busy || t.Class == ClassWorking || t.Class == ClassSpinning
	}
	node := Ref{PID: p.pid}
	if busy {
		g.free[node] = true
	}
	for i := range p.threads {
		if c := p.threads[i].Class; c == ClassWorking || c == ClassSpinning {
			g.free[p.threads[i].Ref] = true
		}
	}
	for i := range p.waits {
		wt := &p.waits[i]
		if wt.Nobody {
			g.nobody[wt.From] = true
		}
		for _, to := range g.resolve(wt) {
			// A pipe or socket whose other end is in the waiter's own
			// process is no edge: another of its threads may drain it,
			// and locks already say who waits on whom inside a process.
			if to.IsProcess() && to.PID == wt.From.PID {
				continue
			}
			g.edges[wt.From] = append(g.edges[wt.From], to)
		}
		if t := p.byTID[wt.From.TID]; wt.Basis == EdgeCandidate && t != nil && t.Class == ClassBlocked {
			g.cand[wt.From] = wt
		}
		// A process none of whose threads works can only be moved by
		// its blocked threads (idle ones wake for reasons of their own
		// and are left out, which errs towards no cycle).
		if t := p.byTID[wt.From.TID]; !busy && t != nil && t.Class == ClassBlocked {
			g.edges[node] = append(g.edges[node], wt.From)
		}
	}
	rw := map[*Lock]*rwWaiters{}
	for i := range p.goroutines {
		gr := &p.goroutines[i]
		if gr.Class == ClassWorking || gr.Class == ClassSpinning {
			g.free[gr.Ref] = true
		}
		if gr.Class != ClassBlocked {
			continue
		}
		if l := p.lockByID(gr.WaitsFor); l != nil {
			g.edges[gr.Ref] = append(g.edges[gr.Ref], lockEdges(l, gr.Ref, g.and, rw)...)
		}
		for _, o := range p.chanEdges[gr.Ref.Goroutine] {
			g.edges[gr.Ref] = append(g.edges[gr.Ref], Ref{PID: p.pid, Goroutine: o})
		}
		if gr.Why.Rule == WhyNobodyLeft {
			g.nobody[gr.Ref] = true
		}
	}
}

// lockByID is the lock with that id, nil for none. Its index is built
// once for the locks as they stand, and again when they have moved.
func (p *proc) lockByID(id string) *Lock {
	if id == "" || len(p.locks) == 0 {
		return nil
	}
	if p.lockIndex.of != &p.locks[0] || p.lockIndex.n != len(p.locks) {
		p.indexLocks()
	}
	i, ok := p.lockIndex.byID[id]
	if ok && p.locks[i].ID != id {
		// The locks were reordered in place since.
		p.indexLocks()
		i, ok = p.lockIndex.byID[id]
	}
	if !ok {
		return nil
	}
	return &p.locks[i]
}

// lockIndex finds a process's locks by id (the first of an id).
type lockIndex struct {
	of   *Lock // the locks' first element when it was built
	n    int
	byID map[string]int
}

func (p *proc) indexLocks() {
	x := lockIndex{of: &p.locks[0], n: len(p.locks), byID: make(map[string]int, len(p.locks))}
	for i := range p.locks {
		if _, ok := x.byID[p.locks[i].ID]; !ok {
			x.byID[p.locks[i].ID] = i
		}
	}
	p.lockIndex = x
}

// rwWaiters is a sync.RWMutex's waiters split once: which wait to read,
// and the writers.
type rwWaiters struct {
	read    map[Ref]bool
	writers []Ref
}

// lockEdges are what a waiter of a lock waits for: its holder; for a
// sync.RWMutex held for reading, every reader (a writer needs them all to
// unlock), or, for a reader, the writers queued ahead of it. rw keeps
// each lock's split of its waiters, worked out once.
func lockEdges(l *Lock, w Ref, and map[Ref]bool, rw map[*Lock]*rwWaiters) []Ref {
	if l.Holder != nil {
		return []Ref{*l.Holder}
	}
	if len(l.Readers) == 0 {
		return nil
	}
	x := rw[l]
	if x == nil {
		x = &rwWaiters{read: make(map[Ref]bool, len(l.ReadWaiters))}
		for _, r := range l.ReadWaiters {
			x.read[r] = true
		}
		for _, o := range l.Waiters {
			if !x.read[o] {
				x.writers = append(x.writers, o)
			}
		}
		rw[l] = x
	}
	if !x.read[w] {
		and[w] = true
		return slices.Clone(l.Readers)
	}
	return slices.Clone(x.writers)
}

// resolve finds what a wait points at across processes, sets its To,
// Ends and Basis, and returns every node it waits for. Only proven and
// inferred edges are returned: a wait that names no one (a condition, a
// semaphore, a future) points at nobody, whatever its candidates, so no
// cycle or deadlock is ever claimed through a thread that merely could
// end a wait.
func (g *graph) resolve(w *Wait) []Ref {
	res := g.rec.Resources[w.Resource]
	var pids []int
	switch w.Kind.Role() {
	case model.RoleHeldBy, model.RoleJoining, model.RoleTracedBy:
		if w.To != nil {
			w.Basis, w.Candidates, w.CandidateCount = g.heldBasis(w), nil, 0
			return []Ref{*w.To}
		}
		if w.CandidateCount == 1 && !w.Nobody {
			// A lock is held by someone, a joined thread exists: the only
			// live thread left that could be it is.
			w.Basis = EdgeInferred
			return slices.Clone(w.Candidates)
		}
		return w.candidateEdge()
	case model.RoleWokenBy:
		return w.candidateEdge()
	case model.RolePolled:
		refs := g.polled(w)
		if len(w.Ends) > 0 {
			w.Basis = EdgeProven
		}
		return refs
	case model.RoleChild:
		if w.To != nil {
			w.Basis = EdgeProven
			return []Ref{*w.To}
		}
		for _, p := range g.rec.Family {
			if p.PPID == w.From.PID {
				pids = append(pids, p.PID)
			}
		}
	case model.RoleReadBy:
		pids = holders(res, "r")
	case model.RoleWrittenBy:
		pids = holders(res, "w")
	case model.RoleOtherEnd:
		if res.Peer != "" {
			pids = holders(g.rec.Resources[res.Peer], "")
		}
	default:
		return nil
	}
	w.Looked = true
	if len(pids) == 0 {
		return nil
	}
	refs := make([]Ref, 0, len(pids))
	for _, pid := range pids {
		refs = append(refs, Ref{PID: pid})
	}
	w.Ends = pids
	w.To = &refs[0]
	w.Basis = EdgeProven
	return refs
}

// candidateEdge is a wait that names no one: no edge, its candidates
// listed as such.
func (w *Wait) candidateEdge() []Ref {
	if w.CandidateCount > 0 {
		w.Basis = EdgeCandidate
	}
	return nil
}

// heldBasis is how sure a wait's named other end is: a lock's holder as
// sure as the lock says (by expression or site: inferred), anything else
// the kernel or the lock recorded.
func (g *graph) heldBasis(w *Wait) EdgeBasis {
	if p := g.procs[w.From.PID]; p != nil && w.Lock != "" {
		if l := p.lockByID(w.Lock); l != nil && (l.Basis.Kind == BasisProbable || l.Basis.Kind == BasisInferred) {
			return EdgeInferred
		}
	}
	return EdgeProven
}

// polled resolves a poll or select on pipes and sockets like a read or
// write on each descriptor: the wait ends when any process at the other
// end of any of them moves. A descriptor with no other end found (a remote
// peer, a closed end), or one whose other end is the poller's own process,
// may end it from where the graph cannot see: then it points at nobody,
// though the ends found are still named.
func (g *graph) polled(w *Wait) []Ref {
	w.Looked = true
	complete := true
	var pids []int
	for i := range w.Polled {
		p := &w.Polled[i]
		res := g.rec.Resources[p.Resource]
		var ends []int
		switch {
		case strings.HasPrefix(p.Resource, "pipe:"):
			if p.Read {
				ends = append(ends, holders(res, "w")...)
			}
			if p.Write {
				ends = append(ends, holders(res, "r")...)
			}
		case res.Peer != "":
			ends = holders(g.rec.Resources[res.Peer], "")
		}
		slices.Sort(ends)
		p.Ends = slices.Compact(ends)
		if len(p.Ends) == 0 || slices.Contains(p.Ends, w.From.PID) {
			complete = false
		}
		for _, pid := range p.Ends {
			if pid == w.From.PID {
				continue
			}
			if !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
			if w.To == nil {
				w.To, w.Resource = &Ref{PID: pid}, p.Resource
			}
		}
	}
	w.Ends = pids
	if !complete {
		return nil
	}
	refs := make([]Ref, 0, len(pids))
	for _, pid := range pids {
		refs = append(refs, Ref{PID: pid})
	}
	return refs
}

// deadlocked is the set of nodes that can never move: each waits for at
// least one node, and every node it waits for is in the set (for a node
// that waits for all it points at, one of them is); or its wait is an "or"
// over nothing (nobody); or it waits on something no one is named for and
// every candidate that could end it is in the set. It is found from all
// the nodes that wait, by dropping any that waits for one that can move,
// until none does. Candidates are counted by place, per process, as
// settle counts them.
func (g *graph) deadlocked() map[Ref]bool {
	in := map[Ref]bool{}
	for n, out := range g.edges {
		if len(out) > 0 && !g.free[n] {
			in[n] = true
		}
	}
	for n := range g.nobody {
		in[n] = true
	}
	for n := range g.cand {
		in[n] = true
	}
	// How many of each process's live threads are in the set, in all and
	// by place.
	counts := map[int]*placeCount{}
	add := func(r Ref, d int) {
		t := g.liveThread(r)
		if t == nil {
			return
		}
		c := counts[r.PID]
		if c == nil {
			c = &placeCount{at: map[place]int{}}
			counts[r.PID] = c
		}
		c.all += d
		c.at[g.procs[r.PID].settledAt[r.TID]] += d
	}
	for n := range in {
		add(n, 1)
	}
	for changed := true; changed; {
		changed = false
		for n := range in {
			var stuck bool
			if w := g.cand[n]; w != nil {
				stuck = g.liveThread(n) != nil && counts[n.PID].candidates(g.procs[n.PID].settledAt[n.TID]) == w.CandidateCount
			} else {
				out := g.edges[n]
				stuck = !slices.ContainsFunc(out, func(o Ref) bool { return !in[o] })
				if g.and[n] {
					stuck = slices.ContainsFunc(out, func(o Ref) bool { return in[o] })
				}
			}
			if !stuck {
				delete(in, n)
				add(n, -1)
				changed = true
			}
		}
	}
	return in
}

// placeCount is how many live threads of a process are in a set, in all
// and by place.
type placeCount struct {
	all int
	at  map[place]int
}

// candidates is how many of the set could end the wait of a thread in
// it at place k: all but those at k, or but itself at none.
func (c *placeCount) candidates(k place) int {
	if c == nil {
		return -1
	}
	if k != (place{}) {
		return c.all - c.at[k]
	}
	return c.all - 1
}

// liveThread is the thread a node is when it is a live thread of a
// sampled process, else nil.
func (g *graph) liveThread(r Ref) *Actor {
	p := g.procs[r.PID]
	if p == nil || r.Goroutine != 0 || r.TID == 0 || p.byTID == nil {
		return nil
	}
	if t := p.byTID[r.TID]; t != nil && t.Class != ClassExited && p.live[r.TID] {
		return t
	}
	return nil
}

// lostWakeup is the process's threads that can never move although no
// cycle of proven edges holds them: some wait on something no one is
// named for (a condition, a semaphore, an event, a future, a join they
// cannot name) whose every candidate waits itself, and the others wait
// for them. Nothing is left to move them and none of them is bound to: a
// lost wake-up (the signal came before the wait, or the one meant to send
// it waits too), blocked but not proved a deadlock. Nil when none of them
// waits on a candidate.
func (g *graph) lostWakeup(p *proc) []Ref {
	stuck := g.deadlocked()
	var out []Ref
	woken := false
	for i := range p.threads {
		r := p.threads[i].Ref
		if !stuck[r] || p.threads[i].Class != ClassBlocked {
			continue
		}
		out = append(out, r)
		woken = woken || g.cand[r] != nil
	}
	if !woken {
		return nil
	}
	return out
}

// cycles finds the wait-for cycles among the deadlocked nodes and returns
// each once, as its actors in wait order, starting from the smallest.
// Process nodes are steps, not members: a cycle is the actors that wait on
// each other.
func (g *graph) cycles() []Cycle {
	stuck := g.deadlocked()
	nodes := make([]Ref, 0, len(stuck))
	for n := range stuck {
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, compareRef)
	out := []Cycle{}
	seen := map[string]bool{}
	done := map[Ref]bool{}
	for _, start := range nodes {
		if done[start] {
			continue
		}
		// Depth-first search, keeping the path to report a cycle's members.
		var path []Ref
		onPath := map[Ref]int{}
		var visit func(n Ref)
		visit = func(n Ref) {
			if i, ok := onPath[n]; ok {
				c := actorsOf(path[i:])
				if key := cycleKey(c); len(c) > 0 && !seen[key] {
					seen[key] = true
					out = append(out, c)
				}
				return
			}
			if done[n] || !stuck[n] {
				return
			}
			onPath[n] = len(path)
			path = append(path, n)
			for _, next := range g.edges[n] {
				visit(next)
			}
			path = path[:len(path)-1]
			delete(onPath, n)
			done[n] = true
		}
		visit(start)
	}
	return out
}

func compareRef(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID), cmp.Compare(a.Goroutine, b.Goroutine))
}

// actorsOf drops process nodes and rotates the cycle to start at its
// smallest member.
func actorsOf(c []Ref) Cycle {
	var out Cycle
	for _, r := range c {
		if !r.IsProcess() {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	m := slices.IndexFunc(out, func(r Ref) bool { return compareRef(r, slices.MinFunc(out, compareRef)) == 0 })
	return append(out[m:], out[:m]...)
}

// cycleKey identifies a cycle by its members, for finding each once.
func cycleKey(c Cycle) string {
	b := make([]byte, 0, 24*len(c))
	for _, r := range c {
		b = appendRef(b, r)
	}
	return string(b)
}

func appendRef(b []byte, r Ref) []byte {
	for _, n := range []int64{int64(r.PID), int64(r.TID), r.Goroutine} {
		for i := 0; i < 8; i++ {
			b = append(b, byte(n>>(8*i)))
		}
	}
	return b
}

// processes summarises the peers.
func (g *graph) processes() []Process {
	out := []Process{}
	for _, pid := range g.order[1:] {
		p := g.procs[pid]
		v := Process{PID: pid, Cmdline: p.cmdline, Depth: p.depth, Err: p.err, Actors: p.threads, Waits: p.waits}
		if len(p.samples) > 0 {
			v.Verdict = p.verdict
			v.Key = p.keyThread()
		}
		out = append(out, v)
	}
	return out
}

// stepTo is whether a wait's chain goes on through its process: only a
// wait on another process, or one that points at a pipe or socket.
func (w *Wait) pointsOut() bool {
	return w.To != nil || strings.HasPrefix(w.Resource, "pipe:") || strings.HasPrefix(w.Resource, "socket:")
}

// chains follows, for each of the target's blocked threads, where its wait
// leads: through lock holders and across processes, to where it ends.
func (g *graph) chains() {
	p := g.procs[g.target]
	for i := range p.waits {
		w := &p.waits[i]
		if t := p.actor(w.From); t == nil || t.Class != ClassBlocked || !w.pointsOut() {
			continue
		}
		w.Chain = g.chain(w, map[int]bool{g.target: true}, 0, nil)
	}
}

func (g *graph) chain(w *Wait, visited map[int]bool, depth int, steps []Step) []Step {
	step := Step{From: w.From, Kind: w.Kind, Resource: w.Resource, To: w.To}
	if w.To == nil {
		step.End = EndHere
		if w.Kind == model.WaitChildExit || strings.HasPrefix(w.Resource, "pipe:") || strings.HasPrefix(w.Resource, "socket:") {
			step.End = EndNoOtherEnd
		}
		return append(steps, step)
	}
	to := *w.To
	if !to.IsProcess() && to.PID == w.From.PID {
		// A lock holder or a joined thread, in the same process.
		next := g.procs[to.PID].waitOf(to.TID)
		switch {
		case next == nil || depth >= maxChain:
			step.End = EndThreadState
		case next.From == w.From:
			step.End = EndSelfCycle
		case slices.ContainsFunc(steps, func(s Step) bool { return s.From == next.From }):
			step.End = EndActorCycle
		default:
			return g.chain(next, visited, depth+1, append(steps, step))
		}
		return append(steps, step)
	}
	if to.IsProcess() && to.PID == w.From.PID {
		step.End = EndOwnProcess
		return append(steps, step)
	}
	if visited[to.PID] {
		step.End = EndCycle
		return append(steps, step)
	}
	var next *Wait
	if p := g.procs[to.PID]; p != nil && len(p.samples) > 0 {
		if kt := p.keyThread(); kt != nil {
			next = p.waitOf(kt.Ref.TID)
		}
	}
	switch {
	case next == nil || !next.pointsOut():
		step.End = EndProcessState
	case depth >= maxChain:
		step.End = EndTooDeep
	default:
		visited[to.PID] = true
		return g.chain(next, visited, depth+1, append(steps, step))
	}
	return append(steps, step)
}

// orphans lists processes left behind in the target's process group (or
// session, when it leads one): not the target or its ancestors, and with a
// parent that is init or outside the group and not an ancestor — their own
// parent exited, typically a shell killed by a timeout.
func (g *graph) orphans() []Orphan {
	out := []Orphan{}
	byPID := map[int]model.Proc{}
	for _, p := range g.rec.Family {
		byPID[p.PID] = p
	}
	target, ok := byPID[g.target]
	if !ok {
		return out
	}
	ancestor := map[int]bool{}
	for pid := target.PPID; pid > 0 && !ancestor[pid]; pid = byPID[pid].PPID {
		ancestor[pid] = true
	}
	inGroup := func(p model.Proc) bool {
		return p.PGRP == target.PGRP || (target.Session == target.PID && p.Session == target.Session)
	}
	before := map[int]model.Proc{}
	for _, p := range g.rec.FamilyBefore {
		before[p.PID] = p
	}
	for _, p := range g.rec.Family {
		if p.PID == g.target || ancestor[p.PID] || !inGroup(p) {
			continue
		}
		parent, known := byPID[p.PPID]
		if p.PPID != 1 && (ancestor[p.PPID] || known && inGroup(parent)) {
			continue
		}
		o := Orphan{PID: p.PID, PPID: p.PPID, Command: p.Comm, State: p.State}
		if !g.rec.BootTime.IsZero() {
			started := g.rec.BootTime.Add(time.Duration(p.StartTicks) * time.Second / 100)
			o.AgeSeconds = float64(int(g.last.Sub(started).Seconds()*10)) / 10
		}
		if b, ok := before[p.PID]; ok && b.StartTicks == p.StartTicks {
			o.CPUPercent = g.cpuSince(b, p)
		}
		out = append(out, o)
	}
	return out
}

// cpuSince is a process's CPU use between the scans taken at the first
// and the last target sample.
func (g *graph) cpuSince(before, after model.Proc) float64 {
	if !g.last.After(g.first) {
		return 0
	}
	return percent(float64(after.CPUTime-before.CPUTime) / float64(g.last.Sub(g.first)))
}

// poolWaitsForTasks reports, for a target blocked on a multiprocessing
// pool's result, the pool's worker processes when every one of them
// waits on the target for a task: each is a child of the target with no
// thread that runs, and each waits either reading a pipe that only the
// target writes (the pool's task queue: a worker closes its own copy of
// the write end) or on a futex word it shares with the target (the task
// queue's lock). Then no worker runs a task, and the result awaited is of
// a task no worker has: its worker died running it. nil otherwise, or
// when the target has no such child.
func (g *graph) poolWaitsForTasks() ([]int, []PoolWorker) {
	var workers []int
	var starts []uint64
	for _, f := range g.rec.Family {
		if f.PPID != g.target {
			continue
		}
		p := g.procs[f.PID]
		if p == nil || len(p.samples) == 0 || len(p.threads) == 0 {
			return nil, nil // a child not sampled: it may be running the task
		}
		for i := range p.threads {
			if c := p.threads[i].Class; c == ClassWorking || c == ClassSpinning {
				return nil, nil
			}
		}
		kt := p.keyThread()
		w := p.waitOf(kt.Ref.TID)
		if w == nil || !g.waitsOnTarget(w) {
			return nil, nil
		}
		workers = append(workers, f.PID)
		starts = append(starts, f.StartTicks)
	}
	// A pool starts its workers together; one that started later
	// replaced one that exited.
	var late []PoolWorker
	if len(starts) > 1 && !slices.Contains(starts, 0) {
		first := slices.Min(starts)
		for i, st := range starts {
			if st-first >= minLateTicks {
				late = append(late, PoolWorker{PID: workers[i], AfterMS: int64(st-first) * 10})
			}
		}
	}
	return workers, late
}

// minLateTicks is how much later than the pool's first worker (in 10 ms
// ticks) a worker must have started to be a replacement: a pool forks its
// workers one after another, a few milliseconds apart.
const minLateTicks = 5

// waitsOnTarget reports a worker's wait for the target: a pipe read that
// only the target writes, or a futex word the target maps too.
func (g *graph) waitsOnTarget(w *Wait) bool {
	switch w.Kind {
	case model.WaitPipeRead:
		res := g.rec.Resources[w.Resource]
		writers := holders(res, "w")
		return len(writers) == 1 && writers[0] == g.target
	case model.WaitFutex, model.WaitLock:
		return w.Shared != nil && slices.Contains(w.MappedBy, g.target)
	}
	return false
}
