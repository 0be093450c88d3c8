package classify

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// glibc's mutex kind (Basis.MutexKind): the low two bits are the type
// (normal, recursive, error-checking, adaptive), the rest are flags.
const (
	MutexRobust  = 16
	MutexPI      = 32
	MutexPP      = 64
	MutexPShared = 128
	mutexElision = 256 | 512
	futexTIDMask = 0x3fffffff
	futexWaiters = 0x80000000
)

// findLocks groups the threads of the last sample that wait on the same
// futex word. Where the word reads as a locked glibc mutex whose __owner is a
// live thread of the process, that thread is the holder.
func findLocks(pid int, last model.Sample) []Lock {
	live := map[int]bool{}
	for _, t := range last.Threads {
		if !t.Exited {
			live[t.TID] = true
		}
	}
	type group struct {
		addr    uint64
		waiters []model.Thread
	}
	groups := map[uint64]*group{}
	for _, t := range last.Threads {
		addr, ok := model.FutexWait(t.Syscall)
		if !ok || t.Exited {
			continue
		}
		g := groups[addr]
		if g == nil {
			g = &group{addr: addr}
			groups[addr] = g
		}
		g.waiters = append(g.waiters, t)
	}
	locks := []Lock{}
	for _, g := range groups {
		key := model.FutexKey(g.addr)
		l := Lock{ID: "futex:" + key, Kind: LockFutex, Address: key}
		for _, w := range g.waiters {
			l.Waiters = append(l.Waiters, Ref{PID: pid, TID: w.TID})
		}
		kind, basis := mutexOwner(last.Futexes[key], g.waiters, live, pid)
		rust := rustMutex(g.waiters)
		if rust {
			// Not a glibc mutex whatever its words read: the word after
			// a Rust Mutex's futex is its data, not an owner.
			kind, basis = 0, Basis{}
		}
		basis.Waiters = len(g.waiters)
		switch {
		case basis.Rule == BasisGlibcOwner || basis.Rule == BasisSharedOwner:
			l.Kind = kind
			l.Holder = &Ref{PID: basis.PID, TID: int(basis.Owner)}
		case basis.Rule == BasisOwnerGone || basis.Rule == BasisOwnerShared:
			// A locked mutex whose owner is no live thread of the
			// process: one waiter is enough to say nobody here can
			// release it.
		case rust:
			// A Rust std Mutex: a futex word of 0, 1 or 2, no owner
			// recorded. Its holder is only inferred: the one thread that
			// neither waits for it nor joins another.
			l.Kind = LockMutex
			who := rustCandidates(last.Threads, g.addr)
			var at []int
			site := rustLockSite(g.waiters)
			if site != "" && len(who) > 1 {
				at = rustAt(last.Threads, who, site)
			}
			switch {
			case len(who) == 1:
				l.Holder = &Ref{PID: pid, TID: who[0]}
				basis = Basis{Rule: BasisRustOnlyOther, Kind: BasisInferred, Owner: int64(who[0]), PID: pid, Waiters: len(g.waiters)}
			case len(at) == 1:
				// Several could hold it; one of them stands in the function
				// the waiters call lock() from.
				l.Holder = &Ref{PID: pid, TID: at[0]}
				basis = Basis{Rule: BasisRustSameSite, Kind: BasisInferred, Owner: int64(at[0]), PID: pid, Waiters: len(g.waiters), Frame: site, Value: int32(len(who))}
			default:
				basis = Basis{Rule: BasisRustNoOwner, Value: int32(len(who)), Waiters: len(g.waiters)}
			}
		case len(g.waiters) < 2:
			continue // one thread parked on its own futex: not a lock anyone shares
		}
		l.Basis = basis
		locks = append(locks, l)
	}
	slices.SortFunc(locks, func(a, b Lock) int {
		return cmp.Or(cmp.Compare(len(b.Waiters), len(a.Waiters)), cmp.Compare(a.Address, b.Address))
	})
	return locks
}

// rustMutex reports waiters whose native stacks are in Rust's standard
// library's Mutex::lock (std::sys::sync::mutex::futex::Mutex::lock_contended):
// a lock that records no owner.
func rustMutex(waiters []model.Thread) bool {
	for _, w := range waiters {
		if !slices.ContainsFunc(w.Stack, func(f model.Frame) bool {
			return strings.HasPrefix(f.Func, "std::") && strings.Contains(f.Func, "Mutex::lock")
		}) {
			return false
		}
	}
	return len(waiters) > 0
}

// rustCandidates are the threads that could hold a Rust mutex at addr:
// every live thread but those waiting on it and those joining another
// thread (its stack in a join), which hold nothing they could release.
func rustCandidates(threads []model.Thread, addr uint64) []int {
	var out []int
	for _, t := range threads {
		if t.Exited {
			continue
		}
		if a, ok := model.FutexWait(t.Syscall); ok && a == addr {
			continue
		}
		if slices.ContainsFunc(t.Stack, func(f model.Frame) bool {
			return strings.Contains(f.Func, "pthread_clockjoin") || strings.Contains(f.Func, "pthread_join") || strings.HasSuffix(f.Func, "Thread::join")
		}) {
			continue
		}
		out = append(out, t.TID)
	}
	return out
}

// rustLockSite is the function every waiter calls Rust's Mutex::lock
// from: the first frame outside the standard library past its lock
// frames; "" when they differ, or a stack says none.
func rustLockSite(waiters []model.Thread) string {
	site := ""
	for _, w := range waiters {
		i := slices.IndexFunc(w.Stack, func(f model.Frame) bool {
			return strings.HasPrefix(f.Func, "std::") && strings.Contains(f.Func, "Mutex::lock")
		})
		for i >= 0 && i < len(w.Stack) && (strings.HasPrefix(w.Stack[i].Func, "std::") || strings.HasPrefix(w.Stack[i].Func, "core::")) {
			i++
		}
		if i < 0 || i >= len(w.Stack) || site != "" && w.Stack[i].Func != site {
			return ""
		}
		site = w.Stack[i].Func
	}
	return site
}

// rustAt are the candidates whose stack has a frame in fn.
func rustAt(threads []model.Thread, candidates []int, fn string) []int {
	is := make(map[int]bool, len(candidates))
	for _, c := range candidates {
		is[c] = true
	}
	var out []int
	for _, t := range threads {
		if !is[t.TID] {
			continue
		}
		if slices.ContainsFunc(t.Stack, func(f model.Frame) bool { return f.Func == fn }) {
			out = append(out, t.TID)
		}
	}
	return out
}

// mutexOwner validates a futex word as a glibc pthread_mutex_t: its basis
// names the owner (BasisGlibcOwner), or says why it is not one.
// PIDMaxLimit is the most a thread id can be on a 64-bit kernel
// (PID_MAX_LIMIT, 4Mi): kernel.pid_max may not be set above it.
const PIDMaxLimit = 4 << 20

func mutexOwner(f model.Futex, waiters []model.Thread, live map[int]bool, pid int) (LockKind, Basis) {
	if f.Err != "" {
		return 0, Basis{Rule: BasisMemoryErr, Err: f.Err}
	}
	if f.Word == 0 && f.Owner == 0 && f.Kind == 0 {
		return 0, Basis{Rule: BasisNotRead}
	}
	pi, robust := false, false
	for _, w := range waiters {
		switch cmd := w.Syscall.Args[1] & 0x7f; {
		case w.Syscall.Name != "futex":
			return 0, Basis{Rule: BasisFutexWait2}
		case cmd == 6 || cmd == 13: // FUTEX_LOCK_PI, FUTEX_LOCK_PI2
			pi = true
		case cmd == 0 || cmd == 9: // FUTEX_WAIT, FUTEX_WAIT_BITSET
			// glibc sets a mutex word to 2, "locked, with waiters", before it
			// sleeps; a robust mutex's word is the owner's TID with
			// FUTEX_WAITERS set.
			if f.Kind >= 0 && f.Kind&MutexRobust != 0 && w.Syscall.Args[2]&futexWaiters != 0 && w.Syscall.Args[2]&futexTIDMask != 0 {
				robust = true
			} else if w.Syscall.Args[2] != 2 {
				return 0, Basis{Rule: BasisNotTwo, TID: w.TID, Value: int32(w.Syscall.Args[2])}
			}
		default:
			return 0, Basis{Rule: BasisOtherOp, Op: w.Syscall.Args[1]}
		}
	}
	k := f.Kind
	if k < 0 || k&^(3|MutexRobust|MutexPI|MutexPP|MutexPShared|mutexElision) != 0 {
		return 0, Basis{Rule: BasisBadKind, MutexKind: k}
	}
	owner := int(f.Owner)
	if pi || robust {
		owner = int(f.Word & futexTIDMask)
	} else if f.Word == 0 {
		return 0, Basis{Rule: BasisUnlocked}
	}
	if owner <= 0 || owner > PIDMaxLimit {
		// Above the kernel's limit no thread id can be: the word is no
		// glibc mutex's (a Rust Mutex, whose next word is its data).
		return 0, Basis{Rule: BasisNoOwner, Owner: int64(owner)}
	}
	if !live[owner] {
		if k&MutexPShared != 0 && f.OwnerPID > 0 && f.OwnerPID != pid && f.Shared != nil {
			// A thread of another process that maps the same word: the
			// sampler checked both.
			return LockMutex, Basis{Rule: BasisSharedOwner, Kind: BasisExact, Owner: int64(owner), PID: f.OwnerPID, Word: f.Word, PI: pi, MutexKind: k, Shared: f.Shared, WaiterPID: pid}
		}
		if k&MutexPShared != 0 {
			return 0, Basis{Rule: BasisOwnerShared, Owner: int64(owner), PID: pid}
		}
		return 0, Basis{Rule: BasisOwnerGone, Owner: int64(owner), PID: pid}
	}
	kind := LockMutex
	if pi {
		kind = LockPIMutex
	}
	return kind, Basis{Rule: BasisGlibcOwner, Kind: BasisExact, Owner: int64(owner), PID: pid, Word: f.Word, PI: pi, MutexKind: k}
}

// lockedThrough is the one process whose descriptor on a file lists lock
// e as held through it (its fdinfo), and that descriptor; 0 when none
// does, or when several processes share the open file that holds it (a
// descriptor inherited across fork).
func lockedThrough(res model.Resource, e model.FileLockEntry) (pid, fd int) {
	for _, h := range res.Holders {
		for _, l := range h.Locks {
			if l.Class != e.Class || l.Type != e.Type || l.Range != e.Range || l.PID != e.PID {
				continue
			}
			if pid != 0 && pid != h.PID {
				return 0, 0
			}
			pid, fd = h.PID, h.FD
		}
	}
	return pid, fd
}

// fileLocks groups the threads of the last sample that wait to lock the
// same file, each a lock held by the process /proc/locks names. An OFD
// lock names no process (it belongs to an open file): its holder is the
// other process that has the file open, when there is just one.
func fileLocks(pid int, last model.Sample, res map[string]model.Resource) []Lock {
	byPath := map[string]*Lock{}
	var out []Lock
	var order []string
	for _, t := range last.Threads {
		fl := t.FileLock
		if fl == nil || t.Exited || fl.Path == "" {
			continue
		}
		l := byPath[fl.Path]
		if l == nil {
			l = &Lock{ID: "file:" + fl.Path, Kind: LockFlock, Address: fl.Path, Basis: Basis{Rule: BasisFileLock, Err: fl.Err}}
			for _, h := range holders(res[fl.Path], "") {
				if h != pid {
					l.Basis.Opened = append(l.Basis.Opened, h)
				}
			}
			for i := range fl.Held {
				h := fl.Held[i]
				if l.Basis.File == nil || h.PID > 0 && l.Basis.File.PID <= 0 {
					l.Basis.File = &h
				}
			}
			if e := l.Basis.File; e != nil {
				l.Kind = map[string]LockKind{"POSIX": LockPOSIX, "OFDLCK": LockOFD}[e.Class]
				if e.Class == "FLOCK" {
					l.Kind = LockFlock
				}
				by, fd := lockedThrough(res[fl.Path], *e)
				switch {
				case by > 0 && (e.PID <= 0 || e.Class == "FLOCK"):
					// The fdinfo of the descriptor it is held through: an
					// OFD lock names no process in /proc/locks, and a flock
					// lock names the one that took it, which may have gone
					// and left it to a child.
					l.Holder = &Ref{PID: by}
					l.Basis.Kind, l.Basis.ByFDInfo, l.Basis.HeldFD = BasisExact, true, fd
				case e.PID > 0:
					l.Holder = &Ref{PID: e.PID}
					l.Basis.Kind = BasisExact
				case len(l.Basis.Opened) == 1:
					l.Holder = &Ref{PID: l.Basis.Opened[0]}
					l.Basis.Kind = BasisInferred
				}
				if l.Holder != nil {
					l.Basis.PID = l.Holder.PID
				}
			}
			byPath[fl.Path] = l
			order = append(order, fl.Path)
		}
		l.Waiters = append(l.Waiters, Ref{PID: pid, TID: t.TID})
	}
	for _, p := range order {
		l := byPath[p]
		l.Basis.Waiters = len(l.Waiters)
		out = append(out, *l)
	}
	return out
}
