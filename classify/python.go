package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// The Python adapter: threads whose stacks stand at one `with lock:` line
// wait to enter that block, and a thread whose stack is inside the block
// holds the lock. The kernel cannot say it: a threading.Lock records no
// owner. It also finds the pools of workers parked in queue.get().

// withSite is where threads wait to enter a `with lock:` block.
type withSite struct {
	file, fn string
	line     int
	end      int // last line of the block
	waiters  []int
	holders  []int
}

// pythonLocks names the holders of Python locks from the source (file path
// → lines, line 1 first).
func (p *proc) pythonLocks(sources map[string][]string) {
	sites := map[string]*withSite{}
	for i := range p.threads {
		t := &p.threads[i]
		// With kernel evidence the waiter must be in futex(); a stack from
		// a file has none to check.
		if len(t.Stack) == 0 || (t.Class != ClassBlocked && t.Class != ClassIdle) || (t.State.Known() && t.Syscall.Name != "futex") {
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
		site.waiters = append(site.waiters, t.Ref.TID)
	}
	keys := make([]string, 0, len(sites))
	for k := range sites {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		site := sites[k]
		for _, t := range p.threads {
			if slices.Contains(site.waiters, t.Ref.TID) {
				continue
			}
			for _, f := range t.Stack {
				if f.File == site.file && f.Func == site.fn && f.Line > site.line && f.Line <= site.end {
					site.holders = append(site.holders, t.Ref.TID)
					break
				}
			}
		}
		p.attachPythonLock(site)
	}
}

// attachPythonLock records a with-site as a lock: the futex group the
// waiters share, if there is one, gains the holder; otherwise a lock of its
// own is added.
func (p *proc) attachPythonLock(site *withSite) {
	where := fmt.Sprintf("%s:%d", site.file, site.line)
	basis := Basis{Rule: BasisWithBlock, Site: where, Func: site.fn, From: site.line, To: site.end, Inside: site.holders}
	var holder *Ref
	if len(site.holders) == 1 {
		holder = &Ref{PID: p.pid, TID: site.holders[0]}
	}
	// Do the waiters share one futex word, and is the holder not among its
	// waiters? Then the kernel agrees.
	var lock *Lock
	for i := range p.locks {
		l := &p.locks[i]
		if slices.ContainsFunc(l.Waiters, func(r Ref) bool { return slices.Contains(site.waiters, r.TID) }) {
			lock = l
			break
		}
	}
	if lock != nil && len(lock.Waiters) == len(site.waiters) && lock.Holder == nil {
		if holder != nil {
			basis.Agrees, basis.Waiters, basis.Address = true, len(site.waiters), lock.Address
		}
		lock.Kind, lock.Holder, lock.Basis = LockPython, holder, basis
	} else {
		l := Lock{ID: "with:" + where, Kind: LockPython, Address: where, Holder: holder, Basis: basis}
		for _, tid := range site.waiters {
			l.Waiters = append(l.Waiters, Ref{PID: p.pid, TID: tid})
		}
		p.locks = append(p.locks, l)
		lock = &p.locks[len(p.locks)-1]
	}
	for _, tid := range site.waiters {
		if t := p.byTID[tid]; t != nil {
			t.WaitsFor = lock.ID
			if t.Class == ClassIdle {
				t.Class, t.Why = ClassBlocked, Why{Rule: WhyWithBlock, Site: where}
			}
		}
	}
	for i := range p.waits {
		w := &p.waits[i]
		if slices.Contains(site.waiters, w.From.TID) {
			w.Kind, w.Resource, w.To, w.Lock, w.WithSite = model.WaitLock, lock.ID, holder, lock.ID, where
		}
	}
	if holder != nil {
		if t := p.byTID[holder.TID]; t != nil && !slices.Contains(t.Holds, lock.ID) {
			t.Holds = append(t.Holds, lock.ID)
		}
	}
	slices.SortFunc(p.locks, func(a, b Lock) int {
		return cmp.Or(cmp.Compare(len(b.Waiters), len(a.Waiters)), cmp.Compare(a.Address, b.Address))
	})
	p.reindexLocks()
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

// stackKind names what a Python thread waits in from its stack alone, for
// dumps read from files: the innermost frames of the standard library say
// it (a C call such as time.sleep or lock.acquire shows as its caller).
func stackKind(stack []model.Frame) model.WaitKind {
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
