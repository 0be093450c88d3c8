package report

import (
	"fmt"

	"github.com/hangdoc/hangdoc/classify"
)

// sharedOwnerBasis words the basis of a process-shared mutex held by a
// thread of another process.
func sharedOwnerBasis(b classify.Basis) string {
	where := "shared memory"
	if sh := b.Shared; sh != nil {
		where = fmt.Sprintf("%s at offset %d (device %s, inode %d)", sharedObject(sh.Path), sh.Offset, sh.Dev, sh.Inode)
	}
	word := fmt.Sprintf("lock word %d", b.Word)
	if b.Word < 0 || b.PI || b.MutexKind&classify.MutexRobust != 0 {
		word = fmt.Sprintf("lock word 0x%x", uint32(b.Word))
	}
	return fmt.Sprintf("process-shared glibc mutex in %s: its owner %d, read from pid %d's memory, is a thread of pid %d, which maps the same word; %s, %s",
		where, b.Owner, b.WaiterPID, b.PID, word, mutexKindText(b.MutexKind))
}

// sharedObject names what a shared mapping maps, as maps prints it.
func sharedObject(path string) string {
	switch {
	case path == "/dev/zero (deleted)" || path == "":
		return "anonymous shared memory (inherited over fork)"
	case len(path) > 5 && path[:5] == "/SYSV":
		return "SysV shared memory segment " + path
	}
	return path
}
