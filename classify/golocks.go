package classify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// What goroutines wait for: the mutexes and their probable holders, the
// channels that tie blocked goroutines to each other, and the pipe a
// goroutine in IO wait is stuck on.

// mutexFrames are where a mutex waiter's frames carry the mutex's address
// as their first argument, innermost first.
var mutexFrames = []string{"(*Mutex).lockSlow", "(*Mutex).Lock", "(*RWMutex).Lock", "(*RWMutex).RLock", "(*RWMutex).rLockSlow"}

// mutexAddress is the address of the mutex a waiter waits for, from the
// first argument of its Lock frames, "" when no frame vouches for one
// (register-ABI arguments print as "0x0?" or "...").
func mutexAddress(stack []model.Frame) string {
	for _, f := range stack {
		if !slices.ContainsFunc(mutexFrames, func(m string) bool { return strings.HasSuffix(f.Func, m) }) {
			continue
		}
		if a := firstArg(f.Args); a != "" {
			return a
		}
	}
	return ""
}

// waitLockAddr is the address of the lock a waiter waits for (its
// GoWait's), "" for a channel wait.
func waitLockAddr(g *Actor) string {
	if g.GoWait.Chan() {
		return ""
	}
	return g.GoWait.Addr
}

// syncLockFunc reports a sync lock's own method: a frame above it calls
// Lock or RLock.
func syncLockFunc(fn string) bool {
	return strings.HasPrefix(fn, "sync.(*Mutex).") || strings.HasPrefix(fn, "sync.(*RWMutex).") || strings.HasPrefix(fn, "internal/sync.(*Mutex).")
}

// firstArg is a frame's first argument word when the runtime vouches for
// it: "(0xc000012088, 0x1)" → "0xc000012088"; "" for "0x0?" or "...".
func firstArg(args string) string {
	a := strings.TrimPrefix(args, "(")
	a, _, _ = strings.Cut(a, ",")
	a = strings.TrimSuffix(strings.TrimSpace(a), ")")
	a = strings.TrimPrefix(a, "{")
	if !strings.HasPrefix(a, "0x") || strings.HasSuffix(a, "?") || a == "0x0" {
		return ""
	}
	return a
}

// argAddresses are the keys ("arg:0x…") of the words of a frame's
// arguments that are mutex addresses some waiter waits on, but for own
// (the one the frame's goroutine waits on itself).
func argAddresses(args string, waited map[string]bool, own string) []string {
	if len(waited) == 0 || args == "" {
		return nil
	}
	var keys []string
	for i := range maxArgWords {
		a := argWord(args, i)
		if a != "" && a != own && waited[a] && !slices.Contains(keys, "arg:"+a) {
			keys = append(keys, "arg:"+a)
		}
	}
	return keys
}

// maxArgWords bounds the argument words read from one frame: a traceback
// prints at most ten.
const maxArgWords = 10

// argWord is a frame's i-th argument as the traceback prints it, when it
// is one word the runtime vouches for: "(0xc000012080, {0x1, 0x2},
// 0xc000012088)", 2 → "0xc000012088". The traceback prints one entry per
// parameter (an aggregate in braces), the receiver first.
func argWord(args string, i int) string {
	a := strings.TrimSuffix(strings.TrimPrefix(args, "("), ")")
	depth, start, n := 0, 0, 0
	for k := 0; k <= len(a); k++ {
		if k < len(a) {
			switch a[k] {
			case '{':
				depth++
				continue
			case '}':
				depth--
				continue
			case ',':
				if depth != 0 {
					continue
				}
			default:
				continue
			}
		}
		if n == i {
			w := strings.TrimSpace(a[start:k])
			if !strings.HasPrefix(w, "0x") || strings.HasSuffix(w, "?") || w == "0x0" || strings.ContainsAny(w, "{} ") {
				return ""
			}
			return w
		}
		n++
		start = k + 1
	}
	return ""
}

// callsInto reports a call at line of the file to one of the functions of
// inner (the frames below the caller's): the line can contain the call on
// the stack.
func callsInto(src *goFile, line int, inner []model.Frame) bool {
	for _, f := range inner {
		name := f.Func[strings.LastIndexAny(f.Func, ".)")+1:]
		if _, ok := src.callTo(line, name); ok && name != "" {
			return true
		}
	}
	return false
}

// goPackage is the import path of a function's package:
// "corpusvictims/internal/hang.Serve" → "corpusvictims/internal/hang".
func goPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// goNamer names the lock expressions of goroutines' frames as exactly as
// their sources and arguments allow.
type goNamer struct {
	parse func(file string) *goFile
}

// ref names the lock expr of goroutine g's frame k (function fn of src).
func (n goNamer) ref(g *Actor, k int, src *goFile, fn *goFunc, expr string, read bool) lockRef {
	f := g.Stack[k]
	r := lockRef{text: expr, fn: f.Func, line: f.Line, read: read, sourced: true}
	r.keys = n.keys(g, k, src, fn, expr, 0)
	return r
}

// keys are the names of the object expr denotes in goroutine g's frame k.
func (n goNamer) keys(g *Actor, k int, src *goFile, fn *goFunc, expr string, depth int) []string {
	f := g.Stack[k]
	var keys []string
	sc, idx := fn.scopeOf(src, expr)
	root, path, _ := strings.Cut(expr, ".")
	switch sc {
	case scopeReceiver:
		if p := argWord(f.Args, 0); p != "" && path != "" {
			keys = append(keys, "obj:"+p+":"+path)
			// A pointer to a struct points at its first field.
			if !strings.Contains(path, ".") && src.firstField[fn.recvType] == path {
				keys = append(keys, "addr:"+p)
			}
		}
		if t, field := src.fieldOf(fn.recvType, path); t != "" {
			keys = append(keys, "field:"+goPackage(f.Func)+"."+t+"."+field)
		}
	case scopeParam:
		if p := argWord(f.Args, idx); p != "" {
			if path == "" {
				keys = append(keys, "addr:"+p)
			} else {
				keys = append(keys, "obj:"+p+":"+path)
			}
		}
		if depth < 3 {
			// Also by the argument its caller passed: a dump often does
			// not vouch for a parameter's word.
			keys = append(keys, n.callerKeys(g, k, idx, path, fn.recv != "", depth)...)
		}
	case scopeGlobal:
		keys = append(keys, "global:"+goPackage(f.Func)+"."+expr)
	case scopeLocal:
		_ = root
	}
	// A variable by where it is declared: a local, or one a function
	// literal captured (three closures of one function that lock its mu
	// name one lock). Probable: each call of the declaring function has
	// its own.
	if d := fn.declaredIn(expr); d != nil && (d != fn || sc == scopeLocal) {
		keys = append(keys, fmt.Sprintf("var:%s:%d:%s", f.File, d.from, expr))
	}
	return keys
}

// callerKeys names parameter idx of goroutine g's frame k by the argument
// its caller passed: the frame above it, or, for the function a go
// statement started, the go statement in its creator.
func (n goNamer) callerKeys(g *Actor, k, idx int, path string, method bool, depth int) []string {
	callee := g.Stack[k].Func
	name := callee[strings.LastIndexAny(callee, ".)")+1:]
	var caller model.Frame
	owner := g.Ref.Goroutine
	switch {
	case k+1 < len(g.Stack) && !std(g.Stack[k+1].Func):
		caller = g.Stack[k+1]
		if strings.Contains(caller.Func, ".gowrap") && g.CreatedBy != nil {
			owner = g.CreatorID // a go statement's wrapper: the creator's locals
		}
	case g.CreatedBy != nil:
		caller, owner = *g.CreatedBy, g.CreatorID
	default:
		return nil
	}
	src := n.parse(caller.File)
	if src == nil {
		return nil
	}
	call, ok := src.callTo(caller.Line, name)
	if !ok {
		return nil
	}
	var arg string
	switch {
	case method && idx == 0:
		arg = call.recv
	case method && idx-1 < len(call.args):
		arg = call.args[idx-1]
	case !method && idx < len(call.args):
		arg = call.args[idx]
	}
	if arg == "" {
		return nil
	}
	if path != "" {
		arg += "." + path
	}
	cf := src.funcAt(caller.Line)
	if cf == nil {
		return nil
	}
	switch sc, _ := cf.scopeOf(src, arg); sc {
	case scopeGlobal:
		return []string{"global:" + goPackage(caller.Func) + "." + arg}
	case scopeLocal:
		fnName := caller.Func
		if i := strings.Index(fnName, ".gowrap"); i >= 0 {
			fnName = fnName[:i] // a go statement's wrapper stands for the function the statement is in
		}
		return []string{fmt.Sprintf("local:g%d:%s:%s", owner, fnName, arg)}
	}
	return nil
}

// mutexes names the mutexes goroutines wait for and who holds them, frame
// by frame (see holders.go): where each waiter locks, and what each frame
// of every goroutine holds, from the source of its function when the
// recording has it, else by the site.
func (s *goScene) mutexes(sources map[string][]string) []Lock {
	files := map[string]*goFile{}
	parse := func(file string) *goFile {
		if g, ok := files[file]; ok {
			return g
		}
		var g *goFile
		if lines := sources[file]; len(lines) > 0 {
			g = parseGo(lines)
		}
		files[file] = g
		return g
	}
	gs := s.p.goroutines
	stale := map[string]bool{}
	// stdSites are the functions of the standard library's in which
	// waiters take their lock (sync.(*Once).doSlow): their frames count,
	// by the site when their source was not read.
	stdSites := map[string]bool{}
	// A file whose line a waiter stands at cannot contain the call on its
	// stack (no Lock call, and no call of the standard library's function
	// that locks: sync.(*Once).Do) is not the source the program was
	// built from (edited since): it is not read. A frame of the standard
	// library's is read only from the toolchain the program was built
	// with (the sampler's), so it is never stale.
	for i := range gs {
		g := &gs[i]
		if g.Class != ClassBlocked || (g.Wait != model.WaitMutex && g.Wait != model.WaitRWMutex) {
			continue
		}
		u := s.userFrame(i)
		if u < 0 {
			continue
		}
		if lc := model.GoLockCaller(g.Stack); lc >= 0 && lc < u {
			stdSites[g.Stack[lc].Func] = true
		}
		f := g.Stack[u]
		if src := parse(f.File); src != nil {
			if fn := src.funcAt(f.Line); fn == nil || !fn.hasLockAt(f.Line) && !callsInto(src, f.Line, g.Stack[:u]) {
				files[f.File] = nil
				stale[f.File] = true
			}
		}
	}
	// A frame read without its source holds by the same-site rule alone,
	// which names it only for waiters that lock in its function: the
	// functions they lock in, so that a frame elsewhere is no hold.
	siteFns := map[string]bool{}
	for i := range gs {
		g := &gs[i]
		if g.Aside != AsideNone || g.Class != ClassBlocked || (g.Wait != model.WaitMutex && g.Wait != model.WaitRWMutex) {
			continue
		}
		if u := s.userFrame(i); u >= 0 {
			// The frame that calls the lock, as for the waits below: the
			// standard library's (sync.(*Once).doSlow) where it locks.
			if lc := model.GoLockCaller(g.Stack); lc >= 0 && lc < u {
				u = lc
			}
			if src := parse(g.Stack[u].File); src == nil || src.funcAt(g.Stack[u].Line) == nil {
				siteFns[g.Stack[u].Func] = true
			}
		}
	}
	// The mutex addresses waiters wait on: a frame read without its
	// source that prints one of them among its arguments refers to that
	// mutex, the one link a dump without the program's source gives
	// between a waiter and who may hold what it waits for.
	waited := map[string]bool{}
	for i := range gs {
		g := &gs[i]
		if g.Aside == AsideNone && g.Class == ClassBlocked && (g.Wait == model.WaitMutex || g.Wait == model.WaitRWMutex) {
			if a := waitLockAddr(g); a != "" {
				waited[a] = true
			}
		}
	}
	namer := goNamer{parse: parse}
	var waits []lockWait
	var holds []lockHold
	for i := range gs {
		g := &gs[i]
		if g.Aside != AsideNone {
			continue
		}
		u := s.userFrame(i)
		if u < 0 && g.OnCPU != nil {
			// A running goroutine's stack from its thread's on-CPU
			// samples, which its readings' shapes do not hold.
			u = UserFrame(g.Stack)
		}
		if u < 0 {
			continue
		}
		waiting := g.Class == ClassBlocked && (g.Wait == model.WaitMutex || g.Wait == model.WaitRWMutex)
		first := len(holds) // this goroutine's holds start here
		// The waiter's frame is the one that calls the lock: the
		// program's own, or the standard library's (sync.(*Once).doSlow's
		// o.m.Lock()).
		wk := u
		if lc := model.GoLockCaller(g.Stack); waiting && lc >= 0 && lc < u {
			wk = lc
		}
		for k := 0; k < len(g.Stack); k++ {
			f := g.Stack[k]
			// The standard library's frames count where their source was
			// read (from the program's own toolchain) or a waiter takes
			// its lock in their function, but for the locks' and the
			// runtime's own.
			if std(f.Func) && (model.GoLockCaller(g.Stack[k:k+1]) < 0 || parse(f.File) == nil && !stdSites[f.Func]) {
				continue
			}
			src := parse(f.File)
			var fn *goFunc
			if src != nil {
				fn = src.funcAt(f.Line)
			}
			if fn == nil && std(f.Func) && !stdSites[f.Func] {
				continue
			}
			if fn == nil {
				// No source: the frame may hold whatever its function
				// locks; the same-site rule decides.
				recv := ""
				if strings.Contains(f.Func, ").") {
					recv = firstArg(f.Args) // a method's receiver; a function's first argument is just an argument
				}
				h := lockRef{fn: f.Func, line: f.Line, recv: recv, stale: stale[f.File]}
				if k == wk && waiting {
					w := h
					if a := waitLockAddr(g); a != "" {
						w.keys = []string{"addr:" + a}
						h.waitAddr = a
					}
					w.read = g.GoWait.Kind == model.GoRWMutexRead
					waits = append(waits, lockWait{a: g, frame: k, lock: w})
				}
				if g.Class != ClassIdle || g.Wait == model.WaitSleep {
					own := ""
					if waiting {
						own = waitLockAddr(g)
					}
					args := argAddresses(f.Args, waited, own)
					if siteFns[f.Func] || len(args) > 0 {
						h.keys = append(h.keys, args...)
						holds = append(holds, lockHold{a: g, frame: k, lock: h})
					}
				}
				continue
			}
			if k == wk && waiting {
				if c, ok := fn.lockingAt(f.Line); ok {
					w := namer.ref(g, k, src, fn, c.expr, c.op == "RLock")
					w.copied = src.copiedLock(fn, c.expr)
					if a := waitLockAddr(g); a != "" && !slices.Contains(w.keys, "addr:"+a) {
						w.keys = append([]string{"addr:" + a}, w.keys...)
					}
					waits = append(waits, lockWait{a: g, frame: k, lock: w})
				} else {
					// No Lock call at the line: the lock is named by
					// where it is taken.
					w := lockRef{fn: f.Func, line: f.Line, read: g.GoWait.Kind == model.GoRWMutexRead}
					if a := waitLockAddr(g); a != "" {
						w.keys = []string{"addr:" + a}
					}
					waits = append(waits, lockWait{a: g, frame: k, lock: w})
				}
			}
			// The frame waits in a lock's Lock at this line, or stands at
			// the line in another call or operation.
			inLock := k > 0 && syncLockFunc(g.Stack[k-1].Func)
			for _, c := range fn.heldAt(f.Line, !inLock) {
				if g.Wait == model.WaitCond && src.condLock(c.expr) {
					continue // Cond.Wait unlocks its lock while it waits
				}
				holds = append(holds, lockHold{a: g, frame: k, lock: namer.ref(g, k, src, fn, c.expr, c.op == "RLock")})
			}
		}
		// A memory read's evidence: the locks others wait for that its
		// stack refers to, but the one it waits for itself. Which of its
		// frames holds one is not known: its own innermost stands for it.
		if len(g.HeldLocks) > 0 {
			own := ""
			if waiting {
				own = waitLockAddr(g)
			}
			var keys []string
			for _, a := range g.HeldLocks {
				if a != own && waited[a] {
					keys = append(keys, "word:"+a)
				}
			}
			if len(keys) > 0 {
				// Its frames' locks from the source carry them too: the
				// address held and a lock call on the path.
				for i := first; i < len(holds); i++ {
					if holds[i].lock.sourced {
						holds[i].lock.keys = append(slices.Clip(holds[i].lock.keys), keys...)
					}
				}
				holds = append(holds, lockHold{a: g, frame: u, lock: lockRef{fn: g.Stack[u].Func, line: g.Stack[u].Line, keys: keys}})
			}
		}
	}
	groups := groupWaits(waits, func(w lockWait) LockKind {
		if w.a.Wait == model.WaitRWMutex {
			return LockGoRWMutex
		}
		return LockGoMutex
	})
	var unseen []*Actor
	for i := range gs {
		if g := &gs[i]; len(g.Stack) == 0 && g.Wait == model.WaitNone && g.Aside == AsideNone {
			unseen = append(unseen, g)
		}
	}
	return searchHolders(s.p.pid, groups, holds, unseen, s.opts.HolderLocks)
}

// chanEdges ties goroutines blocked on channels to the goroutines that
// refer to those channels, from a source that reads memory (WaitChans and
// ChanRefs): only one of those could complete the operation. The graph
// decides which of them can never be woken.
func (s *goScene) chanEdges() {
	blocked := map[int64]model.Goroutine{}
	refs := map[string][]int64{}
	for _, h := range s.hists {
		last := h.lastWaiting()
		g := s.p.byGID[h.id]
		for _, c := range last.ChanRefs {
			refs[c] = append(refs[c], h.id)
		}
		if g.Class == ClassBlocked && (g.Wait == model.WaitChannel || g.Wait == model.WaitSelect) && len(last.WaitChans) > 0 {
			blocked[h.id] = last
		}
	}
	if len(blocked) == 0 {
		return
	}
	s.p.chanEdges = map[int64][]int64{}
	s.p.chanWhy = map[int64]*ChanWait{}
	for id, g := range blocked {
		var out []int64
		for _, c := range g.WaitChans {
			for _, other := range refs[c] {
				// One that waits on the same channel the same way (another
				// receiver of an idle pool) cannot complete the operation.
				if o, ok := blocked[other]; other == id || ok && o.State == g.State && slices.Contains(o.WaitChans, c) {
					continue
				}
				if !slices.Contains(out, other) {
					out = append(out, other)
				}
			}
		}
		if len(out) > 0 {
			s.p.chanEdges[id] = out
			s.p.chanWhy[id] = &ChanWait{State: g.State, Chans: g.WaitChans, Only: out}
		}
	}
}

// ioChain finds the pipe a goroutine in IO wait is stuck on, from the
// kernel: among the pipes the runtime's poller watches, the full one the
// target writes to (or the empty one it reads), with a process at the
// other end. nil when the evidence names none, or more than one.
func (p *proc) ioChain(g *Actor, resources map[string]model.Resource) *IOChain {
	if g.GoWait.Kind != model.GoIO {
		return nil
	}
	write := slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return strings.HasSuffix(f.Func, "(*pollDesc).waitWrite") })
	read := slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return strings.HasSuffix(f.Func, "(*pollDesc).waitRead") })
	if !write && !read {
		return nil
	}
	var found []*IOChain
	seen := map[string]bool{}
	last := p.samples[len(p.samples)-1]
	for _, t := range last.Threads {
		for _, w := range t.Watches {
			_, name, _ := strings.Cut(w, " ")
			res, ok := resources[name]
			if seen[name] || !ok || res.Pipe == nil {
				continue
			}
			seen[name] = true
			mode, other := "w", "r"
			stuck := res.Pipe.Queued >= res.Pipe.Capacity && res.Pipe.Capacity > 0
			if read {
				mode, other = "r", "w"
				stuck = res.Pipe.Queued == 0
			}
			if !stuck || !slices.Contains(holders(res, mode), p.pid) {
				continue
			}
			var ends []int
			for _, pid := range holders(res, other) {
				if pid != p.pid {
					ends = append(ends, pid)
				}
			}
			if len(ends) == 0 {
				continue
			}
			found = append(found, &IOChain{Pipe: name, Write: !read, Ends: ends})
		}
	}
	if len(found) != 1 {
		return nil
	}
	return found[0]
}

// holders lists the processes holding a resource open in the given mode
// ("r", "w", or "" for any), without repeats, in order found.
func holders(res model.Resource, mode string) []int {
	var pids []int
	for _, h := range res.Holders {
		if mode != "" && !strings.Contains(h.Mode, mode) {
			continue
		}
		if !slices.Contains(pids, h.PID) {
			pids = append(pids, h.PID)
		}
	}
	return pids
}
