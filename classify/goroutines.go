package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/sampler"
)

// For a Go program the threads are not the story: goroutines are. The
// runtime parks goroutines without telling the kernel which lock or
// channel they wait for, so the goroutine dumps decide the verdict, and
// the threads' CPU says whether a running goroutine spins.

// goHistory is one goroutine across the samples that carry goroutines.
type goHistory struct {
	id       int64
	readings []sampler.Goroutine
}

func (h *goHistory) last() sampler.Goroutine { return h.readings[len(h.readings)-1] }

// lastWaiting is the last reading that caught the goroutine waiting, or
// the last one if none did: a blocked goroutine caught runnable by a
// spurious wake-up still waits where it was.
func (h *goHistory) lastWaiting() sampler.Goroutine {
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
	samples [][]sampler.Goroutine // the goroutines of each sample that has them
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
	last  sampler.Sample
	// aside are the runtime's goroutines and the profiler's own: not the
	// program's story.
	aside map[int64]bool
}

// goroutineSamples returns the goroutine lists of the samples that have
// one, in order; nil when no sample came with a Go stack source.
func goroutineSamples(samples []sampler.Sample) [][]sampler.Goroutine {
	var out [][]sampler.Goroutine
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
func classifyGoroutines(pid int, samples []sampler.Sample, d *Diagnosis, byTID map[int]*Thread, g *graph, opts Options) {
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
func goHistories(gs [][]sampler.Goroutine) []*goHistory {
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
func goWait(g sampler.Goroutine) string {
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
func observer(g sampler.Goroutine) bool {
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
func userFrame(stack []sampler.Frame) int {
	return slices.IndexFunc(stack, func(f sampler.Frame) bool { return !std(f.Func) })
}

// goWhere says where a goroutine stands in the program's terms: the
// library call its own code made, and that code: "sync.(*Mutex).Lock ←
// main.(*Store).Put". A goroutine in its own code names that function; one
// in library code alone, the first frame past the runtime's and its caller.
func goWhere(stack []sampler.Frame) string {
	u := userFrame(stack)
	switch {
	case len(stack) == 0:
		return "?"
	case u == 0:
		return stack[0].Func
	case u > 0:
		return stack[u-1].Func + " ← " + stack[u].Func
	}
	i := slices.IndexFunc(stack, func(f sampler.Frame) bool {
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
func goStackKey(stack []sampler.Frame) string {
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
func sameGoStack(a, b []sampler.Frame) bool {
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
		g.Stack = []sampler.Frame{}
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
	moving := map[sampler.Frame]int{}
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
func plumbing(stack []sampler.Frame) bool {
	if userFrame(stack) < 0 && slices.ContainsFunc(stack, func(f sampler.Frame) bool {
		return strings.HasPrefix(f.Func, "net/http.(*connReader).")
	}) {
		return true
	}
	// An HTTP server's accept loop: it moves whenever a client connects,
	// and under pprof the client is hangdoc.
	serve := slices.IndexFunc(stack, func(f sampler.Frame) bool { return f.Func == "net/http.(*Server).Serve" })
	u := userFrame(stack)
	return serve >= 0 && (u < 0 || u > serve)
}

// sameLoop compares two readings of a goroutine that runs: it stays in one
// loop if, read from the outermost frame in, the stacks agree on every
// frame down to the loop's function, whose line may differ, and one of
// them is in the loop's function itself, the other at most two calls
// deeper.
func sameLoop(a, b []sampler.Frame) bool {
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
func serverRead(stack []sampler.Frame) bool {
	return slices.ContainsFunc(stack, func(f sampler.Frame) bool {
		return f.Func == "net/http.(*connReader).backgroundRead" || f.Func == "net/http.(*conn).serve" || f.Func == "net/http.(*conn).readRequest"
	})
}

// accepting reports a goroutine parked in a listener's Accept.
func accepting(stack []sampler.Frame) bool {
	return slices.ContainsFunc(stack, func(f sampler.Frame) bool {
		return strings.HasSuffix(f.Func, ").Accept") || strings.HasSuffix(f.Func, ").accept")
	})
}

// mutexFrames are where a mutex waiter's frames carry the mutex's address
// as their first argument, innermost first.
var mutexFrames = []string{"(*Mutex).lockSlow", "(*Mutex).Lock", "(*RWMutex).Lock", "(*RWMutex).RLock", "(*RWMutex).rLockSlow"}

// mutexAddress is the address of the mutex a waiter waits for, from the
// first argument of its Lock frames, "" when no frame vouches for one
// (register-ABI arguments print as "0x0?" or "...").
func mutexAddress(stack []sampler.Frame) string {
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
			frame sampler.Frame
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
			for _, f := range g.Stack {
				i := slices.IndexFunc(gr.sites, func(st site) bool { return st.fn == f.Func })
				if i < 0 {
					continue
				}
				// At a Lock line itself it is only past this mutex's Lock
				// if it waits there for another mutex (ABBA in one function).
				other := mutexAddress(g.Stack)
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
	var out [][]Ref
	done := map[int64]bool{}
	for _, h := range s.hists {
		start := h.id
		var path []int64
		onPath := map[int64]int{}
		for id, ok := start, true; ok && !done[id]; id, ok = next[id] {
			if i, seen := onPath[id]; seen {
				var c []Ref
				for _, m := range path[i:] {
					c = append(c, Ref{PID: s.pid, Goroutine: m})
				}
				out = append(out, c)
				break
			}
			onPath[id] = len(path)
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
	blocked := map[int64]sampler.Goroutine{}
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
	why := map[int64]string{}
	var cycles [][]Ref
	seen := map[int64]bool{}
	for _, start := range ids {
		if seen[start] {
			continue
		}
		// Walk the first edges from start until a goroutine repeats.
		var path []int64
		at := map[int64]int{}
		for id := start; ; {
			if i, ok := at[id]; ok {
				var c []Ref
				for _, m := range path[i:] {
					c = append(c, Ref{PID: s.pid, Goroutine: m})
					seen[m] = true
				}
				cycles = append(cycles, c)
				break
			}
			if seen[id] || free[id] || len(edges[id]) == 0 {
				break
			}
			at[id] = len(path)
			path = append(path, id)
			id = edges[id][0]
		}
		seen[start] = true
	}
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
	write := slices.ContainsFunc(g.Stack, func(f sampler.Frame) bool { return strings.HasSuffix(f.Func, "(*pollDesc).waitWrite") })
	read := slices.ContainsFunc(g.Stack, func(f sampler.Frame) bool { return strings.HasSuffix(f.Func, "(*pollDesc).waitRead") })
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
