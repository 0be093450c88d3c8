package classify

import (
	"regexp"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// Threads read from dumps. A file has no CPU time, no scheduling state and
// no syscall: what says a thread runs is py-spy's active flag (where py-spy
// could read the OS thread), its +gil, or a stack that stands at a line of
// Python that calls nothing; what says it waits, and on what, is the
// library frames of its stack or the call its innermost line makes.

// dumpThread classifies a thread seen only in dumps. kind is what its
// stack's library frames say it waits in (WaitPython when they say
// nothing); moved, that its stack changed between dumps.
func (p *proc) dumpThread(h *history, kind model.WaitKind, moved bool) (Class, Why, model.WaitKind) {
	n := len(h.readings)
	last := h.last()
	call, callKind, _ := p.lineCall(last.Stack)
	if nk, fn := nativeWait(last.Stack); nk != model.WaitNone {
		// py-spy --native: the C function it waits in is on the stack.
		call, callKind = fn, nk
	}
	onCPU, ev := true, OnCPUNone
	offCPU := false
	for _, r := range h.readings {
		e := p.readingOnCPU(r)
		if e == OnCPUNone {
			onCPU = false
		}
		if e != OnCPUNone {
			ev = e
		}
		if py := r.Python; py != nil && py.ActiveRead && !py.Active && !py.OwnsGIL {
			offCPU = true
		}
	}
	switch {
	case kind == model.WaitPython && callKind != model.WaitNone:
		// Its line calls something that waits (time.sleep, sock.recv):
		// that is where it is, whatever py-spy caught at that instant.
		w := Why{Rule: WhyDumpWaitsIn, Kind: callKind, Site: call, N: n}
		if moved {
			return ClassWorking, Why{Rule: WhyStackMoved}, model.WaitNone
		}
		if callKind.Idle() {
			return ClassIdle, w, callKind
		}
		return ClassBlocked, w, callKind
	case moved:
		return ClassWorking, Why{Rule: WhyStackMoved}, model.WaitNone
	case kind != model.WaitPython:
		// The library frames name the wait.
		switch {
		case kind.Idle():
			return ClassIdle, Why{Rule: WhyParked, Kind: kind}, kind
		case n == 1:
			return ClassBlocked, Why{Rule: WhyBlockedOnce, Kind: kind}, kind
		}
		return ClassBlocked, Why{Rule: WhyBlocked, Kind: kind, N: n}, kind
	case onCPU && n == 1:
		return ClassWorking, Why{Rule: WhyDumpRunning, N: 1, OnCPU: ev}, model.WaitNone
	case onCPU:
		return ClassSpinning, Why{Rule: WhyDumpSpins, N: n, OnCPU: ev}, model.WaitNone
	case offCPU:
		return ClassBlocked, Why{Rule: WhyDumpOffCPU, Kind: kind, N: n}, kind
	case n == 1:
		return ClassBlocked, Why{Rule: WhyBlockedOnce, Kind: kind}, kind
	}
	return ClassBlocked, Why{Rule: WhyBlocked, Kind: kind, N: n}, kind
}

// readingOnCPU says what in one dump shows the thread on a CPU, if
// anything: py-spy's flags where they are evidence, else a line of pure
// Python (a thread there can only be running it, or waiting for the GIL to
// run it).
func (p *proc) readingOnCPU(r model.Thread) OnCPUEvidence {
	if py := r.Python; py != nil {
		switch {
		case py.ActiveRead && py.Active:
			return OnCPUFlag
		case py.OwnsGIL:
			return OnCPUGIL
		}
	}
	if _, _, pure := p.lineCall(r.Stack); pure {
		return OnCPULine
	}
	return OnCPUNone
}

// lineCall reads the source line the innermost frame stands at: the call
// it makes that is known to wait (and the kind of wait), or pure when it
// calls nothing at all. A C function such as time.sleep has no frame of
// its own: the line that calls it is the innermost frame's. Nothing is
// known without the source.
func (p *proc) lineCall(stack []model.Frame) (call string, kind model.WaitKind, pure bool) {
	top := pyTop(stack)
	if top < 0 {
		return "", model.WaitNone, false
	}
	f := stack[top]
	lines := p.sources[f.File]
	if f.Line < 1 || f.Line > len(lines) {
		return "", model.WaitNone, false
	}
	text := pyCode(lines[f.Line-1])
	if text == "" {
		return "", model.WaitNone, false
	}
	calls := pyCallRE.FindAllStringSubmatch(text, -1)
	// Some statements call without a parenthesis: `with lock:` enters the
	// lock, `for x in f:` reads, `import` takes the import lock; and a
	// line with an unbalanced bracket is part of a statement that goes
	// on, maybe with a call, on another line.
	found := pyImplicitCallRE.MatchString(text) || strings.Count(text, "(") != strings.Count(text, ")") ||
		strings.Count(text, "[") != strings.Count(text, "]") || strings.HasSuffix(text, "\\")
	for i := len(calls) - 1; i >= 0; i-- {
		name := calls[i][1]
		last := name[strings.LastIndexByte(name, '.')+1:]
		if pyKeywords[last] && !strings.Contains(name, ".") {
			continue
		}
		found = true
		if k, ok := pyWaitCalls[last]; ok {
			if k == model.WaitFileRead && strings.Contains(name, "stdin") {
				k = model.WaitStdin
			}
			return name, k, false
		}
	}
	return "", model.WaitNone, !found
}

// native reports a frame of native code, as py-spy --native prints it: a
// C function in a shared object ("time_sleep (libpython3.12.so.1.0)"), or
// an address.
func native(f model.Frame) bool {
	return f.Line == 0 && !strings.HasSuffix(f.File, ".py") && (strings.Contains(f.File, ".so") || strings.HasPrefix(f.Func, "0x") || f.File == "")
}

// pyTop is the index of the innermost Python frame, past the native ones
// --native puts above it; -1 for none.
func pyTop(stack []model.Frame) int {
	for i, f := range stack {
		if !native(f) {
			return i
		}
	}
	return -1
}

// pyBelow is the index of the Python frame innermost of frame k, past
// native ones; -1 for none.
func pyBelow(stack []model.Frame, k int) int {
	for i := k - 1; i >= 0; i-- {
		if !native(stack[i]) {
			return i
		}
	}
	return -1
}

// nativeWait reads the native frames above a thread's innermost Python
// frame: the libc or interpreter function it waits in, when one is known
// to wait.
func nativeWait(stack []model.Frame) (model.WaitKind, string) {
	n := pyTop(stack)
	if n < 0 {
		n = len(stack)
	}
	return nativeWaitIn(stack[:n])
}

// nativeWaitIn names the wait of native frames (innermost first): a
// library call no Python frame names (nativeLibraryWaits, wherever it
// stands: it says what the primitive under it waits for), else the
// innermost function known to wait.
func nativeWaitIn(frames []model.Frame) (model.WaitKind, string) {
	if k, fn := nativeLibraryWait(frames); k != model.WaitNone {
		return k, fn
	}
	for _, f := range frames {
		if k, ok := nativeWaits[f.Func]; ok {
			return k, f.Func
		}
	}
	return model.WaitNone, ""
}

// nativeLibraryWait names the wait of native frames by a library call
// among them (nativeLibraryWaits); WaitNone for none.
func nativeLibraryWait(frames []model.Frame) (model.WaitKind, string) {
	for _, f := range frames {
		if k, ok := nativeLibraryWaits[f.Func]; ok {
			return k, f.Func
		}
	}
	return model.WaitNone, ""
}

// nativeLibraryWaits are Python library calls that are C, so that no
// Python frame names them: queue.SimpleQueue.get (a multiprocessing
// pool's task handler waits in it) waits in a lock acquire that is not a
// Python lock's.
var nativeLibraryWaits = map[string]model.WaitKind{
	"_queue_SimpleQueue_get_impl": model.WaitQueue, "_queue_SimpleQueue_get": model.WaitQueue,
}

// nativeWaits are the C functions a native stack waits in, by name.
var nativeWaits = map[string]model.WaitKind{
	"clock_nanosleep": model.WaitSleep, "nanosleep": model.WaitSleep, "__clock_nanosleep": model.WaitSleep, "time_sleep": model.WaitSleep, "pysleep": model.WaitSleep,
	"poll": model.WaitPoll, "ppoll": model.WaitPoll, "__poll": model.WaitPoll, "select": model.WaitPoll, "__select": model.WaitPoll, "epoll_wait": model.WaitPoll,
	"accept": model.WaitAccept, "accept4": model.WaitAccept,
	"recv": model.WaitSocketRead, "recvfrom": model.WaitSocketRead, "recvmsg": model.WaitSocketRead, "__libc_recv": model.WaitSocketRead,
	"connect": model.WaitSocketConnect, "__libc_connect": model.WaitSocketConnect,
	"wait4": model.WaitChildExit, "waitpid": model.WaitChildExit, "waitid": model.WaitChildExit,
	"PyThread_acquire_lock_timed": model.WaitPythonLock, "acquire_timed": model.WaitPythonLock, "lock_PyThread_acquire_lock": model.WaitPythonLock,
	"pause": model.WaitSignal, "sigsuspend": model.WaitSignal, "sigwaitinfo": model.WaitSignal,
	"flock": model.WaitFileLock,
}

// pyCallRE finds calls: a name, dotted or not, and its opening parenthesis.
var pyCallRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*\(`)

// pyImplicitCallRE matches the statements that call without a parenthesis.
var pyImplicitCallRE = regexp.MustCompile(`^(?:async\s+)?(?:with|for|import|from|await|yield|del)\b|\bawait\b|\byield\b`)

// pyKeywords are the words a parenthesis may follow that make no call.
var pyKeywords = map[string]bool{
	"if": true, "elif": true, "while": true, "for": true, "in": true, "not": true, "and": true, "or": true,
	"return": true, "yield": true, "assert": true, "is": true, "with": true, "await": true, "lambda": true,
	"except": true, "del": true, "print": false, "else": true, "raise": true, "from": true, "as": true,
}

// pyWaitCalls are the C functions a line calls that wait, by their last
// name: the ones with no Python frame of their own, whose caller's line is
// the innermost frame. Calls that are Python code (Condition.wait,
// Queue.get, Thread.join) show in the stack and are stackKind's.
var pyWaitCalls = map[string]model.WaitKind{
	"sleep": model.WaitSleep,
	"recv":  model.WaitSocketRead, "recv_into": model.WaitSocketRead, "recvfrom": model.WaitSocketRead,
	"recvfrom_into": model.WaitSocketRead, "recvmsg": model.WaitSocketRead,
	"accept":  model.WaitAccept,
	"connect": model.WaitSocketConnect, "create_connection": model.WaitSocketConnect,
	"send": model.WaitSocketWrite, "sendall": model.WaitSocketWrite, "sendto": model.WaitSocketWrite, "sendmsg": model.WaitSocketWrite,
	"read": model.WaitFileRead, "readline": model.WaitFileRead, "readinto": model.WaitFileRead, "readlines": model.WaitFileRead,
	"write": model.WaitFileWrite, "flush": model.WaitFileWrite,
	"input":   model.WaitStdin,
	"acquire": model.WaitPythonLock,
	"select":  model.WaitPoll, "poll": model.WaitPoll,
	"waitpid": model.WaitChildExit, "wait4": model.WaitChildExit, "waitid": model.WaitChildExit,
	"pause": model.WaitSignal, "sigwait": model.WaitSignal, "sigwaitinfo": model.WaitSignal,
	"flock": model.WaitFileLock, "lockf": model.WaitFileLock,
}

// pyCode is a line of Python without its comment and the contents of its
// string literals, which may hold anything that looks like a call.
func pyCode(line string) string {
	var b strings.Builder
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
				b.WriteByte(c)
			}
		case c == '#':
			return strings.TrimSpace(b.String())
		case c == '"' || c == '\'':
			quote = c
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}
