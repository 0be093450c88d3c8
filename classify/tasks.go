package classify

import (
	"regexp"
	"slices"
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
// locks it holds, by the source files read.
func tasks(samples []model.Sample, sources map[string][]string) []Task {
	if len(samples) == 0 {
		return nil
	}
	var out []Task
	for _, t := range samples[len(samples)-1].Tasks {
		x := Task{Name: t.Name, Addr: t.Addr, Stack: t.Stack, Kind: TaskRuns}
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
			x.Kind, x.Object = primitive(t.Stack[0]), varAt(t.Vars, 0, "self")
		case len(t.Stack) > 0 && t.Stack[0].Func == "sleep" && strings.HasSuffix(t.Stack[0].File, "asyncio/tasks.py"):
			x.Kind = TaskSleep
		case strings.HasSuffix(t.AwaitsType, "Task"):
			x.Kind, x.Object, x.Awaited = TaskAwaitsTask, t.Awaits, []string{t.Awaits}
		case t.AwaitsType == "_GatheringFuture":
			x.Kind, x.Object, x.Awaited = TaskGather, t.Awaits, t.AwaitsAll
		default:
			x.Kind, x.Object = TaskFuture, t.Awaits
		}
		x.Holds = taskHolds(t, sources)
		out = append(out, x)
	}
	return out
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

// varAt is the address of the object a frame's variable names; "" when
// unknown.
func varAt(vars []model.FrameVars, frame int, name string) string {
	for _, fv := range vars {
		if fv.Frame != frame {
			continue
		}
		for _, v := range fv.Vars {
			if v.Name == name {
				return v.Addr
			}
		}
	}
	return ""
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
				if addr := varAt(t.Vars, i, m[1]); addr != "" {
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
