package classify_test

import (
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// What a dump read from a file can say, and no more (issue 12).

// dumpSample is one goroutine dump read from a file.
func dumpSample(i int, source model.Format, gs ...model.Goroutine) model.Sample {
	return model.Sample{Time: time.Date(2026, 12, 1, 7, 0, i, 0, time.UTC), PID: 0, Threads: []model.Thread{}, StackSource: source, Goroutines: gs}
}

// TestDumpWhoseGoroutines: in a dump, an HTTP server's accept loop is the
// program's listener (idle, even caught between two Accepts, even moving
// between dumps for the requests that fetched them); the goroutine the
// runtime starts for package unique is the runtime's.
func TestDumpWhoseGoroutines(t *testing.T) {
	serve := []model.Frame{
		{Func: "net/http.(*Server).Serve", File: "/go/src/net/http/server.go", Line: 3464},
		{Func: "net/http.Serve", File: "/go/src/net/http/server.go", Line: 2975},
		{Func: "main.main", File: "/src/main.go", Line: 20},
	}
	accept := append([]model.Frame{
		{Func: "internal/poll.runtime_pollWait", File: "/go/src/runtime/netpoll.go", Line: 351},
		{Func: "net.(*TCPListener).Accept", File: "/go/src/net/tcpsock.go", Line: 380},
	}, serve...)
	unique := gr(19, "chan receive", []model.Frame{
		{Func: "runtime.gopark", File: "/go/src/runtime/proc.go", Line: 424},
		{Func: "runtime.chanrecv1", File: "/go/src/runtime/chan.go", Line: 489},
		{Func: "runtime.unique_runtime_registerUniqueMapCleanup.gowrap1", File: "/go/src/runtime/mgc.go", Line: 1735},
	})
	unique.CreatedBy = &model.Frame{Func: "unique.runtime_registerUniqueMapCleanup", File: "/go/src/runtime/mgc.go", Line: 1730}
	waiter := gr(7, "sync.Mutex.Lock", lockStack)
	samples := []model.Sample{
		dumpSample(0, model.GoPprofDebug2, gr(1, "IO wait", accept), unique, waiter),
		dumpSample(1, model.GoPprofDebug2, gr(1, "runnable", serve), unique, waiter),
	}
	d := Classify(samples, World{}, classify.DefaultOptions())
	for _, g := range d.Goroutines {
		switch g.Ref.Goroutine {
		case 1:
			if g.Aside != classify.AsideNone || g.Class != classify.ClassIdle || g.Why.Rule != classify.WhyGoAccept {
				t.Errorf("the accept loop: aside %d, class %s, rule %d; want the program's, idle, waiting for a connection", g.Aside, g.Class, g.Why.Rule)
			}
		case 19:
			if g.Aside != classify.AsideRuntime {
				t.Errorf("unique's cleanup goroutine: aside %d, want the runtime's", g.Aside)
			}
		}
	}
	if d.Verdict != classify.Blocked {
		t.Errorf("verdict %s (%s), want blocked: the accept loop's movement is not work", d.Verdict, d.Summary)
	}
}
