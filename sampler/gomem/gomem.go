// Package gomem reads the goroutines of a live Go process from its memory,
// without stopping it: no ptrace attach, no signal, no stop — the target's
// threads run on while their goroutines are read with process_vm_readv.
// Release builds stripped of symbols and DWARF (-ldflags="-s -w") are read
// too, through what stripping keeps: the pclntab, the build info and the
// runtime's own code.
//
// Each goroutine comes out as a traceback prints it (the same ids, states,
// wait reasons, frames and arguments as a pprof debug=2 dump taken at the
// same moment), so a stripped service without a pprof endpoint gets the
// same goroutine report as one with.
package gomem

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/gomem/internal/layout"
	"github.com/hangdoc/hangdoc/sampler/goroutines"
)

// ErrUnsupported: the reader cannot read this binary (not Go, Go before
// 1.22, an architecture other than amd64 and arm64, no pclntab, a stripped
// build of a version the layout table lacks, a runtime that does not look
// as expected). The error says which; a caller falls back to Delve.
var ErrUnsupported = errors.New("goroutines not readable from memory")

// ErrExited: the process exited while its goroutines were read. The
// goroutines read before are returned with it; the error also matches
// sampler.ErrNoProcess.
var ErrExited = errors.New("process exited during the read")

// Retry bounds: a goroutine whose g changed while its stack was read is
// read again this many times, then reported as moving.
const maxRetries = 3

// chunk is how many goroutines are read together: a few process_vm_readv
// calls per chunk (gs, stacks, gs again), with buffers reused from chunk
// to chunk so that memory stays bounded whatever the goroutine count.
const chunk = 1024

// maxGoroutines bounds allglen: a larger one is garbage.
const maxGoroutines = 1 << 24

// Stats says how a read went.
type Stats struct {
	// Read is the number of goroutines returned, Moving included.
	Read int
	// Dropped goroutines were unreadable (a g or stack outside the
	// target's mappings, a pc that is no Go code): left out.
	Dropped int
	// Moving goroutines changed on every one of their reads (status, pc
	// or stack pointer): they are returned with the state of their last
	// read and no stack, and their ids are in MovingIDs.
	Moving    int
	MovingIDs []int64
	// Retries counts the goroutines read again because they changed
	// between the two reads of their g.
	Retries int
	// Truncated stacks stopped before their outermost frame (an unknown
	// return address, a stack too deep).
	Truncated int
	// Syscalls is the number of process_vm_readv (or pread) calls made.
	Syscalls int
	// Notes say what was dropped and why, once per kind.
	Notes []model.Note
	// ChanScan is the channel scan's result, on a read that ran it
	// (ScanChannels) with goroutines waiting on channels; nil otherwise.
	ChanScan *model.ChanScan
}

// Reader reads one process's goroutines. It is not safe for concurrent
// use.
type Reader struct {
	pid  int
	fs   sampler.FS
	mem  memory
	live *liveMemory
	exe  *exe
	lay  layout.Layout
	bias uint64

	allglen, allgptr uint64 // target addresses
	waitReasons      []string
	statuses         []string
	gDead            []bool // by status: skipped, as the traceback skips them

	kinds map[uint64]funcKind // by function entry (file address)
	pcs   map[pcKey]*pcInfo
	names map[int32]string
	strs  map[string]string

	maps *mappings
	// readMaps reads the target's mappings; tests replace it.
	readMaps func() (*mappings, error)
	stats    *Stats
	notes    map[string]bool

	// Scratch reused across goroutines.
	argBuf    []byte
	argEnds   []int
	sysFrames []goroutines.Frame
	shapes    map[uint64][]*shape
	nshapes   int
	created   map[uint64]created // by gopc
	chans     map[uint64][]string
	phys      []physFrame
	// semas are the semaphore words waiting gs are parked on (by g), read
	// from the semaphore table before the gs (semaWaits).
	semas map[uint64]uint64
	// semtable and semStride are a stripped binary's semaphore table,
	// once found.
	semtable, semStride uint64
	// noLocks, set by a benchmark, reads without lock identity: the
	// baseline it is measured against.
	noLocks bool
	// takes says which functions take a sync lock (lockcalls.go), and
	// lockEntries are the lock functions' entries.
	takes       map[string]bool
	lockEntries map[uint64]bool

	// The channel scan (chanscan.go): asked for, the goroutines of the
	// read in progress, and the heap's layout, read once.
	scanOn   bool
	scanTime time.Duration
	roots    []scanRoot
	sudogs   map[uint64]bool // the waiters' own sudogs, which name their channels
	heap     *layout.Heap
	heapErr  error
	// runtimeVars are the runtime's own globals (file addresses, from the
	// symbol table): its bookkeeping reaches every sudog, which the scan
	// must not take for a program's reference.
	runtimeVars [][2]uint64

	// testHook, when set by a test, runs before each chunk of goroutines
	// (with the index of its first goroutine) and before each retry.
	testHook func(stage string, i int)
}

// Open reads the executable of pid (through /proc/PID/exe), finds the
// runtime's layout and its list of goroutines, and returns a Reader. It
// reads the target's memory but never stops it. Errors wrap
// ErrUnsupported when the binary cannot be read this way,
// sampler.ErrNoProcess and sampler.ErrPermission otherwise.
func Open(fsys sampler.FS, pid int) (*Reader, error) {
	e, err := openExe(fsys.Path(strconv.Itoa(pid), "exe"))
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	live := newLiveMemory(fsys, pid)
	r, err := newReader(fsys, pid, e, live)
	if err != nil {
		live.close()
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	r.live = live
	return r, nil
}

// Dump opens pid, reads its goroutines once and closes the reader. A
// caller that samples the process again should keep a Reader: Open reads
// the executable (milliseconds for a stripped one, ~0.1 s with DWARF).
func Dump(ctx context.Context, fsys sampler.FS, pid int) ([]model.Goroutine, Stats, error) {
	r, err := Open(fsys, pid)
	if err != nil {
		return nil, Stats{}, err
	}
	defer r.Close()
	return r.Goroutines(ctx)
}

// Close releases the reader's descriptors.
func (r *Reader) Close() error {
	if r.live != nil {
		return r.live.close()
	}
	return nil
}

// Version is the target's Go version ("go1.22.0").
func (r *Reader) Version() string { return r.exe.version }

// LayoutSource is "DWARF" when the binary described its own runtime,
// "table" when the generated table did.
func (r *Reader) LayoutSource() string { return r.exe.layFrom }

func newReader(fsys sampler.FS, pid int, e *exe, mem memory) (*Reader, error) {
	r := &Reader{
		pid: pid, fs: fsys, mem: mem, exe: e, lay: e.lay,
		kinds: map[uint64]funcKind{}, pcs: map[pcKey]*pcInfo{},
		names: map[int32]string{}, strs: map[string]string{}, notes: map[string]bool{},
		created: map[uint64]created{}, chans: map[uint64][]string{}, shapes: map[uint64][]*shape{},
	}
	r.readMaps = func() (*mappings, error) { return readMaps(fsys.Path(strconv.Itoa(pid), "maps")) }
	for _, n := range []string{"runtime.sigpanic", "runtime.asyncPreempt", "runtime.debugCallV2"} {
		if f, ok := e.funcs[n]; ok {
			r.kinds[f.entry] = kindInjected
		}
	}
	ms, err := r.readMaps()
	if err != nil {
		return nil, err
	}
	r.maps = ms
	if r.bias, err = e.bias(ms); err != nil {
		return nil, unsupported("%v", err)
	}
	if err := r.findModule(); err != nil {
		return nil, err
	}
	if err := r.findAllgs(); err != nil {
		return nil, err
	}
	if err := r.findStrings(); err != nil {
		return nil, err
	}
	return r, nil
}

// read1 reads one piece of target memory.
func (r *Reader) read1(addr uint64, b []byte) error {
	req := []request{{Addr: addr, Buf: b}}
	if err := r.mem.read(req); err != nil {
		return err
	}
	if !req[0].OK {
		return fmt.Errorf("reading %d bytes at %#x: not mapped", len(b), addr)
	}
	return nil
}

func (r *Reader) u64(addr uint64) (uint64, error) {
	var b [8]byte
	if err := r.read1(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// findModule reads runtime.firstmoduledata, for where go:func.* is (the
// inline trees and argument tables are there). Without a symbol table it
// is found in .go.module (Go 1.26 on) or .noptrdata as the word that
// points at the pclntab, and checked against the sections it describes.
func (r *Reader) findModule() error {
	e, m := r.exe, r.lay.Module
	var candidates []uint64
	if s, ok := e.syms["runtime.firstmoduledata"]; ok {
		candidates = []uint64{s.Value}
	} else {
		// Go 1.26 moved it to a section of its own.
		for _, name := range []string{".go.module", ".noptrdata"} {
			sec := e.sections[name]
			if sec == nil || sec.Size > 64<<20 {
				continue
			}
			data := make([]byte, sec.Size)
			if err := r.read1(sec.Addr+r.bias, data); err != nil {
				return r.readErr("reading "+name, err)
			}
			want := e.tabAddr + r.bias
			for off := 0; off+8 <= len(data); off += 8 {
				if binary.LittleEndian.Uint64(data[off:]) == want {
					candidates = append(candidates, sec.Addr+uint64(off)-uint64(m.PCHeader.Off))
				}
			}
			if len(candidates) > 0 {
				break
			}
		}
	}
	b := make([]byte, m.Size)
	for _, c := range candidates {
		if err := r.read1(c+r.bias, b); err != nil {
			continue
		}
		get := func(f layout.Field) uint64 { return field(b, f) - r.bias }
		text := get(m.Text)
		if field(b, m.PCHeader) != e.tabAddr+r.bias || !e.inSection(text, ".text") && text != e.tab.textStart {
			continue
		}
		gofunc := get(m.Gofunc)
		ro, roAddr, err := e.readOnly(gofunc)
		if err != nil {
			continue
		}
		if e.tab.textStart != text {
			e.tab.textStart = text
		}
		e.tab.setGofunc(gofunc, ro, roAddr)
		return nil
	}
	return unsupported("runtime.firstmoduledata not found in %s", e.path)
}

// findAllgs finds runtime.allglen and runtime.allgptr: from the symbol
// table when there is one, else from the code of forEachGRace and allgadd
// (see dataRefs), each candidate checked against the live process.
func (r *Reader) findAllgs() error {
	e := r.exe
	if l, ok := e.syms["runtime.allglen"]; ok {
		if p, ok := e.syms["runtime.allgptr"]; ok {
			r.allglen, r.allgptr = l.Value+r.bias, p.Value+r.bias
			_, err := r.readAllgs(true)
			return err
		}
	}
	l, p, err := r.allgsByCode()
	if err != nil {
		return err
	}
	r.allglen, r.allgptr = l+r.bias, p+r.bias
	return nil
}

// allgsByCode picks allglen and allgptr (file addresses) among the globals
// allgadd and forEachGRace refer to: the pair (L, P) whose values equal the
// length and pointer of a slice header S they also refer to (allgs), and
// whose first g is goroutine 1.
func (r *Reader) allgsByCode() (uint64, uint64, error) {
	e := r.exe
	var refs []uint64
	seen := map[uint64]bool{}
	for _, name := range []string{"runtime.forEachGRace", "runtime.allgadd"} {
		for _, a := range e.refs[name] {
			if !seen[a] && e.inSection(a, ".bss", ".noptrbss", ".data", ".noptrdata") {
				seen[a] = true
				refs = append(refs, a)
			}
		}
	}
	if len(refs) == 0 {
		return 0, 0, unsupported("runtime.allgadd and runtime.forEachGRace not found in the pclntab of %s", e.path)
	}
	// One read of every candidate's first three words.
	reqs := make([]request, len(refs))
	for i, a := range refs {
		reqs[i] = request{Addr: a + r.bias, Buf: make([]byte, 24)}
	}
	if err := r.mem.read(reqs); err != nil {
		return 0, 0, r.readErr("reading the runtime's globals", err)
	}
	val := map[uint64][]byte{}
	for _, q := range reqs {
		if q.OK {
			val[q.Addr-r.bias] = q.Buf
		}
	}
	for _, s := range refs {
		sv := val[s]
		if sv == nil {
			continue
		}
		ptr, n, c := binary.LittleEndian.Uint64(sv), binary.LittleEndian.Uint64(sv[8:]), binary.LittleEndian.Uint64(sv[16:])
		if ptr == 0 || n == 0 || n > c || c > maxGoroutines {
			continue
		}
		for _, p := range refs {
			if p == s || p == s+8 || p == s+16 || val[p] == nil || binary.LittleEndian.Uint64(val[p]) != ptr {
				continue
			}
			for _, l := range refs {
				if l == s || l == s+8 || l == s+16 || l == p || val[l] == nil || binary.LittleEndian.Uint64(val[l]) != n {
					continue
				}
				r.allglen, r.allgptr = l+r.bias, p+r.bias
				if _, err := r.readAllgs(true); err == nil {
					return l, p, nil
				}
			}
		}
	}
	return 0, 0, unsupported("runtime.allgs not found among the %d globals allgadd and forEachGRace refer to in %s", len(refs), e.path)
}

// readAllgs reads allglen then allgptr, in that order (the runtime's
// atomicAllG: a g is appended to the array before the length grows, so
// the array read after the length always holds that many), and the
// array. When strict (the variables are being identified), the first g
// must look like one: an id, and stack bounds. (It is the main
// goroutine, id 1, unless main called runtime.Goexit and its g was
// reused.)
func (r *Reader) readAllgs(strict bool) ([]byte, error) {
	n, err := r.u64(r.allglen)
	if err != nil {
		return nil, r.readErr("reading runtime.allglen", err)
	}
	p, err := r.u64(r.allgptr)
	if err != nil {
		return nil, r.readErr("reading runtime.allgptr", err)
	}
	if n == 0 || n > maxGoroutines || p == 0 || !r.maps.readable(p, n*8) {
		if err := r.refreshMaps(); err != nil {
			return nil, err
		}
		if n == 0 || n > maxGoroutines || p == 0 || !r.maps.readable(p, n*8) {
			return nil, unsupported("runtime.allglen %d, runtime.allgptr %#x: not a goroutine list", n, p)
		}
	}
	buf := make([]byte, n*8)
	if err := r.read1(p, buf); err != nil {
		return nil, r.readErr("reading runtime.allgs", err)
	}
	if !strict {
		return buf, nil
	}
	g0 := binary.LittleEndian.Uint64(buf)
	gb := make([]byte, r.lay.G.Size)
	if err := r.read1(g0, gb); err != nil {
		return nil, r.readErr("reading goroutine 1", err)
	}
	id, lo, hi := field(gb, r.lay.G.Goid), field(gb, r.lay.G.StackLo), field(gb, r.lay.G.StackHi)
	if id == 0 || id > 1<<48 || lo >= hi || hi-lo > 1<<30 {
		return nil, unsupported("the first g of runtime.allgs (id %d, stack [%#x, %#x)) is no g", id, lo, hi)
	}
	return buf, nil
}

// findStrings gets the wait-reason and status texts: the target's own
// arrays when the symbol table says where, else the table's for its
// version.
func (r *Reader) findStrings() error {
	e := r.exe
	read := func(addr uint64, b []byte) error { return r.read1(addr, b) }
	ptr := e.ptrSize
	if s, ok := e.syms["runtime.waitReasonStrings"]; ok {
		if ws, err := layout.Strings(read, s.Value+r.bias, int(s.Size)/(2*ptr), ptr); err == nil {
			r.waitReasons = ws
		}
	}
	if s, ok := e.syms["runtime.gStatusStrings"]; ok {
		if ss, err := layout.Strings(read, s.Value+r.bias, int(s.Size)/(2*ptr), ptr); err == nil {
			r.statuses = ss
		}
	}
	if r.waitReasons == nil || r.statuses == nil {
		l, ok := layout.Lookup(e.version, e.arch)
		if !ok {
			return unsupported("no wait-reason texts for %s: the binary has no symbol table and the layout table lacks %s", e.version, layout.Minor(e.version))
		}
		if r.waitReasons == nil {
			r.waitReasons = l.WaitReasons
		}
		if r.statuses == nil {
			r.statuses = l.Statuses
		}
	}
	r.gDead = make([]bool, len(r.statuses))
	for i, s := range r.statuses {
		// "dead", and 1.26's _Gdeadextra ("waiting for cgo callback"):
		// the traceback skips both. "idle" is a g not yet started.
		r.gDead[i] = s == "dead" || s == "waiting for cgo callback" || s == "idle"
	}
	return nil
}

func (r *Reader) refreshMaps() error {
	ms, err := r.readMaps()
	if err != nil {
		if errors.Is(err, sampler.ErrNoProcess) {
			return fmt.Errorf("%w (%w)", ErrExited, sampler.ErrNoProcess)
		}
		return err
	}
	r.maps = ms
	return nil
}

// readErr wraps a read error: an exited process is ErrExited.
func (r *Reader) readErr(what string, err error) error {
	if errors.Is(err, errExited) {
		return fmt.Errorf("%s: %w (%w)", what, ErrExited, sampler.ErrNoProcess)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (r *Reader) note(k model.NoteKind, a ...any) {
	n := model.NewNote(k, a...)
	key := string(k) + "\x00" + strings.Join(n.Args, "\x00")
	if r.notes[key] || r.stats == nil {
		return
	}
	r.notes[key] = true
	r.stats.Notes = append(r.stats.Notes, n)
}

// field reads a word of a struct's bytes.
func field(b []byte, f layout.Field) uint64 {
	if f.Size == 0 || f.Off+f.Size > len(b) {
		return 0
	}
	switch f.Size {
	case 1:
		return uint64(b[f.Off])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b[f.Off:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b[f.Off:]))
	case 8:
		return binary.LittleEndian.Uint64(b[f.Off:])
	}
	return 0
}

// G statuses that the reader treats specially (runtime/runtime2.go,
// unchanged since Go 1.0 but for the scan bit's users).
const (
	gRunnable = 1
	gRunning  = 2
	gSyscall  = 3
	gWaiting  = 4
	gScan     = 0x1000
)

// Goroutines reads every goroutine of the process. The target keeps
// running: each goroutine's g is read, then its stack, then its g again,
// and a goroutine whose g changed in between (status, pcs, stack pointers,
// stack bounds, wait reason, M, ...) is read again, up to maxRetries
// times, then reported as moving — never a stack made of two moments. What
// looks like garbage in a g that changed (the runtime writes a g's fields
// one by one, so one read can catch it half-written) is a goroutine on the
// move, read again; garbage that reads the same twice is dropped, counted
// in Stats. The one thing the second read cannot see is a goroutine that
// woke, ran and parked again at the very same pc and stack pointer between
// the two reads: its frames are then those of that place, the same either
// way; only an argument word may be from either moment.
//
// A process that exits during the read gives the goroutines read so far
// and an error wrapping ErrExited.
func (r *Reader) Goroutines(ctx context.Context) (gs []model.Goroutine, st Stats, err error) {
	r.stats = &st
	r.notes = map[string]bool{}
	r.roots, r.sudogs = r.roots[:0], map[uint64]bool{}
	defer func() { r.roots, r.sudogs = nil, nil }()
	calls0 := r.syscalls()
	defer func() { st.Syscalls = r.syscalls() - calls0; r.stats = nil }()

	if err := r.refreshMaps(); err != nil {
		return nil, st, err
	}
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	now := ts.Nano()

	list, err := r.readAllgs(false)
	if err != nil {
		return nil, st, fmt.Errorf("reading the goroutines of pid %d: %w", r.pid, err)
	}
	n := len(list) / 8
	if !r.noLocks {
		r.semas = r.semaWaits()
	}
	defer func() { r.semas = nil }()
	out := make([]model.Goroutine, 0, n)
	c := newChunkState(r)
	var retry []uint64
	for i := 0; i < n; i += chunk {
		if err := ctx.Err(); err != nil {
			return out, st, err
		}
		if r.testHook != nil {
			r.testHook("chunk", i)
		}
		addrs := c.addrs[:0]
		for j := i; j < min(n, i+chunk); j++ {
			addrs = append(addrs, binary.LittleEndian.Uint64(list[j*8:]))
		}
		c.addrs = addrs
		moved, err := c.read(addrs, now, &out)
		retry = append(retry, moved...)
		if err != nil {
			return out, st, r.partial(err, len(out), n)
		}
	}
	for try := 1; try <= maxRetries && len(retry) > 0; try++ {
		if r.testHook != nil {
			r.testHook("retry", try)
		}
		st.Retries += len(retry)
		var again []uint64
		for _, a := range retry {
			moved, err := c.read([]uint64{a}, now, &out)
			again = append(again, moved...)
			if err != nil {
				return out, st, r.partial(err, len(out), n)
			}
		}
		retry = again
	}
	for _, a := range retry {
		if g, ok := c.moving(a, now); ok {
			out = append(out, g)
			if r.scanOn {
				r.roots = append(r.roots, scanRoot{out: len(out) - 1, addr: a, moving: true, system: c.movingSystem})
			}
			st.Moving++
			st.MovingIDs = append(st.MovingIDs, g.ID)
		}
	}
	st.Read = len(out)
	if r.scanOn {
		st.ChanScan = r.chanScan(ctx, out, r.roots)
	}
	if st.Dropped > 0 {
		r.note(model.NoteGoUnreadable, st.Dropped)
	}
	if st.Moving > 0 {
		r.note(model.NoteGoMoving, st.Moving, maxRetries+1)
	}
	if st.Truncated > 0 {
		r.note(model.NoteGoTruncated, st.Truncated)
	}
	return out, st, nil
}

func (r *Reader) partial(err error, got, total int) error {
	if errors.Is(err, ErrExited) {
		return fmt.Errorf("reading the goroutines of pid %d: %w after %d of %d goroutines: the list is partial", r.pid, err, got, total)
	}
	return fmt.Errorf("reading the goroutines of pid %d: %w", r.pid, err)
}

func (r *Reader) syscalls() int {
	if r.live != nil {
		return r.live.calls
	}
	return 0
}

// state is the goroutine's state as the traceback header prints it: the
// wait reason of a waiting goroutine, else the status word.
func (r *Reader) state(status uint64, reason uint64) string {
	s := "???"
	if status < uint64(len(r.statuses)) && r.statuses[status] != "" {
		s = r.statuses[status]
	}
	leaked := s == "leaked"
	if (status == gWaiting || leaked) && reason != 0 {
		if reason < uint64(len(r.waitReasons)) {
			s = r.waitReasons[reason]
		} else {
			s = "unknown wait reason"
		}
	}
	if leaked {
		s += " (leaked)"
	}
	return s
}

// threadSyscall reads /proc/PID/task/TID/syscall: the call a thread is
// blocked in, with its user stack pointer and pc. ok is false when the
// thread is running or the file cannot be read.
func (r *Reader) threadSyscall(tid int) (nr, sp, pc uint64, ok bool) {
	b, err := os.ReadFile(r.fs.Path(strconv.Itoa(r.pid), "task", strconv.Itoa(tid), "syscall"))
	if err != nil {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 9 {
		return 0, 0, 0, false
	}
	n, err1 := strconv.ParseInt(f[0], 10, 64)
	s, err2 := strconv.ParseUint(strings.TrimPrefix(f[7], "0x"), 16, 64)
	p, err3 := strconv.ParseUint(strings.TrimPrefix(f[8], "0x"), 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || n < 0 {
		return 0, 0, 0, false
	}
	return uint64(n), s, p, true
}
