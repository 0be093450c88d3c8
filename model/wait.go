package model

// WaitKind is what an actor (a thread, a goroutine) waits on. One table
// says for each kind whether it is a wait for work (idle) or a wait on
// something (blocked), and its role in the wait-for graph: who is at the
// other end. The words for each kind are report's.
type WaitKind uint8

const (
	WaitNone WaitKind = iota // running, or nothing known
	// What the kernel shows of a thread.
	WaitLock            // a futex word several threads share: a lock
	WaitFutex           // a futex word of its own: a condition, a semaphore, a lock with no recorded owner
	WaitPipeWrite       // writing to a full pipe
	WaitPipeRead        // reading an empty pipe
	WaitSocketWrite     // writing to a socket whose send buffer is full
	WaitSocketRead      // reading a socket that sends nothing
	WaitSocketConnect   // connecting a socket
	WaitAccept          // waiting for a connection
	WaitStdin           // reading its standard input (a pipe or a terminal)
	WaitTTYRead         // reading a terminal
	WaitTTYWrite        // writing to a terminal
	WaitFileRead        // reading a file
	WaitFileWrite       // writing a file
	WaitFileLock        // flock, fcntl(F_SETLKW)
	WaitChildExit       // wait4, waitid
	WaitSleep           // nanosleep, time.Sleep
	WaitPoll            // epoll, poll, select: on nothing it could name
	WaitPollFDs         // poll, select on pipes and connected sockets, each resolved like a read or write on it
	WaitSignal          // pause, sigsuspend, sigtimedwait
	WaitUninterruptible // D state
	WaitStopped         // T state: stopped by a signal
	WaitTraced          // t state: stopped by a tracer (a debugger, strace)
	WaitThreadExit      // pthread_join, Thread.join
	WaitRunning         // on a CPU
	WaitSyscall         // some other system call
	WaitUnknown         // in the kernel, nothing more known
	// What a Python stack shows.
	WaitQueue      // queue.get()
	WaitCondition  // Condition.wait, Event.wait
	WaitPythonLock // Lock.acquire
	WaitPython     // in Python code
	// Python library waits, named by the innermost library frame.
	WaitQueueJoin        // queue.join(): for every task_done()
	WaitEvent            // threading.Event.wait(): for set()
	WaitFuture           // concurrent.futures Future.result(): for the worker running it
	WaitExecutorShutdown // ThreadPoolExecutor.shutdown(wait=True): for the workers to finish
	WaitPoolResult       // multiprocessing.Pool results: for the worker processes
	WaitLoopBlocked      // an asyncio event loop that a coroutine's synchronous call blocks
	// What a goroutine's state and frames show.
	WaitMutex     // sync.Mutex
	WaitRWMutex   // sync.RWMutex
	WaitChannel   // chan send, chan receive
	WaitSelect    // select
	WaitIO        // the runtime's network poller
	WaitWaitGroup // sync.WaitGroup.Wait
	WaitCond      // sync.Cond.Wait
	WaitRuntime   // the runtime's own waits (GC, finalizers); for a thread, an M the scheduler parked
	WaitOther     // some other wait reason
	// Go library waits, named by the innermost library frame.
	WaitDBConn       // database/sql: a free connection of a full pool
	WaitHTTPResponse // net/http client: a response from the server
	WaitErrgroup     // errgroup.Group.Wait: the group's goroutines
	WaitSingleflight // singleflight: the first caller's result
	WaitSemaphore    // semaphore.Weighted.Acquire: a Release
	// What a thread's call, read with its arguments, shows.
	WaitFIFO      // opening a FIFO: for a process to open its other end
	WaitLockRetry // asleep between tries of a record lock another process holds (SQLite's busy handler)
	// What a JVM thread dump shows.
	WaitJavaMonitor   // entering a synchronized block: a monitor, its owner printed ("- locked")
	WaitJavaLock      // a java.util.concurrent lock (ReentrantLock, ReentrantReadWriteLock): its owner in "Locked ownable synchronizers"
	WaitJavaPark      // LockSupport.park on what records no owner: a CountDownLatch, a Condition, a CyclicBarrier
	WaitObjectWait    // Object.wait(): for a notify()
	WaitJavaFuture    // CompletableFuture.join(), Future.get(): for whoever completes it
	WaitJavaSemaphore // Semaphore.acquire(): for a release()
	WaitJavaPool      // a pool's worker waiting for a task (ThreadPoolExecutor.getTask, ForkJoinPool.awaitWork)
	// What a read or poll of an anonymous-inode descriptor waits for, by
	// its fdinfo.
	WaitEventfd  // an eventfd: for a write to it, by whoever has it open (no edge: any of them could)
	WaitSignalfd // a signalfd: for one of its signals
	WaitTimerfd  // a timerfd: for its expiry, a sleep
	WaitInotify  // an inotify instance: for a change to a watched file
	WaitPidfd    // a pidfd: for its process to exit
	WaitIOUring  // io_uring_enter: for completions, a wait for events
	// SysV IPC.
	WaitSysVSem // semop, semtimedop: for a SysV semaphore
	WaitSysVMsg // msgrcv, msgsnd: for a message, or room, on a SysV message queue
	// What py-spy's GIL flag shows.
	WaitGIL // a Python thread that wants the GIL another thread holds throughout (it wakes every 5 ms to ask for it)
)

// Role is where a wait's edge in the wait-for graph leads.
type Role uint8

const (
	RoleNone      Role = iota
	RoleHeldBy         // a lock's holder
	RoleJoining        // the thread being joined
	RoleChild          // the child waited for
	RoleReadBy         // whoever reads the pipe
	RoleWrittenBy      // whoever writes the pipe
	RoleOtherEnd       // whoever holds a socket's other end
	// RoleWokenBy: no one is named, so the wait is an "or" over every
	// other live actor of its process that could end it (a condition's
	// signaller, a semaphore's poster).
	RoleWokenBy
	RolePolled   // whoever is at the other end of any of the polled descriptors
	RoleTracedBy // the tracer that stopped it
)

type waitInfo struct {
	name string // the JSON word
	idle bool   // a wait for work, not on something
	role Role
}

var waitKinds = [...]waitInfo{
	WaitNone:             {"", false, RoleNone},
	WaitLock:             {"lock", false, RoleHeldBy},
	WaitFutex:            {"futex", false, RoleWokenBy},
	WaitPipeWrite:        {"pipe-write", false, RoleReadBy},
	WaitPipeRead:         {"pipe-read", false, RoleWrittenBy},
	WaitSocketWrite:      {"socket-write", false, RoleOtherEnd},
	WaitSocketRead:       {"socket-read", false, RoleOtherEnd},
	WaitSocketConnect:    {"socket-connect", false, RoleOtherEnd},
	WaitAccept:           {"accept", true, RoleNone},
	WaitStdin:            {"stdin", false, RoleWrittenBy},
	WaitTTYRead:          {"tty-read", false, RoleNone},
	WaitTTYWrite:         {"tty-write", false, RoleNone},
	WaitFileRead:         {"file-read", false, RoleNone},
	WaitFileWrite:        {"file-write", false, RoleNone},
	WaitFileLock:         {"file-lock", false, RoleHeldBy},
	WaitChildExit:        {"child-exit", false, RoleChild},
	WaitSleep:            {"sleep", true, RoleNone},
	WaitPoll:             {"poll", true, RoleNone},
	WaitPollFDs:          {"poll-fds", false, RolePolled},
	WaitSignal:           {"signal", true, RoleNone},
	WaitUninterruptible:  {"uninterruptible", false, RoleNone},
	WaitStopped:          {"stopped", false, RoleNone},
	WaitTraced:           {"traced", false, RoleTracedBy},
	WaitThreadExit:       {"thread-exit", false, RoleJoining},
	WaitRunning:          {"running", false, RoleNone},
	WaitSyscall:          {"syscall", false, RoleNone},
	WaitUnknown:          {"unknown", false, RoleNone},
	WaitQueue:            {"queue", true, RoleNone},
	WaitCondition:        {"condition", false, RoleWokenBy},
	WaitPythonLock:       {"python-lock", false, RoleHeldBy},
	WaitPython:           {"python", false, RoleNone},
	WaitQueueJoin:        {"queue-join", false, RoleWokenBy},
	WaitEvent:            {"event", false, RoleWokenBy},
	WaitFuture:           {"future", false, RoleWokenBy},
	WaitExecutorShutdown: {"executor-shutdown", false, RoleWokenBy},
	WaitPoolResult:       {"pool-result", false, RoleNone},
	WaitLoopBlocked:      {"event-loop-blocked", false, RoleNone},
	WaitMutex:            {"mutex", false, RoleHeldBy},
	WaitRWMutex:          {"rwmutex", false, RoleHeldBy},
	WaitChannel:          {"channel", false, RoleNone},
	WaitSelect:           {"select", false, RoleNone},
	WaitIO:               {"io", false, RoleNone},
	WaitWaitGroup:        {"waitgroup", false, RoleWokenBy},
	WaitCond:             {"cond", false, RoleWokenBy},
	WaitRuntime:          {"runtime", true, RoleNone},
	WaitOther:            {"other", false, RoleNone},
	WaitDBConn:           {"db-conn", false, RoleWokenBy},
	WaitHTTPResponse:     {"http-response", false, RoleOtherEnd},
	WaitErrgroup:         {"errgroup", false, RoleWokenBy},
	WaitSingleflight:     {"singleflight", false, RoleWokenBy},
	WaitSemaphore:        {"semaphore", false, RoleWokenBy},
	WaitFIFO:             {"fifo-open", false, RoleNone},
	WaitLockRetry:        {"lock-retry", false, RoleHeldBy},
	WaitJavaMonitor:      {"java-monitor", false, RoleHeldBy},
	WaitJavaLock:         {"java-lock", false, RoleHeldBy},
	WaitJavaPark:         {"java-park", false, RoleWokenBy},
	WaitObjectWait:       {"object-wait", false, RoleWokenBy},
	WaitJavaFuture:       {"java-future", false, RoleWokenBy},
	WaitJavaSemaphore:    {"java-semaphore", false, RoleWokenBy},
	WaitJavaPool:         {"java-pool", true, RoleNone},
	WaitEventfd:          {"eventfd", false, RoleNone},
	WaitSignalfd:         {"signalfd", true, RoleNone},
	WaitTimerfd:          {"timerfd", true, RoleNone},
	WaitInotify:          {"inotify", true, RoleNone},
	WaitPidfd:            {"pidfd", false, RoleChild},
	WaitIOUring:          {"io-uring", true, RoleNone},
	WaitSysVSem:          {"sysv-sem", false, RoleNone},
	WaitSysVMsg:          {"sysv-msg", false, RoleNone},
	WaitGIL:              {"gil", false, RoleHeldBy},
}

// WaitKinds lists every kind but WaitNone, in table order: for tests that
// every kind has its words.
func WaitKinds() []WaitKind {
	out := make([]WaitKind, 0, len(waitKinds)-1)
	for k := WaitKind(1); int(k) < len(waitKinds); k++ {
		out = append(out, k)
	}
	return out
}

func (k WaitKind) info() waitInfo {
	if int(k) < len(waitKinds) {
		return waitKinds[k]
	}
	return waitInfo{name: "unknown"}
}

// String is the kind's JSON word: "pipe-write".
func (k WaitKind) String() string { return k.info().name }

// Idle reports a wait for work: a thread parked in one is idle, not blocked.
func (k WaitKind) Idle() bool { return k.info().idle }

// Role says where the kind's edge in the wait-for graph leads.
func (k WaitKind) Role() Role { return k.info().role }

func (k WaitKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *WaitKind) UnmarshalText(b []byte) error {
	for i, w := range waitKinds {
		if w.name == string(b) {
			*k = WaitKind(i)
			return nil
		}
	}
	*k = WaitUnknown
	return nil
}
