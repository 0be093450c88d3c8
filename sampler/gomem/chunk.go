package gomem

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"

	"github.com/hangdoc/hangdoc/sampler/gomem/internal/layout"
	"github.com/hangdoc/hangdoc/sampler/goroutines"
)

// maxSudogs bounds a select's wait list walk (a corrupt list must not
// loop).
const maxSudogs = 256

// gread is one goroutine being read.
type gread struct {
	addr  uint64
	b, b2 []byte // its g, first and second read
	// drop says why it is left out unread (its pointer is bad); bad why
	// what was read is garbage, which counts only if the second read of
	// the g is the same: a g read while the runtime writes it (a field
	// updated before the status, in a single copy) is not garbage but a
	// goroutine on the move, and is read again.
	drop, bad model.NoteKind // why it is left out; "" when it is not

	status, reason uint64
	goid           int64
	pc, sp, lr     uint64
	fromSyscall    bool // pc and sp are g.syscallpc and syscallsp
	hasStack       bool
	lo, hi         uint64
	m              uint64
	tid            int
	stk            stackMem
	pstart, pend   int // its frames in chunkState.phys
	res            unwindResult
	waitChans      []string
	labels         map[string]string
	system         bool // the runtime's own goroutine
}

func (g *gread) skip() bool { return g.drop != "" || g.bad != "" }

// chunkState holds the buffers of a chunk of goroutines, reused from
// chunk to chunk.
type chunkState struct {
	r      *Reader
	addrs  []uint64
	gs     []gread
	first  spanReader // the gs' first read
	second spanReader // and second
	sudogs spanReader
	idx    []int
	ga     []uint64
	sArena []byte
	reqs   []request
	phys   []physFrame
	tids   map[uint64]int               // m address → thread id, for this read
	labels map[uint64]map[string]string // labels pointer → labels
	// movingSystem: the goroutine moving last returned is the runtime's.
	movingSystem bool
}

func newChunkState(r *Reader) *chunkState {
	return &chunkState{r: r, tids: map[uint64]int{}, labels: map[uint64]map[string]string{}}
}

// compared are the fields of a g that must be the same in both of its
// reads for its stack to be taken as one moment's.
func compared(l *layout.G) []layout.Field {
	return []layout.Field{l.Status, l.Goid, l.SchedSP, l.SchedPC, l.SchedLR, l.SchedBP, l.SyscallSP,
		l.SyscallPC, l.WaitReason, l.WaitSince, l.Waiting, l.M, l.StackLo, l.StackHi, l.Labels, l.LockedM}
}

// read reads the goroutines at addrs and appends those that read whole
// and still to out. It returns the addresses of those that changed
// between their two reads.
func (c *chunkState) read(addrs []uint64, now int64, out *[]model.Goroutine) ([]uint64, error) {
	r := c.r
	lay := &r.lay.G
	gsize := lay.Size
	c.gs = c.gs[:0]
	for _, a := range addrs {
		g := gread{addr: a}
		if a == 0 || a%8 != 0 || !r.maps.readable(a, uint64(gsize)) {
			g.drop = model.NoteGoGOutside
		}
		c.gs = append(c.gs, g)
	}
	// 1. The gs.
	if err := c.readGs(&c.first, func(g *gread) bool { return g.drop == "" }, func(g *gread, b []byte) {
		if b == nil {
			g.drop = model.NoteGoGUnread
		}
		g.b = b
	}); err != nil {
		return nil, err
	}
	// 2. Decode them; their stacks and Ms.
	stackBytes := 0
	for i := range c.gs {
		g := &c.gs[i]
		if g.drop == "" {
			c.decode(g)
		}
		if g.hasStack {
			stackBytes += int(min(g.hi-g.sp, window))
		}
	}
	if cap(c.sArena) < stackBytes {
		c.sArena = make([]byte, stackBytes)
	}
	sa := c.sArena[:stackBytes]
	c.reqs = c.reqs[:0]
	var ms []uint64
	for i := range c.gs {
		g := &c.gs[i]
		if g.skip() || g.status == 0 {
			continue
		}
		if g.hasStack {
			n := int(min(g.hi-g.sp, window))
			g.stk = stackMem{lo: g.lo, hi: g.hi, addr: g.sp, b: sa[:n:n], r: r}
			sa = sa[n:]
			c.reqs = append(c.reqs, request{Addr: g.sp, Buf: g.stk.b})
		}
		if g.m != 0 {
			if _, ok := c.tids[g.m]; !ok && r.maps.readable(g.m+uint64(r.lay.M.Procid.Off), 8) {
				c.tids[g.m] = 0
				ms = append(ms, g.m)
			}
		}
	}
	nStacks := len(c.reqs)
	procids := make([]byte, 8*len(ms))
	for i, m := range ms {
		c.reqs = append(c.reqs, request{Addr: m + uint64(r.lay.M.Procid.Off), Buf: procids[8*i : 8*i+8]})
	}
	if err := r.mem.read(c.reqs); err != nil {
		return nil, r.readErr("reading goroutine stacks", err)
	}
	for i, m := range ms {
		if c.reqs[nStacks+i].OK {
			c.tids[m] = int(binary.LittleEndian.Uint64(procids[8*i:]))
		}
	}
	for i := range c.gs {
		if g := &c.gs[i]; g.m != 0 {
			g.tid = c.tids[g.m]
		}
	}
	k := 0
	for i := range c.gs {
		g := &c.gs[i]
		if g.skip() || g.status == 0 || !g.hasStack {
			continue
		}
		if !c.reqs[k].OK {
			g.bad = model.NoteGoStackUnread
		}
		k++
	}
	// 3. Unwind, while the gs are as first read.
	c.phys = c.phys[:0]
	for i := range c.gs {
		g := &c.gs[i]
		if g.skip() || g.status == 0 || !g.hasStack {
			continue
		}
		g.pstart = len(c.phys)
		c.phys, g.res = r.unwind(g.pc, g.sp, g.lr, g.fromSyscall, &g.stk, c.phys)
		g.pend = len(c.phys)
		if g.res == unwindGarbage {
			g.bad = model.NoteGoPCNotGo
		}
	}
	if err := c.waits(); err != nil {
		return nil, err
	}
	c.readLabels()
	// 4. The gs again.
	if err := c.readGs(&c.second, func(g *gread) bool { return g.drop == "" && g.status != 0 }, func(g *gread, b []byte) { g.b2 = b }); err != nil {
		return nil, err
	}
	var moved []uint64
	fields := compared(lay)
	for i := range c.gs {
		g := &c.gs[i]
		if g.drop != "" {
			r.stats.Dropped++
			r.note(g.drop)
			continue
		}
		if g.status == 0 {
			continue // dead
		}
		same := g.b2 != nil
		for _, f := range fields {
			if !same {
				break
			}
			same = field(g.b, f) == field(g.b2, f)
		}
		if !same {
			moved = append(moved, g.addr)
			continue
		}
		if g.bad != "" {
			r.stats.Dropped++
			r.note(g.bad)
			continue
		}
		if g.status == gRunning && !g.hasStack && g.tid != 0 {
			c.syscallStack(g)
		}
		*out = append(*out, c.goroutine(g, now))
		c.root(g, len(*out)-1, false)
	}
	return moved, nil
}

// readGs reads the gs that want says to read, a few large reads at a
// time, and hands each to got (nil when it could not be read).
func (c *chunkState) readGs(sr *spanReader, want func(*gread) bool, got func(*gread, []byte)) error {
	c.idx, c.ga = c.idx[:0], c.ga[:0]
	for i := range c.gs {
		if want(&c.gs[i]) {
			c.idx = append(c.idx, i)
			c.ga = append(c.ga, c.gs[i].addr)
		}
	}
	views, err := sr.read(c.r.mem, c.r.maps, c.ga, c.r.lay.G.Size)
	if err != nil {
		return c.r.readErr("reading goroutines", err)
	}
	for k, i := range c.idx {
		got(&c.gs[i], views[k])
	}
	return nil
}

// decode reads a g's fields and says where its stack is. A dead g is
// marked status 0.
func (c *chunkState) decode(g *gread) {
	r := c.r
	l := &r.lay.G
	b := g.b
	status := field(b, l.Status) &^ gScan
	if status >= uint64(len(r.gDead)) {
		g.status = status
		g.bad = model.NoteGoStatusUnknown
		return
	}
	if r.gDead[status] {
		g.status = 0
		return
	}
	g.status = status
	g.reason = field(b, l.WaitReason)
	g.goid = int64(field(b, l.Goid))
	if g.goid <= 0 {
		g.bad = "a g without an id"
		return
	}
	g.lo, g.hi = field(b, l.StackLo), field(b, l.StackHi)
	if g.lo >= g.hi || g.hi-g.lo > 1<<30 {
		g.bad = "a g with a bad stack"
		return
	}
	g.m = field(b, l.M)
	if sp := field(b, l.SyscallSP); sp != 0 {
		g.pc, g.sp, g.lr, g.fromSyscall, g.hasStack = field(b, l.SyscallPC), sp, 0, true, true
	} else if status != gRunning {
		g.pc, g.sp, g.lr, g.hasStack = field(b, l.SchedPC), field(b, l.SchedSP), field(b, l.SchedLR), true
	}
	if g.hasStack && (g.sp < g.lo || g.sp > g.hi || !r.maps.readable(g.sp, min(g.hi-g.sp, window))) {
		g.bad = "a stack pointer outside its stack"
	}
}

// blockedOnChan: the states whose g.waiting lists channel sudogs.
func blockedOnChan(state string) bool {
	return strings.HasPrefix(state, "chan ") || strings.HasPrefix(state, "select")
}

// waits reads the sudog lists of goroutines blocked on channels, one
// level of every list per read.
func (c *chunkState) waits() error {
	r := c.r
	s := r.lay.Sudog
	if !s.C.OK() || !s.Waitlink.OK() || !r.lay.G.Waiting.OK() {
		return nil
	}
	type walk struct {
		g    *gread
		next uint64
		n    int
	}
	var ws []walk
	for i := range c.gs {
		g := &c.gs[i]
		if g.skip() || g.status != gWaiting || !blockedOnChan(r.state(g.status, g.reason)) {
			continue
		}
		if w := field(g.b, r.lay.G.Waiting); w != 0 {
			ws = append(ws, walk{g: g, next: w})
		}
	}
	var addrs []uint64
	for len(ws) > 0 {
		keep := ws[:0]
		for _, w := range ws {
			if w.n < maxSudogs && r.maps.readable(w.next, uint64(s.Size)) {
				keep = append(keep, w)
			}
		}
		ws = keep
		addrs = addrs[:0]
		for _, w := range ws {
			addrs = append(addrs, w.next)
		}
		views, err := c.sudogs.read(r.mem, r.maps, addrs, s.Size)
		if err != nil {
			return r.readErr("reading channel waits", err)
		}
		keep = ws[:0]
		for i, w := range ws {
			b := views[i]
			if b == nil {
				continue
			}
			if ch := field(b, s.C); ch != 0 {
				w.g.waitChans = r.addChan(w.g.waitChans, ch)
				if r.scanOn {
					r.sudogs[w.next] = true
				}
			}
			if next := field(b, s.Waitlink); next != 0 {
				w.next, w.n = next, w.n+1
				keep = append(keep, w)
			}
		}
		ws = keep
	}
	return nil
}

// addChan adds channel ch to a goroutine's waits. The texts are shared,
// and so is the list of a goroutine that waits on one channel only (most
// do, a pool of workers on the same one): callers do not modify them.
func (r *Reader) addChan(waits []string, ch uint64) []string {
	one, ok := r.chans[ch]
	if !ok {
		one = []string{"0x" + strconv.FormatUint(ch, 16)}
		r.chans[ch] = one
	}
	if len(waits) == 0 {
		return one[:1:1]
	}
	return appendNew(slices.Clip(waits), one[0])
}

func appendNew(s []string, x string) []string {
	for _, y := range s {
		if y == x {
			return s
		}
	}
	return append(s, x)
}

// syscallStack gives a running goroutine whose thread is in a system call
// the stack the thread's registers point at, from
// /proc/PID/task/TID/syscall (read without stopping the thread: the
// kernel reports a thread that is on a CPU as "running"). The call, the
// stack and the g are read, then the call and the g again; anything that
// changed leaves the goroutine without a stack.
func (c *chunkState) syscallStack(g *gread) {
	r := c.r
	if r.exe.arch != "amd64" {
		// On arm64 the innermost return address is in the link
		// register, which the file does not give.
		return
	}
	nr, sp, pc, ok := r.threadSyscall(g.tid)
	if !ok || sp < g.lo || sp >= g.hi || !r.maps.readable(sp, min(g.hi-sp, window)) {
		return
	}
	g.stk = stackMem{lo: g.lo, hi: g.hi, addr: sp, b: make([]byte, min(g.hi-sp, window)), r: r}
	if err := r.read1(sp, g.stk.b); err != nil {
		return
	}
	start := len(c.phys)
	phys, res := r.unwind(pc, sp, 0, true, &g.stk, c.phys)
	c.phys = phys
	if res == unwindGarbage {
		c.phys = c.phys[:start]
		return
	}
	nr2, sp2, pc2, ok2 := r.threadSyscall(g.tid)
	if err := r.read1(g.addr, g.b2); err != nil || !ok2 || nr2 != nr || sp2 != sp || pc2 != pc {
		c.phys = c.phys[:start]
		return
	}
	for _, f := range compared(&r.lay.G) {
		if field(g.b, f) != field(g.b2, f) {
			c.phys = c.phys[:start]
			return
		}
	}
	g.pstart, g.pend, g.res, g.hasStack = start, len(c.phys), res, true
}

// goroutine builds what the sampler keeps of a g that read whole.
func (c *chunkState) goroutine(g *gread, now int64) model.Goroutine {
	r := c.r
	l := &r.lay.G
	out := model.Goroutine{ID: g.goid, State: r.state(g.status, g.reason), Thread: g.tid,
		LockedToThread: field(g.b, l.LockedM) != 0, Labels: g.labels, WaitChans: g.waitChans}
	if sema, ok := r.semas[g.addr]; ok && g.status == gWaiting {
		out.WaitLock = lockOfSema(out.State, sema)
	}
	if ws := int64(field(g.b, l.WaitSince)); (g.status == gWaiting || g.status == gSyscall) && ws != 0 && now > ws {
		out.WaitMinutes = int((now - ws) / int64(time.Minute))
	}
	out.CreatorID = int64(field(g.b, l.ParentGoid))
	var crt *goroutines.Frame
	out.CreatedBy, crt = r.createdBy(field(g.b, l.GoPC), g.goid)
	var sys []goroutines.Frame
	var sh *shape
	if g.hasStack {
		sh = r.shapeOf(c.phys[g.pstart:g.pend])
		sys = sh.sys
		if g.res == unwindTruncated {
			r.stats.Truncated++
		}
	} else {
		out.Stack = []model.Frame{}
		// Unknown stack: the start function stands for it in IsSystem.
		r.sysFrames = r.sysFrames[:0]
		if pc := field(g.b, l.StartPC); pc >= r.bias {
			if f, ok := r.exe.tab.find(pc - r.bias); ok {
				r.sysFrames = append(r.sysFrames, goroutines.Frame{Frame: model.Frame{Func: printName(r.name(f.nameOff))}})
			}
		}
		sys = r.sysFrames
	}
	system := model.RuntimeGoroutine(frameModels(sys), crtModel(crt))
	g.system = system
	if sh != nil {
		// A runtime goroutine's frames are all the runtime's, which the
		// traceback hides: they are kept whole, as Delve's reader and a
		// GOTRACEBACK=system dump show them.
		out.Stack = r.stackFrames(g, c.phys[g.pstart:g.pend], sh, system || len(sh.shown) == 0)
	}
	return out
}

// created is a go statement's frame, as the traceback prints it (nil for
// runtime creators it hides), and whatever it is, for IsSystem.
type created struct {
	shown *model.Frame
	any   *goroutines.Frame
}

// createdBy is the goroutine's "created by" frame as the traceback prints
// it (nil for goroutine 1 and for runtime creators it hides), and the
// creator frame whatever it is, for IsSystem. Goroutines created by the
// same go statement share the frame: callers do not modify it.
func (r *Reader) createdBy(gopc uint64, goid int64) (*model.Frame, *goroutines.Frame) {
	if gopc < r.bias {
		return nil, nil
	}
	c, ok := r.created[gopc]
	if !ok {
		c = r.creator(gopc - r.bias)
		r.created[gopc] = c
	}
	if goid == 1 {
		return nil, c.any
	}
	return c.shown, c.any
}

func (r *Reader) creator(pc uint64) created {
	p := r.pcInfo(pc, false)
	if !p.ok {
		return created{}
	}
	name := r.name(p.fn.nameOff)
	// The traceback names the function holding the go statement and the
	// line of the call, inlined or not (runtime.printcreatedby1).
	last := p.logical[0]
	f := &model.Frame{Func: printName(name), File: last.file, Line: last.line}
	c := created{any: &goroutines.Frame{Frame: *f}}
	outer := logicalFrame{name: name, funcID: p.fn.funcID}
	if r.showFrame(&outer, false, kindNormal) {
		c.shown = f
	}
	return c
}

// moving reads a goroutine that never read still once more, for its id,
// state and thread; ok is false when it is gone or unreadable.
func (c *chunkState) moving(addr uint64, now int64) (model.Goroutine, bool) {
	r := c.r
	b := make([]byte, r.lay.G.Size)
	if err := r.read1(addr, b); err != nil {
		return model.Goroutine{}, false
	}
	g := &gread{addr: addr, b: b}
	c.decode(g)
	if g.skip() || g.status == 0 {
		return model.Goroutine{}, false
	}
	g.hasStack = false
	if g.m != 0 {
		if v, err := r.u64(g.m + uint64(r.lay.M.Procid.Off)); err == nil {
			g.tid = int(v)
		}
	}
	out := c.goroutine(g, now)
	c.movingSystem = g.system
	return out, true
}

func frameModels(fs []goroutines.Frame) []model.Frame {
	out := make([]model.Frame, len(fs))
	for i, f := range fs {
		out[i] = f.Frame
	}
	return out
}

func crtModel(c *goroutines.Frame) *model.Frame {
	if c == nil {
		return nil
	}
	return &c.Frame
}
