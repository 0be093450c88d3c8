package classify_test

import (
	"fmt"
	"github.com/hangdoc/hangdoc/classify"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// Stacks as Go 1.26 prints them, innermost first.
var (
	lockStack = []model.Frame{
		{Func: "internal/sync.runtime_SemacquireMutex", File: "/go/src/runtime/sema.go", Line: 95, Args: "(0x0?, 0x0?, 0x0?)"},
		{Func: "internal/sync.(*Mutex).lockSlow", File: "/go/src/internal/sync/mutex.go", Line: 149, Args: "(0xc0000120b0)"},
		{Func: "internal/sync.(*Mutex).Lock", File: "/go/src/internal/sync/mutex.go", Line: 70, Args: "(...)"},
		{Func: "sync.(*Mutex).Lock", File: "/go/src/sync/mutex.go", Line: 46, Args: "(...)"},
		{Func: "main.(*Store).Put", File: "/src/main.go", Line: 17, Args: "(0x0?, 0xc000010058)"},
	}
	writeStack = []model.Frame{
		{Func: "internal/poll.runtime_pollWait", File: "/go/src/runtime/netpoll.go", Line: 351},
		{Func: "internal/poll.(*FD).Write", File: "/go/src/internal/poll/fd_unix.go", Line: 390},
		{Func: "os.(*File).Write", File: "/go/src/os/file.go", Line: 215},
		{Func: "main.(*Store).Put", File: "/src/main.go", Line: 21, Args: "(0x0?, 0xc000010058)"},
	}
	spinStack = []model.Frame{
		{Func: "main.busy", File: "/src/main.go", Line: 30},
		{Func: "main.(*Store).Put", File: "/src/main.go", Line: 22},
	}
	recvStack = []model.Frame{{Func: "main.worker", File: "/src/main.go", Line: 40}}
	waitStack = []model.Frame{
		{Func: "sync.runtime_SemacquireWaitGroup", File: "/go/src/runtime/sema.go", Line: 114},
		{Func: "sync.(*WaitGroup).Wait", File: "/go/src/sync/waitgroup.go", Line: 206},
		{Func: "main.main", File: "/src/main.go", Line: 60},
	}
	acceptStack = []model.Frame{
		{Func: "internal/poll.runtime_pollWait", File: "/go/src/runtime/netpoll.go", Line: 351},
		{Func: "net.(*TCPListener).Accept", File: "/go/src/net/tcpsock.go", Line: 380},
		{Func: "main.serve", File: "/src/main.go", Line: 70},
	}
)

func gr(id int64, state string, stack []model.Frame) model.Goroutine {
	return model.Goroutine{ID: id, State: state, Stack: stack}
}

// goSamples repeats one list of goroutines n times, a second apart, each
// sample with the given threads.
func goSamples(n int, threads []model.Thread, gs func(i int) []model.Goroutine) []model.Sample {
	t0 := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	var out []model.Sample
	for i := range n {
		var ts []model.Thread
		for _, t := range threads {
			t.CPUTime = time.Duration(i) * time.Duration(t.CPUTime)
			ts = append(ts, t)
		}
		out = append(out, model.Sample{Time: t0.Add(time.Duration(i) * time.Second), PID: 100, Threads: ts, Goroutines: gs(i)})
	}
	return out
}

// mutexWaiters are goroutines 10… waiting in Put's classify.Lock.
func mutexWaiters(n int) []model.Goroutine {
	var out []model.Goroutine
	for i := range n {
		out = append(out, gr(int64(10+i), "sync.Mutex.Lock", lockStack))
	}
	return out
}

func TestClassifyGoroutines(t *testing.T) {
	parked := model.Thread{TID: 100, State: model.StateSleeping, Wchan: "futex_wait", Syscall: model.Syscall{Nr: 202}}
	spinner := model.Thread{TID: 101, State: model.StateRunning, CPUTime: time.Second, Syscall: model.Syscall{Running: true}}
	tests := []struct {
		name       string
		samples    []model.Sample
		verdict    classify.Verdict
		holder     int64 // of the first lock; 0 for none
		cycle      []int64
		summary    string
		not        string // the summary and evidence must not say it
		goroutine  int64  // and its class
		class      classify.Class
		evidence   string
		noLockByID bool
	}{
		{
			name: "holder blocked writing",
			samples: goSamples(3, []model.Thread{parked}, func(int) []model.Goroutine {
				return append(mutexWaiters(8), gr(7, "IO wait", writeStack), gr(1, "IO wait", acceptStack))
			}),
			verdict: classify.Blocked, holder: 7, goroutine: 1, class: classify.ClassIdle,
			summary: "goroutine 7 probably holds sync.Mutex 0xc0000120b0 and is waiting for network or file I/O (netpoll) in os.(*File).Write ← main.(*Store).Put; 8 goroutines wait",
		},
		{
			// A holder parked in a sleep keeps its waiters blocked: it does
			// not make them idle, nor the pool beside them the verdict.
			name: "holder asleep beside an idle pool",
			samples: goSamples(3, []model.Thread{parked}, func(int) []model.Goroutine {
				sleep := []model.Frame{{Func: "time.Sleep", File: "/go/src/runtime/time.go", Line: 363}, {Func: "main.(*Store).Put", File: "/src/main.go", Line: 23, Args: "(0x0?, 0xc000010058)"}}
				gs := append(mutexWaiters(3), gr(7, "sleep", sleep))
				for i := range 6 {
					gs = append(gs, gr(int64(20+i), "chan receive", recvStack))
				}
				return gs
			}),
			verdict: classify.Blocked, holder: 7, goroutine: 20, class: classify.ClassIdle,
			summary: "goroutine 7 probably holds sync.Mutex 0xc0000120b0 and is parked (sleeping) in time.Sleep ← main.(*Store).Put; 3 goroutines wait for the mutex; beside it, 6 goroutines [chan receive] in main.worker wait for work, and no goroutine is sending to them",
			not:     "feeder",
		},
		{
			name: "holder caught runnable by a spurious wake-up still blocks",
			samples: goSamples(3, []model.Thread{parked}, func(i int) []model.Goroutine {
				state := "IO wait"
				if i == 2 {
					state = "runnable"
				}
				return append(mutexWaiters(2), gr(7, state, writeStack))
			}),
			verdict: classify.Blocked, holder: 7, goroutine: 7, class: classify.ClassBlocked,
		},
		{
			name: "holder spins on a thread that pins a core",
			samples: goSamples(3, []model.Thread{parked, spinner}, func(int) []model.Goroutine {
				g := gr(7, "running", spinStack)
				g.Thread = 101
				return append(mutexWaiters(8), g)
			}),
			verdict: classify.Spinning, holder: 7, goroutine: 7, class: classify.ClassSpinning,
			summary: "goroutine 7 spins in main.busy while probably holding sync.Mutex 0xc0000120b0; 8 goroutines wait for it",
		},
		{
			name: "a spinner caught in its loop and in the function the loop calls is in one place",
			samples: goSamples(3, []model.Thread{parked, spinner}, func(i int) []model.Goroutine {
				loop := []model.Frame{{Func: "main.spin", File: "/src/main.go", Line: 60 + i%2}, {Func: "main.main.gowrap1", File: "/src/main.go", Line: 90}}
				if i == 1 {
					loop = append([]model.Frame{{Func: "main.step", File: "/src/main.go", Line: 73}}, loop...)
				}
				return []model.Goroutine{gr(25, "runnable", loop)}
			}),
			verdict: classify.Spinning, goroutine: 25, class: classify.ClassSpinning,
		},
		{
			name: "a worker caught in one task while its siblings move is working",
			samples: goSamples(3, []model.Thread{parked, spinner}, func(i int) []model.Goroutine {
				by := &model.Frame{Func: "main.main", File: "/src/main.go", Line: 99}
				stuck := gr(11, "runnable", []model.Frame{{Func: "main.hashChunk", File: "/src/main.go", Line: 80 + i}, {Func: "main.worker", File: "/src/main.go", Line: 70}})
				busy := gr(12, "runnable", []model.Frame{{Func: fmt.Sprintf("main.task%d", i), File: "/src/main.go", Line: 10}, {Func: "main.worker", File: "/src/main.go", Line: 71 + i}})
				stuck.CreatedBy, busy.CreatedBy = by, by
				return []model.Goroutine{stuck, busy}
			}),
			verdict: classify.Working, goroutine: 11, class: classify.ClassWorking,
		},
		{
			name: "an HTTP server's background read is plumbing, not work",
			samples: goSamples(3, []model.Thread{parked}, func(i int) []model.Goroutine {
				bg := gr(int64(40+i), "runnable", []model.Frame{{Func: "net/http.(*connReader).startBackgroundRead.gowrap2"}, {Func: "runtime.goexit"}})
				return []model.Goroutine{bg, gr(1, "IO wait", acceptStack)}
			}),
			verdict: classify.Idle, goroutine: 42, class: classify.ClassIdle,
		},
		{
			// Seen live: hangdoc's own request to a pprof index, its
			// response being flushed as the profile was written.
			name: "an HTTP connection finishing a response, no handler on its stack, is plumbing, not work",
			samples: goSamples(3, []model.Thread{parked}, func(i int) []model.Goroutine {
				gs := []model.Goroutine{gr(1, "IO wait", acceptStack)}
				if i == 2 {
					gs = append(gs, gr(142, "runnable", []model.Frame{{Func: "syscall.Syscall"}, {Func: "syscall.write"}, {Func: "net.(*conn).Write"},
						{Func: "net/http.checkConnErrorWriter.Write"}, {Func: "bufio.(*Writer).Flush"}, {Func: "net/http.(*response).finishRequest"}, {Func: "net/http.(*conn).serve"}}))
				}
				return gs
			}),
			verdict: classify.Idle, goroutine: 142, class: classify.ClassIdle,
		},
		{
			name: "an HTTP server's accept loop caught serving a connection is plumbing, not work",
			samples: goSamples(3, []model.Thread{parked}, func(i int) []model.Goroutine {
				serve := []model.Frame{{Func: "net/http.(*Server).Serve", File: "/go/src/net/http/server.go", Line: 3400}, {Func: "net/http.Serve"}, {Func: "main.listen.func2", File: "/src/main.go", Line: 9}}
				if i == 1 {
					serve = append([]model.Frame{{Func: "net/http.(*conn).setState", File: "/go/src/net/http/server.go", Line: 1800}}, serve...)
				}
				return []model.Goroutine{gr(5, "runnable", serve), gr(1, "sleep", []model.Frame{{Func: "time.Sleep"}, {Func: "main.main"}})}
			}),
			verdict: classify.Idle, goroutine: 5, class: classify.ClassIdle,
		},
		{
			name: "running goroutine on an idle thread works",
			samples: goSamples(3, []model.Thread{parked}, func(int) []model.Goroutine {
				g := gr(7, "running", spinStack)
				g.Thread = 100
				return []model.Goroutine{g}
			}),
			verdict: classify.Working, goroutine: 7, class: classify.ClassWorking,
		},
		{
			name: "channel cycle from memory evidence",
			samples: goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
				ping := gr(5, "chan send", []model.Frame{{Func: "main.ping", File: "/src/main.go", Line: 10}})
				ping.WaitChans, ping.ChanRefs = []string{"0xa"}, []string{"0xa", "0xb"}
				pong := gr(6, "chan send", []model.Frame{{Func: "main.pong", File: "/src/main.go", Line: 20}})
				pong.WaitChans, pong.ChanRefs = []string{"0xb"}, []string{"0xa", "0xb"}
				return []model.Goroutine{ping, pong, gr(1, "IO wait", acceptStack)}
			}),
			verdict: classify.Deadlock, cycle: []int64{5, 6}, goroutine: 5, class: classify.ClassBlocked,
			summary: "deadlock between 2 goroutines: goroutine 5 (main.ping) is blocked in chan send on chan 0xa, which only goroutine 6",
		},
		{
			name: "a channel another goroutine could serve is no cycle",
			samples: goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
				ping := gr(5, "chan send", []model.Frame{{Func: "main.ping", File: "/src/main.go", Line: 10}})
				ping.WaitChans, ping.ChanRefs = []string{"0xa"}, []string{"0xa", "0xb"}
				pong := gr(6, "chan send", []model.Frame{{Func: "main.pong", File: "/src/main.go", Line: 20}})
				pong.WaitChans, pong.ChanRefs = []string{"0xb"}, []string{"0xa", "0xb"}
				third := gr(8, "sleep", []model.Frame{{Func: "time.Sleep", File: "/go/src/runtime/time.go", Line: 300}, {Func: "main.drain", File: "/src/main.go", Line: 30}})
				third.ChanRefs = []string{"0xa"}
				return []model.Goroutine{ping, pong, third}
			}),
			verdict: classify.Blocked, summary: "no goroutine is running to receive", goroutine: 8, class: classify.ClassIdle,
		},
		{
			// main in wg.Wait beside them: blocked (it waits for them, they
			// for a sender), never an idle pool.
			name: "receivers of one channel are a pool, not a cycle, even with memory evidence",
			samples: goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
				main := gr(1, "sync.WaitGroup.Wait", waitStack)
				main.ChanRefs = []string{"0xj"}
				gs := []model.Goroutine{main}
				for i := range 4 {
					w := gr(int64(20+i), "chan receive", recvStack)
					w.WaitChans, w.ChanRefs = []string{"0xj"}, []string{"0xj"}
					gs = append(gs, w)
				}
				return gs
			}),
			verdict: classify.Blocked, goroutine: 21, class: classify.ClassIdle,
		},
		{
			name: "channel senders without memory evidence are blocked: no cycle is proved",
			samples: goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
				return []model.Goroutine{
					gr(5, "chan send", []model.Frame{{Func: "main.ping", File: "/src/main.go", Line: 10}}),
					gr(6, "chan send", []model.Frame{{Func: "main.pong", File: "/src/main.go", Line: 20}}),
					gr(1, "IO wait", acceptStack),
				}
			}),
			verdict: classify.Blocked, summary: "2 goroutines are blocked sending on channels (goroutine 5 (main.ping), goroutine 6 (main.pong)), and no goroutine is running",
			goroutine: 6, class: classify.ClassBlocked,
		},
		{
			// The case: main is alive in wg.Wait for the workers,
			// so somebody is left; and it waits for them: blocked.
			name: "workers beside main in wg.Wait are blocked, not a pool whose feeder is gone",
			samples: goSamples(3, []model.Thread{parked}, func(int) []model.Goroutine {
				gs := []model.Goroutine{gr(1, "sync.WaitGroup.Wait", waitStack), gr(2, "IO wait", acceptStack)}
				for i := range 6 {
					gs = append(gs, gr(int64(20+i), "chan receive", recvStack))
				}
				return gs
			}),
			verdict: classify.Blocked, goroutine: 20, class: classify.ClassIdle,
			summary: "beside it, 6 goroutines [chan receive] in main.worker wait for work",
			not:     "feeder goroutine is gone",
		},
		{
			name: "pool with its feeder gone: no goroutine of the program outside it but main parked for good",
			samples: goSamples(3, []model.Thread{parked}, func(int) []model.Goroutine {
				gs := []model.Goroutine{gr(1, "select (no cases)", []model.Frame{{Func: "main.main", File: "/src/main.go", Line: 60}})}
				for i := range 6 {
					gs = append(gs, gr(int64(20+i), "chan receive", recvStack))
				}
				return gs
			}),
			verdict: classify.Idle, goroutine: 20, class: classify.ClassIdle,
			summary: "all 6 workers wait in main.worker [chan receive] and no goroutine is left that could send: whatever feeds the pool stopped — the feeder goroutine is gone",
		},
		{
			name: "an idle pool beside a listener: idle, but nobody left is not proved",
			samples: goSamples(3, []model.Thread{parked}, func(int) []model.Goroutine {
				gs := []model.Goroutine{gr(2, "IO wait", acceptStack)}
				for i := range 6 {
					gs = append(gs, gr(int64(20+i), "chan receive", recvStack))
				}
				return gs
			}),
			verdict: classify.Idle, goroutine: 20, class: classify.ClassIdle,
			summary: "6 workers wait in main.worker [chan receive] for work and no goroutine is sending to them; whether one is left that could, the evidence does not show: other goroutines of the program are alive (goroutine 2 [IO wait] in net.(*TCPListener).Accept ← main.serve)",
			not:     "feeder goroutine is gone",
		},
		{
			name: "an excerpt of a dump proves nobody left of nothing",
			samples: func() []model.Sample {
				ss := goSamples(1, nil, func(int) []model.Goroutine {
					gs := []model.Goroutine{gr(1, "select (no cases)", []model.Frame{{Func: "main.main", File: "/src/main.go", Line: 60}})}
					for i := range 6 {
						gs = append(gs, gr(int64(20+i), "chan receive", recvStack))
					}
					return gs
				})
				ss[0].Excerpt = true
				return ss
			}(),
			verdict: classify.Idle, goroutine: 20, class: classify.ClassIdle,
			summary: "the dump is an excerpt, so it cannot show whether a goroutine that could send is left",
			not:     "feeder goroutine is gone",
		},
		{
			name: "a WaitGroup in an excerpt: nobody left is not said",
			samples: func() []model.Sample {
				ss := goSamples(1, nil, func(int) []model.Goroutine { return []model.Goroutine{gr(7, "sync.WaitGroup.Wait", waitStack)} })
				ss[0].Excerpt = true
				return ss
			}(),
			verdict: classify.Blocked, goroutine: 7, class: classify.ClassBlocked,
			not: "no live goroutine is left",
		},
		{
			name: "stacks that move are work",
			samples: goSamples(3, []model.Thread{parked}, func(i int) []model.Goroutine {
				return []model.Goroutine{gr(3, "running", []model.Frame{{Func: "main.hash", File: "/src/main.go", Line: 50 + i}, {Func: "main.work", File: "/src/main.go", Line: 80}})}
			}),
			verdict: classify.Working, goroutine: 3, class: classify.ClassWorking,
		},
		{
			name: "a ticker that moves does not make a pile of blocked goroutines healthy",
			samples: goSamples(3, []model.Thread{parked}, func(i int) []model.Goroutine {
				tick := gr(3, "running", []model.Frame{{Func: fmt.Sprintf("main.report%d", i), File: "/src/main.go", Line: 50}, {Func: "main.ticker", File: "/src/main.go", Line: 80 + i}})
				return append(mutexWaiters(5), tick)
			}),
			verdict: classify.Working, goroutine: 3, class: classify.ClassWorking,
			summary: "1 goroutine is working: their stacks move between samples; slow, not stopped; but 5 goroutines [sync.Mutex.Lock] in sync.(*Mutex).Lock ← main.(*Store).Put did not move during the run",
		},
		{
			name: "a group that grows is a pile-up",
			samples: goSamples(3, []model.Thread{parked}, func(i int) []model.Goroutine {
				return append(mutexWaiters(2+3*i), gr(7, "IO wait", writeStack))
			}),
			verdict: classify.Blocked, holder: 7, evidence: "pile-up: 8 goroutines [sync.Mutex.Lock] in sync.(*Mutex).Lock ← main.(*Store).Put grew from 2 to 8",
		},
		{
			name: "two goroutines past the Lock call: no holder named",
			samples: goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
				return append(mutexWaiters(3), gr(7, "IO wait", writeStack), gr(8, "IO wait", writeStack))
			}),
			verdict: classify.Blocked, evidence: "no single holder: goroutine 7 (main.(*Store).Put) (probable: in main.(*Store).Put at line 21); goroutine 8 (main.(*Store).Put)",
		},
		{
			name: "a different receiver is not the holder",
			samples: goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
				other := slices.Clone(writeStack)
				other[3].Args = "(0xc0000aaaa0, 0xc000010058)"
				waiters := mutexWaiters(2)
				for i := range waiters {
					waiters[i].Stack = slices.Clone(lockStack)
					waiters[i].Stack[4].Args = "(0xc000099990, 0xc000010058)"
				}
				return append(waiters, gr(7, "IO wait", other))
			}),
			verdict: classify.Blocked, evidence: "no holder is named: no frame of any stack holds it",
		},
		{
			name: "waiters whose mutex address is unknown group by call site",
			samples: goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
				waiters := mutexWaiters(3)
				for i := range waiters {
					waiters[i].Stack = slices.Clone(lockStack)
					waiters[i].Stack[1].Args = "(0x0?)"
				}
				return append(waiters, gr(7, "IO wait", writeStack))
			}),
			verdict: classify.Blocked, holder: 7, summary: "probably holds sync.Mutex locked at main.(*Store).Put:17",
		},
		{
			name: "two mutexes taken in opposite orders",
			samples: goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
				// transfer(a, b) and transfer(b, a): each took its first
				// mutex at line 4 and waits at line 5 for the other's.
				at := func(mu string) []model.Frame {
					return []model.Frame{lockStack[0], {Func: "internal/sync.(*Mutex).lockSlow", Args: "(" + mu + ")"}, {Func: "main.transfer", File: "/src/main.go", Line: 5}}
				}
				return []model.Goroutine{gr(1, "sync.Mutex.Lock", at("0xb0")), gr(2, "sync.Mutex.Lock", at("0xa0"))}
			}),
			verdict: classify.Deadlock, cycle: []int64{1, 2}, holder: 2,
			summary: "goroutine 1 (main.transfer) waits for sync.Mutex 0xb0, probably held by goroutine 2",
		},
		{
			name: "runtime and profiler goroutines are set aside",
			samples: goSamples(2, []model.Thread{parked}, func(int) []model.Goroutine {
				sys := gr(2, "GC worker (idle)", []model.Frame{{Func: "runtime.gopark"}, {Func: "runtime.gcBgMarkWorker"}})
				prof := gr(30, "running", []model.Frame{{Func: "runtime/pprof.writeGoroutineStacks"}, {Func: "net/http/pprof.handler.ServeHTTP"}})
				return []model.Goroutine{sys, prof, gr(1, "IO wait", acceptStack)}
			}),
			verdict: classify.Idle, goroutine: 30, class: classify.ClassIdle,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Classify(tc.samples, World{}, classify.DefaultOptions())
			if d.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %s\nevidence:\n%s", d.Verdict, tc.verdict, d.Summary, strings.Join(d.Evidence, "\n"))
			}
			if tc.summary != "" && !strings.Contains(d.Summary, tc.summary) {
				t.Errorf("summary %q\nwant it to contain %q", d.Summary, tc.summary)
			}
			if tc.not != "" && strings.Contains(d.Summary+strings.Join(d.Evidence, "\n"), tc.not) {
				t.Errorf("summary %q or evidence says %q\nevidence:\n%s", d.Summary, tc.not, strings.Join(d.Evidence, "\n"))
			}
			var holder int64
			if len(d.Locks) > 0 && d.Locks[0].Holder != nil {
				holder = d.Locks[0].Holder.Goroutine
			}
			if holder != tc.holder {
				t.Errorf("holder %d, want %d; locks %+v", holder, tc.holder, d.Locks)
			}
			if tc.cycle != nil {
				if len(d.Cycles) == 0 {
					t.Fatalf("no cycle, want %v", tc.cycle)
				}
				var got []int64
				for _, r := range d.Cycles[0] {
					got = append(got, r.Goroutine)
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.cycle) {
					t.Errorf("cycle %v, want %v", got, tc.cycle)
				}
			} else if len(d.Cycles) > 0 {
				t.Errorf("cycles %v, want none", d.Cycles)
			}
			if tc.goroutine != 0 {
				i := slices.IndexFunc(d.Goroutines, func(g classify.Actor) bool { return g.Ref.Goroutine == tc.goroutine })
				if i < 0 {
					t.Fatalf("goroutine %d missing", tc.goroutine)
				}
				if g := d.Goroutines[i]; g.Class != tc.class {
					t.Errorf("goroutine %d is %s (%s), want %s", g.Ref.Goroutine, g.Class, d.R.Goroutines[i].Why, tc.class)
				}
			}
			if tc.evidence != "" && !slices.ContainsFunc(d.Evidence, func(e string) bool { return strings.Contains(e, tc.evidence) }) {
				t.Errorf("no evidence line contains %q:\n%s", tc.evidence, strings.Join(d.Evidence, "\n"))
			}
		})
	}
}

func TestGroupsBiggestFirst(t *testing.T) {
	samples := goSamples(2, nil, func(int) []model.Goroutine {
		return append(mutexWaiters(5), gr(7, "IO wait", writeStack), gr(1, "IO wait", acceptStack))
	})
	d := Classify(samples, World{}, classify.DefaultOptions())
	if len(d.Groups) != 3 {
		t.Fatalf("%d groups, want 3: %+v", len(d.Groups), d.Groups)
	}
	g := d.Groups[0]
	if g.Count != 5 || d.R.Groups[0].Title != "5 goroutines [sync.Mutex.Lock] in sync.(*Mutex).Lock ← main.(*Store).Put" || !slices.Equal(g.Counts, []int{5, 5}) || g.Grew {
		t.Errorf("first group %+v", g)
	}
	for _, gr := range d.Goroutines {
		if d.Groups[gr.Group].State != gr.GoState {
			t.Errorf("goroutine %d [%s] points at group %d [%s]", gr.Ref.Goroutine, gr.GoState, gr.Group, d.Groups[gr.Group].State)
		}
	}
}

// TestGoIOChain: a holder in IO wait is tied, through the pipes the
// runtime's epoll instance watches, to the full pipe and its idle reader.
func TestGoIOChain(t *testing.T) {
	poller := model.Thread{TID: 100, State: model.StateSleeping, Wchan: "do_epoll_wait", Syscall: model.Syscall{Nr: 281},
		Watches: []string{"5 socket:[7]", "9 pipe:[42]", "4 pipe:[43]"}}
	samples := goSamples(2, []model.Thread{poller}, func(int) []model.Goroutine {
		w := slices.Clone(writeStack)
		w = append([]model.Frame{w[0], {Func: "internal/poll.(*pollDesc).waitWrite"}}, w[1:]...)
		return append(mutexWaiters(3), gr(7, "IO wait", w))
	})
	reader := model.Thread{TID: 200, Name: "sleep", State: model.StateSleeping, Wchan: "hrtimer_nanosleep", Syscall: model.Syscall{Nr: 230}}
	w := World{
		Resources: map[string]model.Resource{
			"pipe:[42]": {Name: "pipe:[42]", Pipe: &model.PipeFill{Queued: 65536, Capacity: 65536},
				Holders: []model.FDRef{{PID: 100, FD: 9, Mode: "w"}, {PID: 200, FD: 0, Mode: "r"}}},
			// Not full: not where it is stuck.
			"pipe:[43]": {Name: "pipe:[43]", Pipe: &model.PipeFill{Queued: 10, Capacity: 65536},
				Holders: []model.FDRef{{PID: 100, FD: 4, Mode: "w"}, {PID: 300, FD: 0, Mode: "r"}}},
		},
		Peers: []model.Process{{PID: 200, Cmdline: "sleep 3600", Depth: 1, Samples: goSamples(2, []model.Thread{reader}, func(int) []model.Goroutine { return nil })}},
	}
	for i := range w.Peers[0].Samples {
		w.Peers[0].Samples[i].PID = 200
	}
	d := Classify(samples, w, classify.DefaultOptions())
	want := "goroutine 7 probably holds sync.Mutex 0xc0000120b0 and is blocked in os.(*File).Write ← main.(*Store).Put on pipe:[42] on fd 9, 65536/65536 bytes queued → read by pid 200 (sleep 3600) on fd 0"
	if !strings.HasPrefix(d.Summary, want) {
		t.Errorf("summary %q\nwant it to start %q", d.Summary, want)
	}
}

// TestWhoseGoroutines: which goroutines are not the program's is decided
// from each one's own stack, never from who created it: an HTTP server's
// handlers, and the workers of a program that writes its own dump, are the
// program's (issue 9).
func TestWhoseGoroutines(t *testing.T) {
	serve := model.Frame{Func: "net/http.(*Server).Serve", File: "/go/src/net/http/server.go", Line: 3464}
	main := model.Frame{Func: "main.main", File: "/src/main.go", Line: 20}
	t.Run("handlers started by Server.Serve", func(t *testing.T) {
		accept := gr(8, "IO wait", []model.Frame{
			{Func: "internal/poll.runtime_pollWait", File: "/go/src/runtime/netpoll.go", Line: 351},
			{Func: "net.(*TCPListener).Accept", File: "/go/src/net/tcpsock.go", Line: 380},
			serve, {Func: "main.listen", File: "/src/main.go", Line: 70},
		})
		handler := func(id int64) model.Goroutine {
			g := gr(id, "sync.Mutex.Lock", append(slices.Clone(lockStack[:4]),
				model.Frame{Func: "main.handle", File: "/src/main.go", Line: 30, Args: "(0xc0000120b0)"},
				model.Frame{Func: "net/http.HandlerFunc.ServeHTTP", File: "/go/src/net/http/server.go", Line: 2294},
				model.Frame{Func: "net/http.(*conn).serve", File: "/go/src/net/http/server.go", Line: 2286}))
			g.CreatedBy, g.CreatorID = &serve, 8
			return g
		}
		samples := goSamples(2, nil, func(int) []model.Goroutine {
			return []model.Goroutine{accept, handler(20), handler(21), handler(22)}
		})
		d := Classify(samples, World{}, classify.DefaultOptions())
		if d.Verdict != classify.Blocked {
			t.Errorf("verdict %s (%s), want blocked: the handlers are the program's", d.Verdict, d.Summary)
		}
		for i, g := range d.Goroutines {
			if aside := g.Aside != classify.AsideNone; aside != (g.Ref.Goroutine == 8) {
				t.Errorf("goroutine %d set aside: %v (%s)", g.Ref.Goroutine, aside, d.R.Goroutines[i].Why)
			}
		}
	})
	t.Run("workers of a program that dumps itself", func(t *testing.T) {
		dumper := gr(1, "running", []model.Frame{{Func: "main.dump", File: "/src/main.go", Line: 10}, main})
		worker := func(id int64) model.Goroutine {
			g := gr(id, "sync.Mutex.Lock", lockStack)
			g.CreatedBy, g.CreatorID = &main, 1
			return g
		}
		samples := []model.Sample{{Time: time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), PID: 100, StackSource: model.GoStack,
			Goroutines: []model.Goroutine{dumper, worker(5), worker(6), worker(7)}}}
		d := Classify(samples, World{}, classify.DefaultOptions())
		if d.Verdict != classify.Blocked || !strings.Contains(d.Summary, "3 goroutines are blocked") {
			t.Errorf("verdict %s (%s), want the three workers blocked", d.Verdict, d.Summary)
		}
		if !slices.ContainsFunc(d.Evidence, func(e string) bool {
			return strings.HasPrefix(e, "4 goroutines in the last sample (0 of them the runtime's")
		}) {
			t.Errorf("evidence %q: want 4 goroutines, none of them machinery", d.Evidence)
		}
	})
}
