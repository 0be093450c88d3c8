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
// (by address) is parked on. Nil when the table cannot be found (no
// symbol table) or read; the read goes on without lock addresses.
func (r *Reader) semaWaits() map[uint64]uint64 {
	s := r.lay.Sudog
	sym, ok := r.exe.syms["runtime.semtable"]
	if !ok || !s.G.OK() || !s.Elem.OK() || !s.Prev.OK() || !s.Next.OK() || !s.Waitlink.OK() {
		return nil
	}
	stride := sym.Size / semTabSize
	if stride < 24 || stride%8 != 0 || sym.Size%semTabSize != 0 {
		return nil
	}
	table := make([]byte, sym.Size)
	if err := r.read1(sym.Value+r.bias, table); err != nil {
		return nil
	}
	// semaRoot is {lock mutex; treap *sudog; nwait}: the runtime's mutex
	// is one word.
	const treapOff = 8
	var level []uint64
	seen := map[uint64]bool{}
	push := func(a uint64) {
		if a != 0 && a%8 == 0 && !seen[a] && len(seen) < maxSemaSudogs && r.maps.readable(a, uint64(s.Size)) {
			seen[a] = true
			level = append(level, a)
		}
	}
	for i := uint64(0); i < semTabSize; i++ {
		push(field(table[i*stride:], layout.Field{Off: treapOff, Size: 8}))
	}
	out := map[uint64]uint64{}
	var sr spanReader
	for len(level) > 0 {
		cur := level
		level = nil
		views, err := sr.read(r.mem, r.maps, cur, s.Size)
		if err != nil {
			return out
		}
		for _, b := range views {
			if b == nil {
				continue
			}
			if g, elem := field(b, s.G), field(b, s.Elem); g != 0 && elem != 0 && elem%4 == 0 {
				out[g] = elem
			}
			push(field(b, s.Prev))
			push(field(b, s.Next))
			push(field(b, s.Waitlink))
		}
	}
	return out
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
