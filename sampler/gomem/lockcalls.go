package gomem

import (
	"encoding/binary"

	"golang.org/x/arch/x86/x86asm"
)

// A goroutine whose stack refers to a lock others wait for is a holder
// candidate only if one of its functions takes a sync lock: the code of a
// frame on its stack calls Lock, RLock or their slow paths (Lock and
// RLock are inlined, their slow paths are not). A goroutine that made the
// lock or passes it on (main, with the mutex its local) refers to it as
// much as its holder does, and never took it. What this cannot see: a
// lock taken in a helper that has returned (a method that wraps Lock and
// is not inlined), whose caller calls the helper, not the lock.

// lockFuncs are the functions that take a sync lock, as a caller's code
// calls them (Go 1.22 to 1.27; with -l, Lock and RLock themselves).
var lockFuncs = []string{
	"sync.(*Mutex).Lock", "sync.(*Mutex).lockSlow", "sync.(*Mutex).TryLock",
	"internal/sync.(*Mutex).Lock", "internal/sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).TryLock",
	"sync.(*RWMutex).Lock", "sync.(*RWMutex).RLock", "sync.(*RWMutex).TryLock", "sync.(*RWMutex).TryRLock",
	"sync.runtime_SemacquireMutex", "sync.runtime_SemacquireRWMutex", "sync.runtime_SemacquireRWMutexR",
	"internal/sync.runtime_SemacquireMutex",
}

// maxCodeScan bounds the code read of one function.
const maxCodeScan = 256 << 10

// lockTakers says, for each function name, whether its code calls a
// function of lockFuncs; names without a function of their own (inlined)
// are left out. The code is read from the target's memory, each function
// once per reader.
func (r *Reader) lockTakers(names map[string]bool) map[string]bool {
	if r.takes == nil {
		r.takes = map[string]bool{}
		entries := map[uint64]bool{}
		for _, f := range r.exe.tab.funcByName(lockFuncs...) {
			entries[f.entry] = true
		}
		r.lockEntries = entries
	}
	var want []string
	for n := range names {
		if _, ok := r.takes[n]; !ok {
			want = append(want, n)
		}
	}
	if len(want) > 0 {
		found := r.exe.tab.funcByName(want...)
		for _, n := range want {
			// A name with no function of its own (inlined) takes no
			// lock itself: its function's code is read for it.
			f, ok := found[n]
			r.takes[n] = ok && r.callsLock(f)
		}
	}
	return r.takes
}

// callsLock reads a function's code and looks for a call to a lock
// function.
func (r *Reader) callsLock(f funcInfo) bool {
	n := f.end - f.entry
	if n == 0 || n > maxCodeScan || len(r.lockEntries) == 0 {
		return false
	}
	code := make([]byte, n)
	if err := r.read1(f.entry+r.bias, code); err != nil {
		return false
	}
	for _, t := range callTargets(r.exe.arch, code, f.entry) {
		if r.lockEntries[t] {
			return true
		}
	}
	return false
}

// callTargets are the direct calls' targets in code at addr (file
// addresses): CALL rel32 on amd64, BL on arm64.
func callTargets(arch string, code []byte, addr uint64) []uint64 {
	var out []uint64
	switch arch {
	case "amd64":
		eachAMD64(code, addr, func(inst x86asm.Inst, next uint64) {
			if inst.Op == x86asm.CALL {
				if rel, ok := inst.Args[0].(x86asm.Rel); ok {
					out = append(out, uint64(int64(next)+int64(rel)))
				}
			}
		})
	case "arm64":
		for i := 0; i+4 <= len(code); i += 4 {
			w := binary.LittleEndian.Uint32(code[i:])
			if w>>26 == 0b100101 { // BL imm26
				off := int64(int32(w<<6)>>6) * 4
				out = append(out, uint64(int64(addr)+int64(i)+off))
			}
		}
	}
	return out
}
