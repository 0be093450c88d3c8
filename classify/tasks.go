package classify

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// asyncio's tasks, as a Python target's last sample read them from the
// interpreter's memory: what each waits for, from its innermost frames —
// an asyncio primitive's method (Lock.acquire, Event.wait …, whose self
// is the primitive), a sleep, another task, a bare future — and which
// asyncio locks each holds: a frame of its inside `async with NAME:`
// holds the lock its variable NAME names (the source rule, by address).
// Tasks that wait for each other's locks in a cycle are a deadlock.

// TaskWaitKind is what a task waits for.
type TaskWaitKind uint8

const (
	TaskRuns       TaskWaitKind = iota // not suspended in an await (it runs, or has not started)
	TaskDone                           // it finished
	TaskFailed                         // it finished with an exception
	TaskLock                           // asyncio.Lock.acquire
	TaskSemaphore                      // asyncio.Semaphore.acquire
	TaskEvent                          // asyncio.Event.wait
	TaskCondition                      // asyncio.Condition.wait
	TaskQueue                          // asyncio.Queue.get, put or join
	TaskSleep                          // asyncio.sleep
	TaskAwaitsTask                     // another task
	TaskFuture                         // a future nobody above names
	TaskGather                         // asyncio.gather's future: every one of the tasks it gathered
	TaskSocket                         // a stream's or a loop's sock_* call: a socket (Op, FD)
	TaskPoolCall                       // a thread-pool call (run_in_executor, to_thread) on Thread
	TaskGroupWait                      // its TaskGroup's tasks, at the end of `async with TaskGroup()`
)

// Task is one asyncio task and what it waits for.
type Task struct {
	Name string
	Addr string
	Kind TaskWaitKind
	// Object is the primitive's address (a lock's), or the task or future
	// awaited; "" when none is known.
	Object string
	// Awaited are the addresses of the tasks (or futures) it waits for
	// every one of: the one it awaits, or those its gather gathered.
	Awaited []string
	// Where is its innermost frame outside asyncio's own code: the line
	// of the program that awaits.
	Where model.Frame
	Stack []model.Frame
	// Holds are the addresses of the asyncio locks it holds, each with
	// the frame and line of its `async with`.
	Holds []TaskHold
	// For TaskSocket: Op is what it waits for ("read", "write",
	// "accept", "connect"); FD the socket's descriptor (-1 unknown),
	// Resource what the loop's epoll says it is ("socket:[123]"), and
	// Peers the other processes that hold its other end.
	Op       string
	FD       int
	Resource string
	Peers    []int
	// Thread is, for TaskPoolCall, the thread whose work item resolves
	// the future it awaits.
	Thread int
}

// Loop is the asyncio event loop's thread and what the kernel says could
// wake it.
type Loop struct {
	TID int
	// Forever: in every sample it waited in epoll_wait with no timeout —
	// asyncio computes one from its earliest timer, and polls at once
	// when a callback is ready: none was due.
	Forever bool
	// OwnOnly: every descriptor its epoll instance watches is a socket
	// whose other end only the target itself holds (asyncio's own
	// wake-up socket), and Watched how many it watches.
	OwnOnly bool
	Watched int
	// Alone: it was the process's only thread in every sample, so no
	// other thread could hand it a callback (call_soon_threadsafe).
	Alone bool
}

// NobodyLeft reports a loop that nothing in or outside the process can
// wake but a signal: no timer, no callback, no other thread, and no
// descriptor another process could make ready.
func (l Loop) NobodyLeft() bool { return l.TID != 0 && l.Forever && l.OwnOnly && l.Alone }

// socketOp is what a task whose innermost frame is f waits for on a
// socket; "" for no socket wait.
func socketOp(f model.Frame) string {
	if c := model.SocketCallOf(f.File, f.Func); c != nil {
		return c.Op
	}
	return ""
}

// TaskHold is an asyncio lock a task holds: the `async with NAME:` whose
// block one of its frames is in, and the address NAME's variable names.
type TaskHold struct {
	Lock  string
	Expr  string
	Frame model.Frame
	Line  int // the `async with` line
}

// taskPrimitives are asyncio's own methods a task waits in, by the end
// of their file and their qualified name.
var taskPrimitives = []struct {
	file, fn string
	kind     TaskWaitKind
}{
	{"asyncio/locks.py", "Lock.acquire", TaskLock},
	{"asyncio/locks.py", "Semaphore.acquire", TaskSemaphore},
	{"asyncio/locks.py", "Event.wait", TaskEvent},
	{"asyncio/locks.py", "Condition.wait", TaskCondition},
	{"asyncio/queues.py", "Queue.get", TaskQueue},
	{"asyncio/queues.py", "Queue.put", TaskQueue},
	{"asyncio/queues.py", "Queue.join", TaskQueue},
}

// tasks says what each task of the last sample waits for, and which
// locks it holds, by the source files read; and what the kernel says of
// the loop's thread.
func tasks(rec *model.Recording) ([]Task, Loop) {
	samples := rec.Samples
	if len(samples) == 0 || len(samples[len(samples)-1].Tasks) == 0 {
		return nil, Loop{}
	}
	loop, watches := eventLoop(rec)
	var out []Task
	for _, t := range samples[len(samples)-1].Tasks {
		x := Task{Name: t.Name, Addr: t.Addr, Stack: t.Stack, Kind: TaskRuns, FD: -1}
		for _, f := range t.Stack {
			if !strings.Contains(f.File, "/asyncio/") {
				x.Where = f
				break
			}
		}
		switch {
		case t.Failed:
			x.Kind = TaskFailed
		case t.Done:
			x.Kind = TaskDone
		case t.Awaits == "":
		case len(t.Stack) > 0 && primitive(t.Stack[0]) != TaskRuns:
			x.Kind, x.Object = primitive(t.Stack[0]), model.VarOf(t.Vars, 0, "self")
		case len(t.Stack) > 0 && t.Stack[0].Func == "sleep" && strings.HasSuffix(t.Stack[0].File, "asyncio/tasks.py"):
			x.Kind = TaskSleep
		case t.Thread != 0:
			x.Kind, x.Object, x.Thread = TaskPoolCall, t.Awaits, t.Thread
		case len(t.Stack) > 0 && socketOp(t.Stack[0]) != "":
			x.Kind, x.Op, x.Object = TaskSocket, socketOp(t.Stack[0]), t.Awaits
			if t.FD != nil {
				x.FD = *t.FD
				x.Resource = watches[x.FD]
				if res, ok := rec.Resources[x.Resource]; ok && res.Peer != "" {
					for _, pid := range holders(rec.Resources[res.Peer], "") {
						if pid != rec.Target.PID {
							x.Peers = append(x.Peers, pid)
						}
					}
				}
			}
		case len(t.Stack) > 0 && (t.Stack[0].Func == "TaskGroup.__aexit__" || t.Stack[0].Func == "TaskGroup._aexit") && strings.HasSuffix(t.Stack[0].File, "asyncio/taskgroups.py"):
			x.Kind, x.Object, x.Awaited = TaskGroupWait, t.Awaits, t.AwaitsAll
		case strings.HasSuffix(t.AwaitsType, "Task"):
			x.Kind, x.Object, x.Awaited = TaskAwaitsTask, t.Awaits, []string{t.Awaits}
		case t.AwaitsType == "_GatheringFuture":
			x.Kind, x.Object, x.Awaited = TaskGather, t.Awaits, t.AwaitsAll
		default:
			x.Kind, x.Object = TaskFuture, t.Awaits
		}
		x.Holds = taskHolds(t, rec.Sources)
		out = append(out, x)
	}
	return out, loop
}

// eventLoop finds the asyncio event loop's thread — the one whose stack
// runs BaseEventLoop._run_once — and what could wake it, and the
// descriptors its epoll instance watches (the last sample's), by number.
// A process with more than one loop's thread has its first.
func eventLoop(rec *model.Recording) (Loop, map[int]string) {
	last := rec.Samples[len(rec.Samples)-1]
	var l Loop
	var watches map[int]string
	for _, t := range last.Threads {
		if !model.RunsAsyncioLoop(t.Stack) {
			continue
		}
		l.TID = t.TID
		watches = make(map[int]string, len(t.Watches))
		l.OwnOnly = len(t.Watches) > 0
		for _, w := range t.Watches {
			n, name, _ := strings.Cut(w, " ")
			fd, err := strconv.Atoi(n)
			if err != nil {
				l.OwnOnly = false // "… N more"
				continue
			}
			watches[fd] = name
			l.Watched++
			res, ok := rec.Resources[name]
			if !ok || res.Peer == "" || !strings.HasPrefix(name, "socket:") {
				l.OwnOnly = false
				continue
			}
			if ends := holders(rec.Resources[res.Peer], ""); len(ends) != 1 || ends[0] != rec.Target.PID {
				l.OwnOnly = false
			}
		}
		break
	}
	if l.TID == 0 {
		return l, nil
	}
	l.Forever, l.Alone = true, true
	for _, s := range rec.Samples {
		if len(s.Threads) != 1 {
			l.Alone = false
		}
		i := slices.IndexFunc(s.Threads, func(t model.Thread) bool { return t.TID == l.TID })
		if i < 0 {
			l.Forever = false
			continue
		}
		sc := s.Threads[i].Syscall
		switch {
		case sc.Running || sc.Unknown:
			l.Forever = false
		case sc.Name == "epoll_wait" || sc.Name == "epoll_pwait" || sc.Name == "epoll_pwait2":
			// The timeout is the fourth argument, an int: -1 waits for
			// ever (epoll_pwait2's is a pointer: NULL).
			if sc.Name == "epoll_pwait2" && sc.Args[3] != 0 || sc.Name != "epoll_pwait2" && int32(sc.Args[3]) != -1 {
				l.Forever = false
			}
		default:
			l.Forever = false
		}
	}
	return l, watches
}

// primitive is the asyncio primitive whose method f is; TaskRuns for
// none.
func primitive(f model.Frame) TaskWaitKind {
	for _, p := range taskPrimitives {
		if strings.HasSuffix(f.File, p.file) && (f.Func == p.fn || strings.HasSuffix(f.Func, "."+p.fn) || strings.HasSuffix(p.fn, "."+f.Func)) {
			return p.kind
		}
	}
	return TaskRuns
}

// asyncWith is an `async with` statement's header: its expression.
var asyncWith = regexp.MustCompile(`^\s*async\s+with\s+([A-Za-z_][A-Za-z_0-9]*)\s*(?:as\s+[A-Za-z_][A-Za-z_0-9]*\s*)?:`)

// taskHolds are the asyncio locks a task's frames hold: for each frame of
// the program's code whose file was read, the `async with NAME:` headers
// that enclose its line (by indentation, up to the function's def) whose
// NAME is a variable of that frame naming an object.
func taskHolds(t model.Task, sources map[string][]string) []TaskHold {
	var out []TaskHold
	for i, f := range t.Stack {
		lines := sources[f.File]
		if f.Line <= 0 || f.Line > len(lines) || strings.Contains(f.File, "/asyncio/") {
			continue
		}
		cur := indent(lines[f.Line-1])
		for k := f.Line - 2; k >= 0 && f.Line-k < 500; k-- {
			l := lines[k]
			if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			in := indent(l)
			if in >= cur {
				continue
			}
			cur = in
			if m := asyncWith.FindStringSubmatch(l); m != nil {
				if addr := model.VarOf(t.Vars, i, m[1]); addr != "" {
					out = append(out, TaskHold{Lock: addr, Expr: m[1], Frame: f, Line: k + 1})
				}
			}
			trimmed := strings.TrimSpace(l)
			if strings.HasPrefix(trimmed, "def ") || strings.HasPrefix(trimmed, "async def ") || in == 0 {
				break
			}
		}
	}
	return out
}

// indent is a line's indentation in columns (a tab to the next 8).
func indent(l string) int {
	n := 0
	for _, c := range l {
		switch c {
		case ' ':
			n++
		case '\t':
			n = n/8*8 + 8
		default:
			return n
		}
	}
	return n
}

// taskCycles are cycles of tasks each of which waits for the next: for an
// asyncio lock the next one holds, or for the next itself (it awaits it,
// alone or in a gather). Each is a list of task indexes, each waiting for
// the next (the last for the first). A lock two tasks hold names no
// holder.
func taskCycles(ts []Task) [][]int {
	next := taskEdges(ts)
	var out [][]int
	const (
		unseen = iota
		onPath
		finished
	)
	state := make([]int, len(ts))
	var path []int
	var visit func(i int)
	visit = func(i int) {
		state[i] = onPath
		path = append(path, i)
		for _, j := range next[i] {
			switch state[j] {
			case unseen:
				visit(j)
			case onPath:
				k := slices.Index(path, j)
				out = append(out, slices.Clone(path[k:]))
			}
		}
		path = path[:len(path)-1]
		state[i] = finished
	}
	for i := range ts {
		if state[i] == unseen {
			visit(i)
		}
	}
	return out
}

// taskEdges are, for each task, the tasks it waits for: the holder of the
// asyncio lock it waits for, and the tasks it awaits.
func taskEdges(ts []Task) [][]int {
	holder := map[string]int{}
	byAddr := map[string]int{}
	for i, t := range ts {
		byAddr[t.Addr] = i
		for _, h := range t.Holds {
			if _, dup := holder[h.Lock]; dup {
				holder[h.Lock] = -1
			} else {
				holder[h.Lock] = i
			}
		}
	}
	next := make([][]int, len(ts))
	for i, t := range ts {
		if t.Kind == TaskLock && t.Object != "" {
			if h, ok := holder[t.Object]; ok && h >= 0 {
				next[i] = append(next[i], h)
			}
		}
		for _, a := range t.Awaited {
			if j, ok := byAddr[a]; ok {
				next[i] = append(next[i], j)
			}
		}
	}
	return next
}

// TaskHolder is the task that holds the asyncio lock at addr, -1 for none
// or more than one.
func TaskHolder(ts []Task, addr string) int {
	h := -1
	for i, t := range ts {
		for _, x := range t.Holds {
			if x.Lock == addr {
				if h >= 0 && h != i {
					return -1
				}
				h = i
			}
		}
	}
	return h
}
