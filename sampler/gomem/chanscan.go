package gomem

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/gomem/internal/layout"
)

// The channel scan looks, conservatively, for the goroutines that could
// still complete the channel operations others wait in: any goroutine
// whose stack holds a channel's address, as a word of its own or of a heap
// object its words lead to, scanDepth pointers deep. It runs after a read
// (ScanChannels asks for it), reads memory only, and is bounded in bytes
// and time; where a bound, a moving goroutine or a running one (whose
// registers are not in memory) stops it, it says so, and the result is
// not complete. What it cannot see: a channel reachable only deeper than
// scanDepth, and a goroutine started while it runs.
const (
	scanDepth    = 2
	scanBudget   = 64 << 20 // bytes read in all
	scanTime     = 10 * time.Second
	maxStackScan = 1 << 20 // of one stack
	maxObjScan   = 1 << 20 // of one object
	maxPtrs      = 1 << 21 // words that may be pointers, followed in all
)

// scanRoot is a goroutine as the read left it, for the channel scan.
type scanRoot struct {
	out                     int    // its index in the read's goroutines
	addr                    uint64 // its g
	sp, hi                  uint64 // its stack, from sp up; sp 0 for none
	fields                  []uint64
	running, system, moving bool
	gone                    bool // ended since the read
}

// ScanChannels says whether the next reads scan for the goroutines that
// refer to the channels others wait on (Stats.ChanScan and
// Goroutine.HeldChans). A caller asks for it on its last read: it reads up
// to scanBudget bytes more.
func (r *Reader) ScanChannels(on bool) { r.scanOn = on }

// rootFields are the fields of a g that must not change between its read
// and the scan of its stack.
func rootFields(l *layout.G) []layout.Field {
	return []layout.Field{l.Status, l.Goid, l.SchedSP, l.SchedPC, l.SyscallSP, l.SyscallPC, l.StackHi}
}

// root records a goroutine the read returned, for the scan.
func (c *chunkState) root(g *gread, out int, moving bool) {
	r := c.r
	if !r.scanOn {
		return
	}
	rt := scanRoot{out: out, addr: g.addr, running: g.status == gRunning, system: g.system, moving: moving}
	if g.hasStack && !moving {
		rt.sp, rt.hi = g.stk.addr, g.hi
	}
	for _, f := range rootFields(&r.lay.G) {
		rt.fields = append(rt.fields, field(g.b, f))
	}
	r.roots = append(r.roots, rt)
}

// Retakes of a goroutine caught running or moving: how many, how far
// apart.
const (
	retakes     = 5
	retakePause = 20 * time.Millisecond
)

// retake reads again a goroutine the read caught running (its registers
// hold what its stack does not) or moving, until it is parked with a stack
// to scan; gone when it ended meanwhile (a goroutine that ended refers to
// nothing). The target is read, never stopped.
func (r *Reader) retake(rt *scanRoot, id int64) {
	c := newChunkState(r)
	for try := 0; try < retakes; try++ {
		if try > 0 {
			time.Sleep(retakePause)
		}
		b := make([]byte, r.lay.G.Size)
		if err := r.read1(rt.addr, b); err != nil {
			return
		}
		g := &gread{addr: rt.addr, b: b}
		c.decode(g)
		switch {
		case g.status == 0 || g.drop == "" && g.bad == "" && g.goid != id:
			rt.gone = true
			return
		case g.skip() || !g.hasStack:
			continue
		}
		rt.sp, rt.hi, rt.running, rt.moving = g.sp, g.hi, false, false
		rt.fields = rt.fields[:0]
		for _, f := range rootFields(&r.lay.G) {
			rt.fields = append(rt.fields, field(b, f))
		}
		return
	}
}

// scanObj is a heap object: its first word and size, and whether its span
// holds no pointers.
type scanObj struct {
	base, size uint64
	noscan     bool
}

// spanInfo is what the scan keeps of an mspan.
type spanInfo struct {
	start, end, elemsize uint64
	inUse, noscan        bool
}

// scanner is one channel scan.
type scanner struct {
	r        *Reader
	h        layout.Heap
	heap     bool // the heap is walked
	l2       uint64
	want     map[uint64]string
	res      *model.ChanScan
	deadline time.Time
	arenas   map[uint64]uint64   // arena index → heapArena
	pages    map[uint64]uint64   // page address → mspan
	spans    map[uint64]spanInfo // mspan → info
	chans    map[uint64][]string // object → the wanted channels in it
	children map[uint64][]uint64 // object → the objects its words point into
	read     map[uint64]bool     // objects read
	size     map[uint64]uint64   // object → its size
	ptrs     int                 // words that may be pointers, so far
	// The locks waited for: which wanted texts are locks, and the heap
	// objects they are part of (by base).
	isLock map[string]bool
	lockIn map[uint64][]string
}

// lockObjects finds the heap objects the locks are part of: a word that
// points anywhere into one refers to its lock (a struct with a mutex
// field, an object with no pointers at all). A lock outside the heap (a
// global) is referred to by its own address only.
func (s *scanner) lockObjects(locks map[uint64]string) {
	if !s.heap || len(locks) == 0 {
		return
	}
	addrs := make([]uint64, 0, len(locks))
	for a := range locks {
		addrs = append(addrs, a)
	}
	for a, o := range s.resolve(addrs) {
		s.lockIn[o.base] = appendNew(s.lockIn[o.base], locks[a])
	}
}

// intoLocks adds to held the locks of the objects the words ptrs point
// into.
func (s *scanner) intoLocks(held []string, ptrs []uint64, objs map[uint64]scanObj) []string {
	if len(s.lockIn) == 0 {
		return held
	}
	for _, p := range ptrs {
		if o, ok := objs[p]; ok {
			held = appendAll(held, s.lockIn[o.base])
		}
	}
	return held
}

// split parts what a goroutine holds into channels and locks, each
// sorted.
func (s *scanner) split(held []string) (chans, locks []string) {
	for _, h := range held {
		if s.isLock[h] {
			locks = append(locks, h)
		} else {
			chans = append(chans, h)
		}
	}
	slices.Sort(chans)
	slices.Sort(locks)
	return chans, locks
}

// cut records the first reason the scan is not complete.
func (s *scanner) cut(format string, a ...any) {
	if s.res.Cut == "" {
		s.res.Cut = fmt.Sprintf(format, a...)
	}
	s.res.Complete = false
}

func (s *scanner) late() bool {
	if time.Now().After(s.deadline) {
		s.cut("the time bound (%s) ran out", cmp.Or(s.r.scanTime, scanTime))
		return true
	}
	return false
}

// chanScan scans for the channels the goroutines gs wait on, from the
// roots the read recorded, and fills each goroutine's HeldChans.
func (r *Reader) chanScan(ctx context.Context, gs []model.Goroutine, roots []scanRoot) *model.ChanScan {
	want := map[uint64]string{}
	for _, g := range gs {
		for _, c := range g.WaitChans {
			if a, err := strconv.ParseUint(strings.TrimPrefix(c, "0x"), 16, 64); err == nil && a != 0 {
				want[a] = c
			}
		}
	}
	locks := map[uint64]string{}
	for _, g := range gs {
		if a, err := strconv.ParseUint(strings.TrimPrefix(g.WaitLock, "0x"), 16, 64); err == nil && a != 0 {
			locks[a] = g.WaitLock
		}
	}
	if len(want) == 0 && len(locks) == 0 {
		return nil
	}
	s := &scanner{r: r, want: want, res: &model.ChanScan{Depth: scanDepth, Complete: true}, deadline: time.Now().Add(scanTime),
		arenas: map[uint64]uint64{}, pages: map[uint64]uint64{}, spans: map[uint64]spanInfo{},
		chans: map[uint64][]string{}, children: map[uint64][]uint64{}, read: map[uint64]bool{}, size: map[uint64]uint64{},
		isLock: map[string]bool{}, lockIn: map[uint64][]string{}}
	s.timers()
	for a, text := range locks {
		// The locks are looked for as the channels are; they are told
		// apart at the end.
		if _, ok := want[a]; !ok {
			want[a] = text
			s.isLock[text] = true
		}
	}
	s.openHeap()
	s.lockObjects(locks)
	s.deadline = time.Now().Add(cmp.Or(r.scanTime, scanTime))
	if deadline, ok := ctx.Deadline(); ok && deadline.Before(s.deadline) {
		s.deadline = deadline
	}
	for a := range r.sudogs {
		// A waiter's own sudog names its channel: it is the waiter's.
		s.read[a] = true
	}

	// Each root's own channels and the objects its words point into; the
	// globals are one more root, last.
	held := make([][]string, len(roots)+1)
	objs := make([][]uint64, len(roots)+1)
	var reqs []request
	var idx []int
	for i := range roots {
		if rt := &roots[i]; !rt.system && (rt.moving || rt.sp == 0 && rt.running) {
			// Caught running or moving: read again once it parks.
			r.retake(rt, gs[rt.out].ID)
		}
		rt := roots[i]
		switch {
		case rt.gone:
			continue
		case rt.moving:
			if !rt.system {
				s.cut("goroutine %d moved on every read: its stack was not scanned", gs[rt.out].ID)
			}
			continue
		case rt.system:
			continue // the runtime's own never completes a program's channel operation
		case rt.sp == 0:
			if rt.running && !rt.system {
				s.cut("goroutine %d was running: its registers are not in memory", gs[rt.out].ID)
			}
			continue
		}
		n := rt.hi - rt.sp
		if n > maxStackScan {
			s.cut("the stack of goroutine %d is larger than %d KiB: read in part", gs[rt.out].ID, maxStackScan>>10)
			n = maxStackScan
		}
		if s.res.Bytes+int64(n) > scanBudget {
			s.cut("the byte budget (%d MiB) ran out in the stacks", scanBudget>>20)
			break
		}
		s.res.Bytes += int64(n)
		reqs = append(reqs, request{Addr: rt.sp, Buf: make([]byte, n)})
		idx = append(idx, i)
	}
	// The program's globals: the data and bss sections (the noptr ones
	// hold no pointers), but for the runtime's own variables, whose
	// bookkeeping reaches every goroutine's sudogs.
	for _, name := range []string{".data", ".bss"} {
		sec := r.exe.sections[name]
		if sec == nil || sec.Size == 0 {
			continue
		}
		for _, part := range outside(sec.Addr, sec.Addr+sec.Size, r.runtimeVars) {
			n := part[1] - part[0]
			if s.res.Bytes+int64(n) > scanBudget {
				s.cut("the byte budget (%d MiB) ran out in the globals", scanBudget>>20)
				break
			}
			s.res.Bytes += int64(n)
			reqs = append(reqs, request{Addr: part[0] + r.bias, Buf: make([]byte, n)})
			idx = append(idx, len(roots))
		}
	}
	if err := r.mem.read(reqs); err != nil {
		s.cut("reading the stacks: %v", err)
		return s.finish(gs, roots, held)
	}
	var ptrs [][]uint64
	for k, q := range reqs {
		i := idx[k]
		if !q.OK {
			if i < len(roots) {
				s.cut("the stack of goroutine %d could not be read", gs[roots[i].out].ID)
			} else {
				s.cut("the globals could not be read")
			}
			continue
		}
		var p []uint64
		held[i], p = s.words(q.Buf, held[i], nil)
		ptrs = append(ptrs, p)
		objs[i] = append(objs[i], p...) // resolved below
	}
	if s.heap && !s.late() {
		// Depth 1: the objects the roots point into.
		var all []uint64
		for _, p := range ptrs {
			all = append(all, p...)
		}
		base := s.resolve(all)
		for i := range objs {
			held[i] = s.intoLocks(held[i], objs[i], base)
			objs[i] = s.bases(objs[i], base)
		}
		level := s.unread(objs...)
		for depth := 1; depth <= scanDepth && len(level) > 0 && !s.late(); depth++ {
			kids := s.readObjs(level, depth, depth < scanDepth)
			if depth == scanDepth {
				break
			}
			var flat []uint64
			for _, k := range kids {
				flat = append(flat, k...)
			}
			base := s.resolve(flat)
			for i, o := range level {
				if in := s.intoLocks(nil, kids[i], base); len(in) > 0 {
					s.chans[o] = appendAll(s.chans[o], in)
				}
				s.children[o] = s.bases(kids[i], base)
			}
			level = s.unread(func() [][]uint64 {
				var out [][]uint64
				for _, o := range level {
					out = append(out, s.children[o])
				}
				return out
			}()...)
		}
		for i := range objs {
			for _, o := range objs[i] {
				held[i] = appendAll(held[i], s.chans[o])
				for _, o2 := range s.children[o] {
					held[i] = appendAll(held[i], s.chans[o2])
				}
			}
		}
	}
	s.recheck(gs, roots)
	return s.finish(gs, roots, held)
}

// outside is [lo, hi) less the ranges skip, in pieces, each 8-byte
// aligned.
func outside(lo, hi uint64, skip [][2]uint64) [][2]uint64 {
	var in [][2]uint64
	for _, r := range skip {
		if r[1] > lo && r[0] < hi {
			in = append(in, r)
		}
	}
	slices.SortFunc(in, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]uint64
	at := lo
	for _, r := range in {
		if r[0] > at {
			out = append(out, [2]uint64{at, r[0]})
		}
		at = max(at, r[1])
	}
	if at < hi {
		out = append(out, [2]uint64{at, hi})
	}
	for i := range out {
		out[i][0] = (out[i][0] + 7) &^ 7
		out[i][1] &^= 7
	}
	return slices.DeleteFunc(out, func(r [2]uint64) bool { return r[1] <= r[0] })
}

func appendAll(s []string, xs []string) []string {
	for _, x := range xs {
		s = appendNew(s, x)
	}
	return s
}

// finish fills the goroutines' HeldChans and HeldLocks and the globals'
// channels.
func (s *scanner) finish(gs []model.Goroutine, roots []scanRoot, held [][]string) *model.ChanScan {
	names := map[string]bool{}
	for i, rt := range roots {
		if len(held[i]) > 0 {
			chans, locks := s.split(held[i])
			gs[rt.out].HeldChans, gs[rt.out].HeldLocks = chans, locks
			if len(locks) > 0 {
				for _, f := range gs[rt.out].Stack {
					names[f.Func] = true
				}
			}
		}
	}
	if len(names) > 0 {
		// Only a goroutine that takes a sync lock somewhere on its stack
		// may hold one.
		takes := s.r.lockTakers(names)
		for _, rt := range roots {
			g := &gs[rt.out]
			if len(g.HeldLocks) > 0 && !slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return takes[f.Func] }) {
				g.HeldLocks = nil
			}
		}
	}
	if g := held[len(roots)]; len(g) > 0 {
		s.res.Globals, _ = s.split(g)
	}
	if !s.res.Complete && s.res.Cut == "" {
		s.res.Cut = "cut short"
	}
	return s.res
}

// words scans a piece of memory: the wanted channels it holds are added
// to held, the other words that may be pointers to ptrs.
func (s *scanner) words(b []byte, held []string, ptrs []uint64) ([]string, []uint64) {
	for off := 0; off+8 <= len(b); off += 8 {
		w := binary.LittleEndian.Uint64(b[off:])
		if w < 4096 {
			continue
		}
		if c, ok := s.want[w]; ok {
			held = appendNew(held, c)
			continue
		}
		if s.heap && s.r.maps.readable(w, 8) {
			if s.ptrs >= maxPtrs {
				s.cut("more than %d words that may be pointers", maxPtrs)
				continue
			}
			s.ptrs++
			ptrs = append(ptrs, w)
		}
	}
	return held, ptrs
}

// openHeap reads the heap's layout and mheap_.arenas; without them the
// heap is not walked and the scan is not complete.
func (s *scanner) openHeap() {
	r := s.r
	if r.heapErr == nil && r.heap == nil {
		h, vars, err := r.exe.heapLayout()
		if err != nil {
			r.heapErr = err
		} else {
			r.heap, r.runtimeVars = &h, vars
		}
	}
	mh, ok := r.exe.syms["runtime.mheap_"]
	switch {
	case r.heapErr != nil:
		s.cut("heap objects not read: %v", r.heapErr)
		return
	case !ok:
		s.cut("heap objects not read: runtime.mheap_ not in the symbol table")
		return
	}
	s.h = *r.heap
	l2, err := r.u64(mh.Value + r.bias + uint64(s.h.Arenas))
	if err != nil || l2 == 0 {
		s.cut("heap objects not read: mheap_.arenas unreadable")
		return
	}
	s.l2, s.heap = l2, true
}

// timers marks the wanted channels that a timer may send on: Go 1.23 on,
// hchan.timer is set; before, a timer's channel is a buffered channel of
// one time.Time (24 bytes).
func (s *scanner) timers() {
	r := s.r
	var reqs []request
	for a := range s.want {
		reqs = append(reqs, request{Addr: a, Buf: make([]byte, 40)})
	}
	if err := r.mem.read(reqs); err != nil {
		return
	}
	newTimers := layout.MinorNumber(r.exe.version) >= 23
	for _, q := range reqs {
		if !q.OK {
			continue
		}
		dataqsiz := binary.LittleEndian.Uint64(q.Buf[8:])
		elemsize := binary.LittleEndian.Uint16(q.Buf[24:])
		timer := newTimers && binary.LittleEndian.Uint64(q.Buf[32:]) != 0
		if timer || dataqsiz == 1 && elemsize == 24 {
			s.res.Timers = append(s.res.Timers, s.want[q.Addr])
		}
	}
	slices.Sort(s.res.Timers)
}

// resolve finds the heap objects the words ptrs point into: by their
// arena, page and span, each read once.
func (s *scanner) resolve(ptrs []uint64) map[uint64]scanObj {
	r, h := s.r, s.h
	const l2Entries = 1 << 22
	arenaOf := func(p uint64) (uint64, bool) {
		ri := (p - h.ArenaBase) / h.ArenaBytes
		return ri, ri < l2Entries
	}
	pageOf := func(p uint64) uint64 { return p &^ (h.PageSize - 1) }
	// Arenas, then pages, then spans: a batch of reads each, keyed.
	step := func(key func(p uint64) (k, addr uint64, size int, ok bool), done func(k uint64, b []byte)) {
		var reqs []request
		var keys []uint64
		seen := map[uint64]bool{}
		for _, p := range ptrs {
			k, addr, size, ok := key(p)
			if !ok || seen[k] {
				continue
			}
			seen[k] = true
			reqs = append(reqs, request{Addr: addr, Buf: make([]byte, size)})
			keys = append(keys, k)
		}
		if !s.batch(reqs) {
			return
		}
		for i, q := range reqs {
			var b []byte
			if q.OK {
				b = q.Buf
			}
			done(keys[i], b)
		}
	}
	word := func(b []byte) uint64 {
		if b == nil {
			return 0
		}
		return binary.LittleEndian.Uint64(b)
	}
	step(func(p uint64) (uint64, uint64, int, bool) {
		ri, ok := arenaOf(p)
		_, have := s.arenas[ri]
		return ri, s.l2 + ri*8, 8, ok && !have && r.maps.readable(p, 8)
	}, func(k uint64, b []byte) { s.arenas[k] = word(b) })
	step(func(p uint64) (uint64, uint64, int, bool) {
		ri, ok := arenaOf(p)
		ha := s.arenas[ri]
		pg := pageOf(p)
		_, have := s.pages[pg]
		pi := (pg / h.PageSize) % (h.ArenaBytes / h.PageSize)
		return pg, ha + uint64(h.Spans) + pi*8, 8, ok && ha != 0 && !have
	}, func(k uint64, b []byte) { s.pages[k] = word(b) })
	step(func(p uint64) (uint64, uint64, int, bool) {
		sp := s.pages[pageOf(p)]
		_, have := s.spans[sp]
		return sp, sp, h.SpanSize, sp != 0 && !have
	}, func(k uint64, b []byte) {
		si := spanInfo{}
		if b != nil {
			start, n, es := field(b, h.StartAddr), field(b, h.Npages), field(b, h.Elemsize)
			si = spanInfo{start: start, end: start + n*h.PageSize, elemsize: es,
				inUse: field(b, h.State) == 1, noscan: field(b, h.Spanclass)&1 != 0}
		}
		s.spans[k] = si
	})
	out := map[uint64]scanObj{}
	for _, p := range ptrs {
		si, ok := s.spans[s.pages[pageOf(p)]]
		if !ok || !si.inUse || si.elemsize == 0 || p < si.start || p >= si.end {
			continue
		}
		base := si.start + (p-si.start)/si.elemsize*si.elemsize
		out[p] = scanObj{base: base, size: si.elemsize, noscan: si.noscan}
	}
	return out
}

// batch reads reqs, counting them against the budget; false when nothing
// more may be read.
func (s *scanner) batch(reqs []request) bool {
	if len(reqs) == 0 {
		return true
	}
	for _, q := range reqs {
		s.res.Bytes += int64(len(q.Buf))
	}
	if err := s.r.mem.read(reqs); err != nil {
		s.cut("reading the heap: %v", err)
		s.heap = false
		return false
	}
	return true
}

// bases maps words to the bases of the objects that may hold pointers
// they point into, without repeats.
func (s *scanner) bases(ptrs []uint64, objs map[uint64]scanObj) []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	for _, p := range ptrs {
		if o, ok := objs[p]; ok && !o.noscan && !seen[o.base] {
			seen[o.base] = true
			out = append(out, o.base)
			s.size[o.base] = o.size
		}
	}
	return out
}

// unread is the objects of the lists not read yet, without repeats.
func (s *scanner) unread(lists ...[]uint64) []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	for _, l := range lists {
		for _, o := range l {
			if !s.read[o] && !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
	}
	return out
}

// readObjs reads the objects at one depth: the wanted channels each holds
// go to s.chans, and, when more may follow, the words that may be
// pointers are returned, one list per object.
func (s *scanner) readObjs(objs []uint64, depth int, more bool) [][]uint64 {
	kids := make([][]uint64, len(objs))
	var reqs []request
	var at []int
	for i, o := range objs {
		n := s.size[o]
		if n > maxObjScan {
			s.cut("an object of %d KiB at depth %d was read in part", n>>10, depth)
			n = maxObjScan
		}
		if s.res.Bytes+int64(n) > scanBudget {
			s.cut("the byte budget (%d MiB) ran out at depth %d", scanBudget>>20, depth)
			break
		}
		s.res.Bytes += int64(n)
		s.read[o] = true
		reqs = append(reqs, request{Addr: o, Buf: make([]byte, n)})
		at = append(at, i)
	}
	if err := s.r.mem.read(reqs); err != nil {
		s.cut("reading the heap: %v", err)
		return kids
	}
	for k, q := range reqs {
		if !q.OK {
			// Freed and unmapped since: it holds nothing any more.
			continue
		}
		var p []uint64
		var held []string
		held, p = s.words(q.Buf, nil, nil)
		if len(held) > 0 {
			s.chans[q.Addr] = appendAll(s.chans[q.Addr], held)
		}
		if more {
			kids[at[k]] = p
		}
	}
	return kids
}

// recheck reads the scanned goroutines' gs again: one that changed since
// its read may have handed a channel to another place.
func (s *scanner) recheck(gs []model.Goroutine, roots []scanRoot) {
	r := s.r
	var addrs []uint64
	var which []int
	for i, rt := range roots {
		if rt.sp != 0 && !rt.system {
			addrs = append(addrs, rt.addr)
			which = append(which, i)
		}
	}
	var sr spanReader
	views, err := sr.read(r.mem, r.maps, addrs, r.lay.G.Size)
	if err != nil {
		s.cut("reading the goroutines again: %v", err)
		return
	}
	fields := rootFields(&r.lay.G)
	for k, i := range which {
		b := views[k]
		rt := roots[i]
		same := b != nil
		for j, f := range fields {
			if !same {
				break
			}
			same = field(b, f) == rt.fields[j]
		}
		if !same {
			s.cut("goroutine %d moved while the stacks were scanned", gs[rt.out].ID)
			return
		}
	}
}
