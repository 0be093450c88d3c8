package classify

import (
	"slices"
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

// TestTaskWaitsAndCycles: what a task waits for comes from its innermost
// frames; what it holds from the `async with` lines around its frames,
// by its variables' addresses; two tasks that wait for each other's
// lock are a cycle, one that waits for its own a cycle of one, and a
// lock two tasks hold names no holder (no cycle through it).
func TestTaskWaitsAndCycles(t *testing.T) {
	src := map[string][]string{"/app/m.py": {
		"async def take(first, second):", // 1
		"    async with first:",          // 2
		"        await other()",          // 3
		"        async with second:",     // 4
		"            pass",               // 5
	}}
	acquire := model.Frame{Func: "Lock.acquire", File: "/py/lib/asyncio/locks.py", Line: 114}
	waiting := func(name, first, second string) model.Task {
		return model.Task{Addr: "0x" + name, Name: name, Awaits: "0xf" + name, AwaitsType: "_asyncio.Future",
			Stack: []model.Frame{acquire, {Func: "take", File: "/app/m.py", Line: 4}},
			Vars: []model.FrameVars{{Frame: 0, Vars: []model.Var{{Name: "self", Type: "Lock", Addr: second}}},
				{Frame: 1, Vars: []model.Var{{Name: "first", Type: "Lock", Addr: first}, {Name: "second", Type: "Lock", Addr: second}}}}}
	}
	sleeper := model.Task{Addr: "0xs", Name: "sleeper", Awaits: "0xfs", AwaitsType: "_asyncio.Future",
		Stack: []model.Frame{{Func: "sleep", File: "/py/lib/asyncio/tasks.py", Line: 665}}}
	joiner := model.Task{Addr: "0xj", Name: "joiner", Awaits: "0xa", AwaitsType: "_asyncio.Task",
		Stack: []model.Frame{{Func: "main", File: "/app/m.py", Line: 3}}}
	run := func(ts ...model.Task) []Task { return tasks([]model.Sample{{Tasks: ts}}, src) }

	ts := run(waiting("a", "0x1", "0x2"), waiting("b", "0x2", "0x1"), sleeper, joiner)
	if ts[0].Kind != TaskLock || ts[0].Object != "0x2" || len(ts[0].Holds) != 1 || ts[0].Holds[0].Lock != "0x1" || ts[0].Holds[0].Line != 2 {
		t.Errorf("task a: %+v, want waiting for lock 0x2, holding 0x1 from line 2", ts[0])
	}
	if ts[2].Kind != TaskSleep || ts[3].Kind != TaskAwaitsTask || ts[3].Object != "0xa" {
		t.Errorf("sleeper %v, joiner %v %s: want a sleep, and a task awaited", ts[2].Kind, ts[3].Kind, ts[3].Object)
	}
	if cy := taskCycles(ts); len(cy) != 1 || !slices.Equal(sorted(cy[0]), []int{0, 1}) {
		t.Errorf("cycles %v, want a and b", cy)
	}
	if cy := taskCycles(run(waiting("a", "0x1", "0x1"))); len(cy) != 1 || len(cy[0]) != 1 {
		t.Errorf("a task waiting for its own lock: cycles %v, want one of one", cy)
	}
	// c holds 0x1 too: 0x1 has no one holder, so b's wait leads nowhere.
	if cy := taskCycles(run(waiting("a", "0x1", "0x2"), waiting("b", "0x2", "0x1"), waiting("c", "0x1", "0x3"))); len(cy) != 0 {
		t.Errorf("a lock two tasks hold: cycles %v, want none", cy)
	}
	// Awaits: c awaits a gather of d and e; d awaits c; e awaits nothing.
	c := model.Task{Addr: "0xc", Name: "c", Awaits: "0xg", AwaitsType: "_GatheringFuture", AwaitsAll: []string{"0xd", "0xe"}, Stack: []model.Frame{{Func: "c", File: "/app/m.py", Line: 3}}}
	d := model.Task{Addr: "0xd", Name: "d", Awaits: "0xc", AwaitsType: "_asyncio.Task", Stack: []model.Frame{{Func: "d", File: "/app/m.py", Line: 3}}}
	e := model.Task{Addr: "0xe", Name: "e", Done: true}
	at := run(c, d, e)
	if at[0].Kind != TaskGather || !slices.Equal(at[0].Awaited, []string{"0xd", "0xe"}) || at[2].Kind != TaskDone {
		t.Errorf("gather: %+v, done: %+v", at[0], at[2])
	}
	if cy := taskCycles(at); len(cy) != 1 || !slices.Equal(sorted(cy[0]), []int{0, 1}) {
		t.Errorf("await cycle: %v, want c and d", cy)
	}
	if cy := taskCycles(run(c, e)); len(cy) != 0 {
		t.Errorf("c awaits a gather of tasks that do not await it: cycles %v", cy)
	}
	// Without the source, nothing is held.
	if ts := tasks([]model.Sample{{Tasks: []model.Task{waiting("a", "0x1", "0x2")}}}, nil); len(ts[0].Holds) != 0 {
		t.Errorf("holds %+v without the source", ts[0].Holds)
	}
}

func sorted(xs []int) []int { xs = slices.Clone(xs); slices.Sort(xs); return xs }
