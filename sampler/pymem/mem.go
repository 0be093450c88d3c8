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
