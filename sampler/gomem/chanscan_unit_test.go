package gomem

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/gomem/internal/layout"
)

// imageMem is a synthetic memory image: pieces of memory at addresses.
type imageMem struct{ pieces map[uint64][]byte }

func (m *imageMem) read(reqs []request) error {
	for i := range reqs {
		q := &reqs[i]
		q.OK = false
		for a, b := range m.pieces {
			if q.Addr >= a && q.Addr+uint64(len(q.Buf)) <= a+uint64(len(b)) {
				copy(q.Buf, b[q.Addr-a:])
				q.OK = true
				break
			}
		}
	}
	return nil
}

// put writes words at addr, in a piece of its own of n bytes (n 0: the
// words' size).
func (m *imageMem) put(addr uint64, n int, words ...uint64) {
	b := make([]byte, max(n, 8*len(words)))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	m.pieces[addr] = b
}

// word writes one word inside an existing piece.
func (m *imageMem) word(addr, w uint64) {
	for a, b := range m.pieces {
		if addr >= a && addr+8 <= a+uint64(len(b)) {
			binary.LittleEndian.PutUint64(b[addr-a:], w)
			return
		}
	}
	panic("no piece at " + strconv.FormatUint(addr, 16))
}

// TestChanScanImage runs the channel scan on a synthetic memory image: a
// heap of two spans (one of pointers, one without), stacks, globals, and
// the runtime's own variables, and checks who is found to refer to the
// channels.
func TestChanScanImage(t *testing.T) {
	const (
		heapAt   = 0xc000000000
		l2       = 0x1000000
		arena    = 0x2000000 // the heapArena
		spanScan = 0x3000000
		spanNo   = 0x3000100
		mheap    = 0x500000
		data     = 0x600000
		bss      = 0x601000
		stacks   = 0x7000000
		gs       = 0x8000000
	)
	gsize := uint64(layout.Known[0].G.Size)
	h := layout.Heap{Arenas: 8, Spans: 0, SpanSize: 64,
		StartAddr: layout.Field{Off: 0, Size: 8}, Npages: layout.Field{Off: 8, Size: 8}, Elemsize: layout.Field{Off: 16, Size: 8},
		State: layout.Field{Off: 24, Size: 1}, Spanclass: layout.Field{Off: 25, Size: 1},
		ArenaBytes: 64 << 20, PageSize: 8 << 10}
	m := &imageMem{pieces: map[uint64][]byte{}}
	m.put(mheap, 16, 0, l2)
	ri := uint64(heapAt) / h.ArenaBytes
	m.put(l2+ri*8, 8, arena)
	m.put(arena, 8*8192)
	pi := uint64(heapAt) / h.PageSize % (h.ArenaBytes / h.PageSize)
	m.word(arena+pi*8, spanScan)
	m.word(arena+(pi+1)*8, spanNo)
	m.put(spanScan, 64, heapAt, 1, 32, 1|2<<8)           // in use, elemsize 32, scan
	m.put(spanNo, 64, heapAt+8192, 1, 32, 1|(2<<1|1)<<8) // in use, noscan
	m.put(heapAt, 16384)
	obj := func(i int) uint64 { return heapAt + uint64(i)*32 }
	c, c2 := obj(16), obj(17) // two channels (hchans read as unbuffered)
	m.word(obj(0), obj(2))    // O1 → O2
	m.word(obj(2)+8, c)       // O2 holds c: depth 2 from a stack word to O1
	m.word(obj(4), obj(5))    // O3 → O4 → O5 holds c: depth 3
	m.word(obj(5), obj(6))
	m.word(obj(6)+16, c)
	m.word(heapAt+8192, c) // a noscan object's bytes are no pointer
	m.word(obj(8)+24, c)   // a waiter's own sudog
	m.word(obj(9), c)      // an object a program global points to
	m.word(obj(10), c2)    // an object only the runtime's globals point to
	m.word(c2+8, 1)        // c2 is a buffered channel of one 24-byte element: a timer's?
	m.word(c2+24, 24)
	m.put(data, 64, obj(9)) // .data: a program global
	m.put(bss, 64, obj(10)) // .bss: the runtime's own variable
	stack := func(i int, words ...uint64) uint64 {
		a := uint64(stacks + i*0x1000)
		m.put(a, 256, words...)
		return a
	}
	r := &Reader{mem: m, lay: layout.Known[0], heap: &h, sudogs: map[uint64]bool{obj(8): true},
		runtimeVars: [][2]uint64{{bss, bss + 64}},
		exe: &exe{version: "go1.26.0", arch: "amd64", syms: map[string]elf.Symbol{"runtime.mheap_": {Value: mheap}},
			sections: map[string]*elf.Section{
				".data": {SectionHeader: elf.SectionHeader{Name: ".data", Addr: data, Size: 64}},
				".bss":  {SectionHeader: elf.SectionHeader{Name: ".bss", Addr: bss, Size: 64}},
			}}}
	r.gDead = make([]bool, 10)
	r.gDead[6] = true // dead
	r.maps = &mappings{list: []mapping{
		{start: mheap, end: bss + 0x1000, read: true}, {start: l2, end: spanScan + 0x1000, read: true},
		{start: stacks, end: gs + 0x10000, read: true}, {start: heapAt, end: heapAt + 16384, read: true},
	}}
	goroutines := []model.Goroutine{
		{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5},
		{ID: 6, WaitChans: []string{hex(c), hex(c2)}},
	}
	root := func(i int, sp uint64) scanRoot {
		rt := scanRoot{out: i, addr: gs + uint64(i)*gsize, sp: sp, hi: sp + 256}
		m.put(rt.addr, int(gsize))
		for range rootFields(&r.lay.G) {
			rt.fields = append(rt.fields, 0)
		}
		return rt
	}
	roots := []scanRoot{
		root(0, stack(0, obj(0)+8)),    // an interior pointer to O1: holds c, 2 deep
		root(1, stack(1, obj(4))),      // 3 deep: not seen
		root(2, stack(2, 7, c)),        // c itself on its stack
		root(3, stack(3, heapAt+8192)), // a noscan object: nothing
		root(4, stack(4, obj(8))),      // a waiter's sudog: its own
		root(5, stack(5, c, c2)),       // the waiter
	}
	scan := r.chanScan(context.Background(), goroutines, roots)
	if scan == nil {
		t.Fatal("no scan")
	}
	held := map[int64][]string{}
	for _, g := range goroutines {
		if len(g.HeldChans) > 0 {
			held[g.ID] = g.HeldChans
		}
	}
	want := map[int64][]string{1: {hex(c)}, 3: {hex(c)}, 6: {hex(c), hex(c2)}}
	if d := cmp.Diff(want, held); d != "" {
		t.Errorf("held channels (-want +got):\n%s", d)
	}
	if !scan.Complete || scan.Cut != "" || scan.Depth != 2 {
		t.Errorf("scan %+v, want complete, 2 deep", *scan)
	}
	if !slices.Equal(scan.Timers, []string{hex(c2)}) {
		t.Errorf("timers %v, want %s, a channel of one time.Time", scan.Timers, hex(c2))
	}
	if !slices.Equal(scan.Globals, []string{hex(c)}) {
		t.Errorf("globals %v, want %s only (the runtime's own variables are not the program's)", scan.Globals, hex(c))
	}

	// A goroutine of the program running: its registers are unread.
	for i := range goroutines {
		goroutines[i].HeldChans = nil
	}
	run := scanRoot{out: 4, addr: gs + 9*gsize, running: true}
	scan = r.chanScan(context.Background(), goroutines, append(slices.Clone(roots), run))
	if scan.Complete || !strings.Contains(scan.Cut, "goroutine 5 was running") {
		t.Errorf("scan %+v, want cut by the running goroutine 5", *scan)
	}
	// One caught running that parks by the time it is read again: its
	// stack is scanned.
	g := r.lay.G
	late := stack(7, c2)
	b := make([]byte, gsize)
	put := func(f layout.Field, v uint64) { binary.LittleEndian.PutUint64(b[f.Off:], v) }
	put(g.StackLo, late)
	put(g.StackHi, late+256)
	put(g.SchedSP, late)
	put(g.Goid, 5)
	binary.LittleEndian.PutUint32(b[g.Status.Off:], gWaiting)
	m.pieces[run.addr] = b
	for i := range goroutines {
		goroutines[i].HeldChans = nil
	}
	scan = r.chanScan(context.Background(), goroutines, append(slices.Clone(roots), run))
	if !scan.Complete || !slices.Equal(goroutines[4].HeldChans, []string{hex(c2)}) {
		t.Errorf("scan %+v, goroutine 5 holds %v: want complete, read again once parked, holding %s", *scan, goroutines[4].HeldChans, hex(c2))
	}
	delete(m.pieces, run.addr)
	// The runtime's own running goroutine cuts nothing.
	run.system = true
	scan = r.chanScan(context.Background(), goroutines, append(slices.Clone(roots), run))
	if !scan.Complete {
		t.Errorf("scan %+v, want complete: a running runtime goroutine is no counterpart", *scan)
	}
	// A goroutine that changed since its read: the scan is not whole.
	m.word(roots[2].addr+uint64(r.lay.G.SchedSP.Off), 0x1234)
	scan = r.chanScan(context.Background(), goroutines, roots)
	if scan.Complete || !strings.Contains(scan.Cut, "moved") {
		t.Errorf("scan %+v, want cut by goroutine 3 moving", *scan)
	}
}

func hex(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

func TestOutside(t *testing.T) {
	got := outside(0x100, 0x200, [][2]uint64{{0x180, 0x190}, {0x80, 0x110}, {0x1f0, 0x300}, {0x400, 0x500}})
	want := [][2]uint64{{0x110, 0x180}, {0x190, 0x1f0}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("outside (-want +got):\n%s", d)
	}
}
