package model

import "testing"

func TestParseGoWait(t *testing.T) {
	for _, tc := range []struct {
		state string
		want  GoWait
	}{
		{"running", GoWait{Kind: GoRunning, OnCPU: true}},
		{"running (locked to thread)", GoWait{Kind: GoRunning, OnCPU: true}},
		{"runnable", GoWait{Kind: GoRunning}},
		{"preempted", GoWait{Kind: GoRunning}},
		{"chan send", GoWait{Kind: GoChanSend}},
		{"chan send (nil chan)", GoWait{Kind: GoChanSend, NilChan: true}},
		{"chan receive (nil chan)", GoWait{Kind: GoChanRecv, NilChan: true}},
		{"chan send (leaked)", GoWait{Kind: GoChanSend, Leaked: true}},
		{"chan receive (durable)", GoWait{Kind: GoChanRecv, Durable: true}},
		{"select", GoWait{Kind: GoSelect}},
		{"select (no cases)", GoWait{Kind: GoSelectEmpty}},
		{"sync.Mutex.Lock", GoWait{Kind: GoMutex}},
		{"sync.RWMutex.RLock", GoWait{Kind: GoRWMutexRead}},
		{"sync.RWMutex.Lock", GoWait{Kind: GoRWMutexWrite}},
		{"sync.WaitGroup.Wait", GoWait{Kind: GoWaitGroup}},
		{"sync.Cond.Wait", GoWait{Kind: GoCond}},
		{"semacquire", GoWait{Kind: GoSemacquire}},
		{"IO wait", GoWait{Kind: GoIO}},
		{"syscall", GoWait{Kind: GoSyscall}},
		{"sleep", GoWait{Kind: GoSleep}},
		{"GC worker (idle)", GoWait{Kind: GoRuntime}},
		{"finalizer wait", GoWait{Kind: GoRuntime}},
		{"sync.Mutex.Lock (leaked)", GoWait{Kind: GoMutex, Leaked: true}},
		{"something new", GoWait{Kind: GoOther}},
		{"", GoWait{Kind: GoOther}},
	} {
		if got := ParseGoWait(tc.state); got != tc.want {
			t.Errorf("ParseGoWait(%q) = %+v, want %+v", tc.state, got, tc.want)
		}
	}
	if !ParseGoWait("select (no cases)").ForGood() || !ParseGoWait("chan receive (nil chan)").ForGood() || ParseGoWait("chan receive").ForGood() {
		t.Error("ForGood: want select {} and nil channels only")
	}
}

// TestGoWaitIs: a plain wait of a kind, whatever it waits on; a remark of
// the runtime's makes it another.
func TestGoWaitIs(t *testing.T) {
	if w := (GoWait{Kind: GoChanRecv, Addr: "0xc000020060"}); !w.Is(GoChanRecv) || w.Is(GoChanSend) {
		t.Errorf("%+v: Is(GoChanRecv) %v, Is(GoChanSend) %v", w, w.Is(GoChanRecv), w.Is(GoChanSend))
	}
	for _, w := range []GoWait{{Kind: GoChanRecv, NilChan: true}, {Kind: GoChanRecv, Leaked: true}, {Kind: GoChanRecv, Durable: true}} {
		if w.Is(GoChanRecv) {
			t.Errorf("%+v is a plain receive", w)
		}
	}
}
