package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// Task is a Python target's asyncio task: what it waits for, who awaits
// it, and where it stands.
type Task struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// State is "waiting" (suspended in an await), "active" (not in one:
	// it runs, or has not started), "done", or "failed" (done with an
	// exception).
	State string `json:"state"`
	// Waits is what it waits for: "asyncio.Lock", "asyncio.Semaphore",
	// "asyncio.Event", "asyncio.Condition", "asyncio.Queue", "sleep",
	// "task", "future"; "" when it waits for nothing.
	Waits string `json:"waits,omitempty"`
	// Object is the address of what it waits for (the lock's, the task's,
	// the future's); "" when not known.
	Object string `json:"object,omitempty"`
	// AwaitedBy are the tasks that await this one.
	AwaitedBy []string `json:"awaited_by,omitempty"`
	// Holds are the asyncio locks it holds, by address: a frame of its
	// is inside `async with NAME:`, whose variable names that lock.
	Holds []string `json:"holds,omitempty"`
	// HoldsAt are, for each of Holds, the `async with` it rests on
	// ("take (m.py:12)"), and HoldsBasis how sure each is: "probable" —
	// the source names the lock, the address is the variable's, but no
	// owner is recorded (an asyncio.Lock keeps none).
	HoldsAt    []string `json:"holds_at,omitempty"`
	HoldsBasis string   `json:"holds_basis,omitempty"`
	// FD is, for a socket wait, the socket's descriptor; Resource what
	// the kernel calls it ("socket:[123]"), and Peers the other processes
	// that hold its other end.
	FD       *int   `json:"fd,omitempty"`
	Resource string `json:"resource,omitempty"`
	Peers    []int  `json:"peers,omitempty"`
	// Thread is, for a thread-pool call, the thread whose work item
	// resolves the future it awaits.
	Thread int `json:"thread,omitempty"`
	// Deadlocked: it is in the cycle of tasks the verdict names.
	Deadlocked bool `json:"deadlocked,omitempty"`
	// Where is its innermost frame in the program's own code.
	Where string  `json:"where,omitempty"`
	Stack []Frame `json:"stack"`
}

// taskWaitWords name what a task waits for, in the JSON and the text.
var taskWaitWords = map[classify.TaskWaitKind]string{
	classify.TaskLock:       "asyncio.Lock",
	classify.TaskSemaphore:  "asyncio.Semaphore",
	classify.TaskEvent:      "asyncio.Event",
	classify.TaskCondition:  "asyncio.Condition",
	classify.TaskQueue:      "asyncio.Queue",
	classify.TaskSleep:      "sleep",
	classify.TaskAwaitsTask: "task",
	classify.TaskGather:     "gather",
	classify.TaskFuture:     "future",
	classify.TaskPoolCall:   "thread-pool call",
	classify.TaskGroupWait:  "TaskGroup",
}

// taskSocketWords name a socket wait by what it waits for.
var taskSocketWords = map[string]string{
	"read": "socket read", "write": "socket write", "accept": "socket accept", "connect": "socket connect",
}

// tasks builds the report's tasks from the diagnosis's, in its order.
func tasks(ts []classify.Task, c classify.Cause) []Task {
	out := make([]Task, 0, len(ts))
	// Who awaits each task, in one pass: 10,000 tasks each looked for in
	// every other's awaits would be a hundred million comparisons.
	awaitedBy := map[string][]string{}
	for _, o := range ts {
		for _, a := range o.Awaited {
			awaitedBy[a] = append(awaitedBy[a], o.Name)
		}
	}
	for _, t := range ts {
		x := Task{Name: t.Name, Addr: t.Addr, Waits: taskWaitWords[t.Kind], Object: t.Object, Stack: frames(t.Stack), State: "waiting",
			Resource: t.Resource, Peers: t.Peers, Thread: t.Thread}
		if t.Kind == classify.TaskSocket {
			x.Waits = taskSocketWords[t.Op]
		}
		if t.FD >= 0 {
			x.FD = &t.FD
		}
		switch t.Kind {
		case classify.TaskRuns:
			x.State = "active"
		case classify.TaskDone:
			x.State = "done"
		case classify.TaskFailed:
			x.State = "failed"
		}
		if t.Where.Func != "" {
			x.Where = frameWhere(t.Where)
		}
		x.AwaitedBy = slices.Sorted(slices.Values(awaitedBy[t.Addr]))
		for _, h := range t.Holds {
			x.Holds = append(x.Holds, h.Lock)
			x.HoldsAt = append(x.HoldsAt, frameWhere(model.Frame{Func: h.Frame.Func, File: h.Frame.File, Line: h.Line}))
			x.HoldsBasis = "probable"
		}
		out = append(out, x)
	}
	if c.Rule == classify.CauseTaskDeadlock {
		for _, i := range c.TaskCycle {
			out[i].Deadlocked = true
		}
	}
	return out
}

// taskDeadlockSummary says which tasks wait for which in the cycle: for
// a lock the next one holds (and where it took it), or for the next task
// itself.
func (w *words) taskDeadlockSummary(c classify.Cause) string {
	ts := w.d.Tasks
	if len(c.TaskCycle) == 1 {
		t := ts[c.TaskCycle[0]]
		if t.Kind == classify.TaskLock {
			return fmt.Sprintf("self-deadlock: task %s waits for asyncio.Lock %s at %s, which it holds itself (asyncio.Lock is not reentrant)", t.Name, t.Object, taskWhere(t))
		}
		return fmt.Sprintf("self-deadlock: task %s awaits itself at %s", t.Name, taskWhere(t))
	}
	var parts []string
	for k, i := range c.TaskCycle {
		t, n := ts[i], c.TaskCycle[(k+1)%len(c.TaskCycle)]
		parts = append(parts, taskHop(ts, t, n))
	}
	s := fmt.Sprintf("deadlock between %d asyncio tasks: %s", len(c.TaskCycle), strings.Join(parts, "; "))
	if c.TaskCycles > 1 {
		s += fmt.Sprintf("; %d cycles in all (the tasks table marks them)", c.TaskCycles)
	}
	return s
}

// taskWhere is where a task stands: its innermost frame in the program's
// own code, else its innermost frame.
func taskWhere(t classify.Task) string {
	switch {
	case t.Where.Func != "":
		return frameWhere(t.Where)
	case len(t.Stack) > 0:
		return frameWhere(t.Stack[0])
	}
	return "(no frame read)"
}

// tasksBlockedSummary names the tasks that wait on asyncio primitives,
// and on what.
func (w *words) tasksBlockedSummary(c classify.Cause) string {
	var parts []string
	for k, i := range c.TaskCycle {
		if k == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(c.TaskCycle)-3))
			break
		}
		t := w.d.Tasks[i]
		held := ""
		if t.Kind == classify.TaskLock {
			if h := classify.TaskHolder(w.d.Tasks, t.Object); h >= 0 {
				held = ", held by task " + w.d.Tasks[h].Name
				if ht := w.d.Tasks[h]; ht.Kind != classify.TaskRuns {
					held += ", which waits for " + w.taskAwaits(ht)
				}
			}
		}
		parts = append(parts, fmt.Sprintf("task %s waits for %s at %s%s", t.Name, w.taskAwaits(t), taskWhere(t), held))
	}
	s := fmt.Sprintf("%s, while the event loop's thread waits for events: %s",
		plural(len(c.TaskCycle), "task is blocked", "tasks are blocked"), strings.Join(parts, "; "))
	if c.NobodyLeft {
		s += "; nothing is left that could wake the loop but a signal: it waits with no timer due and no callback ready, on no descriptor but its own wake-up socket, and it is the process's only thread"
	}
	// A task that failed may be the one that would have set or released
	// what they wait for.
	var failed []string
	for _, t := range w.d.Tasks {
		if t.Kind == classify.TaskFailed {
			failed = append(failed, t.Name)
		}
	}
	if len(failed) > 0 {
		s += fmt.Sprintf("; %s with an exception: %s", plural(len(failed), "task failed", "tasks failed"), strings.Join(failed, ", "))
	}
	return s
}

// taskHop says why task t waits for ts[n]: the lock it holds, or itself.
func taskHop(ts []classify.Task, t classify.Task, n int) string {
	next := ts[n]
	if t.Kind == classify.TaskLock && classify.TaskHolder(ts, t.Object) == n {
		held := ""
		for _, h := range next.Holds {
			if h.Lock == t.Object {
				held = fmt.Sprintf(" (async with %s, %s)", h.Expr, frameWhere(model.Frame{Func: h.Frame.Func, File: h.Frame.File, Line: h.Line}))
			}
		}
		return fmt.Sprintf("task %s waits for asyncio.Lock %s at %s, held by task %s%s", t.Name, t.Object, taskWhere(t), next.Name, held)
	}
	if t.Kind == classify.TaskGather {
		return fmt.Sprintf("task %s awaits a gather of task %s at %s", t.Name, next.Name, taskWhere(t))
	}
	if t.Kind == classify.TaskGroupWait {
		return fmt.Sprintf("task %s waits at the end of its TaskGroup, at %s, for the group's task %s", t.Name, taskWhere(t), next.Name)
	}
	return fmt.Sprintf("task %s awaits task %s at %s", t.Name, next.Name, taskWhere(t))
}

// taskAwaits says what task t waits for, in the words of a summary: the
// primitive or future by address, the socket and who holds its other
// end, the thread-pool thread that runs its call.
func (w *words) taskAwaits(t classify.Task) string {
	switch t.Kind {
	case classify.TaskSocket:
		what := map[string]string{"read": "a read from", "write": "room to write on", "accept": "a connection to accept on", "connect": "its connect to complete on"}[t.Op]
		if t.FD < 0 {
			return what + " a socket"
		}
		s := fmt.Sprintf("%s socket fd %d", what, t.FD)
		if t.Resource != "" {
			s += " (" + t.Resource + ")"
		}
		if len(t.Peers) > 0 {
			var ends []string
			for _, pid := range t.Peers {
				ends = append(ends, w.procName(pid)+": "+w.stateOf(pid))
			}
			s += ", whose other end is held by " + strings.Join(ends, "; ")
		}
		return s
	case classify.TaskPoolCall:
		return "a thread-pool call that " + w.tidName(t.Thread) + " runs"
	case classify.TaskGroupWait:
		return "its TaskGroup's tasks"
	case classify.TaskFuture:
		return "future " + t.Object
	}
	what := taskWaitWords[t.Kind]
	if t.Object != "" {
		what += " " + t.Object
	}
	return what
}

// poolCalls adds to a summary of threads the asyncio tasks that await a
// thread-pool call on one of the threads it names: "; task handler
// awaits, at handle (m.py:9), the thread-pool call that tid 7
// (asyncio_0) runs". Empty for a
// summary of tasks, or none.
func (w *words) poolCalls(c classify.Cause) string {
	if c.Rule == classify.CauseTasksBlocked || c.Rule == classify.CauseTaskDeadlock {
		return ""
	}
	named := map[int]bool{}
	for _, a := range c.Actors {
		named[a.TID] = true
	}
	if l := w.lock(c.Lock); l != nil {
		for _, r := range l.Waiters {
			named[r.TID] = true
		}
	}
	var parts []string
	for _, t := range w.d.Tasks {
		if t.Kind == classify.TaskPoolCall && named[t.Thread] {
			parts = append(parts, fmt.Sprintf("task %s awaits, at %s, the thread-pool call that %s runs", t.Name, taskWhere(t), w.tidName(t.Thread)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// lockAcrossIO reports blocked tasks that wait for a lock whose holder
// waits on a socket.
func (w *words) lockAcrossIO(c classify.Cause) bool {
	for _, i := range c.TaskCycle {
		t := w.d.Tasks[i]
		if t.Kind != classify.TaskLock {
			continue
		}
		if h := classify.TaskHolder(w.d.Tasks, t.Object); h >= 0 && w.d.Tasks[h].Kind == classify.TaskSocket {
			return true
		}
	}
	return false
}

// tidName names a thread of the target by its TID: "tid 7 (worker)".
func (w *words) tidName(tid int) string {
	for i := range w.d.Threads {
		if a := &w.d.Threads[i]; a.Ref.TID == tid {
			return threadName(a)
		}
	}
	return fmt.Sprintf("tid %d", tid)
}

// taskCycleLocks reports a cycle of tasks in which every one waits for a
// lock (no task awaits another).
func taskCycleLocks(ts []classify.Task, cycle []int) bool {
	for _, i := range cycle {
		if ts[i].Kind != classify.TaskLock {
			return false
		}
	}
	return true
}

// taskWaitCell says what a task waits for, with the object's address.
func taskWaitCell(t Task) string {
	w := t.Waits
	if w == "" {
		return t.State
	}
	switch {
	case t.FD != nil:
		w += " fd " + strconv.Itoa(*t.FD)
		if len(t.Peers) > 0 {
			pids := make([]string, len(t.Peers))
			for i, p := range t.Peers {
				pids[i] = "pid " + strconv.Itoa(p)
			}
			w += " (other end: " + strings.Join(pids, ", ") + ")"
		}
	case t.Thread != 0:
		w += " on tid " + strconv.Itoa(t.Thread)
	case t.Object != "":
		w += " " + t.Object
	}
	if len(t.AwaitedBy) > 0 {
		w += "; awaited by " + strings.Join(t.AwaitedBy, ", ")
	}
	if len(t.Holds) > 0 {
		w += "; holds " + strings.Join(t.Holds, ", ")
	}
	if t.Deadlocked {
		w += " (deadlocked)"
	}
	return w
}

// taskText writes the tasks' table.
func taskText(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "\nASYNCIO TASKS  %d (from the interpreter's memory, the last sample)\n", len(r.Tasks))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tWAITS FOR\tWHERE\t")
	for _, t := range r.Tasks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", t.Name, taskWaitCell(t), dash(t.Where))
	}
	tw.Flush()
}

// taskMarkdown writes the tasks' table.
func taskMarkdown(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "\n#### asyncio tasks (%d, from the interpreter's memory, the last sample)\n\n", len(r.Tasks))
	fmt.Fprintf(b, "| Name | Waits for | Where |\n|---|---|---|\n")
	for _, t := range r.Tasks {
		fmt.Fprintf(b, "| %s | %s | %s |\n", cell(t.Name), cell(taskWaitCell(t)), code(t.Where))
	}
}
