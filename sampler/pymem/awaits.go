package pymem

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// Where a task's wait leads outside its event loop: the socket a stream
// (or a loop's sock_* call) waits on, and the thread-pool work item whose
// completion resolves the future a task awaits (run_in_executor,
// asyncio.to_thread). Both are read from the objects the frames' variables
// name, so only on a read with ReadVars.

// sockObjFD is where a socket object keeps its descriptor: sock_fd, the
// first field after PyObject_HEAD in socketmodule.h's PySocketSockObject,
// in every CPython 3 (the _socket module's DWARF is not read).
const sockObjFD = 16

// taskFD is the descriptor of the socket task t waits on; -1 when it waits
// on none, or it cannot be read.
func (r *Reader) taskFD(t *Task) int {
	if len(t.Stack) == 0 {
		return -1
	}
	f := t.Stack[0]
	sc := model.SocketCallOf(f.File, f.Func)
	if sc == nil {
		return -1
	}
	obj := varAddr(t.Vars, 0, sc.V)
	if obj == 0 {
		return -1
	}
	if sc.Transport {
		fd := r.attr(r.attr(obj, "_transport"), "_sock_fd")
		if fd == 0 || r.typeName(fd) != "int" {
			return -1
		}
		if v, ok := r.smallInt(fd); ok && v < 1<<30 {
			return int(v)
		}
		return -1
	}
	if r.typeName(obj) != "socket" {
		return -1
	}
	b, err := r.mem.read(obj+sockObjFD, 4)
	if err != nil {
		return -1
	}
	if fd := int32(binary.LittleEndian.Uint32(b)); fd >= 0 {
		return int(fd)
	}
	return -1
}

// taskVarFrames are asyncio's coroutines whose variables say what a task
// waits on: a primitive's self, a stream's or a socket call's.
var taskVarFrames = map[string]bool{
	"Lock.acquire": true, "Semaphore.acquire": true, "Event.wait": true, "Condition.wait": true,
	"Queue.get": true, "Queue.put": true, "Queue.join": true,
	"TaskGroup.__aexit__": true, "TaskGroup._aexit": true,
}

// groupTasks are, for a task waiting at the end of `async with
// TaskGroup()` (its innermost frame TaskGroup.__aexit__, or 3.13's
// _aexit), the tasks of that group it waits for: the group's _tasks set,
// which a task leaves when it is done. Nil for another task, or unread.
func (r *Reader) groupTasks(t *Task) []uint64 {
	if len(t.Stack) == 0 || !strings.HasSuffix(t.Stack[0].File, "asyncio/taskgroups.py") ||
		t.Stack[0].Func != "TaskGroup.__aexit__" && t.Stack[0].Func != "TaskGroup._aexit" {
		return nil
	}
	return r.setKeys(r.attr(varAddr(t.Vars, 0, "self"), "_tasks"))
}

// Opcodes of the bytecode scan (taskVarsWanted), by minor version:
// BEFORE_ASYNC_WITH, and the first of the instrumented opcodes that
// sys.monitoring writes over an instruction (3.12 on), which hide it.
var (
	beforeAsyncWith = map[int]byte{11: 52, 12: 52, 13: 1}
	instrumentedMin = map[int]int{12: 237, 13: 236}
)

// taskVarsWanted reports whether a task's frame of code c (at codeAddr) has
// variables that can tell something: an asyncio primitive's or a socket
// wait's own frame (its self or sock), or a function with an `async
// with` in it (the lock a task holds is the variable it names: its
// bytecode has BEFORE_ASYNC_WITH). Reading only those keeps a server's
// ten thousand tasks' variables, most of which tell nothing, unread. A
// code whose bytecode cannot be read, or is instrumented, is read.
func (r *Reader) taskVarsWanted(codeAddr uint64, c *code) bool {
	if c.telling != 0 {
		return c.telling > 0
	}
	c.telling = -1
	if strings.Contains(c.file, "/asyncio/") {
		if taskVarFrames[c.name] || model.SocketCallOf(c.file, c.name) != nil {
			c.telling = 1
		}
		return c.telling > 0
	}
	c.telling = 1
	op, ok := beforeAsyncWith[r.minor]
	if !ok || c.bytecode == 0 {
		return true
	}
	units, err := r.mem.ptr(codeAddr + uint64(r.lay.VarSize))
	if err != nil || units > 1<<20 {
		return true
	}
	b, err := r.mem.read(c.bytecode, int(2*units))
	if err != nil {
		return true
	}
	inst, instrumented := instrumentedMin[r.minor]
	// Every code unit's first byte is an opcode or a cache entry's data:
	// a cache that reads as BEFORE_ASYNC_WITH only costs a read.
	for i := 0; i < len(b); i += 2 {
		if b[i] == op || instrumented && int(b[i]) >= inst {
			return true
		}
	}
	c.telling = -1
	return false
}

// varAddr is the address of the object frame's variable name names; 0
// when not read.
func varAddr(vars []model.FrameVars, frame int, name string) uint64 {
	a, err := strconv.ParseUint(strings.TrimPrefix(model.VarOf(vars, frame, name), "0x"), 16, 64)
	if err != nil {
		return 0
	}
	return a
}

// maxCallbacks bounds the done callbacks of a work item's future read: a
// future has one or two (asyncio's chain); memory that reads as a long
// list is no future's.
const maxCallbacks = 16

// WorkItemResolves are the objects a thread-pool thread's work item will
// complete when its call returns: for the thread's frames (innermost
// first) and their variables, the self of concurrent.futures'
// _WorkItem.run, its future, and what that future's done callbacks
// close over — asyncio's _chain_future keeps there the asyncio future a
// task awaits (run_in_executor, asyncio.to_thread). Nil when the thread
// runs no work item, or its variables were not read.
func (r *Reader) WorkItemResolves(frames []model.Frame, vars []model.FrameVars) []uint64 {
	for i, f := range frames {
		if f.Func != "_WorkItem.run" && !(f.Func == "run" && i+1 < len(frames) && frames[i+1].Func == "_worker") {
			continue
		}
		if !strings.HasSuffix(f.File, "concurrent/futures/thread.py") {
			continue
		}
		fut := r.attr(varAddr(vars, i, "self"), "future")
		var out []uint64
		cbs := r.listItems(r.attr(fut, "_done_callbacks"))
		for _, cb := range cbs[:min(len(cbs), maxCallbacks)] {
			if r.typeName(cb) != "function" {
				continue
			}
			closure, err := r.mem.ptr(cb + uint64(r.lay.FuncClosure))
			if err != nil {
				continue
			}
			for _, cell := range r.tupleItems(closure) {
				if r.typeName(cell) != "cell" {
					continue
				}
				if obj, err := r.mem.ptr(cell + uint64(r.lay.CellRef)); err == nil && obj != 0 {
					out = append(out, obj)
				}
			}
		}
		return out
	}
	return nil
}

// tupleItems is a tuple's items; nil when t is not a tuple.
func (r *Reader) tupleItems(t uint64) []uint64 {
	if t == 0 || r.typeName(t) != "tuple" {
		return nil
	}
	n, err := r.mem.ptr(t + uint64(r.lay.VarSize))
	if err != nil || n > maxLocals {
		return nil
	}
	return r.wordsAt(t+uint64(r.lay.TupleItems), n)
}

// wordsAt is n words at addr; nil when they cannot be read.
func (r *Reader) wordsAt(addr, n uint64) []uint64 {
	b, err := r.mem.read(addr, int(n)*8)
	if err != nil {
		return nil
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}
