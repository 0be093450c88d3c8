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
	run := func(ts ...model.Task) []Task {
		out, _ := tasks(&model.Recording{Samples: []model.Sample{{Tasks: ts}}, Sources: src})
		return out
	}

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
	// A TaskGroup's owner waits for the group's tasks; one of them that
	// awaits the owner closes a cycle.
	owner := model.Task{Addr: "0xo", Name: "owner", Awaits: "0xfo", AwaitsType: "_asyncio.Future", AwaitsAll: []string{"0xk"},
		Stack: []model.Frame{{Func: "TaskGroup.__aexit__", File: "/py/lib/asyncio/taskgroups.py", Line: 110}, {Func: "main", File: "/app/m.py", Line: 3}}}
	child := model.Task{Addr: "0xk", Name: "child", Awaits: "0xo", AwaitsType: "_asyncio.Task", Stack: []model.Frame{{Func: "child", File: "/app/m.py", Line: 3}}}
	tg := run(owner, child)
	if tg[0].Kind != TaskGroupWait || !slices.Equal(tg[0].Awaited, []string{"0xk"}) {
		t.Errorf("owner %+v: want waiting for its TaskGroup's task 0xk", tg[0])
	}
	if cy := taskCycles(tg); len(cy) != 1 || !slices.Equal(sorted(cy[0]), []int{0, 1}) {
		t.Errorf("a TaskGroup's task awaiting its owner: cycles %v, want owner and child", cy)
	}
	// Without the source, nothing is held.
	if ts, _ := tasks(&model.Recording{Samples: []model.Sample{{Tasks: []model.Task{waiting("a", "0x1", "0x2")}}}}); len(ts[0].Holds) != 0 {
		t.Errorf("holds %+v without the source", ts[0].Holds)
	}
}

func sorted(xs []int) []int { xs = slices.Clone(xs); slices.Sort(xs); return xs }

// TestEventLoopNobodyLeft: a loop nothing but a signal can wake — in
// every sample its only thread waits in epoll_wait with no timeout, on
// nothing but a socket whose other end the target alone holds — leaves
// every waiting task blocked for good; a timeout, a second thread, or a
// watched socket another process holds the other end of each could wake
// it. A task in a stream's read names its socket and the processes at
// the other end.
func TestEventLoopNobodyLeft(t *testing.T) {
	const pid = 100
	loopStack := []model.Frame{{Func: "EpollSelector.select", File: "/py/lib/selectors.py", Line: 468},
		{Func: "BaseEventLoop._run_once", File: "/py/lib/asyncio/base_events.py", Line: 1933}}
	fd := 6
	reading := model.Task{Addr: "0xr", Name: "reader", Awaits: "0xf", AwaitsType: "_asyncio.Future", FD: &fd,
		Stack: []model.Frame{{Func: "StreamReader._wait_for_data", File: "/py/lib/asyncio/streams.py", Line: 542}, {Func: "call", File: "/app/m.py", Line: 3}}}
	fetching := model.Task{Addr: "0xa", Name: "fetch", Awaits: "0xf2", AwaitsType: "_asyncio.Future",
		Stack: []model.Frame{{Func: "fetch", File: "/app/m.py", Line: 9}}}
	resources := map[string]model.Resource{
		"socket:[1]": {Name: "socket:[1]", Peer: "socket:[2]", Holders: []model.FDRef{{PID: pid, FD: 4}}},
		"socket:[2]": {Name: "socket:[2]", Peer: "socket:[1]", Holders: []model.FDRef{{PID: pid, FD: 5}}},
		"socket:[3]": {Name: "socket:[3]", Peer: "socket:[4]", Holders: []model.FDRef{{PID: pid, FD: 6}}},
		"socket:[4]": {Name: "socket:[4]", Peer: "socket:[3]", Holders: []model.FDRef{{PID: 200, FD: 3}}},
	}
	loopThread := func(timeout uint64, watches ...string) model.Thread {
		return model.Thread{TID: pid, Stack: loopStack, Watches: watches,
			Syscall: model.Syscall{Nr: 232, Name: "epoll_wait", Args: [6]uint64{3, 0x7f00, 1, timeout}}}
	}
	rec := func(task model.Task, threads ...model.Thread) *model.Recording {
		r := &model.Recording{Target: model.Target{PID: pid}, Resources: resources}
		for range 2 {
			r.Samples = append(r.Samples, model.Sample{Threads: threads})
		}
		r.Samples[1].Tasks = []model.Task{task}
		return r
	}
	forever := uint64(0xffffffff)
	for _, tc := range []struct {
		name   string
		rec    *model.Recording
		nobody bool
	}{
		{"its own wake-up socket alone", rec(fetching, loopThread(forever, "4 socket:[1]")), true},
		{"a timer due", rec(fetching, loopThread(1000, "4 socket:[1]")), false},
		{"another thread", rec(fetching, loopThread(forever, "4 socket:[1]"), model.Thread{TID: pid + 1}), false},
		{"a socket another process holds the other end of", rec(reading, loopThread(forever, "4 socket:[1]", "6 socket:[3]")), false},
		{"a descriptor never resolved", rec(fetching, loopThread(forever, "4 socket:[1]", "7 pipe:[9]")), false},
		{"no loop", rec(fetching, model.Thread{TID: pid, Syscall: model.Syscall{Nr: 232, Name: "epoll_wait", Args: [6]uint64{3, 0, 1, forever}}}), false},
	} {
		ts, l := tasks(tc.rec)
		if l.NobodyLeft() != tc.nobody {
			t.Errorf("%s: loop %+v, want nobody left %v", tc.name, l, tc.nobody)
		}
		if tc.name == "a socket another process holds the other end of" {
			if x := ts[0]; x.Kind != TaskSocket || x.Op != "read" || x.FD != 6 || x.Resource != "socket:[3]" || !slices.Equal(x.Peers, []int{200}) {
				t.Errorf("reader %+v: want a read of fd 6, socket:[3], pid 200 at the other end", x)
			}
		}
	}
}
