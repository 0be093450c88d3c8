package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The wait-for graph drawn (issue 21, item 7): the actors that matter to a
// diagnosis — holders, waiters (those that wait alike as one node), locks,
// pipes and sockets, the processes at their other ends — with what each
// waits for, and the verdict's cycle or chain marked. It is built from the
// report's own data (the JSON's waits, locks and cycles), so it says no
// more than the JSON does: an edge is a wait whose basis is proven or
// inferred, a lock's waiter and its named holder, or a step of a cycle. A
// wait that only has candidates is left out: no candidate is ever drawn
// as an edge. mermaid.go and dot.go write it.

// maxGraphNodes bounds the drawing: beyond it, one node says how many more.
const maxGraphNodes = 40

type nodeKind uint8

const (
	nodeActor    nodeKind = iota // a thread or a goroutine of the target
	nodeGroup                    // actors that wait alike
	nodeProcess                  // a process (another one, or the target as a whole)
	nodeLock                     // a lock
	nodeResource                 // a pipe, a socket, a channel
	nodeTask                     // an asyncio task
	nodeMore                     // "+K more"
)

// gnode is one node of the drawing.
type gnode struct {
	key   string // what it stands for: "t:PID:TID", "g:PID:ID", "p:PID", "L:ID", "r:RESOURCE"
	id    string // its id in Mermaid and DOT
	kind  nodeKind
	label []string // its lines
	class string   // an actor's or a process's class or verdict
	ref   Ref      // an actor's or a process's ref; a group's first member's
	count int      // a group's size
	more  int      // a group's members beyond ref, for the id comment
	hot   bool     // on the verdict's cycle or chain
}

// gedge is one edge of the drawing.
type gedge struct {
	from, to int    // node indices
	label    string // what is waited for
	basis    string // what it rests on: proven, inferred, exact, probable, a cycle
	n        int    // how many actors' edges it stands for
	hot      bool
	// fact: the actor waits on the resource (a pipe whose other end was not
	// found); no edge of the wait-for graph, drawn thin.
	fact bool
}

// waitGraph is the drawing.
type waitGraph struct {
	nodes []gnode
	edges []gedge
	more  int // nodes left out beyond maxGraphNodes
	// cycle: the hot part is the verdict's cycles, not a chain.
	cycle bool
}

// hasEdges reports whether there is anything to draw beyond lone nodes.
func (g *waitGraph) hasEdges() bool { return len(g.edges) > 0 }

// graphBuilder gathers the edges over keys before the actors are grouped
// and the drawing bounded.
type graphBuilder struct {
	r     *Report
	index map[string]int // key → node
	nodes []gnode
	edges []gedge
	seen  map[[3]string]int // from key, to key, label → edge
	tids  map[int]*Thread   // the report's threads by tid
}

// thread is the report's thread tid, or nil.
func (b *graphBuilder) thread(tid int) *Thread {
	if b.tids == nil {
		b.tids = make(map[int]*Thread, len(b.r.Threads))
		for i := range b.r.Threads {
			if _, ok := b.tids[b.r.Threads[i].TID]; !ok {
				b.tids[b.r.Threads[i].TID] = &b.r.Threads[i]
			}
		}
	}
	return b.tids[tid]
}

// refKey is the node a ref is drawn as: a goroutine or a thread of the
// target as itself, anything of another process (whose threads the report
// does not list) and a process ref as the process.
func (b *graphBuilder) refKey(x Ref) string {
	switch {
	case x.Goroutine != 0:
		return "g:" + strconv.Itoa(x.PID) + ":" + strconv.FormatInt(x.Goroutine, 10)
	case x.TID != 0 && (x.PID == b.r.Target.PID || x.PID == 0):
		return "t:" + strconv.Itoa(b.r.Target.PID) + ":" + strconv.Itoa(x.TID)
	}
	return "p:" + strconv.Itoa(x.PID)
}

// node is the index of the node for key, made with mk the first time.
func (b *graphBuilder) node(key string, mk func() gnode) int {
	if i, ok := b.index[key]; ok {
		return i
	}
	n := mk()
	n.key = key
	b.nodes = append(b.nodes, n)
	b.index[key] = len(b.nodes) - 1
	return len(b.nodes) - 1
}

func (b *graphBuilder) refNode(x Ref) int {
	key := b.refKey(x)
	return b.node(key, func() gnode { return b.refLabel(key, x) })
}

// refLabel makes the node of an actor or a process.
func (b *graphBuilder) refLabel(key string, x Ref) gnode {
	r := b.r
	switch key[0] {
	case 'g':
		n := gnode{kind: nodeActor, ref: x, label: []string{"goroutine " + strconv.FormatInt(x.Goroutine, 10)}}
		if g := r.goroutine(x.Goroutine); g != nil {
			n.class = g.Class
			if g.where != "" {
				n.label = append(n.label, g.where)
			}
			n.label = append(n.label, g.Class+" · "+g.State)
		}
		return n
	case 't':
		n := gnode{kind: nodeActor, ref: Ref{PID: r.Target.PID, TID: x.TID}, label: []string{"tid " + strconv.Itoa(x.TID)}}
		if t := b.thread(x.TID); t != nil {
			n.class = t.Class
			n.label[0] += " " + t.Name
			if t.where != "" {
				n.label = append(n.label, t.where)
			}
			n.label = append(n.label, t.Class)
		}
		return n
	}
	n := gnode{kind: nodeProcess, ref: Ref{PID: x.PID}, label: []string{"pid " + strconv.Itoa(x.PID)}}
	if x.PID == r.Target.PID {
		n.label[0] += " " + shortCmd(r.Target.Cmdline)
		n.class = r.Verdict
		n.label = append(n.label, "the target: "+r.Verdict)
		return n
	}
	for _, p := range r.Processes {
		if p.PID == x.PID {
			n.label[0] += " " + shortCmd(p.Cmdline)
			n.class = p.Verdict
			n.label = append(n.label, p.Verdict)
		}
	}
	return n
}

// edge adds an edge from one node to another, once per label.
func (b *graphBuilder) edge(from, to int, label, basis string, fact bool) int {
	k := [3]string{b.nodes[from].key, b.nodes[to].key, label}
	if i, ok := b.seen[k]; ok {
		return i
	}
	b.edges = append(b.edges, gedge{from: from, to: to, label: label, basis: basis, n: 1, fact: fact})
	b.seen[k] = len(b.edges) - 1
	return len(b.edges) - 1
}

// drawn reports whether a wait's basis makes it an edge.
func drawn(basis string) bool { return basis == "proven" || basis == "inferred" }

// newGraph builds the drawing of r. Every step is one pass over the
// report's waits, locks, cycles and nodes.
func newGraph(r *Report) *waitGraph {
	b := &graphBuilder{r: r, index: map[string]int{}, seen: map[[3]string]int{}}
	locks := make(map[string]bool, len(r.Locks))
	for _, l := range r.Locks {
		locks[l.ID] = true
	}
	// The cycles' members first: they are the verdict.
	for _, c := range r.Cycles {
		for _, m := range c {
			b.refNode(m)
		}
	}
	// lockDraws are the locks' waiters ("w:KEY") and holders ("h:KEY"), by
	// lock: a wait for a lock is drawn by its lock when both are its.
	lockDraws := map[[2]string]bool{}
	// Locks: each waiter waits for the lock, which its holder holds (or
	// its readers, for reading).
	for _, l := range r.Locks {
		if l.Holder == nil && len(l.Readers) == 0 && len(l.Waiters) == 0 {
			continue
		}
		ln := b.node("L:"+l.ID, func() gnode {
			label := []string{strings.TrimSpace(l.Kind + " " + l.Address)}
			if l.Holder == nil && len(l.Readers) == 0 {
				label = append(label, "holder unknown")
			}
			return gnode{kind: nodeLock, label: label}
		})
		for _, w := range l.Waiters {
			b.edge(b.refNode(w), ln, "waits to take it", "", false)
			lockDraws[[2]string{l.ID, "w:" + b.refKey(w)}] = true
		}
		if l.Holder != nil {
			b.edge(ln, b.refNode(*l.Holder), "held by", l.BasisKind, false)
			lockDraws[[2]string{l.ID, "h:" + b.refKey(*l.Holder)}] = true
		}
		for _, x := range l.Readers {
			b.edge(ln, b.refNode(x), "held for reading by", l.BasisKind, false)
			lockDraws[[2]string{l.ID, "h:" + b.refKey(x)}] = true
		}
	}
	// Waits with another end: through the pipe or socket when there is
	// one. A lock's waits are its lock's edges already, unless the lock
	// does not name the same holder.
	for _, w := range r.Waits {
		if w.To == nil || !drawn(w.Basis) {
			continue
		}
		if locks[w.Resource] && lockDraws[[2]string{w.Resource, "w:" + b.refKey(w.From)}] && lockDraws[[2]string{w.Resource, "h:" + b.refKey(*w.To)}] {
			continue
		}
		from := b.refNode(w.From)
		to := b.refNode(*w.To)
		if w.Resource == "" || locks[w.Resource] {
			b.edge(from, to, w.Kind, w.Basis, false)
			continue
		}
		res := b.node("r:"+w.Resource, func() gnode { return gnode{kind: nodeResource, label: []string{w.Resource}} })
		b.edge(from, res, w.Kind, w.Basis, false)
		b.edge(res, to, "other end", w.Basis, false)
	}
	// A wait on a pipe or socket with no other end found, of an actor
	// already drawn: where its chain ends.
	for _, w := range r.Waits {
		if w.To != nil || w.Basis != "none" || !strings.HasPrefix(w.Resource, "pipe:") && !strings.HasPrefix(w.Resource, "socket:") {
			continue
		}
		from, ok := b.index[b.refKey(w.From)]
		if !ok {
			continue
		}
		res := b.node("r:"+w.Resource, func() gnode {
			return gnode{kind: nodeResource, label: []string{w.Resource, "other end not found"}}
		})
		b.edge(from, res, w.Kind, "", true)
	}
	tasksHot := b.taskEdges()
	// The cycles' steps: each member waits for the next. A step the edges
	// above do not draw (a channel only the other refers to, a peer
	// process's wait) is drawn as the cycle has it.
	cyc := b.cycleEdges()
	g := b.group()
	g.cycle = len(cyc) > 0 || tasksHot
	// A working or idle program rests on no chain of waits.
	if g.cycle || r.Verdict != "working" && r.Verdict != "idle" {
		g.mark()
	}
	return g.bound()
}

// maxGraphTasks bounds the asyncio tasks drawn: a server's thousands of
// tasks would each be a node; the bound keeps the pass short, and bound()
// the drawing.
const maxGraphTasks = maxGraphNodes

// taskEdges draws the asyncio tasks whose wait leads somewhere: to the
// task that holds the asyncio lock it waits for (probable: by the holder's
// `async with`), to the task it awaits (alone or in a gather), to the
// processes at the other end of the socket it waits on, to the thread
// whose thread-pool work item resolves what it awaits. A task whose wait
// leads nowhere known is not drawn. It reports whether it marked a cycle
// of tasks (the verdict's task deadlock) hot.
func (b *graphBuilder) taskEdges() bool {
	ts := b.r.Tasks
	if len(ts) == 0 {
		return false
	}
	byAddr := make(map[string]int, len(ts))
	byName := make(map[string]int, len(ts))
	holder := map[string][]int{}
	for i, t := range ts {
		byAddr[t.Addr] = i
		if _, dup := byName[t.Name]; !dup {
			byName[t.Name] = i
		}
		for _, h := range t.Holds {
			holder[h] = append(holder[h], i)
		}
	}
	node := func(i int) int {
		t := ts[i]
		return b.node("k:"+t.Addr, func() gnode {
			label := []string{"task " + t.Name}
			if t.Where != "" {
				label = append(label, t.Where)
			}
			class := t.State
			if t.Deadlocked {
				class = "deadlock"
			}
			return gnode{kind: nodeTask, label: append(label, t.State), class: class}
		})
	}
	hot := false
	mark := func(e int, on bool) {
		if on {
			b.edges[e].hot, hot = true, true
		}
	}
	drawn := 0
	for i, t := range ts {
		if drawn >= maxGraphTasks {
			break
		}
		before := len(b.edges)
		switch {
		case t.Waits == "asyncio.Lock" && len(holder[t.Object]) == 1:
			h := holder[t.Object][0]
			ln := b.node("L:"+t.Object, func() gnode { return gnode{kind: nodeLock, label: []string{"asyncio.Lock " + t.Object}} })
			both := t.Deadlocked && ts[h].Deadlocked
			mark(b.edge(node(i), ln, "waits to take it", "", false), both)
			mark(b.edge(ln, node(h), "held by", "probable", false), both)
		case t.Waits == "task":
			if j, ok := byAddr[t.Object]; ok {
				mark(b.edge(node(i), node(j), "awaits", "proven", false), t.Deadlocked && ts[j].Deadlocked)
			}
		case t.Resource != "" && len(t.Peers) > 0:
			res := b.node("r:"+t.Resource, func() gnode { return gnode{kind: nodeResource, label: []string{t.Resource}} })
			b.edge(node(i), res, t.Waits, "proven", false)
			for _, pid := range t.Peers {
				b.edge(res, b.refNode(Ref{PID: pid}), "other end", "proven", false)
			}
		case t.Thread != 0:
			b.edge(node(i), b.refNode(Ref{PID: b.r.Target.PID, TID: t.Thread}), t.Waits, "exact", false)
		}
		// Who awaits it in a gather or a TaskGroup: the awaiter's edge to
		// it.
		for _, name := range t.AwaitedBy {
			if j, ok := byName[name]; ok && (ts[j].Waits == "gather" || ts[j].Waits == "TaskGroup") {
				mark(b.edge(node(j), node(i), "awaits ("+ts[j].Waits+")", "proven", false), t.Deadlocked && ts[j].Deadlocked)
			}
		}
		if len(b.edges) > before {
			drawn++
		}
	}
	return hot
}

// cycleEdges marks the edges of every cycle's steps hot, adding those the
// waits do not draw, and returns the steps as node pairs.
func (b *graphBuilder) cycleEdges() [][2]int {
	out := make(map[[2]int]bool)
	var steps [][2]int
	adj := make(map[int][]int, len(b.nodes))
	for i, e := range b.edges {
		adj[e.from] = append(adj[e.from], i)
	}
	for _, c := range b.r.Cycles {
		for i, m := range c {
			from, to := b.refNode(m), b.refNode(c[(i+1)%len(c)])
			if len(c) == 1 {
				to = from
			}
			if from == to && len(c) > 1 {
				continue // two threads of one other process
			}
			st := [2]int{from, to}
			if out[st] {
				continue
			}
			out[st] = true
			steps = append(steps, st)
			found := false
			for _, ei := range adj[from] {
				e := &b.edges[ei]
				if e.to == to {
					e.hot, found = true, true
					continue
				}
				if k := b.nodes[e.to].kind; k == nodeLock || k == nodeResource {
					for _, ej := range adj[e.to] {
						if b.edges[ej].to == to {
							e.hot, b.edges[ej].hot, found = true, true, true
						}
					}
				}
			}
			if !found {
				ei := b.edge(from, to, b.stepLabel(m), "cycle", false)
				b.edges[ei].hot = true
				adj[from] = append(adj[from], ei)
			}
		}
	}
	return steps
}

// stepLabel is what a cycle's member waits for, when no wait draws it.
func (b *graphBuilder) stepLabel(m Ref) string {
	r := b.r
	if m.Goroutine != 0 {
		if g := r.goroutine(m.Goroutine); g != nil {
			return g.State
		}
		return "waits"
	}
	if m.PID != r.Target.PID {
		for _, p := range r.Processes {
			if p.PID == m.PID {
				// "writing to a full pipe in write(2, …), 0% CPU": the
				// wait, without its call.
				st, _, _ := strings.Cut(p.State, " in ")
				st, _, _ = strings.Cut(st, ", ")
				return shorten(st, 40)
			}
		}
		return "waits"
	}
	if t := b.thread(m.TID); t != nil && t.Syscall != nil {
		return t.Syscall.Name
	}
	return "waits"
}

// group folds the actors that wait alike into one node: actors nothing
// waits for, in no cycle, of one class, whose edges go to the same nodes
// with the same words ("8 goroutines in main.(*Store).Put" waiting to take
// one mutex).
func (b *graphBuilder) group() *waitGraph {
	in := make([]bool, len(b.nodes))
	out := make([][]int, len(b.nodes))
	for i, e := range b.edges {
		in[e.to] = true
		out[e.from] = append(out[e.from], i)
	}
	inCycle := map[string]bool{}
	for _, c := range b.r.Cycles {
		for _, m := range c {
			inCycle[b.refKey(m)] = true
		}
	}
	// Each foldable actor's signature: its class and its edges.
	sig := make([]string, len(b.nodes))
	bySig := map[string][]int{}
	var order []string
	for i := range b.nodes {
		n := &b.nodes[i]
		if n.kind != nodeActor || in[i] || inCycle[n.key] || len(out[i]) == 0 {
			continue
		}
		var s strings.Builder
		s.WriteString(n.key[:1] + "|" + n.class)
		for _, ei := range out[i] {
			e := b.edges[ei]
			s.WriteString("|" + b.nodes[e.to].key + "|" + e.label + "|" + e.basis)
			if e.hot {
				s.WriteString("|hot")
			}
		}
		sig[i] = s.String()
		if len(bySig[sig[i]]) == 0 {
			order = append(order, sig[i])
		}
		bySig[sig[i]] = append(bySig[sig[i]], i)
	}
	// The new nodes: every node but a group's later members, in order.
	g := &waitGraph{}
	newIndex := make([]int, len(b.nodes))
	for i := range b.nodes {
		if sig[i] != "" && len(bySig[sig[i]]) > 1 {
			members := bySig[sig[i]]
			if members[0] != i {
				newIndex[i] = newIndex[members[0]]
				continue
			}
			g.nodes = append(g.nodes, b.groupNode(members))
			newIndex[i] = len(g.nodes) - 1
			continue
		}
		g.nodes = append(g.nodes, b.nodes[i])
		newIndex[i] = len(g.nodes) - 1
	}
	// The edges, a group's once with its count.
	folded := map[[3]string]int{}
	for _, e := range b.edges {
		from, to := newIndex[e.from], newIndex[e.to]
		k := [3]string{strconv.Itoa(from), strconv.Itoa(to), e.label}
		if i, ok := folded[k]; ok {
			g.edges[i].n++
			continue
		}
		e.from, e.to = from, to
		g.edges = append(g.edges, e)
		folded[k] = len(g.edges) - 1
	}
	for i := range g.nodes {
		g.nodes[i].id = nodeID(&g.nodes[i], i)
	}
	return g
}

// groupNode is the node of actors that wait alike: "8 goroutines" and
// where they stand, or "7 threads" and their name.
func (b *graphBuilder) groupNode(members []int) gnode {
	first := b.nodes[members[0]]
	n := gnode{kind: nodeGroup, class: first.class, ref: first.ref, count: len(members), more: len(members) - 1}
	if first.ref.Goroutine != 0 {
		n.label = []string{strconv.Itoa(len(members)) + " goroutines"}
		if g := b.r.goroutine(first.ref.Goroutine); g != nil && g.where != "" {
			n.label[0] += " in " + g.where
			n.label = append(n.label, g.Class+" · "+g.State)
		}
		return n
	}
	n.label = []string{strconv.Itoa(len(members)) + " threads"}
	name := ""
	for k, m := range members {
		t := b.thread(b.nodes[m].ref.TID)
		if t == nil {
			name = ""
			break
		}
		if k == 0 {
			name = namePattern(t.Name)
		} else if namePattern(t.Name) != name {
			name = ""
			break
		}
	}
	if name != "" {
		n.label[0] += " " + name
	}
	n.label = append(n.label, first.class)
	return n
}

// nodeID is a node's id in Mermaid and DOT: it names what the node is, so
// a reader of the source (and internal/reportcheck) can tell: t_PID_TID,
// g_PID_ID, p_PID, grp_N, lock_N, res_N, more.
func nodeID(n *gnode, i int) string {
	switch n.kind {
	case nodeActor:
		if n.ref.Goroutine != 0 {
			return fmt.Sprintf("g_%d_%d", n.ref.PID, n.ref.Goroutine)
		}
		return fmt.Sprintf("t_%d_%d", n.ref.PID, n.ref.TID)
	case nodeProcess:
		return fmt.Sprintf("p_%d", n.ref.PID)
	case nodeGroup:
		return fmt.Sprintf("grp_%d", i)
	case nodeLock:
		return fmt.Sprintf("lock_%d", i)
	case nodeResource:
		return fmt.Sprintf("res_%d", i)
	case nodeTask:
		return fmt.Sprintf("task_%d", i)
	}
	return "more"
}

// mark makes hot the cycles' members (their edges are hot already) or,
// without a cycle, the longest chain of edges: from the waiters to the
// holder and on to where it waits.
func (g *waitGraph) mark() {
	if g.cycle {
		for _, e := range g.edges {
			if e.hot {
				g.nodes[e.from].hot, g.nodes[e.to].hot = true, true
			}
		}
		return
	}
	out := make([][]int, len(g.nodes))
	for i, e := range g.edges {
		out[e.from] = append(out[e.from], i)
	}
	// The longest path from each node, by a depth-first walk that skips
	// the edges back into the walk (no cycle was reported, but one of
	// locks held for reading may close).
	const (
		unseen = iota
		walking
		done
	)
	state := make([]uint8, len(g.nodes))
	length := make([]int, len(g.nodes))
	next := make([]int, len(g.nodes)) // the edge the longest path takes, -1 for none
	type frame struct{ node, edge int }
	for start := range g.nodes {
		if state[start] != unseen {
			continue
		}
		stack := []frame{{start, 0}}
		state[start] = walking
		next[start] = -1
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.edge < len(out[f.node]) {
				ei := out[f.node][f.edge]
				f.edge++
				to := g.edges[ei].to
				switch state[to] {
				case unseen:
					state[to], next[to] = walking, -1
					stack = append(stack, frame{to, 0})
				case done:
					if length[to]+1 > length[f.node] {
						length[f.node], next[f.node] = length[to]+1, ei
					}
				}
				continue
			}
			state[f.node] = done
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				p := stack[len(stack)-1].node
				ei := out[p][stack[len(stack)-1].edge-1]
				if length[f.node]+1 > length[p] {
					length[p], next[p] = length[f.node]+1, ei
				}
			}
		}
	}
	best := -1
	for i := range g.nodes {
		// The longest; of those, the one that most actors wait at.
		if length[i] > 0 && (best < 0 || length[i] > length[best] || length[i] == length[best] && g.nodes[i].count > g.nodes[best].count) {
			best = i
		}
	}
	for i, steps := best, 0; i >= 0 && steps <= len(g.nodes); steps++ {
		g.nodes[i].hot = true
		ei := next[i]
		if ei < 0 {
			break
		}
		g.edges[ei].hot = true
		i = g.edges[ei].to
	}
}

// bound keeps at most maxGraphNodes nodes, one of them saying how many
// more there are: whole parts of the graph (nodes joined by edges), the
// one with the verdict's cycle or chain first, then those that stand for
// the most actors.
func (g *waitGraph) bound() *waitGraph {
	if len(g.nodes) <= maxGraphNodes {
		return g
	}
	// The parts, by union-find over the edges.
	parent := make([]int, len(g.nodes))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, e := range g.edges {
		if a, b := find(e.from), find(e.to); a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	type part struct {
		root, weight int
		hot          bool
	}
	parts := map[int]*part{}
	var roots []*part
	for i := range g.nodes {
		rt := find(i)
		p := parts[rt]
		if p == nil {
			p = &part{root: rt}
			parts[rt] = p
			roots = append(roots, p)
		}
		p.hot = p.hot || g.nodes[i].hot
		switch g.nodes[i].kind {
		case nodeGroup:
			p.weight += g.nodes[i].count
		case nodeActor, nodeProcess:
			p.weight++
		}
	}
	slices.SortStableFunc(roots, func(a, b *part) int {
		if a.hot != b.hot {
			if a.hot {
				return -1
			}
			return 1
		}
		return b.weight - a.weight
	})
	rank := make(map[int]int, len(roots))
	for i, p := range roots {
		rank[p.root] = i
	}
	keep := make([]int, len(g.nodes))
	for i := range keep {
		keep[i] = i
	}
	slices.SortStableFunc(keep, func(a, b int) int { return rank[find(a)] - rank[find(b)] })
	keep = keep[:maxGraphNodes-1]
	slices.Sort(keep)
	newIndex := make([]int, len(g.nodes))
	for i := range newIndex {
		newIndex[i] = -1
	}
	out := &waitGraph{cycle: g.cycle, more: len(g.nodes) - len(keep)}
	for _, i := range keep {
		newIndex[i] = len(out.nodes)
		out.nodes = append(out.nodes, g.nodes[i])
	}
	for _, e := range g.edges {
		if newIndex[e.from] < 0 || newIndex[e.to] < 0 {
			continue
		}
		e.from, e.to = newIndex[e.from], newIndex[e.to]
		out.edges = append(out.edges, e)
	}
	out.nodes = append(out.nodes, gnode{kind: nodeMore, id: "more", label: []string{fmt.Sprintf("+%d more", out.more), "in the JSON report"}})
	return out
}

// edgeText is an edge's label: what is waited for, how many wait so when
// it stands for several, and what it rests on.
func edgeText(e gedge) string {
	s := e.label
	if e.n > 1 {
		s += " ×" + strconv.Itoa(e.n)
	}
	if e.basis != "" {
		s += " · " + e.basis
	}
	return s
}

// sortedHot are the indices of the hot nodes and edges, for styles.
func (g *waitGraph) sortedHot() (nodes, edges []int) {
	for i, n := range g.nodes {
		if n.hot {
			nodes = append(nodes, i)
		}
	}
	for i, e := range g.edges {
		if e.hot {
			edges = append(edges, i)
		}
	}
	return nodes, edges
}
