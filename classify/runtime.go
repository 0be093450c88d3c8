package classify

import (
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// aside is the one rule that says which goroutines are not the program's
// story, from the goroutine's own stack and state and the source that read
// it — never from who created it: an HTTP handler started by the server's
// accept loop, or a worker started by a goroutine that writes a dump, is
// the program's.
func aside(g model.Goroutine, source model.Format) Aside {
	switch {
	case RuntimeGoroutine(g):
		return AsideRuntime
	case observer(g.Stack):
		return AsideObserver
	case plumbing(g.Stack) && !(source.IsDump() && acceptLoop(g.Stack)):
		// An HTTP server's accept loop is set aside where hangdoc's own
		// requests move it (a live pprof source); in a dump it is the
		// program's listener, idle until a client comes.
		return AsidePlumbing
	case source == model.GoStack && model.ParseGoWait(g.State).OnCPU:
		// runtime.Stack(buf, true) stops the world: the one goroutine it
		// shows running is its caller, writing this dump.
		return AsideDumper
	case crashing(g, source), testAlarm(g):
		return AsideDumper
	}
	return AsideNone
}

// crashing reports the goroutine that writes a crash's dump as it dies: in
// a panic's, a fatal error's or a go test timeout's, the one running the
// panic (or throw), or testing's alarm that panics for the timeout. It is
// running because it prints the dump, not because the program works.
func crashing(g model.Goroutine, source model.Format) bool {
	if source != model.GoPanic && source != model.GoFatal && source != model.GoTestTimeout || !model.ParseGoWait(g.State).OnCPU {
		return false
	}
	return slices.ContainsFunc(g.Stack, func(f model.Frame) bool {
		switch f.Func {
		case "panic", "runtime.gopanic", "runtime.throw", "runtime.fatal", "runtime.fatalthrow", "runtime.fatalpanic", "testing.(*M).startAlarm.func1":
			return true
		}
		return false
	})
}

// testAlarm reports go test's alarm by its role, whatever its function is
// called (testing.(*M).startAlarm.func1, testing.startAlarm.func1, old
// Go's testing.func·008): a running goroutine a timer started (created by
// time.goFunc) with testing's frames and none of the program's. It runs
// because the test's time is up and it panics to print the dump: the
// harness's, never the program's work.
func testAlarm(g model.Goroutine) bool {
	return model.ParseGoWait(g.State).OnCPU && g.CreatedBy != nil && g.CreatedBy.Func == "time.goFunc" &&
		UserFrame(g.Stack) < 0 && slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return strings.HasPrefix(f.Func, "testing.") })
}

// RuntimeGoroutine reports a goroutine the runtime started for itself
// (see model.RuntimeGoroutine).
func RuntimeGoroutine(g model.Goroutine) bool { return model.RuntimeGoroutine(g.Stack, g.CreatedBy) }

// observer reports a goroutine that is hangdoc's own look at the process:
// the pprof handler writing this very profile.
func observer(stack []model.Frame) bool {
	return slices.ContainsFunc(stack, func(f model.Frame) bool {
		return strings.HasPrefix(f.Func, "net/http/pprof.") || strings.HasPrefix(f.Func, "runtime/pprof.writeGoroutine")
	})
}

// plumbing reports a goroutine of an HTTP server's own machinery, with
// none of the program's code inside it: the background read of a
// connection (this profile's own request, under pprof), the accept loop.
func plumbing(stack []model.Frame) bool {
	u := UserFrame(stack)
	if u < 0 && slices.ContainsFunc(stack, func(f model.Frame) bool {
		return strings.HasPrefix(f.Func, "net/http.(*connReader).")
	}) {
		return true
	}
	// A connection's goroutine between requests — reading the next one,
	// finishing the last one's response — runs no handler: under pprof
	// the request is hangdoc's own (the index it probes, the profile it
	// fetched), caught in flight.
	if u < 0 && slices.ContainsFunc(stack, func(f model.Frame) bool { return f.Func == "net/http.(*conn).serve" }) &&
		!slices.ContainsFunc(stack, func(f model.Frame) bool { return strings.HasSuffix(f.Func, ".ServeHTTP") }) {
		return true
	}
	// An HTTP server's accept loop: it moves whenever a client connects,
	// and under pprof the client is hangdoc.
	return acceptLoop(stack)
}

// acceptLoop reports an HTTP server's accept loop: a goroutine in
// Server.Serve with none of the program's code inside it.
func acceptLoop(stack []model.Frame) bool {
	serve := slices.IndexFunc(stack, func(f model.Frame) bool { return f.Func == "net/http.(*Server).Serve" })
	u := UserFrame(stack)
	return serve >= 0 && (u < 0 || u > serve)
}
