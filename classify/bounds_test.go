package classify

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

// The holder search and the stack keys stay linear in the goroutines: the
// holds a lock weighs come from an index, not a pass over all of them.

func goActor(id int64, fn string) *Actor {
	return &Actor{Kind: ActorGoroutine, Ref: Ref{PID: pid, Goroutine: id}, Stack: []model.Frame{{Func: fn, File: "x.go", Line: 10}}}
}

// TestHoldIndexFindsWhatAPassFinds: below the bounds, the holds the index
// offers a lock, kept by the rules, are those a pass over every hold
// keeps, in the same order.
func TestHoldIndexFindsWhatAPassFinds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"addr:0x1", "addr:0x2", "obj:0x3:mu", "obj:0x4:mu", "field:p.T.mu", "global:p.mu", "global:p.other"}
	fns := []string{"p.(*T).A", "p.(*T).B", "p.C"}
	ref := func() lockRef {
		l := lockRef{fn: fns[r.IntN(len(fns))], line: 10 + r.IntN(3), sourced: r.IntN(2) == 0}
		for _, k := range keys {
			if r.IntN(4) == 0 {
				l.keys = append(l.keys, k)
			}
		}
		if r.IntN(3) == 0 {
			l.recv = fmt.Sprintf("0x%d", r.IntN(2))
		}
		return l
	}
	for round := range 50 {
		var holds []lockHold
		for i := range 60 {
			holds = append(holds, lockHold{a: goActor(int64(i+1), "p.f"), lock: ref()})
		}
		x := newHoldIndex(holds)
		for n := range 20 {
			w := lockWait{a: goActor(1000, "p.g"), lock: ref()}
			kept := func(h lockHold) bool { return match(w.lock, h.lock) != BasisUnknown || sameSite(w, h) }
			var want, got []int32
			for i, h := range holds {
				if kept(h) {
					want = append(want, int32(i))
				}
			}
			for _, i := range x.candidates(int32(n+1), w) {
				if kept(holds[i]) {
					got = append(got, i)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, waiter %+v: the index keeps holds %v, a pass keeps %v", round, w.lock, got, want)
			}
		}
	}
}

// TestHolderSearchBounded: a lock weighs every hold of its own object and
// at most maxWeighed others, ranks at most maxRanked and counts the rest.
func TestHolderSearchBounded(t *testing.T) {
	const many = 1000
	waiter := lockWait{a: goActor(1, "p.(*T).Put"), lock: lockRef{keys: []string{"addr:0xa", "field:p.T.mu"}, fn: "p.(*T).Put", line: 10, sourced: true}}
	probable := func(n int) []lockHold {
		var holds []lockHold
		for i := range n {
			holds = append(holds, lockHold{a: goActor(int64(i+2), "p.(*T).Get"), lock: lockRef{keys: []string{"field:p.T.mu"}, fn: "p.(*T).Get", line: 20, sourced: true}})
		}
		return holds
	}
	t.Run("the same object past the bound", func(t *testing.T) {
		holds := append(probable(many), lockHold{a: goActor(many+2, "p.(*T).Flush"), lock: lockRef{keys: []string{"addr:0xa"}, fn: "p.(*T).Flush", line: 30, sourced: true}})
		locks := findHolders(pid, groupWaits([]lockWait{waiter}, func(lockWait) LockKind { return LockGoMutex }), holds, nil)
		l := locks[0]
		if l.Holder == nil || l.Holder.Goroutine != many+2 || l.Basis.Rule != BasisSameObject {
			t.Fatalf("holder %v by %v, want goroutine %d by the same object", l.Holder, l.Basis.Rule, many+2)
		}
		if len(l.Basis.Ranked) != maxRanked || l.Basis.Unranked != maxWeighed+1-maxRanked {
			t.Errorf("%d ranked and %d more, want %d and %d", len(l.Basis.Ranked), l.Basis.Unranked, maxRanked, maxWeighed+1-maxRanked)
		}
		if l.Basis.Ranked[0].Ref.Goroutine != many+2 {
			t.Errorf("ranked first: %v, want the same object's holder", l.Basis.Ranked[0].Ref)
		}
	})
	t.Run("candidates only", func(t *testing.T) {
		locks := findHolders(pid, groupWaits([]lockWait{waiter}, func(lockWait) LockKind { return LockGoMutex }), probable(many), nil)
		b := locks[0].Basis
		if locks[0].Holder != nil || b.Rule != BasisCandidates {
			t.Fatalf("holder %v by %v, want none, candidates", locks[0].Holder, b.Rule)
		}
		if len(b.Ranked) != maxRanked || b.Unranked != maxWeighed-maxRanked {
			t.Errorf("%d ranked and %d more, want %d and %d", len(b.Ranked), b.Unranked, maxRanked, maxWeighed-maxRanked)
		}
		// The first found: the lowest ids.
		if b.Ranked[0].Ref.Goroutine != 2 || b.Ranked[maxRanked-1].Ref.Goroutine != maxRanked+1 {
			t.Errorf("ranked %v … %v, want goroutines 2 … %d", b.Ranked[0].Ref, b.Ranked[maxRanked-1].Ref, maxRanked+1)
		}
	})
}

// TestGoStackKey: argument words aside, and every byte of the rest counts.
func TestGoStackKey(t *testing.T) {
	st := []model.Frame{
		{Func: "github.com/acme/chat/internal/chat.(*Conn).readLoop", File: "/src/chat/internal/chat/conn.go", Line: 118, Args: "(0xc000100000)"},
		{Func: "github.com/acme/chat/internal/chat.(*Conn).serve.gowrap1", File: "/src/chat/internal/chat/conn.go", Line: 49},
	}
	other := slices.Clone(st)
	other[0].Args = "(0xc000200000)"
	if goStackKey(st) != goStackKey(other) {
		t.Error("two stacks that differ only in their argument words have different keys")
	}
	for name, change := range map[string]func(f []model.Frame){
		"the middle of a function": func(f []model.Frame) { f[0].Func = "github.com/acme/chat/internal/chbt.(*Conn).readLoop" },
		"the middle of a file":     func(f []model.Frame) { f[1].File = "/src/chat/internal/chbt/conn.go" },
		"a line":                   func(f []model.Frame) { f[1].Line = 50 },
		"a frame blanked":          func(f []model.Frame) { f[1] = model.Frame{} },
		"a function and its file swapped": func(f []model.Frame) {
			f[0].Func, f[0].File = f[0].File, f[0].Func
		},
	} {
		changed := slices.Clone(st)
		change(changed)
		if goStackKey(changed) == goStackKey(st) {
			t.Errorf("%s changed, the key did not", name)
		}
	}
}
