package pymem

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// memory reads the target with process_vm_readv, one range a call: the
// reader follows pointers one at a time, and a batched reader (gomem's)
// buys nothing where each read's address comes from the one before.
type memory struct {
	pid   int
	reads int // reads since the count was last reset
	bytes int // bytes those reads asked for
	// image, when set, stands for the target's memory (the fuzz test's):
	// n bytes at addr, or an error.
	image func(addr uint64, n int) ([]byte, error)
	// arena holds the pages readPages reads, from off on; reset (off 0)
	// when a read begins, as the pages of the last are dropped then. A
	// read of 10,000 tasks reads 19 MiB of pages: made afresh each read,
	// zeroing them and collecting them was a fifth of its CPU.
	arena []byte
	off   int
}

// reset makes the arena's pages free for the read that begins: nothing
// read through the pages of the last one refers to them (spans are
// copied out of them).
func (m *memory) reset() { m.reads, m.bytes, m.off = 0, 0, 0 }

// pagesFor is n bytes of the arena, for pages: a new arena, twice the
// last, when the last is full (the full one lives on while its pages are
// in use).
func (m *memory) pagesFor(n int) []byte {
	if m.off+n > len(m.arena) {
		m.arena, m.off = make([]byte, max(2*len(m.arena), n, 1<<20)), 0
	}
	b := m.arena[m.off : m.off+n : m.off+n]
	m.off += n
	return b
}

func newMemory(pid int) *memory { return &memory{pid: pid} }

var errShort = errors.New("short read of the target's memory")

// read reads n bytes at addr; an unmapped address is an error (EFAULT),
// never a crash: the target may have freed what the last read pointed to.
func (m *memory) read(addr uint64, n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	if addr == 0 || addr+uint64(n) < addr || n < 0 {
		return nil, errShort
	}
	m.reads++
	m.bytes += n
	if m.image != nil {
		return m.image(addr, n)
	}
	b := make([]byte, n)
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(n)
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: n}}
	got, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
	if err != nil {
		return nil, err
	}
	if got != n {
		return nil, errShort
	}
	return b, nil
}

// ptr reads a pointer (a 64-bit word).
func (m *memory) ptr(addr uint64) (uint64, error) {
	b, err := m.read(addr, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// i32 reads a C int.
func (m *memory) i32(addr uint64) (int32, error) {
	b, err := m.read(addr, 4)
	if err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(b)), nil
}

// cstring reads a NUL-terminated string of at most max bytes; "" when it
// cannot.
func (m *memory) cstring(addr uint64, max int) string {
	b, err := m.read(addr, max)
	if err != nil {
		// The string may end near a mapping's end: try shorter reads.
		for n := max / 2; n >= 8 && err != nil; n /= 2 {
			b, err = m.read(addr, n)
		}
		if err != nil {
			return ""
		}
	}
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return ""
}

// span is one range of a batch read: n bytes at addr into b (b's length
// is n); ok once read whole.
type span struct {
	addr uint64
	b    []byte
	ok   bool
}

// maxIov is how many ranges one process_vm_readv takes (IOV_MAX).
const maxIov = 1024

// pageSize is the unit readPages reads and keeps.
const pageSize = 4096

// readPages reads many ranges by the pages they lie in: each page once,
// up to maxIov pages a call, kept in pages (for the caller to clear when
// its read is done). The kernel's cost is per range it is given, and
// thousands of small objects — tasks, their coroutines and names — share
// a few hundred pages of the interpreter's heap: 10,000 tasks read by
// their objects took 67 ms, by their pages a fraction of that.
func (m *memory) readPages(spans []span, pages map[uint64][]byte) {
	var want []span
	var seen map[uint64]bool // made at the first page not read yet
	for _, s := range spans {
		if s.addr == 0 || len(s.b) == 0 || s.addr+uint64(len(s.b)) < s.addr {
			continue
		}
		for p := s.addr &^ (pageSize - 1); p < s.addr+uint64(len(s.b)); p += pageSize {
			if _, ok := pages[p]; !ok && !seen[p] {
				if seen == nil {
					seen = map[uint64]bool{}
				}
				seen[p] = true
				want = append(want, span{addr: p})
			}
		}
	}
	// The pages' buffers from the arena: thousands of pages a call, each
	// made alone, were a quarter of a read's CPU.
	buf := m.pagesFor(len(want) * pageSize)
	for i := range want {
		want[i].b, buf = buf[:pageSize:pageSize], buf[pageSize:]
	}
	m.readBatch(want)
	for _, w := range want {
		if w.ok {
			pages[w.addr] = w.b
		} else {
			pages[w.addr] = nil // unreadable: not asked for again
		}
	}
	for i := range spans {
		s := &spans[i]
		if s.addr == 0 || len(s.b) == 0 || s.addr+uint64(len(s.b)) < s.addr {
			continue
		}
		s.ok = true
		for done := 0; done < len(s.b); {
			at := s.addr + uint64(done)
			page := pages[at&^(pageSize-1)]
			if page == nil {
				s.ok = false
				break
			}
			done += copy(s.b[done:], page[at&(pageSize-1):])
		}
	}
}

// readBatch reads many ranges with as few calls as it can: up to maxIov
// ranges a call. The kernel stops a call at the first range it cannot
// read; the ranges after it are read by the next call, and that one is
// left not ok. Where each read's address comes from the one before, a
// batch is one level of many walks at once (Tasks).
func (m *memory) readBatch(spans []span) {
	if m.image != nil {
		for i := range spans {
			b, err := m.read(spans[i].addr, len(spans[i].b))
			if err == nil {
				copy(spans[i].b, b)
				spans[i].ok = true
			}
		}
		return
	}
	for start := 0; start < len(spans); {
		end := min(len(spans), start+maxIov)
		local := make([]unix.Iovec, 0, end-start)
		remote := make([]unix.RemoteIovec, 0, end-start)
		for i := start; i < end; i++ {
			s := &spans[i]
			if s.addr == 0 || len(s.b) == 0 {
				continue
			}
			v := unix.Iovec{Base: &s.b[0]}
			v.SetLen(len(s.b))
			local = append(local, v)
			remote = append(remote, unix.RemoteIovec{Base: uintptr(s.addr), Len: len(s.b)})
		}
		m.reads++
		got, _ := unix.ProcessVMReadv(m.pid, local, remote, 0)
		// Mark the ranges read whole, in order, until the bytes run out:
		// the next one is the one that failed.
		i := start
		for ; i < end && got >= 0; i++ {
			s := &spans[i]
			if s.addr == 0 || len(s.b) == 0 {
				continue
			}
			if got < len(s.b) {
				break
			}
			got -= len(s.b)
			s.ok = true
			m.bytes += len(s.b)
		}
		if i < end {
			start = i + 1 // skip the range that failed
		} else {
			start = end
		}
	}
}
