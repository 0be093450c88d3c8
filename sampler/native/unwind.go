package native

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strconv"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// Bounds on one unwind: the frames walked, the stack read (in pages
// fetched as the walk needs them), the .eh_frame parsed of one file.
const (
	MaxFrames   = 64
	maxStack    = 256 << 10
	stackPage   = 4096
	maxEHFrame  = 64 << 20
	scanForBase = 512 // bytes above the stack pointer searched for a frame base
)

// x86-64's DWARF register numbers.
const (
	regRBP = 6
	regRSP = 7
)

// ErrArch: unwinding is written for amd64 only.
var ErrArch = errors.New("native stacks are unwound on amd64 only")

// cfi is a file's call-frame information, parsed on first use.
type cfi struct {
	done bool
	fdes frame.FrameDescriptionEntries
}

// Unwind walks a thread's user stack from the stack pointer and program
// counter the kernel shows with its system call (/proc/TID/syscall), as a
// debugger would but without stopping it: each frame's return address by
// the .eh_frame of the file mapped at its pc, read from the process's
// memory; where a file has none, by the frame pointer. The thread must
// stay where it is while this reads (a thread blocked in a call): a
// thread that moved gives a torn stack, which the frames' names show.
// The stack is innermost first, at most MaxFrames; an error says why the
// walk stopped early, with the frames read so far.
func (s *Symbolizer) Unwind(sp, pc uint64) ([]model.Frame, error) {
	if runtime.GOARCH != "amd64" {
		return nil, ErrArch
	}
	if s.mapsErr != nil {
		return nil, s.mapsErr
	}
	mem := &stackMem{pid: s.pid, lo: sp, pages: map[uint64][]byte{}}
	pcs, stop := s.walk(mem, sp, pc, 0, false)
	var out []model.Frame
	for i, pc := range pcs {
		out = append(out, s.Frames(pc, i == 0)...)
	}
	return out, stop
}

// UnwindCopy walks a sampled stack the same way from what the sample
// holds: its pc, stack and frame pointers, and a copy of the stack from
// sp on (the kernel's, taken as the sample was), never the process's
// memory, which has moved on since. It returns the return addresses, the
// pc first; the walk stops where the copy ends.
func (s *Symbolizer) UnwindCopy(sp, pc, bp uint64, stack []byte) []uint64 {
	if runtime.GOARCH != "amd64" || s.mapsErr != nil || len(stack) < 8 {
		return nil
	}
	pcs, _ := s.walk(&stackMem{lo: sp, copy: stack}, sp, pc, bp, bp != 0)
	return pcs
}

// walk is Unwind's and UnwindCopy's walk over mem, from sp and pc (and
// bp, when bpKnown): the return addresses, pc first, and why it stopped
// early.
func (s *Symbolizer) walk(mem *stackMem, sp, pc, bp uint64, bpKnown bool) ([]uint64, error) {
	pcs := []uint64{pc}
	var stop error
	for len(pcs) < MaxFrames {
		m := s.mapOf(pc)
		if m == nil {
			stop = fmt.Errorf("pc 0x%x is in no mapped file", pc)
			break
		}
		e := s.file(m.Path, m)
		look, ok := e.vaddr(pc - m.Start + m.Offset)
		if !ok {
			stop = fmt.Errorf("pc 0x%x is in no load segment of %s", pc, m.Path)
			break
		}
		if len(pcs) > 1 {
			look-- // a return address: the call is the byte before
		}
		var ra uint64
		var fde *frame.FrameDescriptionEntry
		if len(pcs) == 1 && e.inPLT(look) {
			// Caught in a PLT stub: its call-frame information is an
			// expression (the lazy resolver's pushes), but a stub's jump
			// comes first and pushes nothing.
			var ok bool
			if ra, ok = mem.word(sp); !ok {
				stop = fmt.Errorf("the stack at 0x%x could not be read", sp)
				break
			}
			sp += 8
		} else {
			fde = s.fde(e, m.Path, look)
		}
		switch {
		case stop != nil || ra != 0:
		case fde != nil:
			ctx, err := fde.EstablishFrame(look)
			if err != nil {
				stop = err
				break
			}
			if ctx.CFA.Rule != frame.RuleCFA {
				stop = fmt.Errorf("a frame address by expression at 0x%x (%s)", pc, m.Path)
				break
			}
			var base uint64
			switch ctx.CFA.Reg {
			case regRSP:
				base = sp
			case regRBP:
				if !bpKnown {
					// Nothing below saved the frame pointer: it still holds
					// this frame's, which the kernel does not show. Find
					// the frame's saved-pointer pair above sp.
					bp, bpKnown = mem.frameBase(sp, s)
				}
				if !bpKnown {
					stop = fmt.Errorf("the frame pointer at 0x%x is not known", pc)
					break
				}
				base = bp
			default:
				stop = fmt.Errorf("a frame address by register %d at 0x%x", ctx.CFA.Reg, pc)
			}
			if stop != nil {
				break
			}
			cfa := uint64(int64(base) + ctx.CFA.Offset)
			r, ok := ctx.Regs[ctx.RetAddrReg]
			if !ok || r.Rule == frame.RuleUndefined {
				break // the outermost frame (a thread's start, _start)
			}
			if r.Rule != frame.RuleOffset {
				stop = fmt.Errorf("no saved return address at 0x%x", pc)
				break
			}
			if ra, ok = mem.word(uint64(int64(cfa) + r.Offset)); !ok {
				stop = fmt.Errorf("the stack at 0x%x could not be read", int64(cfa)+r.Offset)
				break
			}
			if r, ok := ctx.Regs[regRBP]; ok && r.Rule == frame.RuleOffset {
				bp, bpKnown = mem.word(uint64(int64(cfa) + r.Offset))
			}
			sp = cfa
		default:
			// No call-frame information: the frame pointer's chain.
			if !bpKnown {
				bp, bpKnown = mem.frameBase(sp, s)
			}
			if !bpKnown || bp == 0 || bp < sp {
				stop = fmt.Errorf("no call-frame information for 0x%x (%s) and no frame pointer", pc, m.Path)
				break
			}
			var ok1, ok2 bool
			ra, ok1 = mem.word(bp + 8)
			next, ok2 := mem.word(bp)
			if !ok1 || !ok2 {
				stop = fmt.Errorf("the stack at 0x%x could not be read", bp)
				break
			}
			sp, bp = bp+16, next
		}
		if stop != nil || ra == 0 {
			break
		}
		pc = ra
		pcs = append(pcs, pc)
	}
	return pcs, stop
}

// fde is the frame description entry of a file's address.
func (s *Symbolizer) fde(e *elfSymbols, path string, vaddr uint64) *frame.FrameDescriptionEntry {
	if !e.cfi.done {
		e.cfi.done = true
		p := strconv.Itoa(s.pid)
		e.cfi.fdes = readCFI(s.fs.Path(p, "root") + path)
	}
	f, err := e.cfi.fdes.FDEForPC(vaddr)
	if err != nil {
		return nil
	}
	return f
}

// readCFI parses a file's .eh_frame, in its own addresses; nil when it
// has none that parses.
func readCFI(path string) (fdes frame.FrameDescriptionEntries) {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	sec := f.Section(".eh_frame")
	if sec == nil || sec.Size > maxEHFrame || sec.Type == elf.SHT_NOBITS {
		return nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil
	}
	defer func() {
		// The parser is delve's; a file it chokes on is one without.
		if recover() != nil {
			fdes = nil
		}
	}()
	fdes, err = frame.Parse(data, binary.LittleEndian, 0, 8, sec.Addr)
	if err != nil {
		return nil
	}
	// FDEForPC searches by halves: the entries must be in address order,
	// which .eh_frame does not promise (glibc's string functions come
	// after the rest) and Parse keeps as it read them. Delve sorts them
	// through Append.
	return frame.FrameDescriptionEntries(nil).Append(fdes)
}

// vaddr is a file offset's virtual address, by the load segment that
// holds it.
func (e *elfSymbols) vaddr(off uint64) (uint64, bool) {
	for _, p := range e.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// stackMem reads a thread's stack from the process's memory, a page at a
// time, at most maxStack above where the walk began; or, with copy, from a
// copy of the stack from lo on, and nothing else.
type stackMem struct {
	pid   int
	lo    uint64
	pages map[uint64][]byte
	copy  []byte
}

// top is the end of what may be read.
func (m *stackMem) top() uint64 {
	if m.copy != nil {
		return m.lo + uint64(len(m.copy))
	}
	return m.lo + maxStack
}

func (m *stackMem) word(addr uint64) (uint64, bool) {
	if addr < m.lo || addr+8 > m.top() || addr%8 != 0 {
		return 0, false
	}
	if m.copy != nil {
		return binary.LittleEndian.Uint64(m.copy[addr-m.lo:]), true
	}
	page := addr &^ (stackPage - 1)
	b, ok := m.pages[page]
	if !ok {
		b = make([]byte, stackPage)
		local := []unix.Iovec{{Base: &b[0], Len: stackPage}}
		remote := []unix.RemoteIovec{{Base: uintptr(page), Len: stackPage}}
		if n, err := unix.ProcessVMReadv(m.pid, local, remote, 0); err != nil || n != stackPage {
			b = nil
		}
		m.pages[page] = b
	}
	if b == nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[addr-page:]), true
}

// frameBase finds, where the frame pointer is not known, the frame's
// saved-pointer pair above sp: the first word whose next holds a return
// address into mapped code and which itself holds 0 or a higher stack
// address (the caller's frame pointer) — what a function that keeps a
// frame pointer pushed on entry.
func (m *stackMem) frameBase(sp uint64, s *Symbolizer) (uint64, bool) {
	for a := sp; a < sp+scanForBase; a += 8 {
		saved, ok1 := m.word(a)
		ret, ok2 := m.word(a + 8)
		if !ok1 || !ok2 {
			return 0, false
		}
		if (saved == 0 || saved > a && saved < m.lo+maxStack) && ret != 0 && s.mapOf(ret) != nil {
			return a, true
		}
	}
	return 0, false
}
