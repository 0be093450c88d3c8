package sampler

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"time"
)

// pthreadSettle bounds how long ThreadsByPthread waits, in all, for
// threads on a CPU to be back in their system calls.
const pthreadSettle = time.Second

// A Python dump names a thread by its pthread_t (threading.get_ident())
// and, where it can, by its OS thread id. py-spy gives no OS thread id for
// Python 3.10 and older when it does not pause the target, nor in another
// PID namespace; the pthread_t is then the one link to the kernel's view.
// glibc and musl put a thread's descriptor, whose address is its
// pthread_t, at the top of the mapping its stack is in: so a thread whose
// stack pointer is known (blocked in a system call, /proc/TID/syscall) is
// the thread of the pthread_t in the same mapping above that pointer. The
// process's initial thread is the exception: its descriptor is in the TLS
// block the dynamic loader made, not on its stack.

// ThreadsByPthread joins idents (pthread_t values) to the threads tids of
// pid, by their stacks: each ident that lies in one mapping, above the
// stack pointer of exactly one of tids blocked in a system call, with no
// other ident there, is that thread's. The others are left out.
func ThreadsByPthread(fs FS, pid int, tids []int, idents []uint64) map[uint64]int {
	maps := readAllMaps(fs, pid)
	if len(maps) == 0 {
		return nil
	}
	// The mapping each stack pointer is in.
	type stack struct {
		tid int
		sp  uint64
	}
	stacks := map[int][]stack{} // by mapping index
	buf := make([]byte, 256)
	// A thread py-spy has just let go of is on a CPU for an instant on its
	// way back into its wait (its syscall file says "running", with no
	// stack pointer); on a busy machine that instant is long. It is read
	// again until it is back, within a bound for the whole join.
	deadline := time.Now().Add(pthreadSettle)
	for _, tid := range tids {
		var sp uint64
		ok := false
		for {
			b, err := readFile(fs.taskPath(pid, tid, "syscall"), buf)
			if err != nil {
				break
			}
			if sp, ok = stackPointer(b); ok || !bytes.HasPrefix(b, []byte("running")) || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !ok {
			continue
		}
		if i := mappingOf(maps, sp); i >= 0 {
			stacks[i] = append(stacks[i], stack{tid, sp})
		}
	}
	byMapping := map[int][]uint64{}
	for _, id := range idents {
		if i := mappingOf(maps, id); i >= 0 {
			byMapping[i] = append(byMapping[i], id)
		}
	}
	out := map[uint64]int{}
	for i, ids := range byMapping {
		ts := stacks[i]
		if len(ids) != 1 || len(ts) != 1 {
			continue
		}
		if ts[0].sp < ids[0] {
			out[ids[0]] = ts[0].tid
		}
	}
	return out
}

// stackPointer is the stack pointer of /proc/TID/syscall: the last but
// one of "NR ARGS… SP PC", or of "-1 SP PC"; false for "running".
func stackPointer(b []byte) (uint64, bool) {
	f := bytes.Fields(b)
	if len(f) != 3 && len(f) != 9 {
		return 0, false
	}
	sp := f[len(f)-2]
	if !bytes.HasPrefix(sp, []byte("0x")) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(sp[2:]), 16, 64)
	return v, err == nil && v != 0
}

// readAllMaps reads the ranges of every mapping of pid, in address order;
// nil when they cannot be read.
func readAllMaps(fs FS, pid int) []mapping {
	b, err := readMapsFile(fs, pid)
	if err != nil {
		return nil
	}
	// Any mapping: a stack is readable, but the test is which mapping an
	// address is in, not whether it can be read.
	out := parseMaps(b, func(line string) (mapping, bool) {
		rng, _, _ := strings.Cut(line, " ")
		return parseMapping(rng + " r")
	})
	if !sort.SliceIsSorted(out, func(i, j int) bool { return out[i].start < out[j].start }) {
		return nil
	}
	return out
}

// mappingOf is the index of the mapping addr is in, or -1.
func mappingOf(maps []mapping, addr uint64) int {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].end > addr })
	if i < len(maps) && maps[i].start <= addr {
		return i
	}
	return -1
}
