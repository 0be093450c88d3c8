package delve

// How hangdoc stops a Go target, and why not through Delve's own backend.
//
// Delve's native backend attaches with PTRACE_ATTACH, which queues a
// SIGSTOP in every thread, and then plants breakpoints (int3) at
// runtime.fatalpanic, runtime.throw, runtime.fatal and runtime.fatalsignal.
// A hangdoc killed between the two (kill -9, the OOM killer, a Go fatal
// error) leaves both behind: the kernel detaches a dead tracer's tracees,
// but a SIGSTOP not yet consumed then stops the whole process (state T,
// nobody resumes it), and the int3s stay in its code, so its next panic
// dies of SIGTRAP with no message. Its detach also sends SIGCONT to a
// process it finds stopped, undoing a stop the user made.
//
// Issue 14 offered two cures: a guardian process that repairs the target
// when hangdoc dies, or an attach that queues no SIGSTOP and plants
// nothing. This file is the second. A guardian is one more process that
// can itself be killed (kill -9 of the process group, the OOM killer
// taking the cgroup, a container stop), and it must guess whether a stop
// was hangdoc's; the kernel makes no such guess. So hangdoc is its own
// Delve backend (Delve's proc package takes any ProcessInternal, as its
// core-file backend shows):
//
//   - It stops the target with PTRACE_SEIZE and PTRACE_INTERRUPT. An
//     interrupt stop is a ptrace stop, not a signal: when the tracer goes,
//     however it goes, the kernel detaches and each thread carries on, and
//     a group stop someone else started (SIGSTOP, job control) stays in
//     force. Nothing to undo, so nothing can be left undone.
//   - It never writes to the target: WriteBreakpoint and WriteMemory
//     refuse, so the breakpoints Delve sets on every new target are never
//     planted, and memory is read with process_vm_readv, which cannot
//     write.
//   - It never sends a signal: no SIGCONT on detach, ever.
//   - It loads the binary's DWARF before it stops anything (Delve's attach
//     read it with the target stopped: most of the 1 s the target was
//     frozen), so a stop lasts as long as reading the goroutines does.
//   - All ptrace requests come from one OS thread per stop, locked to a
//     goroutine that ends without unlocking it. Go then ends the thread,
//     and the kernel detaches whatever it still traced, running or
//     stopped, and drops a pending interrupt: that is how a stop that
//     overruns its bound (a thread in uninterruptible sleep never reaches
//     its interrupt stop) is given up without waiting for that thread.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/go-delve/delve/pkg/dwarf/op"
	"github.com/go-delve/delve/pkg/elfwriter"
	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/proc/linutil"
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/dstate"
)

// errNeverWrites is what Delve gets when it tries to change the target.
var errNeverWrites = errors.New("hangdoc never writes to the target")

// errRunning is what Delve gets for a thread's registers between stops.
var errRunning = errors.New("the target is running")

// errTracerGone: the tracer thread has exited (the stop was given up).
var errTracerGone = errors.New("the tracer thread has exited")

// tracer is one OS thread that makes every ptrace request of one stop.
type tracer struct {
	reqs chan func()
	quit chan struct{}
	once sync.Once
	done chan struct{} // closed when the loop has returned
	tid  int           // the thread's id, set before the first request runs
}

func newTracer() *tracer {
	tr := &tracer{reqs: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread: Go never ends it (a goroutine that
			// returns locked to it wedges it instead), so its tracees
			// would never be let go by its exit. Start the tracer
			// while this goroutine holds the main thread: it then runs
			// on another.
			go tr.loop(started)
			<-started
			runtime.UnlockOSThread()
			return
		}
		tr.loop(started)
	}()
	<-started
	return tr
}

// loop serves requests on its own OS thread. It never unlocks it: when it
// returns, Go ends the thread and the kernel detaches every tracee the
// thread still has.
func (tr *tracer) loop(started chan<- struct{}) {
	runtime.LockOSThread()
	tr.tid = unix.Gettid()
	close(started)
	defer close(tr.done)
	for {
		select {
		case f := <-tr.reqs:
			f()
		case <-tr.quit:
			return
		}
	}
}

// do runs f on the tracer thread and waits for it.
func (tr *tracer) do(f func()) error {
	finished := make(chan struct{})
	select {
	case tr.reqs <- func() { f(); close(finished) }:
	case <-tr.quit:
		return errTracerGone
	}
	<-finished
	return nil
}

// exit ends the tracer thread once it is idle: the kernel then detaches
// whatever it still traces. It does not wait.
func (tr *tracer) exit() { tr.once.Do(func() { close(tr.quit) }) }

// exitWait is exit, then waits (up to timeout) for the thread to be gone
// from /proc/self/task, which is when the kernel has let go of every
// thread it traced; it reports whether it went.
func (tr *tracer) exitWait(timeout time.Duration) bool {
	tr.exit()
	end := time.Now().Add(timeout)
	select {
	case <-tr.done:
	case <-time.After(timeout):
		return false // a request still running (blocked in the kernel)
	}
	task := fmt.Sprintf("/proc/self/task/%d", tr.tid)
	for {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// stoppedThread is one thread held in a ptrace stop.
type stoppedThread struct {
	tid  int
	regs proc.Registers
}

// stopper stops every thread of a process.
type stopper struct {
	pid      int
	deadline time.Time
	seized   map[int]bool // tid → still to be waited for
	stopped  []int
	// held is the signal each thread stopped with, to be delivered when
	// it is let go (0 for none).
	held map[int]unix.Signal
	// onSeized runs (on the tracer thread) once the first thread has been
	// seized and interrupted: a test hook.
	onSeized func()
	// cancelled reports that the caller gave up.
	cancelled func() bool
}

// errCancelled: the caller's context ended while threads were stopping.
var errCancelled = errors.New("cancelled")

// dStateAfter is how long a thread may take to reach its interrupt stop
// before its state is looked at: a thread in uninterruptible sleep only
// stops when it wakes, which may be never.
const dStateAfter = 10 * time.Millisecond

// stopAll seizes and interrupts every thread of s.pid, on the tracer
// thread, until a listing of /proc/PID/task finds none it does not hold:
// a thread created while the others were being stopped is found by the
// next listing, and once all are stopped none can be created. It returns
// with every thread it seized either stopped or gone, or with an error;
// on an error the caller exits the tracer, which lets go of them all.
func (s *stopper) stopAll() error {
	for round := 0; ; round++ {
		tids, err := taskIDs(s.pid)
		if err != nil {
			return err
		}
		added := 0
		for _, tid := range tids {
			if _, ok := s.seized[tid]; ok {
				continue
			}
			if state, _ := dstate.State(s.pid, tid); state == 'Z' || state == 'X' {
				continue // an exited thread waiting to be reaped stops no more
			}
			if err := unix.PtraceSeize(tid); err != nil {
				if err == unix.ESRCH {
					continue // exited since the listing
				}
				return seizeErr(s.pid, tid, err)
			}
			s.seized[tid] = true
			added++
			if hooks.beforeInterrupt != nil && added == 1 && round == 0 {
				hooks.beforeInterrupt(tid)
			}
			if err := unix.PtraceInterrupt(tid); err != nil && err != unix.ESRCH {
				return fmt.Errorf("interrupting thread %d: %v", tid, err)
			}
			if s.onSeized != nil {
				s.onSeized()
				s.onSeized = nil
			}
		}
		if added == 0 {
			if len(s.stopped) == 0 {
				return fmt.Errorf("pid %d: no thread could be stopped: %w", s.pid, errGone)
			}
			return nil
		}
		if err := s.waitStops(); err != nil {
			return err
		}
	}
}

// errGone: the process exited while it was being stopped.
var errGone = errors.New("the process exited")

// waitStops waits, without blocking the tracer thread in the kernel, for
// every seized thread to report its stop or its exit.
func (s *stopper) waitStops() error {
	start := time.Now()
	pause := 20 * time.Microsecond
	for {
		pending := 0
		for tid, waiting := range s.seized {
			if !waiting {
				continue
			}
			stopped, gone, err := s.poll(tid)
			switch {
			case err != nil:
				return err
			case stopped:
				s.seized[tid] = false
				s.stopped = append(s.stopped, tid)
			case gone:
				s.seized[tid] = false
			default:
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		if time.Since(start) > dStateAfter {
			for tid, waiting := range s.seized {
				if !waiting {
					continue
				}
				if state, wchan := dstate.State(s.pid, tid); state == 'D' {
					return &dstate.Error{PID: s.pid, TID: tid, Wchan: wchan}
				}
			}
		}
		if s.cancelled != nil && s.cancelled() {
			return errCancelled
		}
		if time.Now().After(s.deadline) {
			return fmt.Errorf("%d thread%s of pid %d did not stop within the stop bound: %w", pending, plural(pending), s.pid, ErrMaxStop)
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// poll reads one thread's wait status without blocking. A thread may
// report a signal that arrived as it was seized instead of the interrupt.
// SIGURG, Go's preemption signal, is held: the thread stays stopped where
// the signal found it, with the registers of the code it runs rather than
// of a signal handler, and gets the signal back when it is let go (should
// hangdoc die first it is lost, which Go's runtime allows for: it asks
// again). Any other signal is delivered at once (PTRACE_CONT with it),
// and the interrupt, still pending, stops the thread right after: the
// target loses no signal that matters to it, whatever happens to hangdoc.
func (s *stopper) poll(tid int) (stopped, gone bool, err error) {
	var ws unix.WaitStatus
	for {
		wpid, err := unix.Wait4(tid, &ws, unix.WNOHANG|unix.WALL, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ECHILD:
			return false, true, nil
		case err != nil:
			return false, false, fmt.Errorf("waiting for thread %d to stop: %v", tid, err)
		case wpid == 0:
			return false, false, nil
		}
		switch {
		case ws.Exited(), ws.Signaled():
			return false, true, nil
		case ws.Stopped():
			event := int(ws>>16) & 0xff
			sig := ws.StopSignal()
			if event != 0 || sig == unix.SIGTRAP {
				// PTRACE_EVENT_STOP: our interrupt, or a group stop
				// (SIGSTOP, SIGTSTP) someone else started, which the
				// detach leaves in force.
				return true, false, nil
			}
			if sig == unix.SIGURG {
				if s.held == nil {
					s.held = map[int]unix.Signal{}
				}
				s.held[tid] = sig
				if hooks.held != nil {
					hooks.held(tid, sig)
				}
				return true, false, nil
			}
			if err := unix.PtraceCont(tid, int(sig)); err != nil {
				if err == unix.ESRCH {
					return false, true, nil
				}
				return false, false, fmt.Errorf("passing signal %v on to thread %d: %v", sig, tid, err)
			}
		default:
			return false, false, nil
		}
	}
}

// detachAll lets every stopped thread go (PTRACE_DETACH, with the signal
// it was holding if any): each resumes where it was, or stays in a group
// stop someone else made.
func detachAll(tids []int, held map[int]unix.Signal) error {
	var first error
	for _, tid := range tids {
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(tid), 0, uintptr(held[tid]), 0, 0)
		if e != 0 && e != unix.ESRCH && first == nil {
			first = fmt.Errorf("detaching from thread %d: %v", tid, e)
		}
	}
	return first
}

func seizeErr(pid, tid int, err error) error {
	switch err {
	case unix.EPERM:
		if tracer := tracerOf(pid); tracer != "" {
			return fmt.Errorf("pid %d: %w: pid %s; detach it first", pid, ErrTraced, tracer)
		}
		return fmt.Errorf("seizing thread %d of pid %d: %w", tid, pid, errPermission)
	}
	return fmt.Errorf("seizing thread %d of pid %d: %v", tid, pid, err)
}

// errPermission is replaced by sampler.ErrPermission with its hint by the
// caller (attachErr).
var errPermission = unix.EPERM

// taskIDs lists /proc/PID/task.
func taskIDs(pid int) ([]int, error) {
	tids, err := dstate.Tasks(pid)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("pid %d: %w", pid, errGone)
	}
	return tids, err
}

// process is a Go target as Delve's proc package sees it: memory it can
// read, the registers of each thread of the current stop, and no way to
// change either.
type process struct {
	// The nil interface supplies the two eBPF tracing methods, whose
	// types live in a Delve-internal package and so cannot be named
	// here; Delve calls them only to set eBPF tracepoints, which hangdoc
	// never does.
	proc.ProcessInternal

	pid   int
	bi    *proc.BinaryInfo
	entry uint64
	bps   proc.BreakpointMap
	// main is the current thread Delve was given; it stays the same
	// object across stops.
	main    *thread
	threads map[int]*thread // of the current stop; only main between stops
	// stopped is true between a stop and its detach.
	stopped bool
	iscgo   bool
	// pages caches the memory of the current stop, by page address; a
	// nil page is unreadable.
	pages map[uint64][]byte
}

func newProcess(pid int) *process {
	p := &process{
		pid:  pid,
		bi:   proc.NewBinaryInfo("linux", runtime.GOARCH, true), // attaching: no debuginfod download
		bps:  proc.NewBreakpointMap(),
		main: &thread{tid: pid},
	}
	p.main.p = p
	p.threads = map[int]*thread{pid: p.main}
	return p
}

// setStopped installs the threads of a stop, or (nil) the running state.
func (p *process) setStopped(ts []stoppedThread) {
	p.main.regs = nil
	p.main.Common().CallReturn = false
	p.pages = make(map[uint64][]byte)
	if ts == nil {
		p.stopped = false
		p.threads = map[int]*thread{p.pid: p.main}
		return
	}
	p.stopped = true
	p.threads = make(map[int]*thread, len(ts))
	for _, st := range ts {
		t := &thread{tid: st.tid, p: p, regs: st.regs}
		if st.tid == p.main.tid {
			t = p.main
			t.regs = st.regs
		}
		p.threads[st.tid] = t
	}
}

func (p *process) BinInfo() *proc.BinaryInfo           { return p.bi }
func (p *process) EntryPoint() (uint64, error)         { return p.entry, nil }
func (p *process) Breakpoints() *proc.BreakpointMap    { return &p.bps }
func (p *process) Memory() proc.MemoryReadWriter       { return p }
func (p *process) Valid() (bool, error)                { return true, nil }
func (p *process) SupportsBPF() bool                   { return false }
func (p *process) StartCallInjection() (func(), error) { return nil, errNeverWrites }
func (p *process) FollowExec(bool) error               { return nil }

func (p *process) FindThread(tid int) (proc.Thread, bool) {
	t, ok := p.threads[tid]
	return t, ok
}

func (p *process) ThreadList() []proc.Thread {
	out := make([]proc.Thread, 0, len(p.threads))
	for _, t := range p.threads {
		out = append(out, t)
	}
	return out
}

func (p *process) RequestManualStop(*proc.ContinueOnceContext) error { return errNeverWrites }

// WriteBreakpoint refuses: the breakpoints Delve sets on a new target
// (runtime.fatalpanic, runtime.throw, ...) are never planted.
func (p *process) WriteBreakpoint(*proc.Breakpoint) error { return errNeverWrites }

func (p *process) EraseBreakpoint(bp *proc.Breakpoint) error {
	return proc.NoBreakpointError{Addr: bp.Addr}
}

func (p *process) DumpProcessNotes(notes []elfwriter.Note, _ func()) (bool, []elfwriter.Note, error) {
	return false, notes, nil
}

func (p *process) MemoryMap() ([]proc.MemoryMapEntry, error) {
	return nil, proc.ErrMemoryMapNotSupported
}

// ReadMemory reads the target's memory with process_vm_readv: no ptrace
// request, no file descriptor, and no way to write. While the target is
// stopped its memory cannot change, so whole pages are kept: Delve reads
// a word at a time, and one syscall per page instead of per word is most
// of the cost of a stop.
func (p *process) ReadMemory(buf []byte, addr uint64) (int, error) {
	if !p.stopped {
		return p.readRemote(buf, addr)
	}
	n := 0
	for n < len(buf) {
		a := addr + uint64(n)
		page, err := p.page(a &^ (pageSize - 1))
		if err != nil {
			// An unreadable page (a guard page, the end of a mapping):
			// the bytes up to it may still be readable.
			m, rerr := p.readRemote(buf[n:], a)
			return n + m, rerr
		}
		n += copy(buf[n:], page[a&(pageSize-1):])
	}
	return n, nil
}

const (
	pageSize = 4096
	// maxPages bounds the cache (16 MiB); it is emptied when full.
	maxPages = 4096
)

func (p *process) page(base uint64) ([]byte, error) {
	if b, ok := p.pages[base]; ok {
		if b == nil {
			return nil, errUnreadable
		}
		return b, nil
	}
	if len(p.pages) >= maxPages {
		clear(p.pages)
	}
	b := make([]byte, pageSize)
	if _, err := p.readRemote(b, base); err != nil {
		p.pages[base] = nil
		return nil, errUnreadable
	}
	p.pages[base] = b
	return b, nil
}

var errUnreadable = errors.New("unreadable page")

func (p *process) readRemote(buf []byte, addr uint64) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(p.pid, local, remote, 0)
	if err != nil {
		return 0, fmt.Errorf("reading %d bytes at %#x: %v", len(buf), addr, err)
	}
	if n < len(buf) {
		return n, fmt.Errorf("reading %d bytes at %#x: only %d readable", len(buf), addr, n)
	}
	return n, nil
}

func (p *process) WriteMemory(uint64, []byte) (int, error) { return 0, errNeverWrites }

// thread is one thread of the current stop.
type thread struct {
	tid    int
	p      *process
	regs   proc.Registers // nil while running
	common proc.CommonThread
}

func (t *thread) Breakpoint() *proc.BreakpointState { return &proc.BreakpointState{} }
func (t *thread) ThreadID() int                     { return t.tid }
func (t *thread) BinInfo() *proc.BinaryInfo         { return t.p.bi }
func (t *thread) ProcessMemory() proc.MemoryReadWriter {
	return t.p
}
func (t *thread) SetCurrentBreakpoint(bool) error       { return nil }
func (t *thread) SoftExc() bool                         { return false }
func (t *thread) Common() *proc.CommonThread            { return &t.common }
func (t *thread) RestoreRegisters(proc.Registers) error { return errNeverWrites }
func (t *thread) SetReg(uint64, *op.DwarfRegister) error {
	return errNeverWrites
}

func (t *thread) Registers() (proc.Registers, error) {
	if t.regs == nil {
		return nil, errRunning
	}
	return t.regs, nil
}

// group is the proc.ProcessGroup of one target: it never resumes it
// (the stop's detach does) and never detaches through Delve.
type group struct{}

func (group) ContinueOnce(*proc.ContinueOnceContext) (proc.Thread, proc.StopReason, error) {
	return nil, proc.StopUnknown, errNeverWrites
}
func (group) StepInstruction(int) error { return errNeverWrites }
func (group) Detach(int, bool) error    { return nil }
func (group) Close() error              { return nil }

// entryPoint reads the target's entry point from its auxiliary vector,
// which Delve needs to place a position-independent executable.
func entryPoint(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, err
	}
	return linutil.EntryPointFromAuxv(b, 8), nil
}
