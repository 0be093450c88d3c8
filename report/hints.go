package report

import "strings"

// Every hint is selected by a fact: a cause of classify's ladder, and the
// kind of wait, holder or cycle it rests on. hintRows names each hint (its
// key is the JSON's hint_basis) and the fact that selects it;
// docs/hints.md is the same table for readers, and TestHintsDocumented
// keeps the two, and the hints in report/, in step.
type hintRow struct {
	key    string // the JSON's hint_basis
	starts string // how the hint's words start (the longest match wins)
}

var hintRows = []hintRow{
	{"starved", "Give it more CPU"},
	{"gc-thrash", "Give the JVM more heap"},
	{"stopped-by-tracer", "Detach the debugger or tracer"},
	{"stopped-traced", "Detach the tracer"},
	{"stopped-job-control", "Continue it: fg"},
	{"stopped-signal", "Continue it: kill -CONT"},
	{"go-copied-lock", "A goroutine locks a copy of a mutex"},
	{"go-self-deadlock", "A goroutine locks a sync.Mutex it already holds"},
	{"go-cycle", "Goroutines wait on each other"},
	{"python-self-deadlock", "A thread waits for a lock it already holds"},
	{"join-cycle", "A thread joins a thread that waits for it"},
	{"lost-wakeup-future", "A future is waited for that nothing is going to run"},
	{"java-lost-wakeup-future", "A CompletableFuture is waited for that nothing is going to complete"},
	{"lost-wakeup-join", "A thread is joined while it waits"},
	{"lost-wakeup-event", "An event waits for a set() that no running thread"},
	{"lost-wakeup", "Each of these threads waits for a wake-up"},
	{"requests-stuck", "Requests in flight do not return"},
	{"go-holder-parked", "One goroutine holds the mutex the others want and has parked for good"},
	{"self-deadlock", "A thread locks a non-recursive mutex it already holds"},
	{"lock-order", "Threads take the same locks in opposite orders"},
	{"asyncio-lock-order", "asyncio tasks take the same asyncio.Locks in opposite orders"},
	{"asyncio-self-deadlock", "An asyncio task acquires an asyncio.Lock it already holds"},
	{"asyncio-await-cycle", "asyncio tasks await each other"},
	{"asyncio-blocked", "asyncio tasks wait on a lock, an event or a condition"},
	{"asyncio-nobody-left", "Nothing is left in the process that could wake its event loop"},
	{"asyncio-lock-across-io", "An asyncio task holds an asyncio.Lock across an await on a socket"},
	{"wait-cycle", "These threads wait on each other in a cycle"},
	{"go-holder-spins", "One goroutine loops while holding the mutex"},
	{"holder-spins", "One thread spins while holding the lock"},
	{"go-spinning", "A goroutine runs with the same stack in every sample"},
	{"regex-backtracking", "A regular expression backtracks without end"},
	{"spinning-in-c", "A Python thread is inside one C call that does not return"},
	{"spinning-loop", "One thread loops in"},
	{"spinning-python", "A Python thread runs Python code on every sample"},
	{"spinning", "A core is pinned and nothing moves"},
	{"one-dump-running", "One dump shows it on a CPU"},
	{"java-one-dump-running", "One JVM dump shows it RUNNABLE"},
	{"go-working", "It is making progress. Look for what makes it slow (go tool pprof"},
	{"working", "It is making progress. Look for what makes it slow (perf top"},
	{"senders-stuck", "Goroutines wait on channels nobody will serve"},
	{"go-pool", "The goroutine that sent work to the pool"},
	{"go-idle-workers", "The workers wait for work nobody sends"},
	{"pool", "The thread that put work on the queue"},
	{"sleep-only", "It waits for time, not for a resource"},
	{"idle", "Nothing here is stuck on anything of its own"},
	{"go-runtime-deadlock", "The runtime found every goroutine blocked"},
	{"exited", "The process exited during the run"},
	{"no-samples", "No sample was taken"},
	{"owner-gone", "A lock was held by a thread that no longer exists"},
	{"own-file-lock", "The process waits for a file lock it holds itself"},
	{"stranded-queue-join", "queue.join() waits for one task_done()"},
	{"stranded-event", "Event.wait() without a timeout"},
	{"stranded-wakeup", "It waits for a wake-up (a condition's notify"},
	{"stranded-future", "Future.result() waits for a future"},
	{"stranded-waitgroup", "A WaitGroup waits for Done calls"},
	{"stranded-db-pool", "Every connection of the database/sql pool is held"},
	{"stranded-cond", "sync.Cond.Wait waits for a Signal"},
	{"stranded", "It waits for something no live thread or goroutine is left to do"},
	{"cross-wait-pipe", "The parent waits for its child to exit while the child waits"},
	{"cross-wait-stdin", "The child waits for input on a pipe that the parent"},
	{"cross-poll-stdin", "The child waits for input on a stdin pipe"},
	{"cross-poll-pipe", "Each side waits for the other to drain a pipe"},
	{"cross-cycle", "Processes wait on each other in a cycle"},
	{"gil-held-blocked", "A thread holds the GIL while it blocks in"},
	{"holder-writes", "One thread holds the lock the others want and is itself blocked in"},
	{"holder-reads", "One thread holds the lock the others want and waits in"},
	{"holder-child", "One thread holds the lock the others want while it waits for a child"},
	{"holder-lock-chain", "The lock holder waits for another lock"},
	{"holder-blocked", "One thread holds the lock the others want and is itself"},
	{"go-holder-io", "One goroutine holds the mutex the others want and is itself blocked on I/O"},
	{"go-holder-channel", "One goroutine holds the mutex the others want while it waits on a channel"},
	{"go-holder-mutex-chain", "The holder waits for another mutex"},
	{"go-holder-blocked", "One goroutine holds the mutex the others want and is itself"},
	{"asyncio-loop-blocked", "A coroutine makes a synchronous call"},
	{"pool-lost-worker", "A multiprocessing pool lost a task with a worker that exited"},
	{"pool-lost-task", "A multiprocessing pool waits for the result of a task that no worker has"},
	{"pool-result", "A multiprocessing pool's worker process does not finish"},
	{"future", "A future's result never comes"},
	{"uninterruptible", "A thread is in uninterruptible sleep"},
	{"thread-stopped", "A thread is stopped by a signal or a tracer"},
	{"child-exit", "It waits for a child process to exit"},
	{"file-lock", "It waits for a file lock another process holds"},
	{"stdin", "It waits for input on its standard input"},
	{"blocked-writing", "It is blocked writing because the other end does not drain"},
	{"lock-no-holder", "Threads wait on a lock whose holder is not recorded"},
	{"java-lock-no-owner", "Threads wait for a Java lock whose owner this dump does not record"},
	{"java-no-owner", "Threads wait on a Java synchronizer that records no owner"},
	{"outside-world", "Blocked on the outside world"},
	{"own-pipe", "It reads a pipe whose other end only this process holds"},
	{"file-io", "A read or write of a file does not return"},
	{"python-lock-no-holder", "Threads wait for a Python lock whose holder no stack shows"},
	{"wakeup", "Threads wait for a wake-up"},
	{"blocked-look-next", "Blocked, and the evidence stops at the wait itself"},
	{"go-http-response", "An HTTP client waits for a response"},
	{"go-db-pool", "Goroutines wait for a free connection"},
	{"go-semaphore", "Goroutines wait on a semaphore"},
	{"go-mutex-no-holder", "Goroutines wait for a mutex whose holder"},
	{"go-waitgroup", "A WaitGroup waits for goroutines that will never call Done"},
	{"go-outside-world", "Goroutines wait on the outside world"},
	{"go-syscall", "Goroutines are in system calls that do not return"},
	{"go-channels", "Goroutines wait on channels nobody serves"},
	{"go-blocked-look-next", "Blocked: follow what the biggest group waits for"},
}

// hintKey is the key of a hint's words, "" for none.
func hintKey(text string) string {
	best := -1
	for i, r := range hintRows {
		if strings.HasPrefix(text, r.starts) && (best < 0 || len(r.starts) > len(hintRows[best].starts)) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return hintRows[best].key
}
