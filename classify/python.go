package classify

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// The Python adapter: threads whose stacks stand at one `with lock:` line
// wait to enter that block, and a thread whose stack is inside the block
// holds the lock. The kernel cannot say it: a threading.Lock records no
// owner. It also finds the pools of workers parked in queue.get().

// pythonLocks names the Python locks threads wait for and who holds them,
// frame by frame (see holders.go): where each waiter takes a lock — a
// `with X:` or X.acquire() line, past the threading module's own lock
// frames — and what each frame of every thread holds, from the source
// (file path → lines, line 1 first) when the recording has it, else by
// the site.
func (p *proc) pythonLocks(sources map[string][]string) {
	var waits []lockWait
	var holds []lockHold
	files := map[string]*pyFile{} // each source read for the rules once
	fileOf := func(file string, lines []string) *pyFile {
		pf, ok := files[file]
		if !ok {
			pf = newPyFile(lines)
			files[file] = pf
		}
		return pf
	}
	for i := range p.threads {
		t := &p.threads[i]
		if len(t.Stack) == 0 || t.Class == ClassExited {
			continue
		}
		// With kernel evidence the waiter must be in futex(); a stack from
		// a file has none to check.
		// A wait the library table names (Condition.wait, Event.wait, a
		// queue, a join, a future) waits on a lock its own thread took to
		// sleep on, which another thread's notify releases: no holder.
		waiting := (t.Class == ClassBlocked || t.Class == ClassIdle) && (!t.State.Known() || t.Syscall.Name == "futex") && !libraryNamed(t.Wait)
		wait := -1
		// The condition a frame waits on in Condition.wait is released
		// while it waits: the caller's with-block does not hold it then.
		released := map[int]string{}
		for k, f := range t.Stack {
			if isConditionWait(f) && k+1 < len(t.Stack) {
				if lines := sources[t.Stack[k+1].File]; lines != nil {
					if m := pyWaitCallRE.FindStringSubmatch(lineAt(lines, t.Stack[k+1].Line)); m != nil {
						released[k+1] = m[1]
					}
				} else {
					released[k+1] = "*"
				}
			}
		}
		for k, f := range t.Stack {
			if native(f) {
				continue // py-spy --native's C frames: the Python ones say where
			}
			lines := sources[f.File]
			fn := pyFuncAt(lines, f.Line)
			if fn == nil && f.Func == "<module>" && lines != nil {
				fn = pyModuleFunc // a script's top-level code
			}
			ref := lockRef{fn: f.Func + "@" + f.File, line: f.Line}
			if waiting && wait < 0 {
				if isConditionWait(f) || strings.HasSuffix(f.File, "threading.py") && !isLockMachinery(f) {
					// A condition, an event, a join: a wait on something
					// that is not a lock.
					waiting = false
				} else if items := pyLockingAt(lines, f.Line); len(items) > 0 {
					w := p.pyLockRef(t, k, fileOf(f.File, lines), fn, items[0], ref)
					if addr, ok := model.FutexWait(t.Syscall); ok {
						w.keys = append([]string{"futex:" + model.FutexKey(addr)}, w.keys...)
					}
					waits = append(waits, lockWait{a: t, frame: k, lock: w})
					wait = k
				} else if k == pyTop(t.Stack) && isLockMachinery(f) {
					continue // threading's own frames: the wait is their caller's
				} else if prev := pyBelow(t.Stack, k); lines == nil && prev >= 0 && isLockMachinery(t.Stack[prev]) {
					// No source: the caller of the lock frames waits at
					// its line, as far as the site can tell.
					waits = append(waits, lockWait{a: t, frame: k, lock: ref})
					wait = k
				} else if lines == nil && k == pyTop(t.Stack) && reentered(t.Stack, k) {
					// No source, but the function it waits in is on its
					// stack again, further out, at another line, through
					// other calls (a signal handler, a callback):
					// re-entered, it waits at its line for what its outer
					// frame took there.
					waits = append(waits, lockWait{a: t, frame: k, lock: ref})
					wait = k
				} else {
					waiting = false
				}
			}
			if strings.HasSuffix(f.File, "threading.py") {
				continue // the module's own locks are its business
			}
			if lines == nil {
				if released[k] != "*" {
					holds = append(holds, lockHold{a: t, frame: k, lock: ref})
				}
				continue
			}
			held := fileOf(f.File, lines).heldAt(f.Line, fn)
			if k != wait {
				// Inside the body of a one-line `with X: call()`: the
				// frame that is not waiting to enter it has entered it.
				held = append(held, pyInlineHeld(lines, f.Line)...)
			}
			for _, x := range held {
				if released[k] == x {
					continue
				}
				holds = append(holds, lockHold{a: t, frame: k, lock: p.pyLockRef(t, k, fileOf(f.File, lines), fn, x, ref)})
			}
		}
	}
	if len(waits) == 0 {
		return
	}
	groups := groupWaits(waits, func(lockWait) LockKind { return LockPython })
	locks := findHolders(p.pid, groups, holds, nil)
	for gi := range locks {
		l := &locks[gi]
		w := groups[gi].waits[0]
		// The id a lock goes by: the futex its waiters share, else the
		// line they wait at.
		l.ID = fmt.Sprintf("with:%s:%d", w.a.Stack[w.frame].File, w.a.Stack[w.frame].Line)
		for _, k := range groups[gi].keys {
			if strings.HasPrefix(k, "futex:") {
				l.ID, l.Address = k, strings.TrimPrefix(k, "futex:")
				break
			}
		}
		if !strings.HasPrefix(l.ID, "futex:") {
			l.Address = strings.TrimPrefix(l.ID, "with:")
		}
		// Two locks taken at one line (a parameter's, two objects) are
		// told apart.
		for n, base := 2, l.ID; slices.ContainsFunc(locks[:gi], func(o Lock) bool { return o.ID == l.ID }); n++ {
			l.ID = fmt.Sprintf("%s#%d", base, n)
		}
		if l.Basis.Self && len(l.Basis.Reentry) > 0 {
			l.Basis.Handler = signalHandler(l.Basis.Reentry, sources)
		}
		p.attachPythonLock(l)
	}
	p.sortLocks()
}

// reentered reports a frame whose function stands again further out on
// the stack, at another line, with calls of other functions between the
// two (a plain recursion is not a re-entry).
func reentered(stack []model.Frame, k int) bool {
	f := stack[k]
	if strings.HasSuffix(f.File, "threading.py") {
		return false
	}
	other := false
	for _, o := range stack[k+1:] {
		if o.Func == f.Func && o.File == f.File {
			return other && o.Line != f.Line
		}
		other = other || !native(o)
	}
	return false
}

// pySignalRE is a handler's registration: "signal.signal(signal.SIGHUP,
// run_sighup)".
var pySignalRE = regexp.MustCompile(`(?:^|[^\w.])(?:signal\.)?signal\(\s*(?:signal\.)?(SIG\w+)\s*,\s*([A-Za-z_][\w.]*)\s*\)`)

// signalHandler finds, among the calls by which a thread came back to a
// lock, one that the sources register as a signal handler: in the
// handler's own file first, then in the others.
func signalHandler(calls []model.Frame, sources map[string][]string) *SignalHandler {
	files := slices.Sorted(maps.Keys(sources))
	for _, f := range calls {
		name := f.Func
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		for _, file := range append([]string{f.File}, files...) {
			for i, l := range sources[file] {
				m := pySignalRE.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				reg := m[2]
				if j := strings.LastIndexByte(reg, '.'); j >= 0 {
					reg = reg[j+1:]
				}
				if reg == name {
					return &SignalHandler{Func: f.Func, Signal: m[1], File: file, Line: i + 1}
				}
			}
		}
	}
	return nil
}

// pyWaitCallRE is a call of a condition's wait: "self.not_empty.wait()".
var pyWaitCallRE = regexp.MustCompile(`([A-Za-z_][\w.]*)\.wait(?:_for)?\(`)

func lineAt(lines []string, n int) string {
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

// isConditionWait reports a frame waiting in Condition.wait: it has
// released the condition's lock and waits to be notified.
func isConditionWait(f model.Frame) bool {
	return strings.HasSuffix(f.File, "threading.py") && (f.Func == "wait" || f.Func == "wait_for" || strings.HasSuffix(f.Func, "Condition.wait") || strings.HasSuffix(f.Func, "Condition.wait_for"))
}

// isLockMachinery reports a frame of the threading module taking a lock for
// its caller: Condition.__enter__, Semaphore.acquire and the like.
func isLockMachinery(f model.Frame) bool {
	if !strings.HasSuffix(f.File, "threading.py") {
		return false
	}
	return strings.HasSuffix(f.Func, "__enter__") || strings.HasSuffix(f.Func, "acquire")
}

// pyLockRef names a lock expression of a Python frame as exactly as its
// source and py-spy's --locals allow.
func (p *proc) pyLockRef(t *Actor, k int, pf *pyFile, fn *pyFunc, expr string, at lockRef) lockRef {
	lines := pf.lines
	r := at
	r.text, r.sourced = expr, true
	expr = pf.pyAlias(fn, expr) // a Condition is named by the lock it is built over
	root, path, _ := strings.Cut(expr, ".")
	if a := varAddr(t, k, root); a != "" {
		if path == "" {
			r.keys = append(r.keys, "addr:"+a)
		} else {
			r.keys = append(r.keys, "obj:"+a+":"+path)
		}
	}
	file := t.Stack[k].File
	switch sc, _ := pyScope(lines, fn, expr); sc {
	case scopeReceiver:
		if fn.class != "" {
			r.keys = append(r.keys, "field:"+file+":"+fn.class+"."+path)
		}
	case scopeGlobal:
		r.keys = append(r.keys, "global:"+file+":"+expr)
	}
	return r
}

// varAddr is the address of the object a frame's variable names, from
// py-spy's --locals; "" when unknown.
func varAddr(t *Actor, frame int, name string) string { return model.VarOf(t.Vars, frame, name) }

// attachPythonLock records a Python lock: it takes the place of a futex
// group with the same waiters, and its waiters wait for it.
func (p *proc) attachPythonLock(l *Lock) {
	for i := 0; i < len(p.locks); i++ {
		f := &p.locks[i]
		if f.Kind == LockFutex && f.Holder == nil && slices.ContainsFunc(f.Waiters, func(r Ref) bool { return slices.Contains(l.Waiters, r) }) {
			p.locks = append(p.locks[:i], p.locks[i+1:]...)
			i--
		}
	}
	p.locks = append(p.locks, *l)
	for _, r := range l.Waiters {
		if t := p.byTID[r.TID]; t != nil {
			t.WaitsFor = l.ID
			if t.Class == ClassIdle {
				t.Class, t.Why = ClassBlocked, Why{Rule: WhyWithBlock, Site: strings.TrimPrefix(l.ID, "with:")}
				if w := p.waitOf(r.TID); w == nil {
					p.waits = append(p.waits, Wait{From: r, Kind: model.WaitLock})
				}
			}
		}
	}
	for i := range p.waits {
		w := &p.waits[i]
		if slices.Contains(l.Waiters, w.From) {
			w.Kind, w.Resource, w.To, w.Lock = model.WaitLock, l.ID, l.Holder, l.ID
			w.WithSite = strings.TrimPrefix(l.ID, "with:")
			if !strings.HasPrefix(l.ID, "with:") {
				w.WithSite = ""
			}
		}
	}
	if l.Holder != nil {
		if t := p.byTID[l.Holder.TID]; t != nil && !slices.Contains(t.Holds, l.ID) {
			t.Holds = append(t.Holds, l.ID)
		}
	}
}

// reindexLocks points lockOf at the locks again after they moved.
func (p *proc) reindexLocks() {
	clear(p.lockOf)
	for i := range p.locks {
		for _, w := range p.locks[i].Waiters {
			p.lockOf[w.TID] = &p.locks[i]
		}
	}
}

// sortLocks puts the locks with the most waiters first.
func (p *proc) sortLocks() {
	slices.SortFunc(p.locks, func(a, b Lock) int {
		return cmp.Or(cmp.Compare(len(b.Waiters), len(a.Waiters)), cmp.Compare(a.Address, b.Address))
	})
	p.reindexLocks()
}

// blockEnd is the last line of the block a `with …:` at line opens: the
// last line indented deeper than it before one that is not.
func blockEnd(lines []string, line int) int {
	indent := indentOf(lines[line-1])
	end := line
	for i := line; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if indentOf(l) <= indent {
			break
		}
		end = i + 1
	}
	return end
}

func indentOf(s string) int {
	n := 0
	for _, r := range s {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 8
		default:
			return n
		}
	}
	return n
}

// inFrame reports whether a stack passes through func in a file ending so.
func inFrame(stack []model.Frame, fn, fileSuffix string) bool {
	return slices.ContainsFunc(stack, func(f model.Frame) bool {
		// py-spy names methods bare (get) or, on newer Pythons, qualified
		// (Queue.get).
		return (f.Func == fn || strings.HasSuffix(f.Func, "."+fn)) && strings.HasSuffix(f.File, fileSuffix)
	})
}

// threadPool recognises a pool of workers parked in queue.get() with no
// thread left that could feed them: every thread with a stack is either in
// queue.get() or in a wait of its own (the main thread joining, a sleep),
// none works and none is blocked.
func (p *proc) threadPool() []Ref {
	var pool []Ref
	for i := range p.threads {
		t := &p.threads[i]
		switch {
		case t.Class == ClassWorking || t.Class == ClassSpinning || t.Class == ClassBlocked:
			return nil
		case len(t.Stack) == 0:
		case inFrame(t.Stack, "get", "queue.py"):
			pool = append(pool, t.Ref)
		}
	}
	if len(pool) < 2 {
		return nil
	}
	return pool
}

// poolJoiners are the threads outside a thread pool that wait in a join
// (Thread.join): the main thread joining the workers, typically.
func (p *proc) poolJoiners(pool []Ref) []Ref {
	var out []Ref
	for i := range p.threads {
		t := &p.threads[i]
		if slices.Contains(pool, t.Ref) || t.Class == ClassExited || len(t.Stack) == 0 {
			continue
		}
		if inFrame(t.Stack, "join", "threading.py") || inFrame(t.Stack, "_wait_for_tstate_lock", "threading.py") {
			out = append(out, t.Ref)
		}
	}
	return out
}

// stackKind names what a Python thread waits in from its stack alone, for
// dumps read from files: the innermost frames of the standard library say
// it (a C call such as time.sleep or lock.acquire shows as its caller).
func stackKind(stack []model.Frame) model.WaitKind {
	if len(stack) > 0 && condEnter.match(stack[0]) {
		return model.WaitPythonLock // a Condition's lock, taken
	}
	if k, _ := libraryWait(model.RuntimePython, stack); k != model.WaitNone {
		return k
	}
	switch {
	case inFrame(stack, "get", "queue.py"):
		return model.WaitQueue
	case inFrame(stack, "_wait_for_tstate_lock", "threading.py") || inFrame(stack, "join", "threading.py"):
		return model.WaitThreadExit
	case inFrame(stack, "wait", "subprocess.py") || inFrame(stack, "communicate", "subprocess.py"):
		return model.WaitChildExit
	case inFrame(stack, "select", "selectors.py") || inFrame(stack, "poll", "selectors.py"):
		return model.WaitPoll
	case inFrame(stack, "accept", "socket.py"):
		return model.WaitAccept
	case inFrame(stack, "readinto", "socket.py") || inFrame(stack, "recv", "ssl.py") || inFrame(stack, "read", "ssl.py"):
		return model.WaitSocketRead
	case inFrame(stack, "wait", "threading.py"):
		return model.WaitCondition
	case inFrame(stack, "acquire", "threading.py"):
		return model.WaitPythonLock
	}
	return model.WaitPython
}
