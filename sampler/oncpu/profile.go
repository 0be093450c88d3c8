package oncpu

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/native"
)

// Bounds on what a profile holds, whatever the target: the threads
// sampled (the busiest), the distinct stacks counted per thread between
// two samples, and those kept in a sample for the report.
const (
	MaxThreads    = 64
	maxDistinct   = 128
	keptStacks    = 8
	drainInterval = 100 * time.Millisecond
)

// Profiler samples the threads of one process that use a CPU. It arms a
// thread the first time a sample sees it running or its CPU time grown,
// and hands each sample what was caught since the one before.
type Profiler struct {
	fs   sampler.FS
	pid  int
	opts Options
	open opener

	unwound   map[unwindKey][]model.Frame // the previous sample's native stacks
	refreshed bool                        // the mappings were reread for this sample

	kernel bool // sampling the kernel side too (refused to users at perf_event_paranoid 2)
	sym    *native.Symbolizer
	cpu    map[int]time.Duration // by tid, at the previous sample
	armed  int
	notes  []model.Note
	off    error // sampling refused or unsupported: nothing is armed again

	mu     sync.Mutex
	events map[int]*event
	counts map[int]*threadCounts // since the last sample, by tid
	stop   chan struct{}
	done   chan struct{}
}

// threadCounts are one thread's samples since the last sample, by stack.
type threadCounts struct {
	samples, kernel, other int
	stacks                 map[string]int // by the stack's addresses, packed
}

// Options are what a profiler does besides sampling running threads.
type Options struct {
	// NoSampling: no on-CPU sampling (--no-on-cpu); the profiler only
	// unwinds native stacks.
	NoSampling bool
	// NativeStacks: give each blocked thread without a stack its native
	// stack, unwound from memory (a C, C++ or Rust program, which no
	// other source gives stacks).
	NativeStacks bool
	// PythonNative: the target is a Python program, whose stacks come
	// from py-spy: each blocked thread's native stack goes into its
	// Native, cut to the frames above the interpreter's (the C of an
	// extension or a library it is in), not into its Stack; a running
	// thread's sampled stacks are cut the same way.
	PythonNative bool
	// Hz is the sampling rate; 0 is Freq (99 Hz). Other rates are for
	// measuring what sampling costs a target (bench/oncpu.sh): the ring
	// buffers grow with the rate.
	Hz int
}

// New makes a profiler of pid; nothing is sampled before the first
// Profile.
func New(fs sampler.FS, pid int, opts Options) *Profiler {
	if opts.Hz <= 0 {
		opts.Hz = Freq
	}
	open := func(tid int, kernel bool) (int, error) { return perfOpen(tid, kernel, opts.Hz) }
	return &Profiler{fs: fs, pid: pid, opts: opts, open: open, kernel: true, cpu: map[int]time.Duration{}, events: map[int]*event{}, counts: map[int]*threadCounts{}, unwound: map[unwindKey][]model.Frame{}}
}

// Profile gives s's threads what was caught of them since the previous
// sample, and arms the threads s sees running that are not yet sampled;
// with NativeStacks, blocked threads get their stacks.
func (p *Profiler) Profile(s *model.Sample) {
	p.refreshed = false
	if !p.opts.NoSampling {
		p.collect(s)
		p.arm(s)
	}
	if p.opts.NativeStacks {
		p.nativeStacks(s)
	}
}

// maxUnwound bounds the blocked threads unwound in one sample; a thread
// still blocked where it was keeps the stack read before, unread again.
const maxUnwound = 256

// unwindKey is a blocked thread where the kernel shows it.
type unwindKey struct {
	tid     int
	sp, pc  uint64
	syscall int
}

// nativeStacks unwinds the blocked threads of s that have no stack.
func (p *Profiler) nativeStacks(s *model.Sample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sym := p.symbolizer()
	if !p.refreshed {
		sym.Refresh()
	}
	next := map[unwindKey][]model.Frame{}
	n := 0
	for i := range s.Threads {
		t := &s.Threads[i]
		c := t.Syscall
		if len(t.Stack) > 0 || t.Native != nil || c.Running || c.Unknown || c.SP == 0 || t.State == model.StateRunning {
			continue
		}
		k := unwindKey{tid: t.TID, sp: c.SP, pc: c.PC, syscall: c.Nr}
		frames, ok := p.unwound[k]
		if !ok {
			if n >= maxUnwound {
				p.note(model.NewNote(model.NoteUnwoundPerSample, maxUnwound))
				continue
			}
			n++
			var err error
			if frames, err = sym.Unwind(c.SP, c.PC); errors.Is(err, native.ErrArch) {
				// On arm64 a blocked thread's return address may still be
				// in its link register, which /proc/TID/syscall does not
				// show: no walk is tried.
				p.note(model.NewNote(model.NoteNoNativeArch, runtime.GOARCH, err))
				return
			}
		}
		next[k] = frames
		if p.opts.PythonNative {
			t.Native = aboveInterpreter(frames)
			continue
		}
		t.Stack = frames
		if len(frames) > 0 && s.StackSource == model.FormatNone {
			s.StackSource = model.SourceUnwind
		}
	}
	p.unwound = next
}

// arm opens events for the threads that run: state R, or more CPU time
// than at the previous sample; the busiest first, up to MaxThreads.
func (p *Profiler) arm(s *model.Sample) {
	type cand struct {
		tid  int
		used time.Duration
	}
	var want []cand
	for _, t := range s.Threads {
		prev, seen := p.cpu[t.TID]
		p.cpu[t.TID] = t.CPUTime
		if _, on := p.events[t.TID]; on {
			continue
		}
		if t.State == model.StateRunning || seen && t.CPUTime > prev {
			want = append(want, cand{t.TID, t.CPUTime - prev})
		}
	}
	if p.off != nil || len(want) == 0 {
		return
	}
	slices.SortFunc(want, func(a, b cand) int { return cmp.Compare(b.used, a.used) })
	var opened []*event
	for _, c := range want {
		if p.armed >= MaxThreads {
			p.note(model.NewNote(model.NoteBusiestSampled, MaxThreads))
			break
		}
		e, err := openEvent(p.open, c.tid, p.kernel, pagesFor(p.opts.Hz))
		if errors.Is(err, ErrRefused) && p.kernel {
			p.kernel = false
			e, err = openEvent(p.open, c.tid, false, pagesFor(p.opts.Hz))
		}
		switch {
		case errors.Is(err, ErrRefused):
			p.off = err
			p.note(model.NewNote(model.NotePerfRefused, err))
		case errors.Is(err, ErrUnsupported):
			p.off = err
			p.note(model.NewNote(model.NotePerfUnsupported, err))
		case err != nil:
			// The thread exited, or this one's buffer could not be
			// mapped: the others may still be sampled.
			continue
		}
		if p.off != nil {
			break
		}
		opened = append(opened, e)
		p.armed++
	}
	if len(opened) == 0 {
		return
	}
	if !p.kernel {
		p.note(model.NewNote(model.NotePerfUserOnly))
	}
	p.mu.Lock()
	for _, e := range opened {
		p.events[e.tid] = e
	}
	start := p.stop == nil
	if start {
		p.stop, p.done = make(chan struct{}), make(chan struct{})
	}
	stop, done := p.stop, p.done
	p.mu.Unlock()
	if start {
		go p.drainLoop(stop, done)
	}
}

func (p *Profiler) note(n model.Note) {
	if !slices.ContainsFunc(p.notes, n.Equal) {
		p.notes = append(p.notes, n)
	}
}

// drainLoop empties the ring buffers every drainInterval, so that none
// fills between two samples however far apart they are.
func (p *Profiler) drainLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(drainInterval)
	defer t.Stop()
	var buf []raw
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		buf = p.drainLocked(buf[:0])
		p.mu.Unlock()
	}
}

// drainLocked reads every ring buffer into the counts; p.mu is held.
func (p *Profiler) drainLocked(buf []raw) []raw {
	for _, e := range p.events {
		buf = e.drain(buf[:0])
		for _, r := range buf {
			c := p.counts[r.tid]
			if c == nil {
				c = &threadCounts{stacks: map[string]int{}}
				p.counts[r.tid] = c
			}
			c.samples++
			if r.kernel {
				c.kernel++
			}
			k := packPCs(p.walkCut(p.callerOfLeaf(r), r))
			if _, ok := c.stacks[k]; ok || len(c.stacks) < maxDistinct {
				c.stacks[k]++
			} else {
				c.other++
			}
		}
	}
	return buf
}

func packPCs(pcs []uint64) string {
	b := make([]byte, 8*len(pcs))
	for i, pc := range pcs {
		binary.NativeEndian.PutUint64(b[8*i:], pc)
	}
	return string(b)
}

func unpackPCs(k string) []uint64 {
	pcs := make([]uint64, len(k)/8)
	for i := range pcs {
		pcs[i] = binary.NativeEndian.Uint64([]byte(k[8*i : 8*i+8]))
	}
	return pcs
}

// callerOfLeaf is a sample's stack with the caller the kernel's
// frame-pointer walk skips put back: a Go function caught before its
// prologue saved the frame pointer, or one that has no frame (a small
// leaf), has its return address at SP plus its frame size (amd64), or in
// the link register (arm64), not where the frame pointer leads. Code
// that is not the program's Go is left as the kernel walked it. p.mu is
// held.
func (p *Profiler) callerOfLeaf(r raw) []uint64 {
	if len(r.pcs) == 0 || r.sp == 0 {
		return r.pcs
	}
	g := p.symbolizer().GoReaderAt(r.pcs[0])
	if g == nil {
		return r.pcs
	}
	d, ok := g.PCSPDelta(r.pcs[0])
	if !ok || d < 0 {
		return r.pcs
	}
	var ret uint64
	switch runtime.GOARCH {
	case "amd64":
		if int(d)+8 > len(r.stack) {
			return r.pcs
		}
		ret = binary.NativeEndian.Uint64(r.stack[d:])
	case "arm64":
		if d != 0 {
			return r.pcs
		}
		ret = r.lr
	}
	if ret == 0 || len(r.pcs) > 1 && r.pcs[1] == ret {
		return r.pcs
	}
	if _, ok := g.PCSPDelta(ret); !ok {
		return r.pcs // not a return into Go code: a stale word
	}
	return slices.Insert(r.pcs, 1, ret)
}

// cutAt is how short a frame-pointer walk is (in mapped frames) before a
// sample's own stack copy is walked by call-frame information instead.
const cutAt = 3

// walkCut is a sample's stack, walked again by the call-frame information
// of its files from the sample's registers and stack copy where the
// kernel's frame-pointer walk was cut short (code built without frame
// pointers: its callers are lost): the longer of the two. A Go leaf is
// left to callerOfLeaf. p.mu is held.
func (p *Profiler) walkCut(pcs []uint64, r raw) []uint64 {
	if len(pcs) == 0 || r.sp == 0 || len(r.stack) == 0 || r.kernel {
		return pcs
	}
	sym := p.symbolizer()
	mapped := 0
	for mapped < len(pcs) && sym.Mapped(pcs[mapped]) {
		mapped++
	}
	if mapped >= cutAt || sym.GoReaderAt(pcs[0]) != nil {
		return pcs
	}
	if cfi := sym.UnwindCopy(r.sp, pcs[0], r.bp, r.stack); len(cfi) > mapped {
		return cfi
	}
	return pcs
}

// symbolizer is the profiler's, made on first use; p.mu is held.
func (p *Profiler) symbolizer() *native.Symbolizer {
	if p.sym == nil {
		p.sym = native.NewSymbolizer(p.fs, p.pid)
	}
	return p.sym
}

// collect moves what was caught since the previous sample into s.
func (p *Profiler) collect(s *model.Sample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.events) == 0 {
		return
	}
	p.symbolizer().Refresh()
	p.refreshed = true
	p.drainLocked(nil)
	counts := p.counts
	p.counts = map[int]*threadCounts{}
	lost := map[int]uint64{}
	for tid, e := range p.events {
		lost[tid] = e.lost
		e.lost = 0
	}
	for i := range s.Threads {
		t := &s.Threads[i]
		if _, armed := p.events[t.TID]; !armed {
			continue
		}
		t.OnCPU = p.profileOf(counts[t.TID])
		t.OnCPU.Lost = int(lost[t.TID])
	}
}

// profileOf names a thread's stacks and keeps the most frequent.
func (p *Profiler) profileOf(c *threadCounts) *model.OnCPU {
	out := &model.OnCPU{}
	if c == nil {
		return out
	}
	out.Samples, out.Kernel, out.Other = c.samples, c.kernel, c.other
	// Stacks that name alike (two return addresses in one line) are one.
	byName := map[string]*model.CPUStack{}
	for k, n := range c.stacks {
		frames := p.symbolize(unpackPCs(k))
		if p.opts.PythonNative {
			// A Python thread's Python frames come from its stack source;
			// the samples say what C it runs above them, if any (none:
			// the interpreter runs Python code, which that stack names).
			frames = aboveInterpreter(frames)
		}
		key := stackKey(frames)
		if st, ok := byName[key]; ok {
			st.N += n
			continue
		}
		byName[key] = &model.CPUStack{N: n, Frames: frames}
	}
	all := make([]*model.CPUStack, 0, len(byName))
	for _, st := range byName {
		all = append(all, st)
	}
	out.Funcs = funcCounts(all)
	slices.SortFunc(all, func(a, b *model.CPUStack) int {
		if c := cmp.Compare(b.N, a.N); c != 0 {
			return c
		}
		return strings.Compare(stackKey(a.Frames), stackKey(b.Frames))
	})
	for i, st := range all {
		if i < keptStacks {
			out.Stacks = append(out.Stacks, *st)
		} else {
			out.Other += st.N
		}
	}
	return out
}

// keptFuncs and keptLeaves bound the functions a profile counts: those
// most often on a stack, and besides them those most often innermost.
const (
	keptFuncs  = 64
	keptLeaves = 16
)

// funcCounts counts the functions on stacks (model.CountFuncs), the most
// often on a stack first, at most keptFuncs of them plus the keptLeaves
// most often innermost.
func funcCounts(stacks []*model.CPUStack) []model.FuncCount {
	vals := make([]model.CPUStack, len(stacks))
	for i, st := range stacks {
		vals[i] = *st
	}
	out := model.CountFuncs(vals)
	if len(out) <= keptFuncs {
		return out
	}
	// The most often on a stack, and the most often innermost: what a
	// working thread spends its CPU in, however many callers it has.
	leaves := slices.Clone(out)
	slices.SortStableFunc(leaves, func(a, b model.FuncCount) int { return cmp.Compare(b.Leaf, a.Leaf) })
	kept := out[:keptFuncs:keptFuncs]
	for _, c := range leaves[:keptLeaves] {
		if c.Leaf > 0 && !slices.ContainsFunc(kept, func(k model.FuncCount) bool { return k.Func == c.Func && k.File == c.File }) {
			kept = append(kept, c)
		}
	}
	return kept
}

// symbolize names a sampled stack's frames. The kernel's frame-pointer
// walk through code built without frame pointers (a libpython, a -O2 C
// library) reads locals as return addresses: the stack ends at the first
// address no file maps, which no caller of real code returns to.
func (p *Profiler) symbolize(pcs []uint64) []model.Frame {
	var out []model.Frame
	for i, pc := range pcs {
		if i > 0 && !p.sym.Mapped(pc) {
			break
		}
		out = append(out, p.sym.Frames(pc, i == 0)...)
	}
	return out
}

func stackKey(fs []model.Frame) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s\x00%s\x00%d\x00", f.Func, f.File, f.Line)
	}
	return b.String()
}

// Notes are what the profiler has to say of the run: sampling refused,
// threads left out.
func (p *Profiler) Notes() []model.Note { return p.notes }

// Close stops sampling and releases every event.
func (p *Profiler) Close() {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	p.mu.Lock()
	for _, e := range p.events {
		e.close()
	}
	p.events = map[int]*event{}
	if p.sym != nil {
		p.sym.Close()
		p.sym = nil
	}
	p.mu.Unlock()
}

// aboveInterpreter cuts a Python thread's native stack (innermost first)
// to the frames above CPython's: up to its first evaluation loop frame
// (_PyEval_EvalFrameDefault and the like) or the call machinery every
// call from Python into C passes (PyObject_Vectorcall, cfunction_call …;
// the loop itself may be named by a call inlined into it). What is left
// is the C the thread is in: an extension's function and the library
// calls under it. A stack with neither (a thread C started) is kept
// whole; nil when nothing is above the interpreter.
func aboveInterpreter(frames []model.Frame) []model.Frame {
	cut := slices.IndexFunc(frames, func(f model.Frame) bool {
		return strings.HasPrefix(f.Func, "_PyEval_EvalFrame") || strings.HasPrefix(f.Func, "PyEval_EvalFrame") || callMachinery(f.Func)
	})
	switch cut {
	case -1:
		return frames
	case 0:
		return nil
	}
	return frames[:cut:cut]
}

// callMachinery reports CPython's functions that carry a call from Python
// to C (3.8–3.13): vectorcall, the method and builtin trampolines.
func callMachinery(fn string) bool {
	for _, p := range []string{"_PyObject_", "PyObject_", "_PyFunction_", "_PyVectorcall", "PyVectorcall", "cfunction_", "method_vectorcall", "_PyCFunction", "PyCFunction_", "vectorcall_", "_PyEval_", "PyEval_", "call_function", "do_call_core", "_PyMethodDef_", "slot_tp_", "wrapperdescr_", "wrap_"} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}
