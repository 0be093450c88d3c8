package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// For a Go program the threads are not the story: goroutines are. The
// runtime parks goroutines without telling the kernel which lock or
// channel they wait for, so the goroutine dumps decide the verdict, and
// the threads' CPU says whether a running goroutine spins.

// goHistory is one goroutine across the samples that carry goroutines.
type goHistory struct {
	id       int64
	readings []model.Goroutine
}

func (h *goHistory) last() model.Goroutine { return h.readings[len(h.readings)-1] }

// lastWaiting is the last reading that caught the goroutine waiting, or
// the last one if none did: a blocked goroutine caught runnable by a
// spurious wake-up still waits where it was.
func (h *goHistory) lastWaiting() model.Goroutine {
	for i := len(h.readings) - 1; i >= 0; i-- {
		if goWait(h.readings[i]) != "" {
			return h.readings[i]
		}
	}
	return h.last()
}

// goScene is what the goroutine rules look at together.
type goScene struct {
	pid     int
	hists   []*goHistory
	samples [][]model.Goroutine // the goroutines of each sample that has them
	byID    map[int64]*Goroutine
	// spinningThread: some thread of the process pins a core (the kernel's
	// view), for sources that do not say which thread runs a goroutine.
	spinningThread *Thread
	// processCPU is the process's CPU across its threads, in percent of a
	// core, the time it waited for one included: Go moves a goroutine from
	// thread to thread, so a spinning goroutine may pin no single thread.
	processCPU float64
	byTID      map[int]*Thread
	opts       Options
	// graph and last give the kernel's view of the descriptors the
	// runtime's poller watches: which pipe a goroutine in IO wait is stuck
	// on, and who is at the other end.
	graph *graph
	last  model.Sample
	// pool are the workers idlePools found parked with nothing to feed them.
	pool []int64
	// aside are the runtime's goroutines and the profiler's own: not the
	// program's story.
	aside map[int64]bool
}

// goroutineSamples returns the goroutine lists of the samples that have
// one, in order; nil when no sample came with a Go stack source.
func goroutineSamples(samples []model.Sample) [][]model.Goroutine {
	var out [][]model.Goroutine
	for _, s := range samples {
		if s.Goroutines != nil {
			out = append(out, s.Goroutines)
		}
	}
	return out
}

// classifyGoroutines classifies the goroutines, groups them, names the
// mutexes they wait for and their probable holders, finds the cycles the
// evidence shows, and gives the process its verdict from them. It does
// nothing when no sample has goroutines.
func classifyGoroutines(pid int, samples []model.Sample, d *Diagnosis, byTID map[int]*Thread, g *graph, opts Options) {
	gs := goroutineSamples(samples)
	if gs == nil {
		return
	}
	s := &goScene{pid: pid, samples: gs, byID: map[int64]*Goroutine{}, byTID: byTID, opts: opts, aside: map[int64]bool{},
		graph: g, last: samples[len(samples)-1]}
	for i := range d.Threads {
		if d.Threads[i].Class == ClassSpinning && s.spinningThread == nil {
			s.spinningThread = &d.Threads[i]
		}
		s.processCPU += d.Threads[i].CPUPercent + d.Threads[i].RunqueuePercent
	}
	s.hists = goHistories(gs)
	d.Goroutines = make([]Goroutine, 0, len(s.hists))
	for _, h := range s.hists {
		d.Goroutines = append(d.Goroutines, s.goroutine(h))
	}
	siblingsMove(d.Goroutines)
	for i := range d.Goroutines {
		s.byID[d.Goroutines[i].ID] = &d.Goroutines[i]
		d.Goroutines[i].System = s.aside[d.Goroutines[i].ID]
	}
	locks := s.mutexes()
	for i := range locks {
		l := &locks[i]
		for _, w := range l.Waiters {
			s.byID[w.Goroutine].Waits = l.ID
		}
		if l.Holder != nil {
			h := s.byID[l.Holder.Goroutine]
			h.Holds = append(h.Holds, l.ID)
		}
	}
	cycles := s.lockCycles(locks)
	chanCycles, chanWhy := s.chanCycles()
	cycles = append(cycles, chanCycles...)
	s.idlePools(d.Goroutines)
	d.Groups = s.groups(d.Goroutines)
	// The threads' story becomes evidence under the goroutines' verdict.
	threadSummary, threadVerdict := d.Summary, d.Verdict
	d.Locks = append(d.Locks, locks...)
	d.Cycles = append(d.Cycles, cycles...)
	s.verdict(d, locks, cycles, chanWhy)
	if d.Verdict == Idle && threadVerdict == Working && d.Confidence != High && s.processCPU >= s.opts.BusyCPU*100 {
		// Every dump caught the goroutines parked, but the threads use CPU
		// and move: the work happens between the dumps.
		d.Verdict, d.Confidence = Working, Medium
		d.Summary = fmt.Sprintf("the goroutines were parked in every dump, but the threads use %.0f%% CPU and their waits move: the work happens between the dumps; slow, not stopped", s.processCPU)
		d.Hint = "It is making progress. Look for what makes it slow (go tool pprof on /debug/pprof/profile, or perf) rather than for a hang."
	}
	if threadSummary != "" && len(d.Threads) > 0 {
		d.Evidence = append(d.Evidence, "the OS threads alone: "+threadSummary)
	}
}

// goHistories gathers each goroutine's readings, lowest id first.
func goHistories(gs [][]model.Goroutine) []*goHistory {
	byID := map[int64]*goHistory{}
	for _, list := range gs {
		for _, g := range list {
			h := byID[g.ID]
			if h == nil {
				h = &goHistory{id: g.ID}
				byID[g.ID] = h
			}
			h.readings = append(h.readings, g)
		}
	}
	out := make([]*goHistory, 0, len(byID))
	for _, h := range byID {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b *goHistory) int { return cmp.Compare(a.id, b.id) })
	return out
}

// goWait names what a goroutine waits on from its state and frames: mutex,
// rwmutex, channel, select, io, syscall, waitgroup, cond, sleep, runtime,
// other; "" for a running or runnable one. Older Go says "semacquire" for
// every sync wait: the frames tell which.
func goWait(g model.Goroutine) string {
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
		return "other"
	}
	for _, p := range goRuntimeWaits {
		if strings.HasPrefix(state, p) {
			return "runtime"
		}
	}
	return "other"
}

// What goWait reads: whole states, state prefixes (Go ≥1.20 names the
// sync type in the wait reason), the sync types on a "semacquire" stack
// (older Go), and the runtime's own waits.
var (
	goWaitStates = map[string]string{
		"running": "", "runnable": "",
		"chan send": "channel", "chan receive": "channel", "select": "select",
		"IO wait": "io", "syscall": "syscall", "sleep": "sleep",
	}
	goWaitPrefixes = []struct{ prefix, kind string }{
		{"sync.Mutex.", "mutex"}, {"sync.RWMutex.", "rwmutex"}, {"sync.WaitGroup.", "waitgroup"}, {"sync.Cond.", "cond"},
	}
	goWaitReceivers = []struct{ prefix, kind string }{
		{"(*RWMutex)", "rwmutex"}, {"(*Mutex)", "mutex"}, {"(*WaitGroup)", "waitgroup"}, {"(*Cond)", "cond"},
	}
	goRuntimeWaits = []string{"GC", "finalizer", "force gc", "timer goroutine", "trace reader", "debug call", "cleanup wait", "GOMAXPROCS updater"}
)

var goWaitText = map[string]string{
	"mutex":     "waiting for a sync.Mutex",
	"rwmutex":   "waiting for a sync.RWMutex",
	"channel":   "blocked on a channel",
	"select":    "blocked in select",
	"io":        "waiting for network or file I/O (netpoll)",
	"syscall":   "in a system call",
	"waitgroup": "waiting in sync.WaitGroup.Wait",
	"cond":      "waiting in sync.Cond.Wait",
	"sleep":     "sleeping",
	"runtime":   "a runtime wait",
	"other":     "waiting",
	"accept":    "waiting for a connection",
}

// observer reports a goroutine that is hangdoc's own look at the process:
// the pprof handler writing this very profile.
func observer(g model.Goroutine) bool {
	for _, f := range g.Stack {
		if strings.HasPrefix(f.Func, "net/http/pprof.") || strings.HasPrefix(f.Func, "runtime/pprof.writeGoroutine") {
			return true
		}
	}
	return false
}

// std reports a function of Go's standard library (or runtime): its
// import path's first element has no dot, and it is not package main.
func std(fn string) bool {
	first, _, _ := strings.Cut(fn, "/")
	if !strings.Contains(fn, "/") {
		first, _, _ = strings.Cut(fn, ".")
	}
	return first != "main" && !strings.Contains(first, ".") && first != "command-line-arguments"
}

// userFrame is the index of the innermost frame of the program's own code
// (not the standard library's), or -1.
func userFrame(stack []model.Frame) int {
	return slices.IndexFunc(stack, func(f model.Frame) bool { return !std(f.Func) })
}

// goWhere says where a goroutine stands in the program's terms: the
// library call its own code made, and that code: "sync.(*Mutex).Lock ←
// main.(*Store).Put". A goroutine in its own code names that function; one
// in library code alone, the first frame past the runtime's and its caller.
func goWhere(stack []model.Frame) string {
	u := userFrame(stack)
	switch {
	case len(stack) == 0:
		return "?"
	case u == 0:
		return stack[0].Func
	case u > 0:
		return stack[u-1].Func + " ← " + stack[u].Func
	}
	i := slices.IndexFunc(stack, func(f model.Frame) bool {
		return !strings.HasPrefix(f.Func, "runtime.") && !strings.HasPrefix(f.Func, "internal/")
	})
	switch {
	case i < 0:
		return stack[0].Func
	case i+1 < len(stack):
		return stack[i].Func + " ← " + stack[i+1].Func
	}
	return stack[i].Func
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
func (s *goScene) goroutine(h *goHistory) Goroutine {
	last := h.lastWaiting()
	g := Goroutine{
		ID: h.id, State: last.State, WaitMinutes: last.WaitMinutes, Thread: last.Thread,
		Seen: len(h.readings), Holds: []string{}, Stack: last.Stack, CreatedBy: last.CreatedBy,
		BlockedOn: goWait(last),
	}
	if g.Stack == nil {
		g.Stack = []model.Frame{}
	}
	// A wait reason that changes is movement; a flip between a wait and
	// runnable at the same place is a wake-up that went nowhere (netpoll
	// wakes writers to a full pipe now and then). A goroutine that never
	// waits moves if it leaves the loop it was caught in.
	waits := map[string]bool{}
	for _, r := range h.readings {
		if goWait(r) != "" {
			waits[r.State] = true
		}
		same := sameGoStack(r.Stack, h.readings[0].Stack)
		if !same && goWait(r) == "" && goWait(h.readings[0]) == "" {
			same = sameLoop(r.Stack, h.readings[0].Stack)
		}
		if !same {
			g.Moved = true
		}
	}
	g.Moved = g.Moved || len(waits) > 1
	one := len(h.readings) == 1
	running := g.BlockedOn == ""
	switch {
	case last.System || plumbing(last.Stack):
		s.aside[g.ID] = true
		g.Class, g.Why = ClassIdle, "a runtime goroutine, or an HTTP server's own connection handling"
	case last.Observer || observer(last) || s.aside[last.CreatorID] && last.CreatorID != 0:
		s.aside[g.ID] = true
		g.Class, g.Why = ClassIdle, "the pprof handler writing this goroutine profile (hangdoc's own request)"
	case g.Moved:
		g.Class, g.Why = ClassWorking, "its stack or state changed between samples"
	case running && one:
		g.Class, g.Why = ClassWorking, fmt.Sprintf("%s in the only sample it was seen in", last.State)
	case running:
		g.Class, g.Why = s.runningClass(h, &g)
	case g.BlockedOn == "sleep" || g.BlockedOn == "runtime":
		g.Class, g.Why = ClassIdle, "parked: "+goWaitText[g.BlockedOn]
	case g.BlockedOn == "io" && accepting(last.Stack):
		g.Class, g.Why, g.BlockedOn = ClassIdle, "parked: waiting for a connection", "accept"
	case g.BlockedOn == "io" && serverRead(last.Stack):
		g.Class, g.Why = ClassIdle, "parked: an HTTP server connection waiting for its next request"
	case last.State == "select (no cases)":
		g.Class, g.Why = ClassIdle, "parked for good in select {} (usually on purpose: a main that leaves the work to others)"
	case one:
		g.Class, g.Why = ClassBlocked, fmt.Sprintf("%s in the only sample it was seen in", goWaitText[g.BlockedOn])
	default:
		g.Class, g.Why = ClassBlocked, fmt.Sprintf("%s, unchanged in %d samples", goWaitText[g.BlockedOn], g.Seen)
	}
	if g.WaitMinutes > 0 && g.Class == ClassBlocked {
		g.Why += fmt.Sprintf(", for at least %d minutes", g.WaitMinutes)
	}
	return g
}

// siblingsMove calls working a goroutine that looks like it spins while
// others started by the same go statement move: a worker of a busy pool
// caught in the same long task in every sample, not a loop that never
// ends.
func siblingsMove(gs []Goroutine) {
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
			g.Why = fmt.Sprintf("%s; but %s started by the same go statement (%s:%d) moved: a busy worker caught in one long task", g.Why,
				plural(moving[*g.CreatedBy], "goroutine", "goroutines"), g.CreatedBy.Func, g.CreatedBy.Line)
		}
	}
}

// runningClass tells a spinning goroutine from a working one: the same
// stack, running or runnable, in every sample, on a thread that uses a core.
func (s *goScene) runningClass(h *goHistory, g *Goroutine) (Class, string) {
	for _, r := range h.readings {
		if goWait(r) != "" {
			return ClassWorking, "ran between waits"
		}
	}
	if t := s.byTID[g.Thread]; g.Thread != 0 && t != nil && t.CPUPercent+t.RunqueuePercent >= s.opts.GoSpinCPU*100 {
		return ClassSpinning, fmt.Sprintf("%s in all %d samples with the same stack, on tid %d using %s", g.State, g.Seen, t.TID, cpuText(t))
	}
	if t := s.spinningThread; t != nil {
		return ClassSpinning, fmt.Sprintf("%s in all %d samples with the same stack, while %s spins (%s); the source does not say which thread runs it", g.State, g.Seen, threadName(t), cpuText(t))
	}
	if s.processCPU >= s.opts.GoSpinCPU*100 {
		return ClassSpinning, fmt.Sprintf("%s in all %d samples in the same loop, while the process uses %.0f%% of a core across its threads (the scheduler moves a goroutine between threads)", g.State, g.Seen, s.processCPU)
	}
	if len(s.byTID) == 0 {
		return ClassSpinning, fmt.Sprintf("%s in all %d dumps with the same stack (no CPU evidence in a file: probably spinning)", g.State, g.Seen)
	}
	return ClassWorking, fmt.Sprintf("%s in all %d samples, but the process uses only %.0f%% of a core", g.State, g.Seen, s.processCPU)
}

// plumbing reports a goroutine of an HTTP server's own machinery, with
// none of the program's code inside it: the background read of a
// connection (this profile's own request, under pprof), the accept loop.
func plumbing(stack []model.Frame) bool {
	if userFrame(stack) < 0 && slices.ContainsFunc(stack, func(f model.Frame) bool {
		return strings.HasPrefix(f.Func, "net/http.(*connReader).")
	}) {
		return true
	}
	// An HTTP server's accept loop: it moves whenever a client connects,
	// and under pprof the client is hangdoc.
	serve := slices.IndexFunc(stack, func(f model.Frame) bool { return f.Func == "net/http.(*Server).Serve" })
	u := userFrame(stack)
	return serve >= 0 && (u < 0 || u > serve)
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
func (s *goScene) idlePools(gs []Goroutine) {
	for _, g := range gs {
		if g.Class == ClassWorking || g.Class == ClassSpinning || g.State == "chan send" {
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
		if receiving(*g) && count[goStackKey(g.Stack)] >= 2 {
			s.pool = append(s.pool, g.ID)
			g.Class = ClassIdle
			g.Why = fmt.Sprintf("parked receiving in %s with %d others at the same place; nothing is left that could send", goWhere(g.Stack), count[goStackKey(g.Stack)]-1)
		}
	}
}

func receiving(g Goroutine) bool {
	return g.Class == ClassBlocked && (g.State == "chan receive" || g.State == "select") && g.Waits == ""
}

// maxGroupIDs bounds the ids a group lists.
const maxGroupIDs = 20

// groups gathers goroutines with the same state and stack, biggest first,
// with each group's size in every sample.
func (s *goScene) groups(gs []Goroutine) []Group {
	index := map[string]int{}
	var out []Group
	keys := make([]string, len(gs))
	for i := range gs {
		g := &gs[i]
		key := g.State + "|" + string(g.Class) + "|" + goStackKey(g.Stack)
		keys[i] = key
		n, ok := index[key]
		if !ok {
			n = len(out)
			index[key] = n
			out = append(out, Group{State: g.State, Class: g.Class, Stack: g.Stack, IDs: []int64{}})
		}
		out[n].Count++
		if len(out[n].IDs) < maxGroupIDs {
			out[n].IDs = append(out[n].IDs, g.ID)
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
	perSample := make([]map[string]int, len(s.samples))
	for n, list := range s.samples {
		perSample[n] = map[string]int{}
		for _, r := range list {
			perSample[n][r.State+"|"+goStackKey(r.Stack)]++
		}
	}
	for i := range sorted {
		g := &sorted[i]
		key := g.State + "|" + goStackKey(g.Stack)
		g.Counts = make([]int, len(s.samples))
		for n := range perSample {
			g.Counts[n] = perSample[n][key]
		}
		g.Grew = len(g.Counts) > 1 && g.Counts[len(g.Counts)-1] > g.Counts[0] && g.Class == ClassBlocked
		g.Title = fmt.Sprintf("%s [%s] in %s", plural(g.Count, "goroutine", "goroutines"), g.State, goWhere(g.Stack))
	}
	return sorted
}

// Where says where the goroutine stands in its program's terms:
// "sync.(*Mutex).Lock ← main.(*Store).Put".
func (g *Goroutine) Where() string { return goWhere(g.Stack) }
