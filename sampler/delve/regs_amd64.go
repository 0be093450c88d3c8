package delve

import (
	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/proc/linutil"
	"golang.org/x/sys/unix"
)

// registers reads a stopped thread's general registers (the stack walk
// and the goroutine's g, through FS base, need no others). Called on the
// tracer thread.
func registers(tid int, _ bool) (proc.Registers, error) {
	var regs linutil.AMD64PtraceRegs
	if err := unix.PtraceGetRegs(tid, (*unix.PtraceRegs)(&regs)); err != nil {
		return nil, err
	}
	// No floating-point loader: nothing hangdoc reads needs them.
	return linutil.NewAMD64Registers(&regs, nil), nil
}
