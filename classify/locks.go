package classify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// glibc's mutex kind: the low two bits are the type, the rest are flags.
const (
	kindRobust   = 16
	kindPI       = 32
	kindPP       = 64
	kindPShared  = 128
	kindElision  = 256 | 512
	futexTIDMask = 0x3fffffff
)

// findLocks groups the threads of the last sample that wait on the same
// futex word. Where the word reads as a locked glibc mutex whose __owner is a
// live thread of the process, that thread is the holder.
func findLocks(pid int, last model.Sample, hist []*history) []Lock {
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
		l := Lock{ID: "futex:" + key, Kind: "futex", Address: key}
		for _, w := range g.waiters {
			l.Waiters = append(l.Waiters, Ref{PID: pid, TID: w.TID})
		}
		owner, kind, basis := mutexOwner(last.Futexes[key], g.waiters, live, pid)
		switch {
		case owner != 0:
			l.Kind = kind
			l.Holder = &Ref{PID: pid, TID: owner}
			l.Basis = basis
		case len(g.waiters) >= 2:
			l.Basis = fmt.Sprintf("%d threads wait on the same futex word; %s, so no holder is named", len(g.waiters), basis)
		default:
			continue // one thread parked on its own futex: not a lock anyone shares
		}
		locks = append(locks, l)
	}
	slices.SortFunc(locks, func(a, b Lock) int {
		return cmp.Or(cmp.Compare(len(b.Waiters), len(a.Waiters)), cmp.Compare(a.Address, b.Address))
	})
	return locks
}

// mutexOwner validates a futex word as a glibc pthread_mutex_t and returns
// its owner, or 0 with the reason it is not one.
func mutexOwner(f model.Futex, waiters []model.Thread, live map[int]bool, pid int) (owner int, kind, basis string) {
	if f.Err != "" {
		return 0, "", "its memory could not be read (" + f.Err + ")"
	}
	if f == (model.Futex{}) {
		return 0, "", "the futex word was not read"
	}
	pi := false
	for _, w := range waiters {
		switch cmd := w.Syscall.Args[1] & 0x7f; {
		case w.Syscall.Name != "futex":
			return 0, "", "the waiters use futex_wait(2), which glibc mutexes do not"
		case cmd == 6 || cmd == 13: // FUTEX_LOCK_PI, FUTEX_LOCK_PI2
			pi = true
		case cmd == 0 || cmd == 9: // FUTEX_WAIT, FUTEX_WAIT_BITSET
			// glibc sets a mutex word to 2, "locked, with waiters", before it sleeps.
			if w.Syscall.Args[2] != 2 {
				return 0, "", fmt.Sprintf("tid %d waits for the value %d, not a contended mutex's 2", w.TID, int32(w.Syscall.Args[2]))
			}
		default:
			return 0, "", "the waiters use " + futexOp(w.Syscall.Args[1])
		}
	}
	k := f.Kind
	if k < 0 || k&^(3|kindRobust|kindPI|kindPP|kindPShared|kindElision) != 0 {
		return 0, "", fmt.Sprintf("its __kind %d is not a mutex type", k)
	}
	owner = int(f.Owner)
	lockWord := fmt.Sprintf("lock word %d", f.Word)
	if pi {
		owner = int(f.Word & futexTIDMask)
		lockWord = fmt.Sprintf("priority-inheritance lock word 0x%x", uint32(f.Word))
	} else if f.Word == 0 {
		return 0, "", "the word reads 0, unlocked (it was released as it was read)"
	}
	if owner <= 0 {
		return 0, "", fmt.Sprintf("its __owner reads %d", owner)
	}
	if !live[owner] {
		if k&kindPShared != 0 {
			return 0, "", fmt.Sprintf("its __owner %d is not a thread of pid %d: a process-shared mutex held by another process", owner, pid)
		}
		return 0, "", fmt.Sprintf("its __owner %d is not a live thread of pid %d (an owner that exited, or not a mutex)", owner, pid)
	}
	kind = "mutex"
	if pi {
		kind = "pi-mutex"
	}
	basis = fmt.Sprintf("glibc mutex: __owner %d read at +8 from the target's memory, a live thread of pid %d; %s, %s", owner, pid, lockWord, kindName(k))
	return owner, kind, basis
}

func kindName(k int32) string {
	names := []string{"normal", "recursive", "error-checking", "adaptive"}
	s := []string{"kind " + names[k&3]}
	for _, f := range []struct {
		bit  int32
		name string
	}{{kindRobust, "robust"}, {kindPI, "priority-inheritance"}, {kindPP, "priority-protect"}, {kindPShared, "process-shared"}} {
		if k&f.bit != 0 {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, ", ")
}
