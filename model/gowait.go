package model

import "strings"

// GoWaitKind is what a goroutine waits on, as its wait reason says it:
// the one reading of the runtime's wait-reason text (Goroutine.State).
// Rules match kinds, never the text.
type GoWaitKind uint8

const (
	GoOther        GoWaitKind = iota // a wait reason not named below
	GoRunning                        // running, runnable, preempted: no wait
	GoChanSend                       // chan send
	GoChanRecv                       // chan receive
	GoSelect                         // select with cases
	GoSelectEmpty                    // select {} ("select (no cases)"): parked for good
	GoMutex                          // sync.Mutex.Lock
	GoRWMutexRead                    // sync.RWMutex.RLock
	GoRWMutexWrite                   // sync.RWMutex.Lock
	GoWaitGroup                      // sync.WaitGroup.Wait
	GoCond                           // sync.Cond.Wait
	GoSemacquire                     // semacquire: older Go's word for every sync wait; the frames tell which
	GoIO                             // IO wait: the network poller
	GoSyscall                        // in a system call
	GoSleep                          // time.Sleep
	GoRuntime                        // the runtime's own (GC, finalizers, timers, tracing)
)

// GoWait is a goroutine's wait, typed.
type GoWait struct {
	Kind GoWaitKind
	// NilChan: a send or receive on a nil channel, which blocks forever
	// ("chan send (nil chan)").
	NilChan bool
	// Leaked: the runtime's goroutine leak detector marked it: nothing
	// live can reach what it waits on ("(leaked)", Go 1.26+).
	Leaked bool
	// Durable: the runtime says the wait lasts ("(durable)").
	Durable bool
	// OnCPU: "running", not runnable or preempted: on a thread now.
	OnCPU bool
	// Addr is what it waits on, where a source read it: the address of
	// the sync.Mutex or RWMutex a lock wait waits for (the memory
	// reader's semaphore, or a dump's Lock frame receiver), the channel of
	// a send or receive ("0xc000020060"); "" when unknown.
	Addr string
}

// Is reports a plain wait of kind k: no remark of the runtime's (nil
// channel, leaked, durable), whatever its address.
func (w GoWait) Is(k GoWaitKind) bool {
	return w.Kind == k && !w.NilChan && !w.Leaked && !w.Durable && !w.OnCPU
}

// Chan reports a wait on a channel: a send, a receive or a select.
func (w GoWait) Chan() bool {
	return w.Kind == GoChanSend || w.Kind == GoChanRecv || w.Kind == GoSelect || w.Kind == GoSelectEmpty
}

// ForGood reports a wait nothing can end: select {}, or a nil channel.
func (w GoWait) ForGood() bool { return w.Kind == GoSelectEmpty || w.NilChan }

// goRuntimeReasons are the runtime's own waits, by prefix.
var goRuntimeReasons = []string{"GC", "finalizer", "force gc", "timer goroutine", "trace reader", "debug call", "cleanup wait", "GOMAXPROCS updater"}

// ParseGoWait reads a goroutine's State: its wait reason or status, with
// the runtime's parenthesised remarks ("chan send (nil chan)", "select
// (no cases)", "sync.Mutex.Lock (leaked)").
func ParseGoWait(state string) GoWait {
	var w GoWait
	reason, rest, _ := strings.Cut(state, " (")
	w.NilChan = strings.Contains(rest, "nil chan")
	w.Leaked = strings.Contains(rest, "leaked")
	w.Durable = strings.Contains(rest, "durable")
	if reason == "select" && strings.Contains(rest, "no cases") {
		w.Kind = GoSelectEmpty
		return w
	}
	switch reason {
	case "running", "runnable", "preempted":
		w.Kind, w.OnCPU = GoRunning, reason == "running"
	case "chan send":
		w.Kind = GoChanSend
	case "chan receive":
		w.Kind = GoChanRecv
	case "select":
		w.Kind = GoSelect
	case "sync.Mutex.Lock":
		w.Kind = GoMutex
	case "sync.RWMutex.RLock":
		w.Kind = GoRWMutexRead
	case "sync.RWMutex.Lock":
		w.Kind = GoRWMutexWrite
	case "sync.WaitGroup.Wait":
		w.Kind = GoWaitGroup
	case "sync.Cond.Wait":
		w.Kind = GoCond
	case "semacquire":
		w.Kind = GoSemacquire
	case "IO wait":
		w.Kind = GoIO
	case "syscall":
		w.Kind = GoSyscall
	case "sleep":
		w.Kind = GoSleep
	default:
		switch {
		case strings.HasPrefix(reason, "sync.Mutex."):
			w.Kind = GoMutex
		case strings.HasPrefix(reason, "sync.RWMutex."):
			w.Kind = GoRWMutexWrite
		case strings.HasPrefix(reason, "sync.WaitGroup."):
			w.Kind = GoWaitGroup
		case strings.HasPrefix(reason, "sync.Cond."):
			w.Kind = GoCond
		}
		for _, p := range goRuntimeReasons {
			if w.Kind == GoOther && strings.HasPrefix(reason, p) {
				w.Kind = GoRuntime
			}
		}
	}
	return w
}
