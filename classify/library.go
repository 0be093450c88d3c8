package classify

import (
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// The library table: waits named by the library frame that explains them,
// not by the primitive underneath (a Condition.wait, a chan receive) nor by
// the outermost frame. One row each: the frame, and the wait kind it
// names; report has the words for each kind. Rows are tried in order, the
// specific before the primitives they are built on: Queue.join waits in
// Condition.wait, and it is the join that says what is missing.

// libRow is one library frame that names a wait.
type libRow struct {
	fn string // a Go function (matched as a suffix, so vendored copies match too), or a Python function
	// file is the suffix of a Python frame's file; "" for Go.
	file string
	kind model.WaitKind
}

var goLibrary = []libRow{
	{fn: "database/sql.(*DB).conn", kind: model.WaitDBConn},
	{fn: "net/http.(*persistConn).roundTrip", kind: model.WaitHTTPResponse},
	{fn: "errgroup.(*Group).Wait", kind: model.WaitErrgroup},
	{fn: "singleflight.(*Group).Do", kind: model.WaitSingleflight},
	{fn: "singleflight.(*Group).DoChan", kind: model.WaitSingleflight},
	{fn: "semaphore.(*Weighted).Acquire", kind: model.WaitSemaphore},
	{fn: "sync.(*WaitGroup).Wait", kind: model.WaitWaitGroup},
	{fn: "sync.(*Cond).Wait", kind: model.WaitCond},
}

var pythonLibrary = []libRow{
	{fn: "Queue.join", file: "queue.py", kind: model.WaitQueueJoin},
	{fn: "Queue.get", file: "queue.py", kind: model.WaitQueue},
	{fn: "Future.result", file: "concurrent/futures/_base.py", kind: model.WaitFuture},
	{fn: "as_completed", file: "concurrent/futures/_base.py", kind: model.WaitFuture},
	{fn: "wait", file: "concurrent/futures/_base.py", kind: model.WaitFuture},
	{fn: "ThreadPoolExecutor.shutdown", file: "concurrent/futures/thread.py", kind: model.WaitExecutorShutdown},
	{fn: "ApplyResult.get", file: "multiprocessing/pool.py", kind: model.WaitPoolResult},
	{fn: "ApplyResult.wait", file: "multiprocessing/pool.py", kind: model.WaitPoolResult},
	{fn: "IMapIterator.next", file: "multiprocessing/pool.py", kind: model.WaitPoolResult},
	{fn: "Event.wait", file: "threading.py", kind: model.WaitEvent},
	{fn: "Thread.join", file: "threading.py", kind: model.WaitThreadExit},
	{fn: "_wait_for_tstate_lock", file: "threading.py", kind: model.WaitThreadExit},
	{fn: "Condition.wait", file: "threading.py", kind: model.WaitCondition},
	{fn: "Semaphore.acquire", file: "threading.py", kind: model.WaitCondition},
}

// condEnter is the frame of a thread taking a threading.Condition's lock.
var condEnter = libRow{fn: "Condition.__enter__", file: "threading.py"}

// libraryWait names a wait from a stack by the table of its runtime: the
// kind and the index of the frame that names it; WaitNone and -1 when no
// row matches.
func libraryWait(rt model.Runtime, stack []model.Frame) (model.WaitKind, int) {
	rows := goLibrary
	if rt != model.RuntimeGo {
		rows = pythonLibrary
		if len(stack) > 0 && condEnter.match(stack[0]) {
			// It takes a Condition's lock (`with self.not_empty:` in
			// Queue.get): it waits for that lock's holder, not yet for
			// what the call above waits for once it has the lock.
			return model.WaitNone, -1
		}
	}
	for _, r := range rows {
		if i := slices.IndexFunc(stack, r.match); i >= 0 {
			return r.kind, i
		}
	}
	return model.WaitNone, -1
}

func (r libRow) match(f model.Frame) bool {
	if r.file == "" {
		return strings.HasSuffix(f.Func, r.fn)
	}
	if !strings.HasSuffix(f.File, r.file) {
		return false
	}
	// py-spy names methods bare (join) or, on newer Pythons, qualified
	// (Queue.join).
	_, bare, qualified := strings.Cut(r.fn, ".")
	return f.Func == r.fn || qualified && f.Func == bare
}

// libraryNamed reports a wait kind the Python library table names: one
// that waits for another thread to do something, not for a lock's holder.
func libraryNamed(k model.WaitKind) bool {
	return slices.ContainsFunc(pythonLibrary, func(r libRow) bool { return r.kind == k })
}

// blockedLoop finds an asyncio event loop that a synchronous call inside a
// coroutine blocks: the loop runs a callback (a task's step) and the
// thread waits there, not in the loop's own select. It returns the
// innermost frame of the program's code inside the callback: the
// coroutine that makes the call.
func blockedLoop(stack []model.Frame) (*model.Frame, bool) {
	run := slices.IndexFunc(stack, func(f model.Frame) bool {
		return (f.Func == "Handle._run" || f.Func == "_run") && strings.HasSuffix(f.File, "asyncio/events.py")
	})
	if run <= 0 || !slices.ContainsFunc(stack[run:], func(f model.Frame) bool { return strings.HasSuffix(f.File, "asyncio/base_events.py") }) {
		return nil, false
	}
	for i := 0; i < run; i++ {
		if !PythonLib(stack[i].File) {
			return &stack[i], true
		}
	}
	return &stack[run-1], true
}

// PythonLib reports a file of Python's standard library: one under a
// lib/pythonX.Y directory that is not site-packages.
func PythonLib(file string) bool {
	return strings.Contains(file, "/lib/python") && !strings.Contains(file, "-packages/")
}
