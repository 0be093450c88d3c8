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
	// Done: the task finished (its future's state is no longer pending);
	// Failed: with an exception.
	Done, Failed bool
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
	// AwaitsAll are the children of the gather it awaits, or the tasks of
	// the TaskGroup it waits at the end of: tasks (or futures) it waits
	// for every one of.
	AwaitsAll []uint64
	// Waiter is the future the task itself waits on (its fut_waiter).
	Waiter uint64
	// FD is the descriptor of the socket it waits on through a stream or
	// a loop's sock_* call (with ReadVars); -1 for none or unread.
	FD int
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
	r.mem.reset()
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
	// The pages read this call: every batch reads through them.
	pages := map[uint64][]byte{}
	// The WeakSet of pending tasks: _scheduled_tasks from 3.12,
	// _all_tasks in 3.11.
	ws := r.dictGet(md, "_scheduled_tasks")
	if ws == 0 {
		ws = r.dictGet(md, "_all_tasks")
	}
	if ws != 0 {
		// Each weak reference's object, in one batch.
		refs := r.setKeys(r.attr(ws, "data"))
		spans := make([]span, len(refs))
		for i, ref := range refs {
			spans[i] = span{addr: ref + uint64(l.WeakrefObject), b: make([]byte, 8)}
		}
		r.mem.readPages(spans, pages)
		for _, s := range spans {
			if obj := binary.LittleEndian.Uint64(s.b); s.ok && obj != 0 {
				addrs = append(addrs, obj)
			}
		}
	}
	addrs = append(addrs, r.setKeys(r.dictGet(md, "_eager_tasks"))...)
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ts := r.readTasks(addrs, pages)
	for i := range ts {
		ts[i].FD = -1
		if r.vars {
			ts[i].FD = r.taskFD(&ts[i])
			if g := r.groupTasks(&ts[i]); g != nil {
				ts[i].AwaitsAll = g
			}
		}
	}
	return ts, nil
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

// readTasks reads the Task objects at addrs and their coroutine chains,
// a level of every chain at a time: each level is one batch of reads for
// all the tasks, by the pages they lie in (readPages), not a read per
// task and field (10,000 tasks, three coroutines deep, took 365 ms read
// one field at a time; 44 ms by pages).
func (r *Reader) readTasks(addrs []uint64, pages map[uint64][]byte) []Task {
	l := &r.lay
	taskSpan := 8 + max(l.ObType, l.TaskState, l.TaskFutWaiter, l.TaskCoro, l.TaskName, l.TaskException)
	spans := make([]span, len(addrs))
	for i, a := range addrs {
		spans[i] = span{addr: a, b: make([]byte, taskSpan)}
	}
	r.mem.readPages(spans, pages)
	type walk struct {
		t      Task
		at     uint64 // the coroutine (or awaited object) the walk stands at
		frames []model.Frame
		vars   []model.FrameVars
		name   uint64
	}
	var ws []*walk
	for _, s := range spans {
		word := func(off int) uint64 { return binary.LittleEndian.Uint64(s.b[off:]) }
		if !s.ok || !strings.HasSuffix(r.nameOfType(word(l.ObType)), "Task") {
			continue
		}
		done := binary.LittleEndian.Uint32(s.b[l.TaskState:]) != 0
		ws = append(ws, &walk{t: Task{Addr: s.addr, Done: done, Failed: done && word(l.TaskException) != 0, Waiter: word(l.TaskFutWaiter)},
			at: word(l.TaskCoro), name: word(l.TaskName)})
	}
	// Names: a str (or 3.12's int, until the name is asked for) each.
	nameSpan := l.CompactSize + 64
	spans = spans[:0]
	for _, w := range ws {
		spans = append(spans, span{addr: w.name, b: make([]byte, nameSpan)})
	}
	r.mem.readPages(spans, pages)
	for i, w := range ws {
		if spans[i].ok {
			w.t.Name = r.nameFrom(w.name, spans[i].b)
		}
	}
	// The chains, a level at a time: the object each walk stands at (its
	// type, and a coroutine's embedded frame), then what each suspended
	// coroutine's frame has on top of its value stack.
	headSpan := l.CoroFrame + 8 + max(l.IFrameCode, l.IFrameInstr, l.IFrameStackTop)
	active := slices.Clone(ws)
	for depth := 0; len(active) > 0 && depth < maxFrames; depth++ {
		spans = spans[:0]
		for _, w := range active {
			spans = append(spans, span{addr: w.at, b: make([]byte, headSpan)})
		}
		r.mem.readPages(spans, pages)
		// next are the walks that go on; topOf the index in tops of the
		// read that says where each goes, -1 for one that already knows
		// (it stands at a future its iterator named).
		var next []*walk
		var topOf []int
		var tops []span
		for i, w := range active {
			b := spans[i].b
			var typ string
			if spans[i].ok {
				typ = r.nameOfType(binary.LittleEndian.Uint64(b[l.ObType:]))
			} else {
				typ = r.typeName(w.at) // a small object near a mapping's end
			}
			switch {
			case w.at == 0 || typ == "":
				continue
			case strings.HasSuffix(typ, "FutureIter") && l.FutureIterFuture >= 0 && spans[i].ok:
				// `await fut` suspends in the future's iterator.
				w.at = binary.LittleEndian.Uint64(b[l.FutureIterFuture:])
				next, topOf = append(next, w), append(topOf, -1)
				continue
			case typ != "coroutine" && typ != "generator":
				w.t.Awaits, w.t.AwaitsType = w.at, typ
				if typ == "_GatheringFuture" {
					w.t.AwaitsAll = r.listItems(r.attr(w.at, "_children"))
				}
				continue
			case !spans[i].ok:
				continue
			}
			frame := b[l.CoroFrame:]
			codeAddr, instr := binary.LittleEndian.Uint64(frame[l.IFrameCode:]), binary.LittleEndian.Uint64(frame[l.IFrameInstr:])
			c := r.code(codeAddr)
			if c == nil {
				continue
			}
			off := 0
			if instr >= c.bytecode {
				off = int(instr - c.bytecode)
			}
			frameAt := w.at + uint64(l.CoroFrame)
			if r.vars && r.taskVarsWanted(codeAddr, c) {
				if vs := r.frameVars(codeAddr, c, frameAt+uint64(l.IFrameLocals), pages); len(vs) > 0 {
					w.vars = append(w.vars, model.FrameVars{Frame: len(w.frames), Vars: vs})
				}
			}
			w.frames = append(w.frames, model.Frame{Func: c.name, File: c.file, Line: lineOf(r.minor, c.first, c.table, off)})
			state := int8(b[l.CoroFrameState])
			if state >= frameExecuting || state == r.frameCreated() {
				continue // running, or not started: it awaits nothing yet
			}
			top := int(int32(binary.LittleEndian.Uint32(frame[l.IFrameStackTop:])))
			if top <= 0 || top > 1<<16 {
				continue
			}
			next, topOf = append(next, w), append(topOf, len(tops))
			tops = append(tops, span{addr: frameAt + uint64(l.IFrameLocals) + 8*uint64(top-1), b: make([]byte, 8)})
		}
		// What each suspended coroutine awaits.
		r.mem.readPages(tops, pages)
		active = active[:0]
		for i, w := range next {
			if k := topOf[i]; k >= 0 {
				if !tops[k].ok {
					continue
				}
				w.at = binary.LittleEndian.Uint64(tops[k].b)
			}
			active = append(active, w)
		}
		if r.mem.reads > maxReads || r.mem.bytes > maxReadBytes {
			break
		}
	}
	out := make([]Task, 0, len(ws))
	for _, w := range ws {
		// The chain ran from the task's coroutine inwards: innermost first.
		slices.Reverse(w.frames)
		for i := range w.vars {
			w.vars[i].Frame = len(w.frames) - 1 - w.vars[i].Frame
		}
		slices.Reverse(w.vars)
		w.t.Stack, w.t.Vars = w.frames, w.vars
		out = append(out, w.t)
	}
	return out
}

// nameFrom is a task's name from its name object's first bytes, b: a str,
// or an int (Task-N); "" when it is neither.
func (r *Reader) nameFrom(obj uint64, b []byte) string {
	l := &r.lay
	switch r.nameOfType(binary.LittleEndian.Uint64(b[l.ObType:])) {
	case "str":
		n := binary.LittleEndian.Uint64(b[l.ASCIILength:])
		state := binary.LittleEndian.Uint32(b[l.ASCIIState:])
		if state>>5&1 == 1 && state>>6&1 == 1 && l.ASCIISize+int(n) <= len(b) {
			return string(b[l.ASCIISize : l.ASCIISize+int(n)]) // compact ASCII, the usual name
		}
		return r.str(obj)
	case "int":
		if v, ok := r.smallInt(obj); ok {
			return "Task-" + strconv.FormatUint(v, 10)
		}
	}
	return ""
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
	return r.wordsAt(items, n)
}
