package pymem

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// asyncio's tasks, read from the interpreter's memory (3.11 on: the
// coroutine's frame lives inside it). A task is found where asyncio
// keeps it — asyncio.tasks._scheduled_tasks, a WeakSet of every pending
// task, and 3.12's _eager_tasks — through sys.modules; it is read as the
// _asyncio extension's Task (its name, its coroutine, the future it
// waits on), and its coroutine as a chain: each coroutine suspended in an
// await is awaiting what is on top of its frame's value stack, another
// coroutine (the chain goes on) or a future, a task, a sleep's handle.

// Task is one asyncio task as read.
type Task struct {
	// Addr is the task object's address: what another task awaiting it
	// names.
	Addr uint64
	Name string
	// Done: the task finished (its future's state is no longer pending).
	Done bool
	// Stack is its coroutines' frames, innermost first: the awaiting
	// coroutine's caller (the task's own coroutine) last.
	Stack []model.Frame
	// Vars are, by frame of Stack, the variables that name objects (with
	// ReadVars): a Lock.acquire's self is the lock it waits for.
	Vars []model.FrameVars
	// Awaits is what the innermost coroutine awaits (a future, another
	// task), with its type's name; 0 for none (not suspended in an
	// await, or a running task).
	Awaits     uint64
	AwaitsType string
	// AwaitsAll are the children of the gather it awaits: tasks (or
	// futures) it waits for every one of.
	AwaitsAll []uint64
	// Waiter is the future the task itself waits on (its fut_waiter).
	Waiter uint64
}

// maxTasks bounds the tasks one read takes.
const maxTasks = 1 << 16

// Frame states of a generator or coroutine (3.11 to 3.13): created and
// suspended ones are negative; 3.13 counts one more below zero.
const frameExecuting = 0

// Tasks reads every pending asyncio task of the main interpreter; none
// when asyncio is not imported, or before 3.11 (whose coroutines keep
// their frames elsewhere: not read yet).
func (r *Reader) Tasks(ctx context.Context) ([]Task, error) {
	l := &r.lay
	if l.CoroFrame < 0 || l.TaskCoro < 0 || l.InterpModules < 0 {
		return nil, nil
	}
	r.mem.reads, r.mem.bytes = 0, 0
	interp, err := r.mem.ptr(r.runtime + uint64(l.RuntimeInterpretersHead))
	if err != nil {
		return nil, err
	}
	modules, err := r.mem.ptr(interp + uint64(l.InterpModules))
	if err != nil {
		return nil, err
	}
	mod := r.dictGet(modules, "asyncio.tasks")
	if mod == 0 {
		return nil, nil
	}
	md, err := r.mem.ptr(mod + uint64(l.ModuleDict))
	if err != nil {
		return nil, err
	}
	var addrs []uint64
	// The WeakSet of pending tasks: _scheduled_tasks from 3.12,
	// _all_tasks in 3.11.
	ws := r.dictGet(md, "_scheduled_tasks")
	if ws == 0 {
		ws = r.dictGet(md, "_all_tasks")
	}
	if ws != 0 {
		for _, ref := range r.setKeys(r.attr(ws, "data")) {
			if obj, err := r.mem.ptr(ref + uint64(l.WeakrefObject)); err == nil && obj != 0 {
				addrs = append(addrs, obj)
			}
		}
	}
	addrs = append(addrs, r.setKeys(r.dictGet(md, "_eager_tasks"))...)
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	var out []Task
	for _, a := range addrs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.mem.reads > maxReads || r.mem.bytes > maxReadBytes {
			return out, errTooManyReads
		}
		if t, ok := r.task(a); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// setKeys is a set's members; nil when obj is not a set.
func (r *Reader) setKeys(obj uint64) []uint64 {
	if obj == 0 || r.typeName(obj) != "set" {
		return nil
	}
	l := &r.lay
	mask, err1 := r.mem.ptr(obj + uint64(l.SetMask))
	table, err2 := r.mem.ptr(obj + uint64(l.SetTable))
	if err1 != nil || err2 != nil || mask >= maxTasks*4 {
		return nil
	}
	size := uint64(l.SetEntrySize)
	b, err := r.mem.read(table, int((mask+1)*size))
	if err != nil {
		return nil
	}
	var out []uint64
	for i := uint64(0); i <= mask; i++ {
		k := binary.LittleEndian.Uint64(b[i*size:])
		// A freed slot holds the set's dummy, which is no task and no
		// weak reference: the type checks leave it out.
		if k != 0 && len(out) < maxTasks {
			out = append(out, k)
		}
	}
	return out
}

// task reads one Task object and its coroutine chain.
func (r *Reader) task(addr uint64) (Task, bool) {
	l := &r.lay
	if !strings.HasSuffix(r.typeName(addr), "Task") {
		return Task{}, false
	}
	b, err := r.mem.read(addr, 8+max(l.TaskState, l.TaskFutWaiter, l.TaskCoro, l.TaskName))
	if err != nil {
		return Task{}, false
	}
	word := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	t := Task{Addr: addr, Done: binary.LittleEndian.Uint32(b[l.TaskState:]) != 0, Waiter: word(l.TaskFutWaiter)}
	if n := word(l.TaskName); n != 0 {
		switch r.typeName(n) {
		case "str":
			t.Name = r.str(n)
		case "int":
			// From 3.12 a task keeps its number until its name is asked
			// for, and is named Task-N then.
			if v, ok := r.smallInt(n); ok {
				t.Name = "Task-" + strconv.FormatUint(v, 10)
			}
		}
	}
	coro := word(l.TaskCoro)
	var frames []model.Frame
	var vars []model.FrameVars
	for depth := 0; coro != 0 && depth < maxFrames; depth++ {
		typ := r.typeName(coro)
		if strings.HasSuffix(typ, "FutureIter") && l.FutureIterFuture >= 0 {
			// `await fut` suspends in the future's iterator.
			if coro, err = r.mem.ptr(coro + uint64(l.FutureIterFuture)); err != nil {
				break
			}
			typ = r.typeName(coro)
		}
		if typ != "coroutine" && typ != "generator" {
			t.Awaits, t.AwaitsType = coro, typ
			if typ == "_GatheringFuture" {
				t.AwaitsAll = r.listItems(r.attr(coro, "_children"))
			}
			break
		}
		var st []byte
		st, err = r.mem.read(coro+uint64(l.CoroFrameState), 1)
		if err != nil {
			break
		}
		frame := coro + uint64(l.CoroFrame)
		var fb []byte
		fb, err = r.mem.read(frame, 8+max(l.IFrameCode, l.IFrameInstr, l.IFrameStackTop))
		if err != nil {
			break
		}
		codeAddr, instr := binary.LittleEndian.Uint64(fb[l.IFrameCode:]), binary.LittleEndian.Uint64(fb[l.IFrameInstr:])
		c := r.code(codeAddr)
		if c == nil {
			break
		}
		off := 0
		if instr >= c.bytecode {
			off = int(instr - c.bytecode)
		}
		if r.vars {
			if vs := r.frameVars(codeAddr, c, frame+uint64(l.IFrameLocals)); len(vs) > 0 {
				vars = append(vars, model.FrameVars{Frame: len(frames), Vars: vs})
			}
		}
		frames = append(frames, model.Frame{Func: c.name, File: c.file, Line: lineOf(r.minor, c.first, c.table, off)})
		state := int8(st[0])
		if state >= frameExecuting || state == r.frameCreated() {
			break // running, or not started: it awaits nothing yet
		}
		top := int(int32(binary.LittleEndian.Uint32(fb[l.IFrameStackTop:])))
		if top <= 0 || top > 1<<16 {
			break
		}
		if coro, err = r.mem.ptr(frame + uint64(l.IFrameLocals) + 8*uint64(top-1)); err != nil {
			break
		}
	}
	// The chain ran from the task's coroutine inwards: innermost first.
	slices.Reverse(frames)
	for i := range vars {
		vars[i].Frame = len(frames) - 1 - vars[i].Frame
	}
	slices.Reverse(vars)
	t.Stack, t.Vars = frames, vars
	return t, true
}

// frameCreated is the frame state of a coroutine that has not started.
func (r *Reader) frameCreated() int8 {
	if r.minor >= 13 {
		return -3
	}
	return -2
}

// smallInt reads a non-negative int of one 30-bit digit.
func (r *Reader) smallInt(obj uint64) (uint64, bool) {
	l := &r.lay
	sizeAt := l.VarSize
	if l.LongTag >= 0 {
		sizeAt = l.LongTag
	}
	size, err := r.mem.ptr(obj + uint64(sizeAt))
	if err != nil {
		return 0, false
	}
	if l.LongTag >= 0 {
		// lv_tag: the digit count above 3 bits of sign (0 positive, 1
		// zero, 2 negative).
		if size&3 == 1 {
			return 0, true
		}
		if size&3 != 0 {
			return 0, false
		}
		size >>= 3
	}
	if size != 1 {
		return 0, false
	}
	b, err := r.mem.read(obj+uint64(l.LongDigits), 4)
	if err != nil {
		return 0, false
	}
	return uint64(binary.LittleEndian.Uint32(b)), true
}

// listItems is a list's items; nil when obj is not a list.
func (r *Reader) listItems(obj uint64) []uint64 {
	if obj == 0 || r.typeName(obj) != "list" {
		return nil
	}
	n, err1 := r.mem.ptr(obj + uint64(r.lay.VarSize))
	items, err2 := r.mem.ptr(obj + uint64(r.lay.ListItems))
	if err1 != nil || err2 != nil || n > maxTasks {
		return nil
	}
	b, err := r.mem.read(items, int(n)*8)
	if err != nil {
		return nil
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}
