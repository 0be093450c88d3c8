package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// maxChain bounds how far a chain of waits is followed and printed.
const maxChain = 4

// proc is one sampled process, classified from its own samples.
type proc struct {
	pid     int
	cmdline string
	depth   int
	err     string
	d       *Diagnosis
	byTID   map[int]*Thread
}

// graph is the wait-for graph across threads and processes. A node is a
// thread ({pid, tid}) or a process ({pid}); a thread points at what it waits
// for, and a process in which no thread works points at its waiting
// threads, since none of them will do what the others wait for.
type graph struct {
	target int
	w      World
	procs  map[int]*proc
	order  []int // target first, then peers by depth and pid
	edges  map[Ref][]Ref
	// first and last are the times of the target's first and last samples.
	first, last time.Time
}

func newGraph(samples []model.Sample, d *Diagnosis, byTID map[int]*Thread, w World, opts Options) *graph {
	target := samples[0].PID
	g := &graph{target: target, w: w, procs: map[int]*proc{}, edges: map[Ref][]Ref{},
		first: samples[0].Time, last: samples[len(samples)-1].Time}
	g.procs[target] = &proc{pid: target, d: d, byTID: byTID}
	g.order = append(g.order, target)
	peers := slices.Clone(w.Peers)
	slices.SortFunc(peers, func(a, b model.Process) int {
		return cmp.Or(cmp.Compare(a.Depth, b.Depth), cmp.Compare(a.PID, b.PID))
	})
	for _, p := range peers {
		if g.procs[p.PID] != nil {
			continue
		}
		pd, psc, pby := classifyOne(p.Samples, opts)
		if psc != nil {
			psc.verdict(&pd, pby, nil)
		}
		g.procs[p.PID] = &proc{pid: p.PID, cmdline: p.Cmdline, depth: p.Depth, err: p.Err, d: &pd, byTID: pby}
		g.order = append(g.order, p.PID)
	}
	for _, pid := range g.order {
		p := g.procs[pid]
		busy := false
		for _, t := range p.d.Threads {
			busy = busy || t.Class == ClassWorking || t.Class == ClassSpinning
		}
		for i := range p.d.Waits {
			wt := &p.d.Waits[i]
			for _, to := range g.resolve(wt) {
				// A pipe or socket whose other end is in the waiter's own
				// process is no edge: another of its threads may drain it,
				// and locks already say who waits on whom inside a process.
				if to.TID == 0 && to.PID == wt.From.PID {
					continue
				}
				g.edges[wt.From] = append(g.edges[wt.From], to)
			}
			// A process none of whose threads works can only be moved by
			// its blocked threads (idle ones wake for reasons of their own
			// and are left out, which errs towards no cycle).
			if t := p.byTID[wt.From.TID]; !busy && t != nil && t.Class == ClassBlocked {
				node := Ref{PID: pid}
				g.edges[node] = append(g.edges[node], wt.From)
			}
		}
	}
	return g
}

// resolve names what a wait points at across processes, sets its To and
// detail, and returns every node it waits for.
func (g *graph) resolve(w *Wait) []Ref {
	res := g.w.Resources[w.Resource]
	var pids []int
	role := ""
	switch w.Kind {
	case "lock", "thread-exit":
		if w.To != nil {
			return []Ref{*w.To}
		}
		return nil
	case "child-exit":
		if w.To != nil {
			return []Ref{*w.To}
		}
		for _, p := range g.w.Family {
			if p.PPID == w.From.PID {
				pids = append(pids, p.PID)
			}
		}
		role = "child"
	case "pipe-write":
		pids, role = holders(res, "r"), "read by"
	case "pipe-read", "stdin":
		pids, role = holders(res, "w"), "written by"
	case "socket-read", "socket-write", "socket-connect":
		if res.Peer != "" {
			pids = holders(g.w.Resources[res.Peer], "")
		}
		role = "the other end held by"
	default:
		return nil
	}
	if extra := resourceText(res); extra != "" {
		w.Detail += "; " + extra
	}
	if len(pids) == 0 {
		if role != "" && role != "child" && w.Resource != "" {
			w.Detail += "; no process was found holding the other end"
		}
		return nil
	}
	var refs []Ref
	var names []string
	for _, pid := range pids {
		refs = append(refs, Ref{PID: pid})
		names = append(names, g.procName(pid)+fdsOf(res, pid))
	}
	w.To = &refs[0]
	w.Detail += "; " + role + " " + strings.Join(names, ", ")
	return refs
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

// fdsOf names the descriptors a process holds a resource on: " on fd 0".
func fdsOf(res model.Resource, pid int) string {
	var fds []string
	for _, h := range res.Holders {
		if h.PID == pid {
			fds = append(fds, fmt.Sprint(h.FD))
		}
	}
	if len(fds) == 0 {
		return ""
	}
	return " on fd " + strings.Join(fds, ", ")
}

// resourceText is what the kernel says of a resource: how full a pipe is,
// a TCP connection's addresses, state and queues.
func resourceText(res model.Resource) string {
	switch {
	case res.Pipe != nil:
		return fmt.Sprintf("%d/%d bytes queued", res.Pipe.Queued, res.Pipe.Capacity)
	case res.TCP != nil:
		c := res.TCP
		return fmt.Sprintf("TCP %s → %s %s, %d bytes to send, %d to read", c.Local, c.Remote, c.State, c.TxQueue, c.RxQueue)
	}
	return ""
}

func (g *graph) procName(pid int) string {
	if p := g.procs[pid]; p != nil && p.cmdline != "" {
		return fmt.Sprintf("pid %d (%s)", pid, shortCmd(p.cmdline))
	}
	for _, p := range g.w.Family {
		if p.PID == pid {
			return fmt.Sprintf("pid %d (%s)", pid, p.Comm)
		}
	}
	if pid == g.target {
		return fmt.Sprintf("pid %d (the target)", pid)
	}
	return fmt.Sprintf("pid %d", pid)
}

// shortCmd shortens a command line for a one-line report: the program's
// base name and as much of its arguments as fits.
func shortCmd(s string) string {
	prog, args, _ := strings.Cut(strings.Join(strings.Fields(s), " "), " ")
	if i := strings.LastIndexByte(prog, '/'); i >= 0 {
		prog = prog[i+1:]
	}
	s = strings.TrimSpace(prog + " " + args)
	if r := []rune(s); len(r) > 48 {
		return string(r[:47]) + "…"
	}
	return s
}

// cycles finds the wait-for cycles and returns each once, as its threads in
// wait order, starting from the smallest node. Process nodes are steps, not
// members: a cycle is the threads that wait on each other.
func (g *graph) cycles() [][]Ref {
	var nodes []Ref
	for n := range g.edges {
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, compareRef)
	out := [][]Ref{}
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
				c := threadsOf(path[i:])
				if key := cycleKey(c); len(c) > 0 && !seen[key] {
					seen[key] = true
					out = append(out, c)
				}
				return
			}
			if done[n] {
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

// threadsOf drops process nodes and rotates the cycle to start at its
// smallest member.
func threadsOf(c []Ref) []Ref {
	var out []Ref
	for _, r := range c {
		if r.TID != 0 || r.Goroutine != 0 {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	m := slices.IndexFunc(out, func(r Ref) bool { return compareRef(r, slices.MinFunc(out, compareRef)) == 0 })
	return append(out[m:], out[:m]...)
}

func cycleKey(c []Ref) string {
	var b strings.Builder
	for _, r := range c {
		fmt.Fprintf(&b, "%d/%d/%d,", r.PID, r.TID, r.Goroutine)
	}
	return b.String()
}

// processes summarises the peers for the report.
func (g *graph) processes() []Process {
	out := []Process{}
	for _, pid := range g.order[1:] {
		p := g.procs[pid]
		v := Process{PID: pid, Cmdline: p.cmdline, Depth: p.depth, Verdict: p.d.Verdict, State: g.stateOf(pid)}
		out = append(out, v)
	}
	return out
}

// keyThread is the thread that says what a process is doing: its first
// blocked thread, else its main thread, else its first.
func (g *graph) keyThread(pid int) *Thread {
	p := g.procs[pid]
	if p == nil || len(p.d.Threads) == 0 {
		return nil
	}
	for i := range p.d.Threads {
		if p.d.Threads[i].Class == ClassBlocked {
			return &p.d.Threads[i]
		}
	}
	if t := p.byTID[pid]; t != nil {
		return t
	}
	return &p.d.Threads[0]
}

// stateOf says in a few words what a process is doing.
func (g *graph) stateOf(pid int) string {
	p := g.procs[pid]
	if p == nil {
		return "not sampled"
	}
	if p.err != "" {
		return "not sampled: " + p.err
	}
	t := g.keyThread(pid)
	if t == nil {
		return "no threads seen"
	}
	var s string
	switch t.Class {
	case ClassWorking, ClassSpinning:
		s = string(t.Class)
	default:
		s = t.Why
		if w := g.waitOf(pid, t.TID); w != nil {
			s = kindText[w.Kind]
		}
		if t.Syscall != nil {
			s += " in " + t.Syscall.Text
		}
	}
	s += fmt.Sprintf(", %.0f%% CPU", t.CPUPercent)
	if n := len(p.d.Threads); n > 1 {
		s += fmt.Sprintf(" (tid %d, one of %d threads)", t.TID, n)
	}
	return s
}

func (g *graph) waitOf(pid, tid int) *Wait {
	p := g.procs[pid]
	if p == nil {
		return nil
	}
	for i := range p.d.Waits {
		if p.d.Waits[i].From.TID == tid {
			return &p.d.Waits[i]
		}
	}
	return nil
}

// chains writes, for each of the target's blocked threads, where its wait
// leads: through lock holders and across processes, to where it ends.
func (g *graph) chains() {
	p := g.procs[g.target]
	for i := range p.d.Waits {
		w := &p.d.Waits[i]
		if t := p.byTID[w.From.TID]; t == nil || t.Class != ClassBlocked {
			continue
		}
		if w.To == nil && !strings.HasPrefix(w.Resource, "pipe:") && !strings.HasPrefix(w.Resource, "socket:") {
			continue
		}
		w.Chain = g.chain(w, map[int]bool{g.target: true}, 0)
	}
}

func (g *graph) chain(w *Wait, visited map[int]bool, depth int) string {
	p := g.procs[w.From.PID]
	t := p.byTID[w.From.TID]
	// The step before named the process: a step starts with the thread.
	s := fmt.Sprintf("tid %d", w.From.TID)
	if t != nil && t.Syscall != nil {
		s += " " + t.Syscall.Text
	}
	if w.Resource != "" && !strings.HasPrefix(w.Resource, "futex:") {
		s += " → " + w.Resource
		if extra := resourceText(g.w.Resources[w.Resource]); extra != "" {
			s += ", " + extra
		}
	}
	if w.To == nil {
		if w.Kind == "child-exit" || strings.HasPrefix(w.Resource, "pipe:") || strings.HasPrefix(w.Resource, "socket:") {
			return s + " → no other end found"
		}
		return s
	}
	to := *w.To
	if to.TID != 0 && to.PID == w.From.PID {
		// A lock holder or a joined thread, in the same process.
		next := g.waitOf(to.PID, to.TID)
		s += fmt.Sprintf(" → %s %s", roleOf(w.Kind), threadLabel(g.procs[to.PID], to.TID))
		if next == nil || depth >= maxChain {
			return s + ": " + g.threadState(to.PID, to.TID)
		}
		if next.From == w.From {
			return s + " (itself: a cycle)"
		}
		return s + " → " + g.chain(next, visited, depth+1)
	}
	if to.TID == 0 && to.PID == w.From.PID {
		return s + fmt.Sprintf(" → %s its own process: another of its threads must drain it", roleOf(w.Kind))
	}
	s += fmt.Sprintf(" → %s %s", roleOf(w.Kind), g.endName(w, to.PID))
	if visited[to.PID] {
		return s + " (back where the chain began: a cycle)"
	}
	var next *Wait
	if kt := g.keyThread(to.PID); kt != nil {
		next = g.waitOf(to.PID, kt.TID)
	}
	if next == nil || next.To == nil && !strings.HasPrefix(next.Resource, "pipe:") && !strings.HasPrefix(next.Resource, "socket:") {
		return s + ": " + g.stateOf(to.PID)
	}
	if depth >= maxChain {
		return s + ": " + g.stateOf(to.PID) + " → …"
	}
	visited[to.PID] = true
	return s + ", whose " + g.chain(next, visited, depth+1)
}

// endName names the process at the other end of a wait, with the
// descriptors it holds there: "pid 9141 (python3 feeder.py) on fd 0".
func (g *graph) endName(w *Wait, pid int) string {
	res := g.w.Resources[w.Resource]
	if res.Peer != "" {
		res = g.w.Resources[res.Peer]
	}
	return g.procName(pid) + fdsOf(res, pid) + g.peerEnd(w)
}

// peerEnd says what the other end of a TCP connection holds unread: a
// request the server never read, or an answer the client never read.
func (g *graph) peerEnd(w *Wait) string {
	res := g.w.Resources[w.Resource]
	if res.Peer == "" {
		return ""
	}
	if c := g.w.Resources[res.Peer].TCP; c != nil && c.RxQueue > 0 {
		return fmt.Sprintf(" (with %d bytes it has not read)", c.RxQueue)
	}
	return ""
}

func roleOf(kind string) string {
	switch kind {
	case "lock":
		return "held by"
	case "thread-exit":
		return "joining"
	case "child-exit":
		return "child"
	case "pipe-write":
		return "read by"
	case "pipe-read", "stdin":
		return "written by"
	}
	return "the other end held by"
}

func threadLabel(p *proc, tid int) string {
	if p != nil {
		if t := p.byTID[tid]; t != nil {
			return fmt.Sprintf("tid %d (%s)", tid, t.Name)
		}
	}
	return fmt.Sprintf("tid %d", tid)
}

func (g *graph) threadState(pid, tid int) string {
	p := g.procs[pid]
	if p == nil || p.byTID[tid] == nil {
		return "not seen"
	}
	t := p.byTID[tid]
	s := string(t.Class)
	if t.Syscall != nil {
		s += " in " + t.Syscall.Text
	}
	return s + fmt.Sprintf(", %.0f%% CPU", t.CPUPercent)
}

// orphans lists processes left behind in the target's process group (or
// session, when it leads one): not the target or its ancestors, and with a
// parent that is init or outside the group and not an ancestor — their own
// parent exited, typically a shell killed by a timeout.
func (g *graph) orphans() []Orphan {
	out := []Orphan{}
	byPID := map[int]model.Proc{}
	for _, p := range g.w.Family {
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
	for _, p := range g.w.FamilyBefore {
		before[p.PID] = p
	}
	for _, p := range g.w.Family {
		if p.PID == g.target || ancestor[p.PID] || !inGroup(p) {
			continue
		}
		parent, known := byPID[p.PPID]
		if p.PPID != 1 && (ancestor[p.PPID] || known && inGroup(parent)) {
			continue
		}
		o := Orphan{PID: p.PID, PPID: p.PPID, Command: p.Comm, State: p.State}
		if !g.w.BootTime.IsZero() {
			started := g.w.BootTime.Add(time.Duration(p.StartTicks) * time.Second / 100)
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

// beyond says, for a blocked thread of the target whose wait leads to
// another process, who is at the other end and what it is doing.
func (g *graph) beyond(tid int) string {
	if g == nil {
		return ""
	}
	w := g.waitOf(g.target, tid)
	if w == nil || w.To == nil || w.To.PID == g.target || w.To.TID != 0 {
		return ""
	}
	return fmt.Sprintf("; %s %s, which is %s", roleOf(w.Kind), g.endName(w, w.To.PID), g.stateOf(w.To.PID))
}

// crossDeadlock names a cycle across processes and the fix its shape
// points at.
func (g *graph) crossDeadlock(cycle []Ref) (summary, hint string) {
	var parts []string
	kinds := map[string]bool{}
	for _, r := range cycle {
		w := g.waitOf(r.PID, r.TID)
		if w == nil {
			continue
		}
		kinds[w.Kind] = true
		what := kindText[w.Kind]
		if t := g.procs[r.PID].byTID[r.TID]; t != nil && t.Syscall != nil {
			what += " in " + t.Syscall.Text
		}
		if w.Resource != "" && !strings.HasPrefix(w.Resource, "futex:") {
			what += " on " + w.Resource
			if extra := resourceText(g.w.Resources[w.Resource]); extra != "" {
				what += " (" + extra + ")"
			}
		}
		if w.To != nil {
			what += ", " + roleOf(w.Kind) + " " + g.endName(w, w.To.PID)
		}
		parts = append(parts, fmt.Sprintf("%s tid %d is %s", g.procName(r.PID), r.TID, what))
	}
	summary = fmt.Sprintf("deadlock across %d processes: %s", len(pidsOf(cycle)), strings.Join(parts, "; "))
	switch {
	case kinds["child-exit"] && kinds["pipe-write"]:
		hint = "The parent waits for its child to exit while the child waits for the parent to read the pipe it filled: read the pipes while waiting — Python: communicate() instead of wait(); Go: read StdoutPipe/StderrPipe to EOF before cmd.Wait(); or send the output to a file."
	case kinds["child-exit"] && (kinds["stdin"] || kinds["pipe-read"]):
		hint = "The child waits for input on a pipe that the parent, waiting for it to exit, never writes or closes: give the child stdin from /dev/null (stdin=subprocess.DEVNULL), or close the pipe after writing (for git: GIT_TERMINAL_PROMPT=0)."
	default:
		hint = "Processes wait on each other in a cycle: none can move until one is killed. Break the cycle where a wait can get a timeout or a non-blocking read."
	}
	return summary, hint
}

func pidsOf(refs []Ref) []int {
	var pids []int
	for _, r := range refs {
		if !slices.Contains(pids, r.PID) {
			pids = append(pids, r.PID)
		}
	}
	return pids
}
