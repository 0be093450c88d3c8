package gomem

import (
	"encoding/binary"

	"github.com/hangdoc/hangdoc/model"
)

// Unwinding limits. The runtime prints at most 100 frames of a stack but
// walks all of it; the reader walks up to maxPhysFrames frames and reads
// at most maxStackBytes of one stack, so a runaway recursion costs a
// bounded read (its outermost frames are then missing, with a note).
const (
	maxPhysFrames = 4096
	maxStackBytes = 8 << 20
	// window is how much of a stack is read with its g, from the stack
	// pointer up: most parked goroutines use well under 2 KiB.
	window = 16 << 10
)

// physFrame is one physical frame of a stack.
type physFrame struct {
	pc   uint64 // target address
	argp uint64 // target address of its arguments
	info *pcInfo
}

// stackMem is a goroutine's stack as read: the bytes from addr on, within
// the stack's bounds [lo, hi). Words past what was read are fetched on
// demand (extend), so a deep stack costs more reads, never a wrong word.
type stackMem struct {
	lo, hi uint64
	addr   uint64
	b      []byte
	r      *Reader
	failed bool // a read failed: the words are unknown
}

// word is the 8-byte word at a, in the stack.
func (s *stackMem) word(a uint64) (uint64, bool) {
	if a < s.addr || a+8 > s.hi || a+8 < a {
		return 0, false
	}
	if a+8 > s.addr+uint64(len(s.b)) && !s.extend(a+8) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(s.b[a-s.addr:]), true
}

// word8 reads 8 bytes at a for argument printing, which reads whole words
// even for small arguments; bytes past the stack read as zero.
func (s *stackMem) word8(a uint64) uint64 {
	if v, ok := s.word(a); ok {
		return v
	}
	var w [8]byte
	for i := range w {
		x := a + uint64(i)
		if x >= s.addr && x < s.addr+uint64(len(s.b)) {
			w[i] = s.b[x-s.addr]
		}
	}
	return binary.LittleEndian.Uint64(w[:])
}

// extend reads the stack up to at least end.
func (s *stackMem) extend(end uint64) bool {
	if s.failed || s.r == nil {
		return false
	}
	have := s.addr + uint64(len(s.b))
	want := min(s.hi, max(end, have+window))
	if want-s.addr > maxStackBytes {
		want = s.addr + maxStackBytes
		if want < end {
			s.r.note(model.NoteGoStackDeep, maxStackBytes>>20)
			return false
		}
	}
	nb := make([]byte, want-s.addr)
	copy(nb, s.b)
	req := []request{{Addr: have, Buf: nb[len(s.b):]}}
	if err := s.r.mem.read(req); err != nil || !req[0].OK {
		s.failed = true
		return false
	}
	s.b = nb
	return true
}

// unwindResult says how an unwinding ended.
type unwindResult int

const (
	unwindComplete  unwindResult = iota // reached the top frame (goexit) or the stack's end
	unwindTruncated                     // stopped early: an unknown return pc, a stack read failed
	unwindGarbage                       // the first pc is no Go code: not a stack
)

// unwind walks a stack from pc and sp as the runtime's unwinder does
// (runtime/traceback.go: initAt, resolveInternal, next): each frame's
// size from the pclntab's SP delta at its pc, the return address just
// above it (amd64) or at its stack pointer (arm64, a link-register
// machine), injected calls (a signal handler's sigpanic, asyncPreempt)
// resuming at the interrupted pc itself. Frame pointers would be cheaper
// but are not kept by every assembly function; the SP deltas are exact
// wherever the runtime's own traceback is.
func (r *Reader) unwind(pc, sp, lr uint64, syscall bool, s *stackMem, out []physFrame) ([]physFrame, unwindResult) {
	usesLR := r.exe.arch == "arm64"
	minFrame := uint64(0)
	if usesLR {
		minFrame = 8
	}
	bias := r.bias
	if pc == 0 {
		w, ok := s.word(sp)
		if !ok {
			return out, unwindGarbage
		}
		pc = w
		if usesLR {
			lr = 0
		} else {
			sp += 8
		}
	}
	innermost, trap := true, false
	for n := 0; n < maxPhysFrames; n++ {
		if pc < bias {
			return out, resultAt(innermost)
		}
		p := r.pcInfo(pc-bias, trap)
		if !p.ok {
			return out, resultAt(innermost)
		}
		f := &p.fn
		if f.pcsp == 0 {
			// No frame information: an external function; the runtime
			// stops without printing it.
			return out, unwindComplete
		}
		flag := f.flag
		if syscall && innermost {
			flag &^= flagSPWrite
		}
		if !p.spOK || p.spdelta < 0 {
			return out, resultAt(innermost)
		}
		fp := sp + uint64(p.spdelta)
		if !usesLR {
			fp += 8
		}
		if fp > s.hi {
			return out, resultAt(innermost)
		}
		out = append(out, physFrame{pc: pc, argp: fp + minFrame, info: p})
		if flag&flagTopFrame != 0 {
			return out, unwindComplete
		}
		if flag&flagSPWrite != 0 {
			return out, unwindTruncated
		}
		if usesLR {
			if innermost && sp < fp || lr == 0 {
				w, ok := s.word(sp)
				if !ok {
					return out, unwindTruncated
				}
				lr = w
			}
		} else if lr == 0 {
			w, ok := s.word(fp - 8)
			if !ok {
				return out, unwindTruncated
			}
			lr = w
		}
		if lr == 0 {
			return out, unwindComplete
		}
		if lr < bias || !r.pcInfo(lr-bias, false).ok {
			return out, unwindTruncated
		}
		if pc == lr && sp == fp {
			return out, unwindTruncated
		}
		injected := p.kind == kindInjected
		trap = injected
		pc, lr, sp = lr, 0, fp
		if usesLR && injected {
			x, ok := s.word(sp)
			if !ok {
				return out, unwindTruncated
			}
			sp += 16 // alignUp(sys.MinFrameSize, sys.StackAlign)
			if q := r.pcInfo(pc-bias, trap); !q.ok {
				pc = x
			} else if q.spOK && q.spdelta == 0 {
				lr = x
			}
		}
		innermost = false
		if sp < s.lo || sp > s.hi {
			return out, unwindTruncated
		}
	}
	r.note(model.NoteGoStackFrames, maxPhysFrames)
	return out, unwindTruncated
}

func resultAt(innermost bool) unwindResult {
	if innermost {
		return unwindGarbage
	}
	return unwindTruncated
}
