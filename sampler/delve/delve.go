// Package delve reads a live Go process's goroutines with Delve used as a
// library: it stops the process, reads every goroutine's state, stack and
// channel waits, and lets it go, leaving it as it found it, even if
// hangdoc is killed in between (see seize.go for how).
package delve

import (
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"go/constant"
	"io"
	"io/fs"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"
	"github.com/go-delve/delve/pkg/logflags"
	"github.com/go-delve/delve/pkg/proc"
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/procstatus"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
)

// Errors checked with errors.Is, besides sampler.ErrNoProcess,
// sampler.ErrPermission, sampler.ErrZombie and sampler.ErrKernelThread.
var (
	// ErrNotGo: the executable has no Go build information.
	ErrNotGo = errors.New("not a Go program")
	// ErrNoDebugInfo: a Go binary built without DWARF (-ldflags=-w, or
	// stripped), which Delve cannot read goroutines from.
	ErrNoDebugInfo = errors.New("Go binary without DWARF debug info")
	// ErrTraced: another debugger or tracer is attached; a process has
	// at most one tracer.
	ErrTraced = errors.New("already traced by another process")
	// ErrStopped is no longer returned: a stopped process (state T) is
	// read and left stopped (see seize.go). Kept for callers that test
	// for it.
	ErrStopped = errors.New("process is stopped")
)

const (
	// maxFrames bounds each stack, as the runtime's traceback keeps 100.
	maxFrames = 100
	// firstFrames is the depth of a first, cheaper walk.
	firstFrames = 16
	// batch is how many goroutines are read between context checks.
	batch = 64
	// chanRefFrames bounds the frames whose variables are read for
	// ChanRefs: reading variables is the costly part of a dump.
	chanRefFrames = 6
	// maxSudogs bounds a select's wait list walk (a corrupt list must
	// not loop).
	maxSudogs = 256
)

// G statuses, from runtime/runtime2.go; stable since Go 1.0 (leaked and
// deadextra are new in 1.26 and only ever printed by name).
const (
	gRunnable = 1
	gSyscall  = 3
	gWaiting  = 4
	gLeaked   = 10
	gScan     = 0x1000
)

// statusWords is runtime.gStatusStrings (Go 1.26), used when the target's
// own copy cannot be read.
var statusWords = []string{0: "idle", 1: "runnable", 2: "running", 3: "syscall", 4: "waiting",
	6: "dead", 8: "copystack", 9: "preempted", 10: "leaked", 11: "waiting for cgo callback"}

// mutexFuncs are the frames whose first argument is the mutex a waiter
// waits for; their Args are read so waiters group by address.
var mutexFuncs = map[string]bool{
	"internal/sync.(*Mutex).lockSlow": true,
	"internal/sync.(*Mutex).Lock":     true,
	"sync.(*Mutex).Lock":              true,
	"sync.(*Mutex).lockSlow":          true, // before Go 1.24
	"sync.(*RWMutex).Lock":            true,
	"sync.(*RWMutex).RLock":           true,
	"sync.(*RWMutex).rLockSlow":       true,
}

// testHook, when set by a test, runs before each goroutine is read.
var testHook func(id int64)

var quietOnce sync.Once

// quiet turns off Delve's logging: by default it writes errors and
// warnings (for instance about the binary) to stderr.
func quiet() {
	quietOnce.Do(func() {
		logflags.SetLoggerFactory(func(bool, logflags.Fields, io.Writer) logflags.Logger { return discard{} })
	})
}

// Dump reads every goroutine of pid in one stop, with the default
// Options; frozen is how long the target was stopped. See Session.Dump for
// what it promises the target. The target must be a Go program with
// DWARF, not traced, and not a child of this process (this process's own
// wait for it would take the ptrace stops).
func Dump(ctx context.Context, pid int) (gs []model.Goroutine, frozen time.Duration, err error) {
	res, err := DumpWith(ctx, pid, Options{})
	if err != nil {
		return nil, res.Frozen, err
	}
	return res.Goroutines, res.Frozen, nil
}

// DumpWith is Open, one Session.Dump and Close. A caller that samples a
// target repeatedly should keep one Session instead: its DWARF is then
// loaded once.
func DumpWith(ctx context.Context, pid int, opts Options) (Result, error) {
	s, err := Open(ctx, pid, opts)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	return s.Dump(ctx)
}

const noDebugInfoHint = "goroutines unreadable, kernel evidence is still reported"

// check refuses, before any ptrace, what Delve cannot read or would harm.
func check(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return fileErr(pid, err)
	}
	status, err := procstatus.Parse(b)
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, err)
	}
	if tracer := tracerOf(pid); tracer != "" {
		return fmt.Errorf("pid %d: %w: pid %s; detach it first", pid, ErrTraced, tracer)
	}
	if status.State == 'Z' {
		return fmt.Errorf("pid %d: %w", pid, sampler.ErrZombie)
	}
	// A stopped process (state T) is read and left stopped: its threads
	// report their group stop to PTRACE_INTERRUPT and stay in it when
	// let go.
	if status.Kthread {
		return fmt.Errorf("pid %d: %w", pid, sampler.ErrKernelThread)
	}
	if status.Has&procstatus.HasTgid != 0 && status.Tgid != pid {
		return fmt.Errorf("pid %d is a thread of process %d: give the process id", pid, status.Tgid)
	}

	exe := fmt.Sprintf("/proc/%d/exe", pid)
	if _, err := buildinfo.ReadFile(exe); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return fileErr(pid, err)
		}
		return fmt.Errorf("pid %d: %w (%v)", pid, ErrNotGo, err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		return fmt.Errorf("pid %d: reading %s: %v", pid, exe, err)
	}
	defer f.Close()
	if f.Section(".debug_info") == nil && f.Section(".zdebug_info") == nil {
		return fmt.Errorf("pid %d: %w (built with -ldflags=-w or stripped): %s", pid, ErrNoDebugInfo, noDebugInfoHint)
	}
	if status.Has&procstatus.HasPPid != 0 && status.PPid == os.Getpid() {
		return fmt.Errorf("pid %d is this process's own child: its wait would take the ptrace stops meant for Delve", pid)
	}
	return nil
}

// tracerOf names the process tracing pid, "N (comm)", or "" if none.
func tracerOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	st, _ := procstatus.Parse(b)
	tracer := st.TracerPid
	if tracer == 0 {
		return ""
	}
	// TracerPid is the tracing thread; name its process.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tracer)); err == nil {
		if t, _ := procstatus.Parse(b); t.Has&procstatus.HasTgid != 0 {
			tracer = t.Tgid
		}
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", tracer))
	return fmt.Sprintf("%d (%s)", tracer, strings.TrimSpace(string(comm)))
}

func fileErr(pid int, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("pid %d: %w", pid, sampler.ErrNoProcess)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("pid %d: %w: %s", pid, sampler.ErrPermission, sampler.PermissionHint)
	}
	return fmt.Errorf("pid %d: %v", pid, err)
}

func attachErr(pid int, err error) error {
	switch {
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return fmt.Errorf("attaching to pid %d: %w: %s", pid, sampler.ErrPermission, sampler.PermissionHint)
	case errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("attaching to pid %d: %w", pid, sampler.ErrNoProcess)
	}
	var bad *proc.ErrBadBinaryInfo
	if errors.As(err, &bad) {
		return fmt.Errorf("attaching to pid %d: %w (%v): %s", pid, ErrNoDebugInfo, bad.Err, noDebugInfoHint)
	}
	return fmt.Errorf("attaching to pid %d: %v", pid, err)
}

// reader reads goroutines from a stopped target.
type reader struct {
	t           *proc.Target
	mem         proc.MemoryReadWriter
	waitReasons []string
	statuses    []string
	now         int64 // the target's runtime.nanotime clock (CLOCK_MONOTONIC)
	lay         layout
	gs          map[int64]uint64 // goid → runtime.g address
	live        int              // goroutines in runtime.allgs not dead
	system      map[uint64]bool  // G.System by start PC: it disassembles
}

// read reads the goroutines of the stopped target, a page at a time,
// until the list ends, the bound on goroutines is reached, or until (the
// stop bound) passes.
func (s *Session) read(ctx context.Context, until time.Time, now func() time.Time, each func(int64)) (Result, error) {
	t := s.t
	r := &reader{t: t, mem: t.Memory(), statuses: s.statuses, waitReasons: s.waitReasons, lay: s.lay, system: s.system}
	if scope, err := proc.ThreadScope(t, t.CurrentThread()); err == nil {
		// The strings come from the target so they match its traceback
		// whatever its Go version; they never change, so once is enough.
		if len(s.waitReasons) == 0 {
			s.waitReasons = stringsVar(scope, "runtime.waitReasonStrings")
			if st := stringsVar(scope, "runtime.gStatusStrings"); len(st) > 0 {
				s.statuses = st
			}
			r.waitReasons, r.statuses = s.waitReasons, s.statuses
		}
		r.gs, r.live = r.gAddrs(scope)
	}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
		r.now = ts.Nano()
	}

	limit := s.opts.maxGoroutines()
	res := Result{Total: r.live}
	for start := 0; start >= 0; {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		gs, next, err := proc.GoroutinesInfo(t, start, batch)
		if err != nil {
			return Result{}, err
		}
		for _, g := range gs {
			if g.Unreadable != nil || r.dead(g) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return Result{}, err
			}
			if now().After(until) {
				return res, &MaxStopError{PID: s.pid, Read: len(res.Goroutines), Total: max(r.live, len(res.Goroutines))}
			}
			if len(res.Goroutines) >= limit {
				res.Cut = true
				return res, nil
			}
			if each != nil {
				each(g.ID)
			}
			res.Goroutines = append(res.Goroutines, r.goroutine(g))
		}
		start = next
		// Delve keeps every G it has read (with its variables) until
		// its caches are cleared: a page at a time, hangdoc's memory
		// grows with what it keeps, not with what Delve read.
		t.ClearCaches()
	}
	if len(res.Goroutines) == 0 {
		return Result{}, errors.New("no readable goroutine")
	}
	if res.Total < len(res.Goroutines) {
		res.Total = len(res.Goroutines)
	}
	return res, nil
}

func (r *reader) goroutine(g *proc.G) model.Goroutine {
	out := model.Goroutine{ID: g.ID, State: r.state(g), Stack: []model.Frame{}}
	status := g.Status &^ gScan
	if (status == gWaiting || status == gSyscall) && g.WaitSince != 0 && r.now > g.WaitSince {
		out.WaitMinutes = int((r.now - g.WaitSince) / int64(time.Minute))
	}
	threadID := 0
	if g.Thread != nil {
		threadID = g.Thread.ThreadID()
		out.Thread = threadID
	}
	system, ok := r.system[g.StartPC]
	if !ok {
		system = g.System(r.t)
		r.system[g.StartPC] = system
	}
	if g.GoPC != 0 && g.ID != 1 {
		if loc := g.Go(); loc.Fn != nil {
			out.CreatedBy = &model.Frame{Func: funcName(loc.Fn.Name), File: loc.File, Line: loc.Line}
		}
	}

	// Delve allocates room for every frame asked for (304 bytes each)
	// before it walks: most stacks are short, so a short walk first.
	frames, _ := proc.GoroutineStacktrace(r.t, g, firstFrames, 0)
	if len(frames) > firstFrames {
		frames, _ = proc.GoroutineStacktrace(r.t, g, maxFrames, 0)
	}
	for i, f := range frames {
		fr := model.Frame{Func: "?", File: f.Call.File, Line: f.Call.Line}
		if f.Call.Fn != nil {
			fr.Func = funcName(f.Call.Fn.Name)
			if mutexFuncs[f.Call.Fn.Name] {
				fr.Args = r.args(g, threadID, frames[i:])
			}
		}
		out.Stack = append(out.Stack, fr)
		if f.Err != nil {
			break
		}
	}

	if !system {
		out.Stack = showFrames(out.Stack)
	}

	if gb := r.gStruct(g.ID); gb != nil {
		out.LockedToThread = r.lay.lockedm.uint(gb) != 0
		out.CreatorID = int64(r.lay.parentGoid.uint(gb))
		if blockedOnChan(out.State) {
			out.WaitChans = r.waitChans(r.lay.waiting.uint(gb))
		}
	}
	if blockedOnChan(out.State) {
		out.ChanRefs = r.chanRefs(g, threadID, frames)
	}
	return out
}

// showFrames drops the frames Go's own traceback hides from a user
// goroutine's stack (runtime.showframe): the runtime's unexported
// functions, runtime.gopark, runtime.chanrecv, runtime.goexit and the like.
// Delve's stacks then read, and group, like the same goroutine's in a
// SIGQUIT or pprof dump. A stack of nothing else is kept whole.
func showFrames(stack []model.Frame) []model.Frame {
	out := stack[:0:0]
	for _, f := range stack {
		rest, ok := strings.CutPrefix(f.Func, "runtime.")
		if ok && (rest == "" || rest[0] < 'A' || rest[0] > 'Z') {
			continue
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return stack
	}
	return out
}

// gAddrs maps goroutine ids to runtime.g addresses through runtime.allgs
// (Delve's G does not say where its runtime.g is), and counts the live
// ones: one read per goroutine, of the few words from goid to the status.
func (r *reader) gAddrs(scope *proc.EvalScope) (map[int64]uint64, int) {
	if !r.lay.goid.ok {
		return nil, 0
	}
	v, err := scope.EvalExpression("runtime.allgs", proc.LoadConfig{})
	if err != nil || v.Unreadable != nil || v.Kind != reflect.Slice || v.Len <= 0 || v.Len > 1<<24 {
		return nil, 0
	}
	ptr := int64(r.t.BinInfo().Arch.PtrSize())
	buf := make([]byte, ptr*v.Len)
	if n, err := r.mem.ReadMemory(buf, v.Base); err != nil || n != len(buf) {
		return nil, 0
	}
	lo, hi := r.lay.goid.off, r.lay.goid.off+r.lay.goid.size
	st := r.lay.status
	if st.ok && st.off >= lo-64 && st.off+st.size <= hi+64 {
		lo, hi = min(lo, st.off), max(hi, st.off+st.size)
	} else {
		st.ok = false
	}
	m := make(map[int64]uint64, v.Len)
	live := 0
	words := make([]byte, hi-lo)
	for i := range v.Len {
		addr := decode(buf[ptr*i : ptr*(i+1)])
		if n, err := r.mem.ReadMemory(words, addr+uint64(lo)); err != nil || n != len(words) {
			continue
		}
		m[int64(decode(words[r.lay.goid.off-lo : hi-lo][:r.lay.goid.size]))] = addr
		if st.ok {
			if status := decode(words[st.off-lo:][:st.size]) &^ gScan; status != proc.Gdead {
				live++
			}
		}
	}
	return m, live
}

// gStruct reads goroutine id's runtime.g, nil when unknown.
func (r *reader) gStruct(id int64) []byte {
	addr, ok := r.gs[id]
	if !ok || r.lay.gSize <= 0 {
		return nil
	}
	b := make([]byte, r.lay.gSize)
	if n, err := r.mem.ReadMemory(b, addr); err != nil || n != len(b) {
		return nil
	}
	return b
}

// state is the goroutine's status as the traceback header prints it:
// the wait reason of a waiting goroutine, else the status word.
func (r *reader) state(g *proc.G) string {
	status := g.Status &^ gScan
	s := "???"
	if status < uint64(len(r.statuses)) && r.statuses[status] != "" {
		s = r.statuses[status]
	}
	if (status == gWaiting || status == gLeaked) && g.WaitReason != 0 {
		s = "unknown wait reason"
		if g.WaitReason > 0 && g.WaitReason < int64(len(r.waitReasons)) {
			s = r.waitReasons[g.WaitReason]
		}
	}
	if status == gLeaked {
		s += " (leaked)"
	}
	return s
}

// dead reports what the traceback skips: free Gs, and the Gs kept for cgo
// callbacks on threads Go did not create.
func (r *reader) dead(g *proc.G) bool {
	status := g.Status &^ gScan
	if status == proc.Gdead {
		return true
	}
	if status < uint64(len(r.statuses)) {
		s := r.statuses[status]
		return s == "dead" || s == "waiting for cgo callback"
	}
	return false
}

func blockedOnChan(state string) bool {
	return strings.HasPrefix(state, "chan ") || state == "select" || state == "select (durable)" || state == "select (synctest)"
}

// args formats a frame's arguments as the traceback does, one word per
// scalar: "(0xc000012088, 0x1)". Words Delve cannot read are "_".
func (r *reader) args(g *proc.G, threadID int, frames []proc.Stackframe) string {
	scope := proc.FrameToScope(r.t, r.t.Memory(), g, threadID, frames...)
	vars, err := scope.FunctionArguments(proc.LoadConfig{})
	if err != nil {
		return ""
	}
	words := make([]string, 0, len(vars))
	for _, v := range vars {
		if v.Flags&proc.VariableReturnArgument != 0 {
			continue
		}
		words = append(words, word(v))
	}
	return "(" + strings.Join(words, ", ") + ")"
}

func word(v *proc.Variable) string {
	if v.Unreadable != nil {
		return "_"
	}
	switch v.Kind {
	case reflect.Ptr, reflect.UnsafePointer:
		return hex(pointer(v))
	case reflect.Chan, reflect.Map, reflect.Func:
		return hex(v.Base)
	case reflect.Struct, reflect.Array, reflect.Slice, reflect.String, reflect.Interface, reflect.Complex64, reflect.Complex128:
		return "{...}"
	}
	if v.Value == nil {
		return "_"
	}
	switch v.Value.Kind() {
	case constant.Bool:
		if constant.BoolVal(v.Value) {
			return "0x1"
		}
		return "0x0"
	case constant.Int:
		if n, ok := constant.Uint64Val(v.Value); ok {
			return hex(n)
		}
		n, _ := constant.Int64Val(v.Value)
		return hex(uint64(n))
	}
	return "_"
}

// waitChans walks the goroutine's sudog list (g.waiting, linked by
// waitlink: one sudog for a send or receive, one per case for a select)
// and returns each sudog's channel.
func (r *reader) waitChans(sudog uint64) []string {
	if !r.lay.c.ok || !r.lay.waitlink.ok {
		return nil
	}
	var chans []string
	b := make([]byte, r.lay.sudogSize)
	for n := 0; sudog != 0 && n < maxSudogs; n++ {
		if k, err := r.mem.ReadMemory(b, sudog); err != nil || k != len(b) {
			break
		}
		if c := r.lay.c.uint(b); c != 0 {
			chans = appendNew(chans, hex(c))
		}
		sudog = r.lay.waitlink.uint(b)
	}
	return chans
}

// chanRefs returns the channels held in the chan-typed arguments and
// locals (closure captures included) of the goroutine's first non-runtime
// frames.
func (r *reader) chanRefs(g *proc.G, threadID int, frames []proc.Stackframe) []string {
	var refs []string
	seen := 0
	for i, f := range frames {
		if f.Call.Fn == nil || strings.HasPrefix(f.Call.Fn.Name, "runtime.") {
			continue
		}
		if seen++; seen > chanRefFrames {
			break
		}
		scope := proc.FrameToScope(r.t, r.t.Memory(), g, threadID, frames[i:]...)
		// Delve gives a channel variable's hchan address (Base) without
		// loading its value.
		vars, _ := scope.Locals(0, "")
		if isClosure(f.Call.Fn.Name) {
			// The compiler declares a captured variable at its first use
			// in the closure, so Delve hides one used only after the
			// current line; it holds its value since the closure's entry.
			all, _ := scope.Locals(localsNoDeclLineCheck, "")
			for _, v := range all {
				if v.DeclLine > int64(f.Call.Line) {
					vars = append(vars, v)
				}
			}
		}
		for _, v := range vars {
			if v.Unreadable == nil && v.Kind == reflect.Chan && v.Base != 0 {
				refs = appendNew(refs, hex(v.Base))
			}
		}
	}
	return refs
}

// localsNoDeclLineCheck is Delve's unexported localsFlags bit (v1.27.2,
// pkg/proc/eval.go) that keeps variables declared after the current line.
// TestDump's closure-captured channel fails if it changes meaning.
const localsNoDeclLineCheck = 1 << 1

// isClosure reports a function literal or go-statement wrapper:
// "main.main.func1", "main.main.gowrap2", "pkg.(*T).run.func3.1".
func isClosure(name string) bool {
	for _, part := range strings.Split(name[strings.LastIndexByte(name, '/')+1:], ".")[1:] {
		for _, prefix := range []string{"func", "gowrap"} {
			if n, ok := strings.CutPrefix(part, prefix); ok && n != "" && strings.Trim(n, "0123456789") == "" {
				return true
			}
		}
	}
	return false
}

// layout is where the fields read from runtime.g and runtime.sudog
// are, from the target's DWARF: read straight from memory they cost one
// read per goroutine instead of an expression evaluation each.
type layout struct {
	gSize                                      int64
	goid, lockedm, parentGoid, waiting, status field
	sudogSize                                  int64
	c, waitlink                                field
}

// field is a word inside a struct; ok is false when the type lacks it.
type field struct {
	off, size int64
	ok        bool
}

// uint reads the field from the struct's bytes b.
func (f field) uint(b []byte) uint64 {
	if !f.ok || f.off+f.size > int64(len(b)) {
		return 0
	}
	return decode(b[f.off : f.off+f.size])
}

// decode reads a little-endian word of 1, 2, 4 or 8 bytes (every
// architecture Delve supports on Linux is little-endian).
func decode(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func layoutOf(bi *proc.BinaryInfo) layout {
	var l layout
	if g := structType(bi, "runtime.g"); g != nil {
		l.gSize = g.ByteSize
		l.goid = wordField(g, "goid")
		l.lockedm = wordField(g, "lockedm")
		l.parentGoid = wordField(g, "parentGoid")
		l.waiting = wordField(g, "waiting")
		l.status = wordField(g, "atomicstatus")
	}
	if s := structType(bi, "runtime.sudog"); s != nil {
		l.sudogSize = s.ByteSize
		l.c = wordField(s, "c")
		l.waitlink = wordField(s, "waitlink")
	}
	return l
}

func structType(bi *proc.BinaryInfo, name string) *godwarf.StructType {
	t, err := bi.FindType(name)
	if err != nil {
		return nil
	}
	st, _ := godwarf.ResolveTypedef(t).(*godwarf.StructType)
	return st
}

// wordField finds a pointer or integer field of st. Go 1.26 wraps some
// runtime pointers (sudog.c is a maybeTraceableChan) in a struct whose
// uintptr field vu holds the address: such a struct is followed in.
func wordField(st *godwarf.StructType, name string) field {
	for _, f := range st.Field {
		if f.Name != name {
			continue
		}
		return wordAt(f.ByteOffset, f.Type, 0)
	}
	return field{}
}

func wordAt(off int64, t godwarf.Type, depth int) field {
	t = godwarf.ResolveTypedef(t)
	switch t := t.(type) {
	case *godwarf.StructType:
		if depth > 3 || len(t.Field) == 0 {
			return field{}
		}
		for _, f := range t.Field {
			if f.Name == "vu" {
				return wordAt(off+f.ByteOffset, f.Type, depth+1)
			}
		}
		// An embedded wrapper (atomic.Uint32 is {noCopy; v uint32}): its
		// first field that has a size.
		for _, f := range t.Field {
			if f.Type != nil && f.Type.Size() > 0 {
				return wordAt(off+f.ByteOffset, f.Type, depth+1)
			}
		}
		return field{}
	case *godwarf.PtrType, *godwarf.UintType, *godwarf.IntType:
		if n := t.Size(); n == 1 || n == 2 || n == 4 || n == 8 {
			return field{off: off, size: n, ok: true}
		}
	}
	return field{}
}

// stringsVar reads a global [N]string of the target.
func stringsVar(scope *proc.EvalScope, name string) []string {
	v, err := scope.EvalExpression(name, proc.LoadConfig{MaxStringLen: 128, MaxArrayValues: 512})
	if err != nil || v.Unreadable != nil || v.Kind != reflect.Array {
		return nil
	}
	out := make([]string, len(v.Children))
	for i, c := range v.Children {
		if c.Kind == reflect.String && c.Value != nil {
			out[i] = constant.StringVal(c.Value)
		}
	}
	return out
}

// pointer is the address a pointer variable holds.
func pointer(v *proc.Variable) uint64 {
	if v.Unreadable != nil {
		return 0
	}
	switch v.Kind {
	case reflect.Ptr, reflect.UnsafePointer:
		if len(v.Children) == 1 {
			return v.Children[0].Addr
		}
	}
	return 0
}

// funcName spells a function as the traceback does: generic shapes as
// "[...]", runtime.gopanic as "panic".
func funcName(name string) string {
	if name == "runtime.gopanic" {
		return "panic"
	}
	if i := strings.IndexByte(name, '['); i >= 0 {
		if j := strings.LastIndexByte(name, ']'); j > i {
			return name[:i] + "[...]" + name[j+1:]
		}
	}
	return name
}

func hex(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func appendNew(s []string, x string) []string {
	for _, y := range s {
		if y == x {
			return s
		}
	}
	return append(s, x)
}

// discard is a Delve logger that drops everything.
type discard struct{}

func (discard) Debugf(string, ...any) {}
func (discard) Infof(string, ...any)  {}
func (discard) Warnf(string, ...any)  {}
func (discard) Errorf(string, ...any) {}
func (discard) Debug(...any)          {}
func (discard) Info(...any)           {}
func (discard) Warn(...any)           {}
func (discard) Error(...any)          {}
