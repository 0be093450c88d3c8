package gomem

import (
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/sampler/gomem/internal/layout"
)

// The locks goroutines wait for, by address. A goroutine blocked in
// sync.Mutex.Lock, RWMutex.Lock or RWMutex.RLock is parked on a semaphore
// word inside the lock, and the runtime keeps it nowhere in its g: its
// sudog sits in the semaphore table (runtime.semtable, semTabSize roots,
// each a treap of sudogs by address, the waiters of one address in a list
// from its node), whose elem is the word. The table is read, never
// locked: a sudog that changed under the read names a wait that ended,
// and the goroutine read after the table is held to a lock wait by its
// reason.

// semTabSize is the runtime's (runtime/sema.go, unchanged since Go 1.9).
const semTabSize = 251

// maxSemaSudogs bounds the sudogs walked: more than the goroutines there
// can be is garbage.
const maxSemaSudogs = maxGoroutines

// semaWaits reads the semaphore table: the semaphore word each waiting g
// (by address) is parked on. Nil when the table cannot be found or read;
// the read goes on without lock addresses.
//
// The table is runtime.semtable in the symbol table. A stripped binary has
// none: its candidates are the globals runtime.semacquire1's code refers
// to (it indexes the table, inlined), and the one taken is the first whose
// semTabSize roots have zero padding and a waiter filed under its own
// root, (elem>>3)%semTabSize; a table with no waiter proves nothing, and
// is looked for again at the next read.
func (r *Reader) semaWaits() map[uint64]uint64 {
	s := r.lay.Sudog
	if !s.G.OK() || !s.Elem.OK() || !s.Prev.OK() || !s.Next.OK() || !s.Waitlink.OK() {
		return nil
	}
	if sym, ok := r.exe.syms["runtime.semtable"]; ok {
		if sym.Size%semTabSize != 0 {
			return nil
		}
		out, _ := r.walkSema(sym.Value+r.bias, sym.Size/semTabSize, false)
		return out
	}
	if r.semtable != 0 {
		out, _ := r.walkSema(r.semtable, r.semStride, false)
		return out
	}
	stride := uint64(64) // internal/cpu.CacheLinePadSize
	if r.exe.arch == "arm64" {
		stride = 128
	}
	for _, a := range r.exe.refs["runtime.semacquire1"] {
		if !r.exe.inSection(a, ".bss", ".noptrbss", ".data", ".noptrdata") {
			continue
		}
		if out, ok := r.walkSema(a+r.bias, stride, true); ok {
			r.semtable, r.semStride = a+r.bias, stride
			return out
		}
	}
	return nil
}

// walkSema walks the table at addr, its roots stride bytes apart; with
// check, ok says the table looked like the runtime's (zero padding, and a
// waiter under its own root).
func (r *Reader) walkSema(addr, stride uint64, check bool) (out map[uint64]uint64, ok bool) {
	s := r.lay.Sudog
	if stride < 24 || stride%8 != 0 {
		return nil, false
	}
	table := make([]byte, stride*semTabSize)
	if err := r.read1(addr, table); err != nil {
		return nil, false
	}
	// semaRoot is {lock mutex; treap *sudog; nwait uint32}: the runtime's
	// mutex is one word.
	const treapOff, rootSize = 8, 20
	root := map[uint64]uint64{} // sudog → its root's index, for the check
	var level []uint64
	seen := map[uint64]bool{}
	push := func(a, i uint64) {
		if a != 0 && a%8 == 0 && !seen[a] && len(seen) < maxSemaSudogs && r.maps.readable(a, uint64(s.Size)) {
			seen[a] = true
			level = append(level, a)
			if check {
				root[a] = i
			}
		}
	}
	for i := uint64(0); i < semTabSize; i++ {
		e := table[i*stride : (i+1)*stride]
		if check {
			for _, b := range e[rootSize:] {
				if b != 0 {
					return nil, false
				}
			}
		}
		push(field(e, layout.Field{Off: treapOff, Size: 8}), i)
	}
	out = map[uint64]uint64{}
	var sr spanReader
	for len(level) > 0 {
		cur := level
		level = nil
		views, err := sr.read(r.mem, r.maps, cur, s.Size)
		if err != nil {
			return out, false
		}
		for k, b := range views {
			if b == nil {
				continue
			}
			i := root[cur[k]]
			if g, elem := field(b, s.G), field(b, s.Elem); g != 0 && elem != 0 && elem%4 == 0 {
				out[g] = elem
				ok = ok || check && (elem>>3)%semTabSize == i
			}
			push(field(b, s.Prev), i)
			push(field(b, s.Next), i)
			push(field(b, s.Waitlink), i)
		}
	}
	return out, ok || !check
}

// lockOfSema is the address of the sync lock a goroutine waits for, from
// the semaphore word it is parked on and its wait reason: sync.Mutex is
// {state int32; sema uint32} (internal/sync.Mutex from Go 1.24, the
// same), and sync.RWMutex is {w Mutex; writerSem, readerSem uint32; …}.
// A writer queued behind another writer waits in rw.w, whose address is
// the RWMutex's. "" for any other wait.
func lockOfSema(state string, sema uint64) string {
	var off uint64
	reason, _, _ := strings.Cut(state, " (")
	switch reason {
	case "sync.Mutex.Lock":
		off = 4
	case "sync.RWMutex.Lock":
		off = 8
	case "sync.RWMutex.RLock":
		off = 12
	default:
		return ""
	}
	if sema < off {
		return ""
	}
	return "0x" + strconv.FormatUint(sema-off, 16)
}
