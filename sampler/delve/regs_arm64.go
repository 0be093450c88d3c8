package delve

import (
	"debug/elf"
	"unsafe"

	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/proc/linutil"
	"golang.org/x/sys/unix"
)

// ntARMTLS is the regset of TPIDR_EL0, the thread pointer a cgo
// program's g is found through.
const ntARMTLS = 0x401

// registers reads a stopped thread's general registers, and the thread
// pointer if the program uses cgo. Called on the tracer thread.
func registers(tid int, iscgo bool) (proc.Registers, error) {
	var regs linutil.ARM64PtraceRegs
	if err := getRegset(tid, uintptr(elf.NT_PRSTATUS), unsafe.Pointer(&regs), unsafe.Sizeof(regs)); err != nil {
		return nil, err
	}
	var tpidr uint64
	if iscgo {
		if err := getRegset(tid, ntARMTLS, unsafe.Pointer(&tpidr), unsafe.Sizeof(tpidr)); err != nil {
			return nil, err
		}
	}
	return linutil.NewARM64Registers(&regs, iscgo, tpidr, nil), nil
}

func getRegset(tid int, set uintptr, p unsafe.Pointer, size uintptr) error {
	iov := unix.Iovec{Base: (*byte)(p)}
	iov.SetLen(int(size))
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGSET, uintptr(tid), set, uintptr(unsafe.Pointer(&iov)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
