package classify

import (
	"fmt"
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

// Past the memory budget, holders are searched for the locks with the
// most waiters only; the others keep their waiters, with no holder.
func TestSearchHoldersMostWaited(t *testing.T) {
	const locks, max = 40, 32
	var groups []*lockGroup
	var holds []lockHold
	for i := range locks {
		key := fmt.Sprintf("addr:0x%x", 0x1000+i)
		// Lock i has i+1 waiters: one actor and i twins.
		w := &Actor{Ref: Ref{PID: 1, Goroutine: int64(1000 + i)}, Stack: []model.Frame{{Func: "main.f", Line: 10}}}
		for j := range i {
			w.Twins = append(w.Twins, int64(100000+100*i+j))
		}
		g := &lockGroup{kind: LockGoMutex, keys: []string{key}}
		g.waits = []lockWait{{a: w, lock: lockRef{keys: []string{key}, fn: "main.f", line: 10}}}
		groups = append(groups, g)
		h := &Actor{Ref: Ref{PID: 1, Goroutine: int64(i + 1)}, Stack: []model.Frame{{Func: "main.g", Line: 20}}}
		holds = append(holds, lockHold{a: h, lock: lockRef{keys: []string{key}, fn: "main.g", line: 20}})
	}
	all := searchHolders(1, groups, holds, nil, 0)
	some := searchHolders(1, groups, holds, nil, max)
	if len(all) != locks || len(some) != locks {
		t.Fatalf("%d and %d locks, want %d each", len(all), len(some), locks)
	}
	held := 0
	for i, l := range some {
		if l.Holder != nil {
			held++
			if len(l.Waiters) <= locks-max {
				t.Errorf("lock %s with %d waiters got a holder: only the %d most waited-for should", l.ID, len(l.Waiters), max)
			}
		}
		if i > 0 && len(l.Waiters) > len(some[i-1].Waiters) {
			t.Errorf("locks out of order at %d", i)
		}
	}
	if held != max {
		t.Errorf("%d locks with a holder, want %d", held, max)
	}
	for _, l := range all {
		if l.Holder == nil {
			t.Errorf("without a bound, lock %s has no holder", l.ID)
		}
	}
}

// Past the memory budget, goroutines fold by state and stack shape: the
// argument words, and channel evidence, are not read.
func TestByShape(t *testing.T) {
	stack := func(arg string) []model.Frame {
		return []model.Frame{{Func: "sync.(*Mutex).Lock", File: "/go/src/sync/mutex.go", Line: 90, Args: arg}, {Func: "main.serve", File: "/app/main.go", Line: 12}}
	}
	gs := [][]model.Goroutine{{
		{ID: 1, State: "sync.Mutex.Lock", Stack: stack("0xc000010000"), WaitChans: []string{"0x1"}},
		{ID: 2, State: "sync.Mutex.Lock", Stack: stack("0xc000010008"), Twins: []int64{5, 6}},
		{ID: 3, State: "select", Stack: stack("0xc000010010")},
		{ID: 4, State: "sync.Mutex.Lock", Stack: stack("0xc000010018")[1:]},
	}}
	out := byShape(gs)
	if len(out) != 1 || len(out[0]) != 3 {
		t.Fatalf("byShape = %+v, want 3 folds", out)
	}
	first := out[0][0]
	if first.ID != 1 || fmt.Sprint(first.Twins) != "[2 5 6]" || first.WaitChans != nil {
		t.Errorf("first fold = id %d, twins %v, chans %v; want 1, [2 5 6], none", first.ID, first.Twins, first.WaitChans)
	}
	if gs[0][0].Twins != nil || len(gs[0][1].Twins) != 2 {
		t.Errorf("byShape changed its input: %+v", gs[0][:2])
	}
}
