package pymem

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

// FuzzThreads reads threads, asyncio tasks and what their waits lead to
// (a work item's callbacks, a stream's socket, a TaskGroup's tasks, a
// bytecode scan) from an image of memory that holds anything at all,
// with each version's layout: the reader must not panic, and must stay
// within its bounds (threads, frames, entries), whatever the pointers
// say. The image is the fuzzer's bytes at address 0x1000, repeated:
// every pointer into it reads something.
func FuzzThreads(f *testing.F) {
	seed := make([]byte, 512)
	for i := 0; i+8 <= len(seed); i += 8 {
		binary.LittleEndian.PutUint64(seed[i:], 0x1000+uint64(i*3%len(seed)))
	}
	f.Add(seed, uint8(12))
	f.Add([]byte("xdebugpy\x00\x00\x0d\x03\x00\x00\x00\x00"), uint8(13))
	f.Add(make([]byte, 64), uint8(8))
	f.Fuzz(func(t *testing.T, b []byte, minor uint8) {
		lay, ok := layouts[int(minor%6)+8]
		if !ok || len(b) == 0 {
			return
		}
		const base = 0x1000
		image := func(addr uint64, n int) ([]byte, error) {
			if addr < base || n > 1<<20 {
				return nil, errShort
			}
			out := make([]byte, 0, n)
			for at := int((addr - base) % uint64(len(b))); len(out) < n; at = 0 {
				out = append(out, b[at:min(len(b), at+n-len(out))]...)
			}
			return out, nil
		}
		r := &Reader{mem: &memory{image: image}, lay: lay, minor: int(minor%6) + 8, runtime: base,
			codes: map[uint64]*code{}, types: map[uint64]string{}, names: map[uint64]string{}, pthreadTID: -1}
		r.tstateSpan = 8 + max(lay.TstateNext, lay.TstateFrame, lay.TstateCFrame, lay.TstateThreadID, lay.TstateNativeThreadID)
		if lay.IFrameCode >= 0 {
			r.frameSpan = 8 + max(lay.IFramePrevious, lay.IFrameOwner, lay.IFrameCode, lay.IFrameInstr, lay.IFrameGlobals)
		} else {
			r.frameSpan = 8 + max(lay.FrameBack, lay.FrameCode, lay.FrameLasti, lay.FrameGlobals)
		}
		r.ReadVars(true)
		ts, _ := r.Threads(context.Background())
		if len(ts) > maxInterpreters*maxThreads {
			t.Fatalf("%d threads", len(ts))
		}
		for _, th := range ts {
			if len(th.Frames) > maxFrames {
				t.Fatalf("%d frames", len(th.Frames))
			}
		}
		tasks, _ := r.Tasks(context.Background())
		for _, tk := range tasks {
			if len(tk.Stack) > maxFrames {
				t.Fatalf("a task of %d frames", len(tk.Stack))
			}
		}
		// What a wait leads to, read from objects the memory makes up:
		// a work item's future and its callbacks' cells, a stream's
		// transport, a socket, a code object's bytecode.
		self := []model.FrameVars{{Frame: 0, Vars: []model.Var{{Name: "self", Addr: "0x1008"}, {Name: "sock", Addr: "0x1010"}}}}
		if got := r.WorkItemResolves([]model.Frame{{Func: "_WorkItem.run", File: "/py/concurrent/futures/thread.py"}}, self); len(got) > maxCallbacks*maxLocals {
			t.Fatalf("%d objects a work item resolves", len(got))
		}
		for _, sc := range model.AsyncioSocketCalls[:3] {
			r.taskFD(&Task{Stack: []model.Frame{{Func: sc.Func, File: "/py/" + sc.File}}, Vars: self})
		}
		r.taskVarsWanted(base, &code{file: "/app/m.py", bytecode: base + 16})
		if got := r.groupTasks(&Task{Stack: []model.Frame{{Func: "TaskGroup.__aexit__", File: "/py/asyncio/taskgroups.py"}}, Vars: self}); len(got) > 4*maxTasks {
			t.Fatalf("a TaskGroup of %d tasks", len(got))
		}
	})
}
