package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// withSite is where threads wait to enter a `with lock:` block.
type withSite struct {
	file, fn string
	line     int
	end      int // last line of the block
	waiters  []int
	holders  []int
}

// pythonLocks names the holders of Python locks from the source: threads
// whose innermost frame is the same `with …:` line wait to enter that block,
// and a thread whose stack is inside the block holds the lock. The kernel
// cannot say it: a threading.Lock records no owner.
func pythonLocks(pid int, d *Diagnosis, byTID map[int]*Thread, sources map[string][]string) {
	sites := map[string]*withSite{}
	for i := range d.Threads {
		t := &d.Threads[i]
		// With kernel evidence the waiter must be in futex(); a stack from
		// a file has none to check.
		if len(t.Stack) == 0 || (t.Class != ClassBlocked && t.Class != ClassIdle) || (t.State != "" && (t.Syscall == nil || t.Syscall.Name != "futex")) {
			continue
		}
		top := t.Stack[0]
		lines := sources[top.File]
		if top.Line < 1 || top.Line > len(lines) {
			continue
		}
		text := strings.TrimSpace(lines[top.Line-1])
		if !strings.HasPrefix(text, "with ") || !strings.HasSuffix(text, ":") {
			continue
		}
		key := fmt.Sprintf("%s:%d", top.File, top.Line)
		site := sites[key]
		if site == nil {
			site = &withSite{file: top.File, fn: top.Func, line: top.Line, end: blockEnd(lines, top.Line)}
			sites[key] = site
		}
		site.waiters = append(site.waiters, t.TID)
	}
	keys := make([]string, 0, len(sites))
	for k := range sites {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		site := sites[k]
		for _, t := range d.Threads {
			if slices.Contains(site.waiters, t.TID) {
				continue
			}
			for _, f := range t.Stack {
				if f.File == site.file && f.Func == site.fn && f.Line > site.line && f.Line <= site.end {
					site.holders = append(site.holders, t.TID)
					break
				}
			}
		}
		attachPythonLock(pid, d, byTID, site)
	}
}

// attachPythonLock records a with-site as a lock: the futex group the
// waiters share, if there is one, gains the holder; otherwise a lock of its
// own is added.
func attachPythonLock(pid int, d *Diagnosis, byTID map[int]*Thread, site *withSite) {
	where := fmt.Sprintf("%s:%d", site.file, site.line)
	basis := fmt.Sprintf("source: with-block at %s (lines %d-%d of %s())", where, site.line, site.end, site.fn)
	var holder *Ref
	switch len(site.holders) {
	case 0:
		basis += "; no thread's stack is inside the block, so no holder is named"
	case 1:
		holder = &Ref{PID: pid, TID: site.holders[0]}
		basis += fmt.Sprintf("; tid %d's stack is inside it", site.holders[0])
	default:
		basis += fmt.Sprintf("; %d threads' stacks are inside it (%v), so no single holder is named", len(site.holders), site.holders)
	}
	// Do the waiters share one futex word, and is the holder not among its
	// waiters? Then the kernel agrees.
	var lock *Lock
	for i := range d.Locks {
		l := &d.Locks[i]
		if slices.ContainsFunc(l.Waiters, func(r Ref) bool { return slices.Contains(site.waiters, r.TID) }) {
			lock = l
			break
		}
	}
	if lock != nil && len(lock.Waiters) == len(site.waiters) && lock.Holder == nil {
		if holder != nil {
			basis += fmt.Sprintf("; the futex evidence agrees: the %d waiters share futex %s and the holder is not among them", len(site.waiters), lock.Address)
		}
		lock.Kind, lock.Holder, lock.Basis = "python-lock", holder, basis
	} else {
		l := Lock{ID: "with:" + where, Kind: "python-lock", Address: where, Holder: holder, Basis: basis}
		for _, tid := range site.waiters {
			l.Waiters = append(l.Waiters, Ref{PID: pid, TID: tid})
		}
		d.Locks = append(d.Locks, l)
		lock = &d.Locks[len(d.Locks)-1]
	}
	for _, tid := range site.waiters {
		if t := byTID[tid]; t != nil {
			t.Waits = lock.ID
			if t.Class == ClassIdle {
				t.Class, t.Why = ClassBlocked, "waits to enter the with-block at "+where
			}
		}
	}
	for i := range d.Waits {
		w := &d.Waits[i]
		if slices.Contains(site.waiters, w.From.TID) {
			w.Kind, w.Resource, w.To = "lock", lock.ID, holder
			w.Detail = fmt.Sprintf("waits to enter the with-block at %s", where)
			if holder != nil {
				w.Detail += fmt.Sprintf(", held by tid %d", holder.TID)
			}
		}
	}
	if holder != nil {
		if t := byTID[holder.TID]; t != nil && !slices.Contains(t.Holds, lock.ID) {
			t.Holds = append(t.Holds, lock.ID)
		}
	}
	slices.SortFunc(d.Locks, func(a, b Lock) int {
		return cmp.Or(cmp.Compare(len(b.Waiters), len(a.Waiters)), cmp.Compare(a.Address, b.Address))
	})
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

// idlePool recognises a pool of workers parked in queue.get() with no
// thread left that could feed them: every thread with a stack is either in
// queue.get() or in a wait of its own (the main thread joining, a sleep),
// and none works. It returns the workers, or nil.
func idlePool(d *Diagnosis) []*Thread {
	var pool []*Thread
	for i := range d.Threads {
		t := &d.Threads[i]
		switch {
		case len(t.Stack) == 0:
		case t.Class == ClassWorking || t.Class == ClassSpinning:
			return nil
		case inFrame(t.Stack, "get", "queue.py"):
			pool = append(pool, t)
		}
	}
	if len(pool) < 2 {
		return nil
	}
	return pool
}

// Where is a thread's innermost stack frame, "emit (app.py:42)", or ""
// without a stack.
func (t *Thread) Where() string {
	if t == nil || len(t.Stack) == 0 {
		return ""
	}
	f := t.Stack[0]
	file := f.File
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		file = file[i+1:]
	}
	if f.Line == 0 {
		return fmt.Sprintf("%s (%s)", f.Func, file)
	}
	return fmt.Sprintf("%s (%s:%d)", f.Func, file, f.Line)
}

// stackKind names what a Python thread waits in from its stack alone, for
// dumps read from files: the innermost frames of the standard library say
// it (a C call such as time.sleep or lock.acquire shows as its caller).
func stackKind(stack []model.Frame) string {
	switch {
	case inFrame(stack, "get", "queue.py"):
		return "queue"
	case inFrame(stack, "_wait_for_tstate_lock", "threading.py") || inFrame(stack, "join", "threading.py"):
		return "thread-exit"
	case inFrame(stack, "wait", "subprocess.py") || inFrame(stack, "communicate", "subprocess.py"):
		return "child-exit"
	case inFrame(stack, "select", "selectors.py") || inFrame(stack, "poll", "selectors.py"):
		return "poll"
	case inFrame(stack, "accept", "socket.py"):
		return "accept"
	case inFrame(stack, "readinto", "socket.py") || inFrame(stack, "recv", "ssl.py") || inFrame(stack, "read", "ssl.py"):
		return "socket-read"
	case inFrame(stack, "wait", "threading.py"):
		return "condition"
	case inFrame(stack, "acquire", "threading.py"):
		return "python-lock"
	}
	return "python"
}
