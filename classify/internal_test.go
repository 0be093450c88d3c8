package classify

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/model"
)

// Tests of the rules' inner parts; the scenarios are in the external
// tests, which also check the words report makes of them.

const pid = 100

func futexWait(addr, val uint64) model.Syscall {
	return model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{addr, 128, val}}
}

func mutex(owner int32) model.Futex { return model.Futex{Word: 2, Owner: owner, Kind: 0} }

func TestMutexValidation(t *testing.T) {
	live := map[int]bool{2: true, 3: true}
	waiter := model.Thread{TID: 3, Syscall: futexWait(0x5000, 2)}
	tests := []struct {
		name   string
		futex  model.Futex
		waiter model.Thread
		owner  int
		kind   LockKind
		rule   BasisRule
	}{
		{name: "normal mutex", futex: mutex(2), waiter: waiter, owner: 2, kind: LockMutex, rule: BasisGlibcOwner},
		{name: "recursive robust", futex: model.Futex{Word: 2, Owner: 2, Kind: 1 | 16}, waiter: waiter, owner: 2, kind: LockMutex, rule: BasisGlibcOwner},
		{name: "unreadable memory", futex: model.Futex{Err: "permission denied"}, waiter: waiter, rule: BasisMemoryErr},
		{name: "owner not a thread", futex: mutex(77), waiter: waiter, rule: BasisOwnerGone},
		{name: "process-shared, owner elsewhere", futex: model.Futex{Word: 2, Owner: 77, Kind: 128}, waiter: waiter, rule: BasisOwnerShared},
		{name: "garbage kind", futex: model.Futex{Word: 2, Owner: 2, Kind: 0x7fff0000}, waiter: waiter, rule: BasisBadKind},
		{name: "unlocked as read", futex: model.Futex{Word: 0, Owner: 2}, waiter: waiter, rule: BasisUnlocked},
		{name: "condition-variable wait value", futex: mutex(2), waiter: model.Thread{TID: 3, Syscall: futexWait(0x5000, 0)}, rule: BasisNotTwo},
		{
			name:   "priority inheritance: the owner is in the word",
			futex:  model.Futex{Word: int32(2 | 0x40000000), Owner: 0, Kind: 32},
			waiter: model.Thread{TID: 3, Syscall: model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{0x5000, 6 | 128}}},
			owner:  2, kind: LockPIMutex, rule: BasisGlibcOwner,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, basis := mutexOwner(tt.futex, []model.Thread{tt.waiter}, live, pid)
			owner := 0
			if basis.Rule == BasisGlibcOwner {
				owner = int(basis.Owner)
			}
			if owner != tt.owner || kind != tt.kind || basis.Rule != tt.rule {
				t.Errorf("mutexOwner(%+v) = %d, %s, %+v; want %d, %s, rule %d", tt.futex, owner, kind, basis, tt.owner, tt.kind, tt.rule)
			}
		})
	}
}

func TestMemoryTrend(t *testing.T) {
	tests := []struct {
		rss  []int64
		want model.Trend
	}{
		{[]int64{100 << 20}, model.TrendUnknown},
		{[]int64{100 << 20, 100 << 20, 100<<20 + 4096}, model.TrendFlat},
		{[]int64{100 << 20, 110 << 20, 120 << 20}, model.TrendGrowing},
		{[]int64{100 << 20, 90 << 20}, model.TrendShrinking},
		{[]int64{1 << 20, 1<<20 + 512<<10}, model.TrendFlat}, // under the 1 MiB floor
	}
	for _, tt := range tests {
		var samples []model.Sample
		for _, r := range tt.rss {
			samples = append(samples, model.Sample{RSSBytes: r})
		}
		if got := memory(samples, DefaultOptions()).Trend; got != tt.want {
			t.Errorf("trend of %v = %s, want %s", tt.rss, got, tt.want)
		}
	}
}

func TestCyclesFindsEachOnce(t *testing.T) {
	r := func(pid, tid int) Ref { return Ref{PID: pid, TID: tid} }
	g := &graph{edges: map[Ref][]Ref{
		r(pid, 1): {r(pid, 2)},
		r(pid, 2): {r(pid, 3)},
		r(pid, 3): {r(pid, 1)},
		r(pid, 4): {r(pid, 1)}, // waits into the cycle but is not in it
		r(pid, 8): {r(pid, 9)}, // a chain, no cycle
		// Across processes: a thread of 200 waits for process 300, whose
		// only waiting thread waits for process 200.
		r(200, 201): {{PID: 300}},
		{PID: 300}:  {r(300, 301)},
		r(300, 301): {{PID: 200}},
		{PID: 200}:  {r(200, 201)},
	}}
	got := g.cycles()
	want := []Cycle{{r(pid, 1), r(pid, 2), r(pid, 3)}, {r(200, 201), r(300, 301)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cycles (-want +got):\n%s", diff)
	}
}

func TestGoWait(t *testing.T) {
	for _, tc := range []struct {
		state string
		stack []model.Frame
		want  model.WaitKind
	}{
		{"sync.Mutex.Lock", nil, model.WaitMutex},
		{"sync.RWMutex.RLock", nil, model.WaitRWMutex},
		{"semacquire", []model.Frame{{Func: "sync.(*Mutex).Lock"}}, model.WaitMutex},
		{"semacquire", []model.Frame{{Func: "sync.(*WaitGroup).Wait"}}, model.WaitWaitGroup},
		{"sync.WaitGroup.Wait", nil, model.WaitWaitGroup},
		{"chan receive (nil chan)", nil, model.WaitChannel},
		{"select (no cases)", nil, model.WaitSelect},
		{"IO wait", nil, model.WaitIO},
		{"running", nil, model.WaitNone},
		{"runnable", nil, model.WaitNone},
		{"GC worker (idle)", nil, model.WaitRuntime},
		{"sleep", nil, model.WaitSleep},
		{"chan receive (durable)", nil, model.WaitChannel},
	} {
		if got := goWait(model.Goroutine{State: tc.state, Stack: tc.stack}); got != tc.want {
			t.Errorf("goWait(%q) = %q, want %q", tc.state, got, tc.want)
		}
	}
}

func TestFirstArg(t *testing.T) {
	for args, want := range map[string]string{
		"(0xc000012088, 0x1)":   "0xc000012088",
		"(0xc000012088)":        "0xc000012088",
		"(0x0?, 0x1)":           "",
		"(...)":                 "",
		"({0xc0000a0000, 0x5})": "0xc0000a0000",
		"":                      "",
	} {
		if got := firstArg(args); got != want {
			t.Errorf("firstArg(%q) = %q, want %q", args, got, want)
		}
	}
}

func TestBlockEnd(t *testing.T) {
	src := strings.Split(`import threading
out_lock = threading.Lock()

def emit(rows):
    for row in rows:
        with out_lock:
            line = encode(row)
            sys.stdout.write(line)
            sys.stdout.flush()
        count()
`, "\n")
	if got := blockEnd(src, 6); got != 9 {
		t.Errorf("blockEnd = %d, want 9", got)
	}
}
