// Package oncpu samples where a live process's threads run, without
// stopping them: the kernel's CPU-clock event (perf_event_open, a
// software event that needs no hardware PMU) takes each running thread's
// user stack by its frame pointers, 99 times a second, into a ring buffer
// hangdoc reads. No ptrace, no signal: the target is never stopped, and a
// thread that does not run costs nothing.
//
// The kernel's frame-pointer walk is used as it is (Go on amd64 and arm64
// keeps frame pointers; so do C and C++ built with -O0 or
// -fno-omit-frame-pointer). A program built without them gets its
// innermost frame right and its callers maybe not; unwinding by .eh_frame
// from a copy of the user stack is not done here.
package oncpu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Freq is the sampling frequency, Hz: not a multiple of the kernel's tick
// rates, so samples do not fall in step with timers.
const Freq = 99

// maxStack is the deepest user stack the kernel is asked to walk.
const maxStack = 64

// dataPages is each thread's ring buffer, in pages: 64 KiB holds a second
// of samples of 64 frames at 99 Hz (~55 KiB) with room to spare; the
// buffer is drained every drainEvery.
const dataPages = 16

// maxDataPages bounds the ring buffer of a faster rate (Options.Hz).
const maxDataPages = 1024

// pagesFor is the ring buffer for a rate: dataPages per 99 Hz, a power of
// two (as the kernel requires), at most maxDataPages.
func pagesFor(hz int) int {
	n := dataPages
	for n < maxDataPages && n*Freq < dataPages*hz {
		n *= 2
	}
	return n
}

// perfContextUser and perfContextKernel mark where a callchain's user and
// kernel parts begin (PERF_CONTEXT_USER, PERF_CONTEXT_KERNEL); values at
// or above perfContextMax are markers, not addresses.
const (
	perfContextKernel = ^uint64(128) + 1 // -128
	perfContextUser   = ^uint64(512) + 1 // -512
	perfContextMax    = ^uint64(4095) + 1
)

const (
	perfRecordLost   = 2
	perfRecordSample = 9
	perfMiscKernel   = 1 // PERF_RECORD_MISC_KERNEL within misc's cpumode bits
	perfMiscCPUMode  = 7
)

// ErrRefused: the kernel does not let this process sample the target
// (perf_event_paranoid, no CAP_PERFMON, a seccomp filter).
var ErrRefused = errors.New("refused")

// ErrUnsupported: the kernel has no CPU-clock event (built without
// perf events).
var ErrUnsupported = errors.New("not supported by this kernel")

// raw is one sample as the kernel took it: the thread, its user stack
// innermost first (return addresses after the first), and whether it was
// in the kernel at the time (a system call, a page fault).
type raw struct {
	tid    int
	pcs    []uint64
	kernel bool
	// sp and lr are the user stack pointer and link register (arm64; 0
	// on amd64) at the sample, stack the words from sp on: where a
	// function without a frame pointer keeps its return address, which
	// the kernel's frame-pointer walk skips.
	sp, lr uint64
	stack  []byte
	// bp is the frame pointer register (amd64): where a walk by call-frame
	// information starts for a function that keeps one.
	bp uint64
}

// event is one thread's CPU-clock event and its ring buffer.
type event struct {
	tid  int
	fd   int
	mem  []byte
	lost uint64
}

// opener opens a thread's event; tests replace it with a refusal.
type opener func(tid int, kernel bool) (int, error)

func perfOpen(tid int, kernel bool, hz int) (int, error) {
	attr := unix.PerfEventAttr{
		Type:             unix.PERF_TYPE_SOFTWARE,
		Config:           unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:             uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample:           uint64(hz),
		Sample_type:      unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_CALLCHAIN,
		Bits:             unix.PerfBitFreq | unix.PerfBitDisabled | unix.PerfBitExcludeHv | unix.PerfBitExcludeCallchainKernel,
		Sample_max_stack: maxStack,
	}
	if regs.mask != 0 {
		attr.Sample_type |= unix.PERF_SAMPLE_REGS_USER | unix.PERF_SAMPLE_STACK_USER
		attr.Sample_regs_user = regs.mask
		attr.Sample_stack_user = stackCopy
	}
	if !kernel {
		// Without kernel profiling (perf_event_paranoid 2 for a user):
		// a thread's time in system calls goes unsampled.
		attr.Bits |= unix.PerfBitExcludeKernel
	}
	return unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

// openEvent starts sampling one thread.
func openEvent(open opener, tid int, kernel bool, pages int) (*event, error) {
	fd, err := open(tid, kernel)
	if err != nil {
		return nil, openErr(err)
	}
	page := os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, (1+pages)*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		// Past perf_event_mlock_kb for a user without CAP_IPC_LOCK.
		return nil, fmt.Errorf("mapping its ring buffer: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		unix.Munmap(mem)
		unix.Close(fd)
		return nil, fmt.Errorf("enabling it: %w", err)
	}
	return &event{tid: tid, fd: fd, mem: mem}, nil
}

func openErr(err error) error {
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w (%v)", ErrRefused, err)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENODEV), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%w (%v)", ErrUnsupported, err)
	}
	return err
}

func (e *event) close() {
	if e.mem != nil {
		unix.Munmap(e.mem)
		e.mem = nil
	}
	if e.fd >= 0 {
		unix.Close(e.fd)
		e.fd = -1
	}
}

// drain reads the samples the kernel wrote since the last drain.
func (e *event) drain(out []raw) []raw {
	if e.mem == nil {
		return out
	}
	page := os.Getpagesize()
	meta := (*unix.PerfEventMmapPage)(unsafe.Pointer(&e.mem[0]))
	head := atomic.LoadUint64(&meta.Data_head)
	tail := atomic.LoadUint64(&meta.Data_tail)
	data := e.mem[page:]
	out, e.lost = parseRing(data, tail, head, out, e.lost)
	atomic.StoreUint64(&meta.Data_tail, head)
	return out
}

// parseRing reads the records between tail and head of a ring buffer
// (positions that grow without bound, taken modulo its size): samples
// are appended to out, lost records' counts added to lost. A record that
// does not fit what the kernel writes ends the read.
func parseRing(data []byte, tail, head uint64, out []raw, lost uint64) ([]raw, uint64) {
	size := uint64(len(data))
	if size == 0 || head-tail > size {
		return out, lost
	}
	var hdr [8]byte
	var rec []byte
	for tail+8 <= head {
		copyRing(hdr[:], data, tail)
		typ := binary.NativeEndian.Uint32(hdr[0:])
		misc := binary.NativeEndian.Uint16(hdr[4:])
		n := uint64(binary.NativeEndian.Uint16(hdr[6:]))
		if n < 8 || tail+n > head {
			break
		}
		if cap(rec) < int(n) {
			rec = make([]byte, n)
		}
		rec = rec[:n]
		copyRing(rec, data, tail)
		tail += n
		body := rec[8:]
		switch typ {
		case perfRecordLost:
			if len(body) >= 16 {
				lost += binary.NativeEndian.Uint64(body[8:])
			}
		case perfRecordSample:
			if r, ok := parseSample(body, misc); ok {
				out = append(out, r)
			}
		}
	}
	return out, lost
}

// stackCopy is how much of the user stack each sample copies: enough
// for the return address of a function caught before or without its
// frame (Go's small leaf functions), and for the few frames of code built
// without frame pointers that its call-frame information then walks (a
// -O2 C loop, its caller, the thread's start).
const stackCopy = 1024

// userRegs are the registers a sample takes, as the kernel's
// PERF_REG_* numbers of this architecture: the stack pointer, and the
// link register where a leaf keeps its return address. The kernel
// writes the registers of a mask in ascending order.
type userRegs struct {
	mask       uint64
	sp, lr, bp int // indexes among the written registers; -1 for none
	nwritten   int
}

// regs is this architecture's; a zero mask (another architecture) takes
// no registers and no stack.
var regs = func() userRegs {
	switch runtime.GOARCH {
	case "amd64":
		// PERF_REG_X86_BP 6, PERF_REG_X86_SP 7.
		return userRegs{mask: 1<<6 | 1<<7, bp: 0, sp: 1, lr: -1, nwritten: 2}
	case "arm64":
		// PERF_REG_ARM64_LR 30, PERF_REG_ARM64_SP 31.
		return userRegs{mask: 1<<30 | 1<<31, lr: 0, sp: 1, bp: -1, nwritten: 2}
	}
	return userRegs{sp: -1, lr: -1, bp: -1}
}()

// parseSample reads a sample of PERF_SAMPLE_IP | TID | CALLCHAIN and,
// where this architecture has them, REGS_USER | STACK_USER: ip, pid and
// tid, the callchain's length and addresses, the register ABI and the
// registers, the stack copy's size, bytes and the part of it filled.
func parseSample(b []byte, misc uint16) (raw, bool) {
	if len(b) < 24 {
		return raw{}, false
	}
	ip := binary.NativeEndian.Uint64(b[0:])
	tid := binary.NativeEndian.Uint32(b[12:])
	nr := binary.NativeEndian.Uint64(b[16:])
	b = b[24:]
	if nr > uint64(len(b)/8) {
		return raw{}, false
	}
	r := raw{tid: int(tid), kernel: misc&perfMiscCPUMode == perfMiscKernel}
	user := false
	for i := uint64(0); i < nr; i++ {
		a := binary.NativeEndian.Uint64(b[8*i:])
		if a >= perfContextMax {
			user = a == perfContextUser
			continue
		}
		if user && a != 0 {
			r.pcs = append(r.pcs, a)
		}
	}
	if len(r.pcs) == 0 && !r.kernel && ip != 0 {
		r.pcs = append(r.pcs, ip)
	}
	b = b[8*nr:]
	if regs.mask == 0 || len(b) < 8 {
		return r, true
	}
	abi := binary.NativeEndian.Uint64(b)
	b = b[8:]
	if abi != 0 {
		if len(b) < 8*regs.nwritten {
			return r, true
		}
		if regs.sp >= 0 {
			r.sp = binary.NativeEndian.Uint64(b[8*regs.sp:])
		}
		if regs.lr >= 0 {
			r.lr = binary.NativeEndian.Uint64(b[8*regs.lr:])
		}
		if regs.bp >= 0 {
			r.bp = binary.NativeEndian.Uint64(b[8*regs.bp:])
		}
		b = b[8*regs.nwritten:]
	}
	if len(b) < 8 {
		return r, true
	}
	size := binary.NativeEndian.Uint64(b)
	b = b[8:]
	if size == 0 || size > uint64(len(b)) || len(b)-int(size) < 8 {
		return r, true
	}
	dyn := binary.NativeEndian.Uint64(b[size:])
	// The record's bytes are reused for the next one.
	r.stack = bytes.Clone(b[:min(size, dyn)])
	return r, true
}

// copyRing copies len(dst) bytes from the ring at position pos.
func copyRing(dst, data []byte, pos uint64) {
	size := uint64(len(data))
	off := pos % size
	n := copy(dst, data[off:])
	if n < len(dst) {
		copy(dst[n:], data)
	}
}

// Probe says whether this process may sample threads' CPU: it opens the
// event on its own thread and closes it. nil, ErrRefused or
// ErrUnsupported, as a profile would meet them.
func Probe() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fd, err := perfOpen(unix.Gettid(), false, Freq)
	if err != nil {
		return openErr(err)
	}
	return unix.Close(fd)
}
