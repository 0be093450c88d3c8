package classify

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/strhash"
	"github.com/hangdoc/hangdoc/model"
)

// The goroutine adapter. For a Go program the threads are not the story:
// goroutines are. The runtime parks goroutines without telling the kernel
// which lock or channel they wait for, so their stacks say what they wait
// on, and the threads' CPU says whether a running goroutine spins.

// goHistory is one goroutine across the samples that carry goroutines,
// and the twins every sample read exactly like it: the same state, wait,
// thread, labels, creator and stack with its argument words, in the same
// samples. No rule can tell twins apart, so they are classified once: a
// pile of 30,000 goroutines parked at one Lock costs one actor.
type goHistory struct {
	id       int64
	twins    []int64 // the other ids, lowest first
	readings []model.Goroutine
	source   model.Format // the stack source of its last reading
	// stack is each reading's stack without its argument words, as an
	// index: goroutines of one group share it.
	stack []int32
}

func (h *goHistory) last() model.Goroutine { return h.readings[len(h.readings)-1] }

// lastWaiting is the last reading that caught the goroutine waiting, or
// the last one if none did: a blocked goroutine caught runnable by a
// spurious wake-up still waits where it was.
func (h *goHistory) lastWaiting() model.Goroutine { return h.readings[h.lastWaitingAt()] }

// lastWaitingAt is the index of lastWaiting's reading.
func (h *goHistory) lastWaitingAt() int {
	for i := len(h.readings) - 1; i >= 0; i-- {
		if goWait(h.readings[i]) != model.WaitNone {
			return i
		}
	}
	return len(h.readings) - 1
}

// goScene is what the goroutine rules look at together.
type goScene struct {
	p     *proc
	hists []*goHistory
	fold  *goFold
	// shapes is, by goroutine (p.goroutines' order), the stack index of
	// the reading its actor stands at (Actor.Stack, argument words aside).
	shapes []int32
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
	if opts.ShapeOnly {
		gs = byShape(gs)
	}
	p.gsamples = gs
	for _, sm := range p.samples {
		if sm.Goroutines != nil {
			p.runtimeDeadlock = runtimeSaysDeadlock(sm.Message)
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
	s.hists, s.fold = goHistories(gs, sources)
	p.goroutines = make([]Actor, 0, len(s.hists))
	s.shapes = make([]int32, 0, len(s.hists))
	n := 0
	for _, h := range s.hists {
		s.shapes = append(s.shapes, h.stack[h.lastWaitingAt()])
		g := s.goroutine(h)
		g.Twins = h.twins
		n += 1 + len(h.twins)
		p.goroutines = append(p.goroutines, g)
	}
	siblingsMove(p.goroutines)
	p.byGID = make(map[int64]*Actor, n)
	for i := range p.goroutines {
		g := &p.goroutines[i]
		p.byGID[g.Ref.Goroutine] = g
		for _, id := range g.Twins {
			p.byGID[id] = g
		}
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
	s.chanProofs()
	s.idlePools()
	s.chanFed()
	s.settle()
	s.excerptWaits()
	s.chanWaits()
	s.socketWaits()
	p.groups = s.groups()
}

// socketWaits ties a goroutine waiting for an HTTP response to its
// connection. The runtime's poller, not the goroutine, waits on the
// descriptor, so the kernel does not say which one; but when the poller
// watches one connected socket only (TCP, or a Unix stream socket with a
// peer: HTTP to a daemon's socket), that is the one (a dump's *FD
// argument is an address, not a descriptor). The wait then leads, like a
// thread's read, to the process at the other end.
func (s *goScene) socketWaits() {
	p := s.p
	var conns []string
	seen := map[string]bool{}
	for _, t := range p.samples[len(p.samples)-1].Threads {
		for _, w := range t.Watches {
			_, name, _ := strings.Cut(w, " ")
			if res, ok := p.res[name]; ok && !seen[name] && connected(res, p.res) {
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

// connected reports whether res is a connected socket: TCP with a remote
// end, or a Unix socket that is not listening and whose peer is no
// listener (the one a connect waits on) either.
func connected(res model.Resource, all map[string]model.Resource) bool {
	switch {
	case res.TCP != nil:
		return res.TCP.State != "LISTEN" && res.TCP.Remote.Port() != 0
	case res.Unix != nil:
		peer := all[res.Peer].Unix
		return !res.Unix.Listening && res.Peer != "" && (peer == nil || !peer.Listening)
	}
	return false
}

// settle is the goroutines' part of the thread adapter's settle: a wait
// that names nobody (a WaitGroup, a Cond, a pool's free connection, a
// semaphore) is no edge: its candidates are the program's other
// goroutines that could end it — not the runtime's, not a library's own
// machinery (a goroutine with none of the program's frames), not one
// waiting at the same place (the same wait on the same stack). None left:
// nobody can end it. Candidates are counted once per place, and the
// program test is made once per stack, so settle is linear in goroutines.
func (s *goScene) settle() {
	gs := s.p.goroutines
	type goPlace struct {
		wait  model.WaitKind
		stack int32
	}
	program := map[int32]bool{} // by stack: it has a frame of the program's own
	all := 0
	at := map[goPlace]int{}
	for i := range gs {
		o := &gs[i]
		if o.Aside != AsideNone {
			continue
		}
		si := s.hists[i].lastWaitingStack()
		own, ok := program[si]
		if !ok {
			own = UserFrame(o.Stack) >= 0
			program[si] = own
		}
		if own {
			all += o.Count()
			at[goPlace{o.Wait, si}] += o.Count()
		}
	}
	for i := range gs {
		g := &gs[i]
		if g.Class != ClassBlocked || g.Wait.Role() != model.RoleWokenBy {
			continue
		}
		// Its own place holds itself when it counts at all.
		if all-at[goPlace{g.Wait, s.hists[i].lastWaitingStack()}] == 0 {
			g.Why = Why{Rule: WhyNobodyLeft, Kind: g.Wait}
		}
	}
}

// lastWaitingStack is the stack index of the reading lastWaiting returns.
func (h *goHistory) lastWaitingStack() int32 {
	for i := len(h.readings) - 1; i >= 0; i-- {
		if goWait(h.readings[i]) != model.WaitNone {
			return h.stack[i]
		}
	}
	return h.stack[len(h.stack)-1]
}

// goFold is what goHistories learned of the stacks: each distinct stack
// without its argument words gets an index (stack), and each sample's
// goroutines are counted by state and that index (sizes), for the groups.
type goFold struct {
	stacks [][]model.Frame // by stack index: a stack with that index
	byHash map[uint64][]int32
	sizes  []map[sizeKey]int
	// user is, by stack index, UserFrame of its stack plus one; 0 until
	// asked for. Frames with one index have the same functions.
	user []int32
}

// userFrame is UserFrame of goroutine i's stack (Actor.Stack), worked
// out once per distinct stack without its argument words.
func (s *goScene) userFrame(i int) int {
	f := s.fold
	si := s.shapes[i]
	if len(f.user) < len(f.stacks) {
		f.user = append(f.user, make([]int32, len(f.stacks)-len(f.user))...)
	}
	if f.user[si] == 0 {
		f.user[si] = int32(UserFrame(f.stacks[si])) + 1
	}
	return int(f.user[si]) - 1
}

type sizeKey struct {
	state string
	stack int32
}

// readingKey is what two readings of twins share: everything but the id.
// Stacks and creator frames are compared by their interned copies.
type readingKey struct {
	state           string
	minutes, thread int
	locked          bool
	stack           *model.Frame
	frames          int
	created         *model.Frame
	creator         int64
	labels          string
	lock            string // the lock waited for, by address
}

// goHistories gathers each goroutine's readings, lowest id first, folding
// twins into one history: the lowest id's, with the others as twins.
// Each distinct stack (argument words and all) is interned once, by its
// backing array when the source already shares them (a dump read by
// replay), else by content.
func goHistories(gs [][]model.Goroutine, sources []model.Format) ([]*goHistory, *goFold) {
	fold := &goFold{sizes: make([]map[sizeKey]int, len(gs)), byHash: map[uint64][]int32{}}
	in := newStackIntern()
	created := map[model.Frame]*model.Frame{}
	var groupOf []int32 // by interned stack: its index without its argument words, -1 until known
	empty := int32(-1)
	// stackIndex interns a stack and finds its index without its
	// argument words; stackIDs keeps, for each sample's goroutines, the
	// interned stack (-1 for an empty one), so that pass 2 does not
	// intern again.
	stackIDs := make([][]int32, len(gs))
	stackIndex := func(st []model.Frame) (int32, int32) {
		id := in.canon(st)
		if id < 0 {
			if empty < 0 {
				empty = fold.index(st)
			}
			return id, empty
		}
		for int(id) >= len(groupOf) {
			groupOf = append(groupOf, -1)
		}
		if groupOf[id] < 0 {
			groupOf[id] = fold.index(in.list[id])
		}
		return id, groupOf[id]
	}
	// Pass 1: each goroutine's class. With one sample a goroutine's
	// reading is its class; with more, a class is refined sample by sample
	// by the reading in each (a goroutine absent from a sample keeps the
	// class it had).
	var members [][]int64 // by class
	classes := int32(0)   // how many, with more than one sample
	cls := map[int64]int32{}
	for n, list := range gs {
		fold.sizes[n] = map[sizeKey]int{}
		readings := map[readingKey]int32{}
		kinds := int32(0) // the distinct readings of this sample
		next := map[[2]int32]int32{}
		stackIDs[n] = make([]int32, len(list))
		for i := range list {
			g := &list[i]
			id, si := stackIndex(g.Stack)
			stackIDs[n][i] = id
			st := g.Stack
			if id >= 0 {
				st = in.list[id]
			}
			fold.sizes[n][sizeKey{g.State, si}] += 1 + len(g.Twins)
			key := readingKey{state: g.State, minutes: g.WaitMinutes, thread: g.Thread, locked: g.LockedToThread,
				frames: len(st), creator: g.CreatorID, lock: g.WaitLock}
			if len(st) > 0 {
				key.stack = &st[0]
			}
			if c := g.CreatedBy; c != nil {
				p := created[*c]
				if p == nil {
					p = c
					created[*c] = c
				}
				key.created = p
			}
			if g.Labels != nil {
				key.labels = labelKey(g.Labels)
			}
			// Channel evidence (a memory reader's, Delve's) ties
			// goroutines one by one: never folded, so never looked up.
			rk := kinds
			if g.WaitChans == nil && g.ChanRefs == nil && g.HeldChans == nil && g.HeldLocks == nil {
				if k, ok := readings[key]; ok {
					rk = k
				} else {
					readings[key] = rk
				}
			}
			if rk == kinds {
				kinds++
			}
			if len(gs) == 1 {
				for int(rk) >= len(members) {
					members = append(members, nil)
				}
				members[rk] = append(append(members[rk], g.ID), g.Twins...)
				continue
			}
			// The source's own twins (a dump read by replay) read alike
			// in this sample; the earlier samples may tell them apart.
			for j := -1; j < len(g.Twins); j++ {
				id := g.ID
				if j >= 0 {
					id = g.Twins[j]
				}
				prev, ok := cls[id]
				if !ok {
					prev = -1
				}
				c, ok := next[[2]int32{prev, rk}]
				if !ok {
					c = classes
					classes++
					next[[2]int32{prev, rk}] = c
				}
				cls[id] = c
			}
		}
	}
	if len(gs) > 1 {
		members = make([][]int64, classes)
		for id, c := range cls {
			members[c] = append(members[c], id)
		}
	}
	// Pass 2: the readings of each class's lowest id.
	byRep := map[int64]*goHistory{}
	var out []*goHistory
	for _, ids := range members {
		if len(ids) == 0 {
			continue
		}
		slices.Sort(ids)
		h := &goHistory{id: ids[0], readings: make([]model.Goroutine, 0, len(gs)), stack: make([]int32, 0, len(gs))}
		if len(ids) > 1 {
			h.twins = ids[1:]
		}
		byRep[h.id] = h
		out = append(out, h)
	}
	for n, list := range gs {
		for i := range list {
			for j := -1; j < len(list[i].Twins); j++ {
				id := list[i].ID
				if j >= 0 {
					id = list[i].Twins[j]
				}
				h := byRep[id]
				if h == nil {
					continue
				}
				r := list[i]
				r.ID, r.Twins = id, nil
				si := empty
				if sid := stackIDs[n][i]; sid >= 0 {
					r.Stack, si = in.list[sid], groupOf[sid]
				}
				h.readings = append(h.readings, r)
				h.stack = append(h.stack, si)
				h.source = sources[n]
			}
		}
	}
	slices.SortFunc(out, func(a, b *goHistory) int { return cmp.Compare(a.id, b.id) })
	return out, fold
}

// index is the index of a stack without its argument words: goroutines
// with equal ones are one group (as goStackKey has them, without building
// the key).
func (f *goFold) index(st []model.Frame) int32 {
	h := strhash.Offset
	for _, fr := range st {
		h = strhash.String(h, fr.Func)
		h = strhash.String(h, fr.File)
		h = strhash.Word(h, uint64(fr.Line))
	}
	h = strhash.Word(h, uint64(len(st)))
	for _, i := range f.byHash[h] {
		if sameNoArgs(f.stacks[i], st) {
			return i
		}
	}
	i := int32(len(f.stacks))
	f.stacks = append(f.stacks, st)
	f.byHash[h] = append(f.byHash[h], i)
	return i
}

// sameNoArgs compares stacks as goStackKey would: argument words aside.
func sameNoArgs(a, b []model.Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Func != b[i].Func || a[i].File != b[i].File || a[i].Line != b[i].Line {
			return false
		}
	}
	return true
}

// labelKey is pprof labels as one comparable string.
func labelKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(strconv.Quote(k))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[k]))
		b.WriteByte(',')
	}
	return b.String()
}

// stackIntern shares equal stacks, each with an id: by content (a hash
// of its frames), and those the source already shares (a dump read by
// replay), once seen twice, by their backing array, a map lookup.
type stackIntern struct {
	list   [][]model.Frame // by id
	byHash map[uint64]int32
	next   []int32 // by id: the next id with the same hash, -1 for none
	byPtr  map[*model.Frame]int32
}

func newStackIntern() *stackIntern {
	return &stackIntern{byHash: map[uint64]int32{}, byPtr: map[*model.Frame]int32{}}
}

// canon is the id of st's interned copy, -1 for an empty stack.
func (in *stackIntern) canon(st []model.Frame) int32 {
	if len(st) == 0 {
		return -1
	}
	if id, ok := in.byPtr[&st[0]]; ok && len(in.list[id]) == len(st) {
		return id
	}
	h := strhash.Offset
	for _, f := range st {
		h = strhash.String(h, f.Func)
		h = strhash.String(h, f.File)
		h = strhash.String(h, f.Args)
		h = strhash.Word(h, uint64(f.Line))
	}
	first, ok := in.byHash[h]
	if ok {
		for id := first; id >= 0; id = in.next[id] {
			c := in.list[id]
			if &c[0] == &st[0] && len(c) == len(st) {
				// The same backing array again: the source shares it.
				in.byPtr[&st[0]] = id
				return id
			}
			if slices.Equal(c, st) {
				return id
			}
		}
	} else {
		first = -1
	}
	id := int32(len(in.list))
	in.list = append(in.list, st)
	in.next = append(in.next, first)
	in.byHash[h] = id
	return id
}

// runtimeDeadlock is the fatal error the Go runtime dies with when no
// goroutine can ever run again.
const runtimeDeadlock = "all goroutines are asleep - deadlock!"

// runtimeSaysDeadlock reports a dump's message that is the runtime saying
// no goroutine can ever run again: the fatal error, or testing/synctest's
// panic for a bubble whose goroutines are all durably blocked ("deadlock:
// all goroutines in bubble are blocked", go1.25+).
func runtimeSaysDeadlock(msg string) bool {
	return msg == runtimeDeadlock || strings.HasPrefix(msg, "deadlock: all goroutines in bubble are blocked")
}

// goWait names what a goroutine waits on from its state and frames;
// WaitNone for a running or runnable one. Older Go says "semacquire" for
// every sync wait: the frames tell which.
func goWait(g model.Goroutine) model.WaitKind {
	switch w := model.ParseGoWait(g.State); w.Kind {
	case model.GoRunning:
		return model.WaitNone
	case model.GoChanSend, model.GoChanRecv:
		return model.WaitChannel
	case model.GoSelect, model.GoSelectEmpty:
		return model.WaitSelect
	case model.GoIO:
		return model.WaitIO
	case model.GoSyscall:
		return model.WaitSyscall
	case model.GoSleep:
		return model.WaitSleep
	case model.GoMutex:
		return model.WaitMutex
	case model.GoRWMutexRead, model.GoRWMutexWrite:
		return model.WaitRWMutex
	case model.GoWaitGroup:
		return model.WaitWaitGroup
	case model.GoCond:
		return model.WaitCond
	case model.GoRuntime:
		return model.WaitRuntime
	case model.GoSemacquire:
		for _, f := range g.Stack {
			for _, p := range goWaitReceivers {
				if strings.Contains(f.Func, p.prefix) {
					return p.kind
				}
			}
		}
	}
	return model.WaitOther
}

// goWaitReceivers are the sync types on an older Go's "semacquire" stack.
var goWaitReceivers = []struct {
	prefix string
	kind   model.WaitKind
}{
	{"(*RWMutex)", model.WaitRWMutex}, {"(*Mutex)", model.WaitMutex}, {"(*WaitGroup)", model.WaitWaitGroup}, {"(*Cond)", model.WaitCond},
}

func std(fn string) bool { return model.GoStd(fn) }

// UserFrame is the index of the innermost frame of the program's own code
// (not the standard library's), or -1.
func UserFrame(stack []model.Frame) int {
	return slices.IndexFunc(stack, func(f model.Frame) bool { return !std(f.Func) })
}

// goStackKey is a stack without its argument words: goroutines with equal
// keys and states are one group. It is two hashes of every byte of the
// frames' functions and files and of their lines, built without an
// allocation: 128 bits, so that two stacks that differ never share one in
// practice.
func goStackKey(stack []model.Frame) stackKey {
	k := stackKey{a: strhash.Offset, b: strhash.Offset2, n: len(stack)}
	for _, f := range stack {
		k.a, k.b = strhash.Whole(k.a, k.b, f.Func)
		k.a, k.b = strhash.Whole(k.a, k.b, f.File)
		k.a, k.b = strhash.Word(k.a, uint64(f.Line)), strhash.Word2(k.b, uint64(f.Line))
	}
	return k
}

// stackKey is goStackKey's result.
type stackKey struct {
	a, b uint64
	n    int
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

// goWaitOf is a goroutine's wait, typed, with what it waits on where the
// source says: the lock's address (the memory reader's, or the Lock
// frame's receiver a dump prints), or its one channel.
func goWaitOf(g model.Goroutine) model.GoWait {
	w := model.ParseGoWait(g.State)
	switch {
	case g.WaitLock != "":
		w.Addr = g.WaitLock
	case w.Kind == model.GoMutex || w.Kind == model.GoRWMutexRead || w.Kind == model.GoRWMutexWrite || w.Kind == model.GoSemacquire:
		w.Addr = mutexAddress(g.Stack)
	case w.Chan() && len(g.WaitChans) == 1:
		w.Addr = g.WaitChans[0]
	}
	return w
}

// goroutine classifies one goroutine from its readings.
func (s *goScene) goroutine(h *goHistory) Actor {
	last := h.lastWaiting()
	g := Actor{
		Kind: ActorGoroutine, Ref: Ref{PID: s.p.pid, Goroutine: h.id},
		GoState: last.State, GoWait: goWaitOf(last), HeldLocks: last.HeldLocks,
		WaitMinutes: last.WaitMinutes, Thread: last.Thread,
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
	// A running goroutine read from memory has no stack (its saved one
	// is stale while it runs): an unknown stack is no change.
	waits := map[string]bool{}
	base := slices.IndexFunc(h.readings, func(r model.Goroutine) bool { return len(r.Stack) > 0 })
	for _, r := range h.readings {
		if goWait(r) != model.WaitNone {
			waits[r.State] = true
		}
		if base < 0 || len(r.Stack) == 0 {
			continue
		}
		b := h.readings[base]
		same := sameGoStack(r.Stack, b.Stack)
		if !same && goWait(r) == model.WaitNone && goWait(b) == model.WaitNone {
			same = sameLoop(r.Stack, b.Stack)
		}
		if !same {
			g.Moved = true
		}
	}
	if len(g.Stack) == 0 {
		// Where it runs is where it last showed a stack.
		for i := len(h.readings) - 1; i >= 0; i-- {
			if len(h.readings[i].Stack) > 0 {
				g.Stack = h.readings[i].Stack
				break
			}
		}
	}
	g.Moved = g.Moved || len(waits) > 1
	one := len(h.readings) == 1
	running := g.Wait == model.WaitNone
	if t := s.p.byTID[g.Thread]; running && g.Thread != 0 && t != nil && t.OnCPU != nil && t.OnCPU.LoopSamples > 0 {
		// Where a running goroutine is, its thread's samples say: its
		// own saved stack is stale, or was not read at all.
		g.OnCPU = t.OnCPU
		if len(g.Stack) == 0 {
			g.Stack = t.OnCPU.Stack
		}
	}
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
	case g.Wait == model.WaitIO && serverRead(last.Stack) && InFlight(last.Stack) < 0:
		g.Class, g.Why = ClassIdle, Why{Rule: WhyGoServerRead}
	case g.GoWait.Kind == model.GoSelectEmpty:
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
			moving[*g.CreatedBy] += g.Count()
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
	// No stack in any sample (it ran at every read of its memory): no
	// sign that it stays in one loop, unless a thread spins.
	stackless := !slices.ContainsFunc(h.readings, func(r model.Goroutine) bool { return len(r.Stack) > 0 })
	// On a crowded machine a loop gets what the machine gives any task.
	fair := s.opts.GoSpinCPU * 100 * s.opts.crowded()
	t := s.p.byTID[g.Thread]
	if g.Thread == 0 {
		t = nil
	}
	if t != nil && (t.Class == ClassSpinning || !stackless && t.CPU.Percent+t.CPU.RunqueuePercent >= s.opts.GoSpinCPU*100) {
		return ClassSpinning, Why{Rule: WhyGoSpinsOnThread, N: g.Seen, Other: &t.Ref, Crowded: t.Why.Crowded}
	}
	if t := s.spinningThread; t != nil {
		return ClassSpinning, Why{Rule: WhyGoSpinsWhile, N: g.Seen, Other: &t.Ref, Crowded: t.Why.Crowded}
	}
	if stackless && t != nil && s.sleepsOften(t) {
		// Its thread slept and woke all through the run: it ran, waited
		// and ran again, which one loop never does.
		return ClassWorking, Why{Rule: WhyGoUnreadRuns, N: g.Seen, Other: &t.Ref}
	}
	if s.processCPU >= s.opts.GoSpinCPU*100 {
		return ClassSpinning, Why{Rule: WhyGoSpinsProcess, N: g.Seen, ProcessCPU: s.processCPU}
	}
	if s.processCPU >= fair {
		return ClassSpinning, Why{Rule: WhyGoSpinsProcess, N: g.Seen, ProcessCPU: s.processCPU, Crowded: percent(s.opts.crowded())}
	}
	if len(s.p.byTID) == 0 {
		return ClassSpinning, Why{Rule: WhyGoSpinsInDumps, N: g.Seen}
	}
	return ClassWorking, Why{Rule: WhyGoRunsLittle, N: g.Seen, ProcessCPU: s.processCPU}
}

// wakesPerSecond is how often a thread that sleeps and wakes all through
// a run does so at the least: a thread that runs one loop sleeps only when
// the scheduler moves the loop to another thread, a few times a run.
const wakesPerSecond = 50

// sleepsOften reports a thread that made voluntary switches at
// wakesPerSecond or more over the run.
func (s *goScene) sleepsOften(t *Actor) bool {
	n := len(s.p.samples)
	if n < 2 {
		return false
	}
	secs := s.p.samples[n-1].Time.Sub(s.p.samples[0].Time).Seconds()
	return secs > 0 && float64(t.Voluntary) >= wakesPerSecond*secs
}

// sameLoop compares two readings of a goroutine that runs: it stays in one
// loop if, read from the outermost frame in, the stacks agree on every
// frame down to the loop's function, whose line may differ, and one of
// them is in the loop's function itself, the other at most two calls
// deeper.
func sameLoop(a, b []model.Frame) bool {
	a, b = pastScheduler(a), pastScheduler(b)
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

// pastScheduler drops the runtime's frames innermost of a running
// goroutine's stack: a loop caught while the scheduler preempts it
// (runtime.asyncPreempt, runtime.morestack, runtime.gopreempt_m), or on
// a crowded machine descheduled between the two, is still in its loop.
// A stack that is all runtime is kept as it is.
func pastScheduler(stack []model.Frame) []model.Frame {
	i := 0
	for i < len(stack) && strings.HasPrefix(stack[i].Func, "runtime.") {
		i++
	}
	if i == len(stack) {
		return stack
	}
	return stack[i:]
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
// What feeds them stopped. That no goroutine is *left* that could feed
// them is a further claim (WhyGoPool): it needs every goroutine of the
// program in view (not an excerpt of a dump) and none outside the pool
// but goroutines parked for good; otherwise they are idle workers whose
// feeder the evidence does not account for (WhyGoIdleWorkers).
func (s *goScene) idlePools() {
	gs := s.p.goroutines
	for _, g := range gs {
		if g.Class == ClassWorking || g.Class == ClassSpinning || g.GoWait.Is(model.GoChanSend) {
			return
		}
	}
	// Receivers at one place: by their stack without argument words, in
	// the last sample.
	count := map[int32]int{}
	for i, g := range gs {
		if receiving(g) {
			count[s.lastStack(i)] += g.Count()
		}
	}
	// A receiver whose channel the memory scan found another goroutine
	// referring to is not in a pool: one that is there may send.
	member := func(i int) bool { return receiving(gs[i]) && count[s.lastStack(i)] >= 2 && !s.p.chanHeld(&gs[i]) }
	proven := !s.p.excerpt()
	for i := range gs {
		if g := &gs[i]; proven && !member(i) && g.Aside == AsideNone && !parkedForGood(g) {
			proven = false
		}
	}
	rule := WhyGoIdleWorkers
	if proven {
		rule = WhyGoPool
	}
	for i := range gs {
		g := &gs[i]
		if member(i) {
			s.p.pool = append(s.p.pool, g.Refs()...)
			g.Class = ClassIdle
			g.Why = Why{Rule: rule, N: count[s.lastStack(i)] - 1}
			if s.p.chanCounterparts(g).Nobody() {
				// The scan proved it: no goroutine but them refers to
				// their channel.
				g.Why.Rule = WhyGoPool
			}
		}
	}
}

// receiving reports a goroutine parked receiving that could be a pool's
// worker waiting for work: not one waiting for a lock, nor one holding a
// lock others wait for (a holder blocked on a channel), nor a server's
// request in flight (a handler that has not returned is not waiting for
// work).
func receiving(g Actor) bool {
	return g.Class == ClassBlocked && (g.GoWait.Is(model.GoChanRecv) || g.GoWait.Is(model.GoSelect)) && g.WaitsFor == "" &&
		len(g.Holds) == 0 && InFlight(g.Stack) < 0
}

// parkedForGood reports a goroutine that can never run again: select {}
// or a nil channel. It can feed nobody.
func parkedForGood(g *Actor) bool {
	return g.GoWait.ForGood()
}

// InFlight is, for a goroutine of an HTTP server's request in flight (a
// handler called by net/http.(*conn).serve that has not returned), the
// index of the handler's outermost frame of the program's; -1 for any
// other goroutine.
func InFlight(stack []model.Frame) int {
	serve := slices.IndexFunc(stack, func(f model.Frame) bool { return f.Func == "net/http.(*conn).serve" })
	for i := serve - 1; i >= 0; i-- {
		if !std(stack[i].Func) {
			return i
		}
	}
	return -1
}

// excerpt reports goroutine samples of which one at least is an excerpt
// of a dump (model.Sample.Excerpt): what it does not show proves nothing.
func (p *proc) excerpt() bool {
	for _, sm := range p.samples {
		if sm.Goroutines != nil && sm.Excerpt {
			return true
		}
	}
	return false
}

// excerptWaits takes back settle's "nobody left" from an excerpt of a
// dump: the goroutines that could end the wait may be among those it
// does not show.
func (s *goScene) excerptWaits() {
	if !s.p.excerpt() {
		return
	}
	for i := range s.p.goroutines {
		if g := &s.p.goroutines[i]; g.Why.Rule == WhyNobodyLeft {
			g.Why = Why{Rule: WhyGoExcerpt, Kind: g.Why.Kind}
		}
	}
}

// maxGroupIDs bounds the ids a group lists.
const maxGroupIDs = 20

// lastStack is the stack index (argument words aside) of goroutine i's
// last reading: its group's stack.
func (s *goScene) lastStack(i int) int32 {
	h := s.hists[i]
	return h.stack[len(h.stack)-1]
}

// groupKey is what goroutines of one group share.
type groupKey struct {
	state string
	class Class
	stack int32
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
		key := groupKey{g.GoState, g.Class, s.lastStack(i)}
		keys[i] = key
		n, ok := index[key]
		if !ok {
			n = len(out)
			index[key] = n
			out = append(out, Group{State: g.GoState, Class: g.Class, Stack: g.Stack, IDs: []int64{}})
		}
		out[n].Count += g.Count()
		out[n].IDs = append(append(out[n].IDs, g.Ref.Goroutine), g.Twins...)
	}
	for i := range out {
		// The lowest ids of its goroutines, as many as are listed.
		slices.Sort(out[i].IDs)
		out[i].IDs = slices.Clip(out[i].IDs[:min(len(out[i].IDs), maxGroupIDs)])
	}
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(out[b].Count, out[a].Count) })
	renumber := make([]int, len(out))
	sorted := make([]Group, len(out))
	stacks := make([]int32, len(out))
	for to, from := range order {
		renumber[from] = to
		sorted[to] = out[from]
	}
	for i := range gs {
		gs[i].Group = renumber[index[keys[i]]]
		stacks[gs[i].Group] = keys[i].stack
	}
	// Sizes per sample, by state and stack (the class is the last
	// sample's verdict).
	for i := range sorted {
		g := &sorted[i]
		g.Counts = make([]int, len(s.fold.sizes))
		for n, sizes := range s.fold.sizes {
			g.Counts[n] = sizes[sizeKey{g.State, stacks[i]}]
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
