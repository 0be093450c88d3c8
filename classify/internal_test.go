package classify

import (
	"net/netip"
	"slices"
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
	shm := &model.SharedWord{Path: "/dev/shm/app", Offset: 64, Dev: "00:1a", Inode: 9}
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
		{
			name:   "process-shared, owner a thread of another process that maps the word",
			futex:  model.Futex{Word: 2, Owner: 77, Kind: 128, Shared: shm, OwnerPID: 200},
			waiter: waiter, owner: 77, kind: LockMutex, rule: BasisSharedOwner,
		},
		{name: "process-shared, owner's process not checked", futex: model.Futex{Word: 2, Owner: 77, Kind: 128, OwnerPID: 200}, waiter: waiter, rule: BasisOwnerShared},
		{
			name:   "robust: the owner is in the word, the waiter expects it with FUTEX_WAITERS",
			futex:  model.Futex{Word: int32(-0x80000000 | 2), Owner: 0, Kind: 16},
			waiter: model.Thread{TID: 3, Syscall: futexWait(0x5000, 0x80000000|2)},
			owner:  2, kind: LockMutex, rule: BasisGlibcOwner,
		},
		{
			name:   "robust process-shared, owner in another process",
			futex:  model.Futex{Word: int32(-0x80000000 | 77), Owner: 77, Kind: 16 | 128, Shared: shm, OwnerPID: 200},
			waiter: model.Thread{TID: 3, Syscall: futexWait(0x5000, 0x80000000|77)},
			owner:  77, kind: LockMutex, rule: BasisSharedOwner,
		},
		{name: "robust, a wait value without FUTEX_WAITERS", futex: model.Futex{Word: 2, Owner: 2, Kind: 16}, waiter: model.Thread{TID: 3, Syscall: futexWait(0x5000, 7)}, rule: BasisNotTwo},
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
			if basis.Rule == BasisGlibcOwner || basis.Rule == BasisSharedOwner {
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

func TestGoSourceReader(t *testing.T) {
	src := strings.Split(`package main

import "sync"

type Store struct {
	mu    sync.Mutex
	inner *Inner
}

type Inner struct{ rw sync.RWMutex }

var global sync.Mutex

func (s *Store) Put(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inner.rw.RLock()
	write(b)
	s.inner.rw.RUnlock()
	global.Lock()
	write(b)
}

func transfer(a, b *sync.Mutex) {
	a.Lock()
	b.Lock()
	go func() {
		local := &sync.Mutex{}
		local.Lock()
		wait()
	}()
}
`, "\n")
	g := parseGo(src)
	if g == nil {
		t.Fatal("does not parse")
	}
	put := g.funcAt(18)
	exprs := func(cs []lockCall) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.op+" "+c.expr)
		}
		return out
	}
	for _, tc := range []struct {
		line int
		same bool // the frame stands at the line past its calls
		want []string
	}{
		{15, false, nil}, // at the Lock itself: not yet held
		{15, true, []string{"Lock s.mu"}},
		{18, false, []string{"Lock s.mu", "RLock s.inner.rw"}}, // a deferred Unlock keeps s.mu held
		{19, true, []string{"Lock s.mu"}},                      // past the line's RUnlock
		{21, false, []string{"Lock s.mu", "Lock global"}},      // RUnlock released the read lock
	} {
		if got := exprs(put.heldAt(tc.line, tc.same)); !slices.Equal(got, tc.want) {
			t.Errorf("Put held at line %d (same line %v): %q, want %q", tc.line, tc.same, got, tc.want)
		}
	}
	if c, ok := put.lockingAt(20); !ok || c.expr != "global" {
		t.Errorf("locking at 20: %+v %v", c, ok)
	}
	if sc, _ := put.scopeOf(g, "s.mu"); sc != scopeReceiver {
		t.Errorf("s.mu scope %d, want the receiver", sc)
	}
	if sc, _ := put.scopeOf(g, "global"); sc != scopeGlobal {
		t.Errorf("global scope %d", sc)
	}
	if typ, field := g.fieldOf("Store", "inner.rw"); typ != "Inner" || field != "rw" {
		t.Errorf("Store.inner.rw is %s.%s, want Inner.rw", typ, field)
	}
	if g.firstField["Store"] != "mu" {
		t.Errorf("first field of Store: %q", g.firstField["Store"])
	}
	tr := g.funcAt(26)
	if sc, i := tr.scopeOf(g, "b"); sc != scopeParam || i != 1 {
		t.Errorf("b in transfer: scope %d, index %d, want parameter 1", sc, i)
	}
	lit := g.funcAt(31)
	if lit == tr || !slices.Equal(exprs(lit.heldAt(31, false)), []string{"Lock local"}) {
		t.Errorf("the literal's locks: %q", exprs(lit.heldAt(31, false)))
	}
	if sc, _ := lit.scopeOf(g, "a"); sc != scopeUnknown {
		t.Errorf("a captured by a literal: scope %d, want unknown (its value is not in the literal's frame)", sc)
	}
	if c, ok := g.callTo(26, "Lock"); !ok || c.recv != "b" {
		t.Errorf("call at 26: %+v", c)
	}
}

func TestPythonSourceReader(t *testing.T) {
	src := strings.Split(`import threading
cache_lock = threading.RLock()

class Queue:
    def put(self, item):
        with self.not_full:
            self._put(item)

def worker(first, second):
    with first:
        x = 1
        with second:
            pass

def runner(lock):
    lock.acquire()
    step()
    lock.release()
    other = threading.Lock()
    other.acquire()
    wait()
`, "\n")
	f := pyFuncAt(src, 7)
	if f == nil || f.name != "put" || f.class != "Queue" {
		t.Fatalf("function at 7: %+v", f)
	}
	if got := pyHeldAt(src, 7, f); !slices.Equal(got, []string{"self.not_full"}) {
		t.Errorf("held in put: %q", got)
	}
	if sc, _ := pyScope(src, f, "self.not_full"); sc != scopeReceiver {
		t.Errorf("self.not_full scope %d", sc)
	}
	w := pyFuncAt(src, 12)
	if got := pyHeldAt(src, 12, w); !slices.Equal(got, []string{"first"}) {
		t.Errorf("held at the inner with: %q, want first only", got)
	}
	if got := pyLockingAt(src, 12); !slices.Equal(got, []string{"second"}) {
		t.Errorf("locking at 12: %q", got)
	}
	if sc, i := pyScope(src, w, "second"); sc != scopeParam || i != 1 {
		t.Errorf("second: scope %d index %d", sc, i)
	}
	r := pyFuncAt(src, 21)
	if got := pyHeldAt(src, 21, r); !slices.Equal(got, []string{"other"}) {
		t.Errorf("held after acquire/release and another acquire: %q, want other", got)
	}
	if sc, _ := pyScope(src, r, "other"); sc != scopeLocal {
		t.Errorf("other: scope %d, want local", sc)
	}
	if sc, _ := pyScope(src, r, "cache_lock"); sc != scopeGlobal {
		t.Errorf("cache_lock: scope %d, want global", sc)
	}
}

// TestPythonSourceByExpression: a one-line `with b: pass` waits for b and
// holds nothing; in an outer frame, a one-line `with X: call()` holds X;
// a module's top-level code holds what it acquired above the line, not
// what a def body or a docstring names.
func TestPythonSourceByExpression(t *testing.T) {
	src := strings.Split(`"""A script. Its docstring says lock.release() and
with lock: pass, which are not code.
"""
import threading
a, b = threading.Lock(), threading.Lock()
lock = threading.Lock()

def first():
    with a:
        both.wait()
        with b: pass

def helper():
    """lock.acquire() in a docstring."""
    lock.release()

def handler():
    with lock: work()  # the call runs inside the block

lock.acquire()
for i in range(3):
    start()
while True:
    time.sleep(1)
`, "\n")
	if got := pyLockingAt(src, 11); !slices.Equal(got, []string{"b"}) {
		t.Errorf("locking at `with b: pass`: %q, want b", got)
	}
	f := pyFuncAt(src, 11)
	if got := pyHeldAt(src, 11, f); !slices.Equal(got, []string{"a"}) {
		t.Errorf("held at `with b: pass`: %q, want a only", got)
	}
	if got := pyInlineHeld(src, 18); !slices.Equal(got, []string{"lock"}) {
		t.Errorf("held inside `with lock: work()`: %q, want lock", got)
	}
	if got := pyInlineHeld(src, 11); got != nil {
		t.Errorf("`with b: pass` is entered, not held: %q", got)
	}
	if got := pyHeldAt(src, 24, pyModuleFunc); !slices.Equal(got, []string{"lock"}) {
		t.Errorf("held at the module's line 24: %q, want lock (the docstrings and helper's release are not its code)", got)
	}
	if got := pyHeldAt(src, 19, pyModuleFunc); got != nil {
		t.Errorf("held at the module's line 19, before the acquire: %q", got)
	}
	if sc, _ := pyScope(src, pyModuleFunc, "lock"); sc != scopeGlobal {
		t.Errorf("lock at module level: scope %d, want global", sc)
	}
	code := pyCodeLines(src)
	// The while's body (24) is module code.
	for line, want := range map[int]pyLine{1: pyInString, 2: pyInString, 3: pyInString, 4: pyAtModule, 10: pyInDef, 14: pyInString, 15: pyInDef, 20: pyAtModule, 24: pyAtModule} {
		if code[line-1] != want {
			t.Errorf("line %d (%q): %d, want %d", line, src[line-1], code[line-1], want)
		}
	}
}

func TestArgWord(t *testing.T) {
	args := "(0xc000012080, {0x79f1c8, 0x1b608059e000}, 0x0?, 0xc000012088, ...)"
	for i, want := range []string{"0xc000012080", "", "", "0xc000012088", ""} {
		if got := argWord(args, i); got != want {
			t.Errorf("argWord(%d) = %q, want %q", i, got, want)
		}
	}
}

// TestConnected: the sockets a Go program's poller may wait on for an
// HTTP response: connected TCP, or a Unix stream socket with a peer that
// is no listener.
func TestConnected(t *testing.T) {
	conn := func(state, remote string) *model.TCPConn {
		return &model.TCPConn{State: state, Remote: netip.MustParseAddrPort(remote)}
	}
	all := map[string]model.Resource{
		"socket:[2]": {Name: "socket:[2]", Unix: &model.UnixSock{Inode: 2, Type: "stream", Path: "/run/d.sock"}},
		"socket:[3]": {Name: "socket:[3]", Unix: &model.UnixSock{Inode: 3, Type: "stream", Path: "/run/d.sock", Listening: true}},
	}
	for _, tt := range []struct {
		name string
		res  model.Resource
		want bool
	}{
		{"tcp connected", model.Resource{TCP: conn("ESTABLISHED", "10.0.0.2:80")}, true},
		{"tcp listening", model.Resource{TCP: conn("LISTEN", "0.0.0.0:0")}, false},
		{"unix connected", model.Resource{Unix: &model.UnixSock{Inode: 1, Type: "stream"}, Peer: "socket:[2]"}, true},
		{"unix without a peer", model.Resource{Unix: &model.UnixSock{Inode: 1, Type: "stream"}}, false},
		{"unix listening", model.Resource{Unix: &model.UnixSock{Inode: 3, Listening: true}, Peer: "socket:[2]"}, false},
		{"unix connecting to a listener", model.Resource{Unix: &model.UnixSock{Inode: 1}, Peer: "socket:[3]"}, false},
		{"a pipe", model.Resource{Pipe: &model.PipeFill{}}, false},
	} {
		if got := connected(tt.res, all); got != tt.want {
			t.Errorf("%s: connected = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A spinning goroutine caught by a stop while the scheduler preempts it
// is still in its loop: the runtime's frames innermost of it are not a
// move (TestGoVictims/delve/gospinholder on a crowded machine).
func TestSameLoopPastScheduler(t *testing.T) {
	f := func(fn string, line int) model.Frame { return model.Frame{Func: fn, File: "x.go", Line: line} }
	loop := []model.Frame{f("main.(*Cache).Refresh", 66), f("runtime.goexit", 1700)}
	inStep := []model.Frame{f("main.step", 77), f("main.(*Cache).Refresh", 67), f("runtime.goexit", 1700)}
	preempted := []model.Frame{f("runtime.asyncPreempt2", 10), f("runtime.asyncPreempt", 20), f("main.step", 78), f("main.(*Cache).Refresh", 67), f("runtime.goexit", 1700)}
	other := []model.Frame{f("main.other", 5), f("main.more", 6), f("main.deeper", 7), f("main.(*Cache).Refresh", 69), f("runtime.goexit", 1700)}
	for _, tc := range []struct {
		name string
		a, b []model.Frame
		want bool
	}{
		{"loop and its callee", loop, inStep, true},
		{"preempted in the callee", loop, preempted, true},
		{"preempted both", preempted, inStep, true},
		{"three calls deeper", loop, other, false},
		{"callee and another", inStep, other, false},
	} {
		if got := sameLoop(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: sameLoop = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The loop a spinner stays in is the innermost function on (nearly) all
// of its samples' stacks: not a callee it calls each time round, not
// the caller of a function that loops in itself.
func TestProfileLoop(t *testing.T) {
	f := func(fn string, line int) model.Frame { return model.Frame{Func: fn, File: "/src/main.go", Line: line} }
	reading := func(samples int, stacks ...model.CPUStack) model.Thread {
		return model.Thread{OnCPU: &model.OnCPU{Samples: samples, Stacks: stacks}}
	}
	st := func(n int, frames ...model.Frame) model.CPUStack { return model.CPUStack{N: n, Frames: frames} }
	for _, tc := range []struct {
		name     string
		readings []model.Thread
		loop     string
		first    int
		last     int
		top      string
	}{
		{
			name: "a loop that calls a helper",
			readings: []model.Thread{
				reading(30, st(14, f("main.step", 81), f("main.(*Cache).Refresh", 69), f("runtime.goexit", 1)),
					st(10, f("main.(*Cache).Refresh", 69), f("runtime.goexit", 1)),
					st(6, f("main.(*Cache).Refresh", 70), f("runtime.goexit", 1))),
				reading(29, st(29, f("main.step", 82), f("main.(*Cache).Refresh", 69), f("runtime.goexit", 1))),
			},
			loop: "main.(*Cache).Refresh", first: 69, last: 70, top: "main.step",
		},
		{
			name:     "a function that loops in itself",
			readings: []model.Thread{{}, reading(50, st(50, model.Frame{Func: "paginate_forever", File: "/tmp/x"}, model.Frame{Func: "renderer", File: "/tmp/x"}))},
			loop:     "paginate_forever", top: "paginate_forever",
		},
		{
			name: "work spread over functions",
			readings: []model.Thread{reading(40, st(15, f("main.parse", 10), f("main.main", 5)),
				st(13, f("main.hash", 20), f("main.main", 6)), st(12, f("main.write", 30), f("main.main", 7)))},
			loop: "main.main", first: 5, last: 7, top: "main.parse",
		},
		{
			name: "work spread, many stacks not kept",
			readings: []model.Thread{{OnCPU: &model.OnCPU{Samples: 40, Other: 20, Stacks: []model.CPUStack{
				st(10, f("main.parse", 10), f("main.main", 5)), st(10, f("main.hash", 20), f("main.main", 6))}}}},
			top: "main.hash",
		},
		{
			// A regex engine never takes the same path twice: its stacks
			// differ by line, most are not kept, and the functions
			// counted over all of them (Funcs) show where it stays.
			name: "one function over more stacks than are kept",
			readings: []model.Thread{{OnCPU: &model.OnCPU{Samples: 100, Other: 60, Stacks: []model.CPUStack{
				st(20, f("memcpy", 0), f("sre_match", 889), f("pattern_match", 611)),
				st(10, f("sre_match", 1147), f("pattern_match", 611)), st(10, f("sre_match", 1149), f("pattern_match", 611))},
				Funcs: []model.FuncCount{
					{Func: "pattern_match", File: "/src/main.go", OnStack: 100, FirstLine: 611, LastLine: 611},
					{Func: "sre_match", File: "/src/main.go", OnStack: 99, Leaf: 79, FirstLine: 600, LastLine: 1574},
					{Func: "memcpy", File: "/src/main.go", OnStack: 20, Leaf: 20},
				}}}},
			loop: "sre_match", first: 600, last: 1574, top: "sre_match",
		},
	} {
		p := profileOf(tc.readings)
		if p == nil {
			t.Fatalf("%s: no profile", tc.name)
		}
		if p.Loop.Func != tc.loop || tc.loop != "" && (p.Loop.Line != tc.first || p.LastLine != tc.last) {
			t.Errorf("%s: loop %s lines %d–%d, want %q lines %d–%d", tc.name, p.Loop.Func, p.Loop.Line, p.LastLine, tc.loop, tc.first, tc.last)
		}
		if len(p.Top) == 0 || p.Top[0].Func != tc.top {
			t.Errorf("%s: top %+v, want %s first", tc.name, p.Top, tc.top)
		}
	}
	if p := profileOf([]model.Thread{{}, {}}); p != nil {
		t.Errorf("no samples: profile %+v, want nil", p)
	}
}

// TestJavaSameClass: a live JVM's virtual threads park on a synchronizer
// the JSON dump names by identity hash; the one platform thread holding an
// unclaimed synchronizer of that class is its holder, inferred, only when
// every virtual thread waits for it (one that does not may hold it).
func TestJavaSameClass(t *testing.T) {
	const class = "java.util.concurrent.locks.ReentrantLock$NonfairSync"
	park := model.JavaLock{Kind: "parking to wait for", JavaObject: model.JavaObject{Addr: class + "@1e11fd0c", Class: class}}
	sample := func(idle bool) model.Sample {
		s := model.Sample{Threads: []model.Thread{
			{TID: 10, Java: &model.JavaThread{Number: 10, Ownable: []model.JavaObject{{Addr: "0x00000000ffd1b078", Class: class}}}},
			{TID: 11, Java: &model.JavaThread{Number: 11}},
		}}
		for tid := 100; tid < 103; tid++ {
			s.Threads = append(s.Threads, model.Thread{TID: tid, Java: &model.JavaThread{Virtual: true, Locks: []model.JavaLock{park}}})
		}
		if idle {
			s.Threads = append(s.Threads, model.Thread{TID: 103, Java: &model.JavaThread{Virtual: true}})
		}
		return s
	}
	locks := javaLocks(7, sample(false))
	if len(locks) != 1 || locks[0].Holder == nil || locks[0].Holder.TID != 10 || locks[0].Basis.Rule != BasisJavaSameClass || locks[0].Basis.Kind != BasisInferred {
		t.Fatalf("locks %+v: want the one held by tid 10, inferred by class", locks)
	}
	if locks := javaLocks(7, sample(true)); len(locks) != 1 || locks[0].Holder != nil {
		t.Fatalf("locks %+v: a virtual thread that does not wait may hold it; want no holder", locks)
	}
}

// TestPyUnwrap: self.acquire() in a class whose acquire() takes
// self.lock holds self.lock (logging.Handler before 3.13); another class's
// acquire, or another expression, is itself.
func TestPyUnwrap(t *testing.T) {
	src := strings.Split(`class Handler:
    def acquire(self):
        if self.lock:
            self.lock.acquire()

    def handle(self, record):
        self.acquire()
        try:
            self.emit(record)
        finally:
            self.release()

class Other:
    def handle(self):
        self.acquire()
        work()
`, "\n")
	if got := pyHeldAt(src, 9, pyFuncAt(src, 9)); !slices.Equal(got, []string{"self.lock"}) {
		t.Errorf("Handler.handle holds %q at line 9, want self.lock", got)
	}
	if got := pyHeldAt(src, 16, pyFuncAt(src, 16)); !slices.Equal(got, []string{"self"}) {
		t.Errorf("Other.handle holds %q at line 16, want self", got)
	}
}

// TestCopiedLock: a mutex field of a value receiver is a copy; of a
// pointer receiver, behind a pointer field, or not the receiver's, it is
// not.
func TestCopiedLock(t *testing.T) {
	src := strings.Split(`package p

import "sync"

type C struct {
	mu  sync.Mutex
	rw  sync.RWMutex
	ptr *sync.Mutex
}

func (c C) Get() { c.mu.Lock() }

func (c C) Read() { c.rw.RLock() }

func (c C) Via() { c.ptr.Lock() }

func (c *C) Put() { c.mu.Lock() }

func (c C) Other(d *C) { d.mu.Lock() }
`, "\n")
	g := parseGo(src)
	if g == nil {
		t.Fatal("does not parse")
	}
	for _, tc := range []struct {
		line int
		expr string
		want bool
	}{{11, "c.mu", true}, {13, "c.rw", true}, {15, "c.ptr", false}, {17, "c.mu", false}, {19, "d.mu", false}} {
		if got := g.copiedLock(g.funcAt(tc.line), tc.expr); got != tc.want {
			t.Errorf("%s at line %d: copied %v, want %v", tc.expr, tc.line, got, tc.want)
		}
	}
}

// TestJavaHeldBefore: a monitor a thread held in an earlier dump, with the
// same stack and state in every dump since, it holds still, though the
// last dump misses its "- locked" line; a thread that moved since, or a
// dump of another stack, adds nothing.
func TestJavaHeldBefore(t *testing.T) {
	a := model.JavaObject{Addr: "0x00000000ffd19c98", Class: "java.lang.Object"}
	b := model.JavaObject{Addr: "0x00000000ffd19ca8", Class: "java.lang.Object"}
	stack := []model.Frame{{Func: "SyncAbba.take", File: "SyncAbba.java", Line: 31}}
	thread := func(tid int, st []model.Frame, locks ...model.JavaLock) model.Thread {
		return model.Thread{TID: tid, Stack: st, Java: &model.JavaThread{Number: int64(tid), State: "BLOCKED (on object monitor)", Locks: locks}}
	}
	full := model.Sample{Threads: []model.Thread{
		thread(1, stack, model.JavaLock{Kind: "waiting to lock", JavaObject: b}, model.JavaLock{Kind: "locked", JavaObject: a}),
		thread(2, stack, model.JavaLock{Kind: "waiting to lock", JavaObject: a}, model.JavaLock{Kind: "locked", JavaObject: b}),
	}}
	missing := model.Sample{Threads: []model.Thread{
		thread(1, stack, model.JavaLock{Kind: "waiting to lock", JavaObject: b}),
		thread(2, stack, model.JavaLock{Kind: "waiting to lock", JavaObject: a}, model.JavaLock{Kind: "locked", JavaObject: b}),
	}}
	held := func(ss ...model.Sample) map[string]int {
		out := map[string]int{}
		for _, l := range javaLocks(7, javaHeldBefore(ss)) {
			if l.Holder != nil {
				addr, _, _ := strings.Cut(l.Address, " ")
				out[addr] = l.Holder.TID
			}
		}
		return out
	}
	if got := held(full, missing); got[a.Addr] != 1 || got[b.Addr] != 2 {
		t.Errorf("holders %v: want a by 1 (from the earlier dump), b by 2", got)
	}
	if got := held(missing); got[a.Addr] != 0 {
		t.Errorf("one dump that misses it: holders %v, want a unnamed", got)
	}
	moved := full
	moved.Threads = slices.Clone(full.Threads)
	moved.Threads[0] = thread(1, []model.Frame{{Func: "SyncAbba.take", File: "SyncAbba.java", Line: 25}}, model.JavaLock{Kind: "locked", JavaObject: a})
	if got := held(moved, missing); got[a.Addr] != 0 {
		t.Errorf("held at another line before: holders %v, want a unnamed", got)
	}
}

// TestPyAlias: a Condition attribute built over another lock of the same
// class is that lock; another class's, or a plain attribute, is itself.
func TestPyAlias(t *testing.T) {
	src := strings.Split(`import threading

class Queue:
    def __init__(self):
        self.mutex = threading.Lock()
        self.not_empty = threading.Condition(self.mutex)
        self.done = threading.Condition()

    def get(self):
        with self.not_empty:
            pass

class Other:
    def get(self):
        with self.not_empty:
            pass
`, "\n")
	in := pyFuncAt(src, 11)
	for _, tc := range []struct {
		f          *pyFunc
		expr, want string
	}{
		{in, "self.not_empty", "self.mutex"},
		{in, "self.done", "self.done"},
		{in, "self.mutex", "self.mutex"},
		{pyFuncAt(src, 16), "self.not_empty", "self.not_empty"},
	} {
		if got := newPyFile(src).pyAlias(tc.f, tc.expr); got != tc.want {
			t.Errorf("%s in %s.%s: %q, want %q", tc.expr, tc.f.class, tc.f.name, got, tc.want)
		}
	}
}
