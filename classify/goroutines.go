package classify

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// The goroutine adapter. For a Go program the threads are not the story:
// goroutines are. The runtime parks goroutines without telling the kernel
// which lock or channel they wait for, so their stacks say what they wait
// on, and the threads' CPU says whether a running goroutine spins.

// goHistory is one goroutine across the samples that carry goroutines.
type goHistory struct {
	id       int64
	readings []model.Goroutine
	source   model.Format // the stack source of its last reading
}

func (h *goHistory) last() model.Goroutine { return h.readings[len(h.readings)-1] }

// lastWaiting is the last reading that caught the goroutine waiting, or
// the last one if none did: a blocked goroutine caught runnable by a
// spurious wake-up still waits where it was.
func (h *goHistory) lastWaiting() model.Goroutine {
	for i := len(h.readings) - 1; i >= 0; i-- {
		if goWait(h.readings[i]) != model.WaitNone {
			return h.readings[i]
		}
	}
	return h.last()
}

// goScene is what the goroutine rules look at together.
type goScene struct {
	p     *proc
	hists []*goHistory
	// spinningThread: some thread of the process pins a core (the kernel's
	// view), for sources that do not say which thread runs a goroutine.
	spinningThread *Actor
	// processCPU is the process's CPU across its threads, in percent of a
	// core, the time it waited for one included: Go moves a goroutine from
	// thread to thread, so a spinning goroutine may pin no single thread.
	processCPU float64
	opts       Options
}

// goroutineSamples returns the goroutine lists of the samples that have
// one, in order, with each one's source; nil when no sample came with a
// Go stack source.
func goroutineSamples(samples []model.Sample) ([][]model.Goroutine, []model.Format) {
	var out [][]model.Goroutine
	var sources []model.Format
	for _, s := range samples {
		if s.Goroutines != nil {
			out = append(out, s.Goroutines)
			sources = append(sources, s.StackSource)
		}
	}
	return out, sources
}

// addGoroutines runs the goroutine adapter over a process: each goroutine
// an actor with its class, the mutexes they wait for and their probable
// holders, the channels that tie them, the pools with nothing to feed
// them, and the groups of goroutines with one stack. It does nothing when
// no sample has goroutines.
func (p *proc) addGoroutines(opts Options, files map[string][]string) {
	gs, sources := goroutineSamples(p.samples)
	if gs == nil {
		return
	}
	p.gsamples = gs
	for _, sm := range p.samples {
		if sm.Goroutines != nil {
			p.runtimeDeadlock = sm.Message == runtimeDeadlock
		}
	}
	s := &goScene{p: p, opts: opts}
	for i := range p.threads {
		t := &p.threads[i]
		if t.Class == ClassSpinning && s.spinningThread == nil {
			s.spinningThread = t
		}
		s.processCPU += t.CPU.Percent + t.CPU.RunqueuePercent
	}
	s.hists = goHistories(gs, sources)
	p.goroutines = make([]Actor, 0, len(s.hists))
	for _, h := range s.hists {
		p.goroutines = append(p.goroutines, s.goroutine(h))
	}
	siblingsMove(p.goroutines)
	p.byGID = make(map[int64]*Actor, len(p.goroutines))
	for i := range p.goroutines {
		p.byGID[p.goroutines[i].Ref.Goroutine] = &p.goroutines[i]
	}
	locks := s.mutexes(files)
	for i := range locks {
		l := &locks[i]
		for _, w := range l.Waiters {
			p.byGID[w.Goroutine].WaitsFor = l.ID
		}
		for _, h := range append(holderRefs(l), l.Readers...) {
			if a := p.byGID[h.Goroutine]; a != nil && !slices.Contains(a.Holds, l.ID) {
				a.Holds = append(a.Holds, l.ID)
			}
		}
	}
	p.locks = append(p.locks, locks...)
	p.reindexLocks()
	s.chanEdges()
	s.idlePools()
	s.settle()
	s.socketWaits()
	p.groups = s.groups()
}

// socketWaits ties a goroutine waiting for an HTTP response to its
// connection. The runtime's poller, not the goroutine, waits on the
// descriptor, so the kernel does not say which one; but when the poller
// watches one connected TCP socket only, that is the one (a dump's *FD
// argument is an address, not a descriptor). The wait then leads, like a
// thread's read, to the process at the other end.
func (s *goScene) socketWaits() {
	p := s.p
	var conns []string
	seen := map[string]bool{}
	for _, t := range p.samples[len(p.samples)-1].Threads {
		for _, w := range t.Watches {
			_, name, _ := strings.Cut(w, " ")
			if res, ok := p.res[name]; ok && !seen[name] && res.TCP != nil && res.TCP.State != "LISTEN" && res.TCP.Remote.Port() != 0 {
				seen[name] = true
				conns = append(conns, name)
			}
		}
	}
	if len(conns) != 1 {
		return
	}
	for i := range p.goroutines {
		g := &p.goroutines[i]
		if g.Class != ClassBlocked || g.Wait != model.WaitHTTPResponse {
			continue
		}
		g.Resource = conns[0]
		p.waits = append(p.waits, Wait{From: g.Ref, Kind: g.Wait, Resource: conns[0]})
	}
}

// settle is the goroutines' part of the thread adapter's settle: a wait
// that names nobody (a WaitGroup, a Cond, a pool's free connection, a
// semaphore) is an "or" over the program's other goroutines that could end
// it — not the runtime's, not a library's own machinery (a goroutine with
// none of the program's frames), not one waiting in the same place. None
// left: nobody can end it.
func (s *goScene) settle() {
	gs := s.p.goroutines
	for i := range gs {
		g := &gs[i]
		if g.Class != ClassBlocked || g.Wait.Role() != model.RoleWokenBy {
			continue
		}
		key := goStackKey(g.Stack)
		var wakers []int64
		for j := range gs {
			o := &gs[j]
			if o.Ref == g.Ref || o.Aside != AsideNone || UserFrame(o.Stack) < 0 || o.Wait == g.Wait && goStackKey(o.Stack) == key {
				continue
			}
			wakers = append(wakers, o.Ref.Goroutine)
		}
		if len(wakers) == 0 {
			g.Why = Why{Rule: WhyNobodyLeft, Kind: g.Wait}
			continue
		}
		if s.p.goWakers == nil {
			s.p.goWakers = map[int64][]int64{}
		}
		s.p.goWakers[g.Ref.Goroutine] = wakers
	}
}

// goHistories gathers each goroutine's readings, lowest id first.
func goHistories(gs [][]model.Goroutine, sources []model.Format) []*goHistory {
	byID := map[int64]*goHistory{}
	for n, list := range gs {
		for _, g := range list {
			h := byID[g.ID]
			if h == nil {
				h = &goHistory{id: g.ID}
				byID[g.ID] = h
			}
			h.readings = append(h.readings, g)
			h.source = sources[n]
		}
	}
	out := make([]*goHistory, 0, len(byID))
	for _, h := range byID {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b *goHistory) int { return cmp.Compare(a.id, b.id) })
	return out
}

// runtimeDeadlock is the fatal error the Go runtime dies with when no
// goroutine can ever run again.
const runtimeDeadlock = "all goroutines are asleep - deadlock!"

// goWait names what a goroutine waits on from its state and frames;
// WaitNone for a running or runnable one. Older Go says "semacquire" for
// every sync wait: the frames tell which.
func goWait(g model.Goroutine) model.WaitKind {
	state, _, _ := strings.Cut(g.State, " (")
	if kind, ok := goWaitStates[state]; ok {
		return kind
	}
	for _, p := range goWaitPrefixes {
		if strings.HasPrefix(state, p.prefix) {
			return p.kind
		}
	}
	if state == "semacquire" {
		for _, f := range g.Stack {
			for _, p := range goWaitReceivers {
				if strings.Contains(f.Func, p.prefix) {
					return p.kind
				}
			}
		}
		return model.WaitOther
	}
	for _, p := range goRuntimeWaits {
		if strings.HasPrefix(state, p) {
			return model.WaitRuntime
		}
	}
	return model.WaitOther
}

// What goWait reads: whole states, state prefixes (Go ≥1.20 names the
// sync type in the wait reason), the sync types on a "semacquire" stack
// (older Go), and the runtime's own waits.
var (
	goWaitStates = map[string]model.WaitKind{
		"running": model.WaitNone, "runnable": model.WaitNone, "preempted": model.WaitNone,
		"chan send": model.WaitChannel, "chan receive": model.WaitChannel, "select": model.WaitSelect,
		"IO wait": model.WaitIO, "syscall": model.WaitSyscall, "sleep": model.WaitSleep,
	}
	goWaitPrefixes = []struct {
		prefix string
		kind   model.WaitKind
	}{
		{"sync.Mutex.", model.WaitMutex}, {"sync.RWMutex.", model.WaitRWMutex}, {"sync.WaitGroup.", model.WaitWaitGroup}, {"sync.Cond.", model.WaitCond},
	}
	goWaitReceivers = []struct {
		prefix string
		kind   model.WaitKind
	}{
		{"(*RWMutex)", model.WaitRWMutex}, {"(*Mutex)", model.WaitMutex}, {"(*WaitGroup)", model.WaitWaitGroup}, {"(*Cond)", model.WaitCond},
	}
	goRuntimeWaits = []string{"GC", "finalizer", "force gc", "timer goroutine", "trace reader", "debug call", "cleanup wait", "GOMAXPROCS updater"}
)

func std(fn string) bool { return model.GoStd(fn) }

// UserFrame is the index of the innermost frame of the program's own code
// (not the standard library's), or -1.
func UserFrame(stack []model.Frame) int {
	return slices.IndexFunc(stack, func(f model.Frame) bool { return !std(f.Func) })
}

// goStackKey is a stack without its argument words: goroutines with equal
// keys and states are one group.
func goStackKey(stack []model.Frame) string {
	n := 0
	for _, f := range stack {
		n += len(f.Func) + len(f.File) + 8
	}
	b := make([]byte, 0, n)
	for _, f := range stack {
		b = append(b, f.Func...)
		b = append(b, '|')
		b = append(b, f.File...)
		b = append(b, '|')
		b = strconv.AppendInt(b, int64(f.Line), 10)
		b = append(b, ';')
	}
	return string(b)
}

// sameGoStack compares two readings of a goroutine as a loop sees them
// (see sameStack): argument words are ignored.
func sameGoStack(a, b []model.Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Func != b[i].Func || a[i].File != b[i].File || i > 0 && a[i].Line != b[i].Line {
			return false
		}
	}
	return true
}

// goroutine classifies one goroutine from its readings.
func (s *goScene) goroutine(h *goHistory) Actor {
	last := h.lastWaiting()
	g := Actor{
		Kind: ActorGoroutine, Ref: Ref{PID: s.p.pid, Goroutine: h.id},
		GoState: last.State, WaitMinutes: last.WaitMinutes, Thread: last.Thread,
		Seen: len(h.readings), Stack: last.Stack, CreatedBy: last.CreatedBy, CreatorID: last.CreatorID,
		Wait: goWait(last),
	}
	switch g.Wait {
	case model.WaitChannel, model.WaitSelect, model.WaitOther, model.WaitWaitGroup, model.WaitCond:
		// A library frame says what the channel or semaphore is for: a
		// pool's free connection, a server's response.
		if k, _ := libraryWait(model.RuntimeGo, last.Stack); k != model.WaitNone {
			g.Wait = k
		}
	}
	// A wait reason that changes is movement; a flip between a wait and
	// runnable at the same place is a wake-up that went nowhere (netpoll
	// wakes writers to a full pipe now and then). A goroutine that never
	// waits moves if it leaves the loop it was caught in.
	waits := map[string]bool{}
	for _, r := range h.readings {
		if goWait(r) != model.WaitNone {
			waits[r.State] = true
		}
		same := sameGoStack(r.Stack, h.readings[0].Stack)
		if !same && goWait(r) == model.WaitNone && goWait(h.readings[0]) == model.WaitNone {
			same = sameLoop(r.Stack, h.readings[0].Stack)
		}
		if !same {
			g.Moved = true
		}
	}
	g.Moved = g.Moved || len(waits) > 1
	one := len(h.readings) == 1
	running := g.Wait == model.WaitNone
	g.Aside = aside(last, h.source)
	switch {
	case g.Aside == AsideRuntime || g.Aside == AsidePlumbing:
		g.Class, g.Why = ClassIdle, Why{Rule: WhyGoAside}
	case g.Aside == AsideObserver:
		g.Class, g.Why = ClassIdle, Why{Rule: WhyGoObserver}
	case g.Aside == AsideDumper:
		g.Class, g.Why = ClassIdle, Why{Rule: WhyGoDumper}
	case acceptLoop(last.Stack):
		// An HTTP server's accept loop, where it is the program's (a
		// dump): caught in Accept or between two, it moves only to hand
		// out the connections of whoever fetched the dumps.
		g.Class, g.Why, g.Wait = ClassIdle, Why{Rule: WhyGoAccept}, model.WaitAccept
	case g.Moved:
		g.Class, g.Why = ClassWorking, Why{Rule: WhyGoMoved}
	case running && one:
		g.Class, g.Why = ClassWorking, Why{Rule: WhyGoRunningOnce}
	case running:
		g.Class, g.Why = s.runningClass(h, &g)
	case g.Wait == model.WaitSleep || g.Wait == model.WaitRuntime:
		g.Class, g.Why = ClassIdle, Why{Rule: WhyGoParked, Kind: g.Wait}
	case g.Wait == model.WaitIO && accepting(last.Stack):
		g.Class, g.Why, g.Wait = ClassIdle, Why{Rule: WhyGoAccept}, model.WaitAccept
	case g.Wait == model.WaitIO && serverRead(last.Stack):
		g.Class, g.Why = ClassIdle, Why{Rule: WhyGoServerRead}
	case last.State == "select (no cases)":
		g.Class, g.Why = ClassIdle, Why{Rule: WhyGoSelectForever}
	case one:
		g.Class, g.Why = ClassBlocked, Why{Rule: WhyGoBlockedOnce, Kind: g.Wait}
	default:
		g.Class, g.Why = ClassBlocked, Why{Rule: WhyGoBlocked, Kind: g.Wait, N: g.Seen}
	}
	return g
}

// siblingsMove calls working a goroutine that looks like it spins while
// others started by the same go statement move: a worker of a busy pool
// caught in the same long task in every sample, not a loop that never
// ends.
func siblingsMove(gs []Actor) {
	moving := map[model.Frame]int{}
	for _, g := range gs {
		if g.CreatedBy != nil && g.Class == ClassWorking && g.Moved {
			moving[*g.CreatedBy]++
		}
	}
	for i := range gs {
		g := &gs[i]
		if g.Class == ClassSpinning && g.CreatedBy != nil && moving[*g.CreatedBy] > 0 {
			g.Class = ClassWorking
			g.Why.Siblings, g.Why.SiblingsAt = moving[*g.CreatedBy], g.CreatedBy
		}
	}
}

// runningClass tells a spinning goroutine from a working one: the same
// stack, running or runnable, in every sample, on a thread that uses a core.
func (s *goScene) runningClass(h *goHistory, g *Actor) (Class, Why) {
	for _, r := range h.readings {
		if goWait(r) != model.WaitNone {
			return ClassWorking, Why{Rule: WhyGoBetweenWaits}
		}
	}
	if t := s.p.byTID[g.Thread]; g.Thread != 0 && t != nil && t.CPU.Percent+t.CPU.RunqueuePercent >= s.opts.GoSpinCPU*100 {
		return ClassSpinning, Why{Rule: WhyGoSpinsOnThread, N: g.Seen, Other: &t.Ref}
	}
	if t := s.spinningThread; t != nil {
		return ClassSpinning, Why{Rule: WhyGoSpinsWhile, N: g.Seen, Other: &t.Ref}
	}
	if s.processCPU >= s.opts.GoSpinCPU*100 {
		return ClassSpinning, Why{Rule: WhyGoSpinsProcess, N: g.Seen, ProcessCPU: s.processCPU}
	}
	if len(s.p.byTID) == 0 {
		return ClassSpinning, Why{Rule: WhyGoSpinsInDumps, N: g.Seen}
	}
	return ClassWorking, Why{Rule: WhyGoRunsLittle, N: g.Seen, ProcessCPU: s.processCPU}
}

// sameLoop compares two readings of a goroutine that runs: it stays in one
// loop if, read from the outermost frame in, the stacks agree on every
// frame down to the loop's function, whose line may differ, and one of
// them is in the loop's function itself, the other at most two calls
// deeper.
func sameLoop(a, b []model.Frame) bool {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n].Func == b[len(b)-1-n].Func {
		n++
	}
	// Both past the loop's function in different callees: it moved on
	// to other work.
	if n == 0 || len(a)-n > 2 || len(b)-n > 2 || len(a) > n && len(b) > n {
		return false
	}
	for i := 1; i < n; i++ {
		if a[len(a)-i].Line != b[len(b)-i].Line {
			return false
		}
	}
	return true
}

// serverRead reports an HTTP server's connection goroutine reading the
// next request, or its background read: idle until a client speaks.
func serverRead(stack []model.Frame) bool {
	return slices.ContainsFunc(stack, func(f model.Frame) bool {
		return f.Func == "net/http.(*connReader).backgroundRead" || f.Func == "net/http.(*conn).serve" || f.Func == "net/http.(*conn).readRequest"
	})
}

// accepting reports a goroutine parked in a listener's Accept.
func accepting(stack []model.Frame) bool {
	return slices.ContainsFunc(stack, func(f model.Frame) bool {
		return strings.HasSuffix(f.Func, ").Accept") || strings.HasSuffix(f.Func, ").accept")
	})
}

// idlePools marks workers parked receiving at one place as idle when no
// goroutine could send them work: none works, spins or is blocked sending.
// What feeds them stopped.
func (s *goScene) idlePools() {
	gs := s.p.goroutines
	for _, g := range gs {
		if g.Class == ClassWorking || g.Class == ClassSpinning || g.GoState == "chan send" {
			return
		}
	}
	count := map[string]int{}
	for _, g := range gs {
		if receiving(g) {
			count[goStackKey(g.Stack)]++
		}
	}
	for i := range gs {
		g := &gs[i]
		if n := count[goStackKey(g.Stack)]; receiving(*g) && n >= 2 {
			s.p.pool = append(s.p.pool, g.Ref)
			g.Class = ClassIdle
			g.Why = Why{Rule: WhyGoPool, N: n - 1}
		}
	}
}

func receiving(g Actor) bool {
	return g.Class == ClassBlocked && (g.GoState == "chan receive" || g.GoState == "select") && g.WaitsFor == ""
}

// maxGroupIDs bounds the ids a group lists.
const maxGroupIDs = 20

// groupKey is what goroutines of one group share.
type groupKey struct {
	state string
	class Class
	stack string
}

// groups gathers goroutines with the same state and stack, biggest first,
// with each group's size in every sample.
func (s *goScene) groups() []Group {
	gs := s.p.goroutines
	index := map[groupKey]int{}
	var out []Group
	keys := make([]groupKey, len(gs))
	for i := range gs {
		g := &gs[i]
		key := groupKey{g.GoState, g.Class, goStackKey(g.Stack)}
		keys[i] = key
		n, ok := index[key]
		if !ok {
			n = len(out)
			index[key] = n
			out = append(out, Group{State: g.GoState, Class: g.Class, Stack: g.Stack, IDs: []int64{}})
		}
		out[n].Count++
		if len(out[n].IDs) < maxGroupIDs {
			out[n].IDs = append(out[n].IDs, g.Ref.Goroutine)
		}
	}
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(out[b].Count, out[a].Count) })
	renumber := make([]int, len(out))
	sorted := make([]Group, len(out))
	for to, from := range order {
		renumber[from] = to
		sorted[to] = out[from]
	}
	for i := range gs {
		gs[i].Group = renumber[index[keys[i]]]
	}
	// Sizes per sample, by state and stack (the class is the last
	// sample's verdict).
	type sizeKey struct{ state, stack string }
	perSample := make([]map[sizeKey]int, len(s.p.gsamples))
	for n, list := range s.p.gsamples {
		perSample[n] = map[sizeKey]int{}
		for _, r := range list {
			perSample[n][sizeKey{r.State, goStackKey(r.Stack)}]++
		}
	}
	for i := range sorted {
		g := &sorted[i]
		key := sizeKey{g.State, goStackKey(g.Stack)}
		g.Counts = make([]int, len(s.p.gsamples))
		for n := range perSample {
			g.Counts[n] = perSample[n][key]
		}
		g.Grew = len(g.Counts) > 1 && g.Counts[len(g.Counts)-1] > g.Counts[0] && g.Class == ClassBlocked
	}
	return sorted
}

func holderRefs(l *Lock) []Ref {
	if l.Holder == nil {
		return nil
	}
	return []Ref{*l.Holder}
}
