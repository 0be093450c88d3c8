package victim

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pthreadMutex has the layout of the start of glibc's pthread_mutex_t on
// 64-bit Linux and follows glibc's locking protocol (0 free, 1 locked, 2
// locked with waiters; waiters sleep in FUTEX_WAIT_PRIVATE expecting 2; the
// owner's TID in __owner). The demo victims are Go, whose sync.Mutex parks
// goroutines where the kernel cannot see them; this mutex gives the kernel
// evidence a C or C++ service shows, which is what hangdoc reads.
//
// Every goroutine that uses one must be locked to its OS thread.
type pthreadMutex struct {
	lock   int32
	count  uint32
	owner  int32
	nusers uint32
	kind   int32
	_      [20]byte
}

const (
	futexWaitPrivate = 0 | 128
	futexWakePrivate = 1 | 128
)

func (m *pthreadMutex) Lock() {
	if !atomic.CompareAndSwapInt32(&m.lock, 0, 1) {
		for atomic.SwapInt32(&m.lock, 2) != 0 {
			futex(&m.lock, futexWaitPrivate, 2)
		}
	}
	atomic.StoreInt32(&m.owner, int32(unix.Gettid()))
	m.nusers++
}

func (m *pthreadMutex) Unlock() {
	m.nusers--
	atomic.StoreInt32(&m.owner, 0)
	if atomic.SwapInt32(&m.lock, 0) == 2 {
		futex(&m.lock, futexWakePrivate, 1)
	}
}

// futex calls futex(2) through syscall.Syscall6, which tells the Go
// scheduler the thread is in a syscall, so a blocked waiter stalls nothing else.
func futex(addr *int32, op, val int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), uintptr(op), uintptr(val), 0, 0, 0)
}
