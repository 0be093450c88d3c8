package report

import (
	"fmt"
	"strings"

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

// SharedWait is the shared mapping a futex wait's word lies in, when no
// owner is named: Semaphore when it is a POSIX named semaphore
// (/dev/shm/sem.NAME); MappedBy the other processes found mapping it, who
// could wake it (post the semaphore, signal the condition); Complete false
// when the search ran out of time first.
type SharedWait struct {
	Path      string `json:"path"`
	Offset    uint64 `json:"offset"`
	Semaphore bool   `json:"semaphore"`
	MappedBy  []int  `json:"mapped_by"`
	Complete  bool   `json:"complete"`
}

// posixSemaphore says whether a mapping is a POSIX named semaphore:
// sem_open maps /dev/shm/sem.NAME.
func posixSemaphore(path string) bool {
	return strings.HasPrefix(path, "/dev/shm/sem.")
}

// sharedWaitText words who could end a wait on a shared word: "its word is
// in a POSIX named semaphore, mapped from /dev/shm/sem.jobs, which pid 812
// also maps (who could post it; which will is not recorded)".
func sharedWaitText(wt *classify.Wait) string {
	sh := wt.Shared
	what := "its word is in " + sharedObject(sh.Path) + fmt.Sprintf(" at offset %d", sh.Offset)
	could := "wake it"
	if posixSemaphore(sh.Path) {
		// sem_open maps a file it creates under a temporary name and
		// links to the name asked for: the path is the file's, not
		// always the name.
		what = "its word is in a POSIX named semaphore, mapped from " + sh.Path
		could = "post it"
	}
	var pids []string
	for _, p := range wt.MappedBy {
		pids = append(pids, fmt.Sprintf("pid %d", p))
	}
	switch {
	case len(pids) > 0:
		return fmt.Sprintf("%s, which %s also %s (who could %s; which will is not recorded)", what, strings.Join(pids, ", "), mapMaps(len(pids)), could)
	case wt.MappedComplete:
		return what + ", which no other process maps: only its own threads could " + could
	}
	return what + "; no other process was found mapping it (the search ran out of time)"
}

func mapMaps(n int) string {
	if n == 1 {
		return "maps"
	}
	return "map"
}
