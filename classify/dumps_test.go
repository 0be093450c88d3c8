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

// pyDump is a sample of one Python thread read from a dump.
func pyDump(i int, source model.Format, py *model.PythonThread, stack ...model.Frame) model.Sample {
	return model.Sample{Time: time.Date(2026, 12, 1, 7, 0, i, 0, time.UTC), PID: 7, StackSource: source, Threads: []model.Thread{{
		TID: 7, Name: "t", Stack: stack, Syscall: model.Syscall{Unknown: true, Nr: -1}, Python: py,
	}}}
}

// TestDumpThreads: what a dump can say of a Python thread. py-spy's active
// flag is evidence where py-spy read the OS thread (ActiveRead); +gil is;
// the line a thread stands at says whether it waits in a call (time.sleep)
// or runs Python that calls nothing; py-spy --native names the C function.
func TestDumpThreads(t *testing.T) {
	spin := model.Frame{Func: "spin", File: "/app/busy.py", Line: 3}
	sleep := model.Frame{Func: "poll_file", File: "/app/busy.py", Line: 7}
	other := model.Frame{Func: "compute", File: "/app/busy.py", Line: 9}
	sources := map[string][]string{"/app/busy.py": {
		"def spin():", "    n = 0", "    while not state['ready']:  # time.sleep() is not called", "        n += 1",
		"def poll_file():", "    while True:", "        time.sleep(0.5)", "def compute():", "        x = helper(y)",
	}}
	active := &model.PythonThread{Active: true, ActiveRead: true}
	idle := &model.PythonThread{ActiveRead: true}
	guessed := &model.PythonThread{Active: true} // 3.8-3.10 --nonblocking: a default
	gil := &model.PythonThread{Active: true, OwnsGIL: true}
	tests := []struct {
		name    string
		samples []model.Sample
		class   classify.Class
		rule    classify.WhyRule
		kind    model.WaitKind
	}{
		{"one dump, py-spy saw it active", []model.Sample{pyDump(0, model.FormatPySpyText, active, other)}, classify.ClassWorking, classify.WhyDumpRunning, model.WaitNone},
		{"two identical dumps, active in both", []model.Sample{pyDump(0, model.FormatPySpyText, active, other), pyDump(1, model.FormatPySpyText, active, other)}, classify.ClassSpinning, classify.WhyDumpSpins, model.WaitNone},
		{"active but guessed is no evidence", []model.Sample{pyDump(0, model.FormatPySpyText, guessed, other)}, classify.ClassBlocked, classify.WhyBlockedOnce, model.WaitPython},
		{"+gil is evidence even guessed", []model.Sample{pyDump(0, model.FormatPySpyText, gil, other)}, classify.ClassWorking, classify.WhyDumpRunning, model.WaitNone},
		{"idle in time.sleep", []model.Sample{pyDump(0, model.FormatPySpyText, idle, sleep)}, classify.ClassIdle, classify.WhyDumpWaitsIn, model.WaitSleep},
		{"active at a time.sleep line is still the sleep", []model.Sample{pyDump(0, model.FormatPySpyText, active, sleep)}, classify.ClassIdle, classify.WhyDumpWaitsIn, model.WaitSleep},
		{"idle in an unknown call", []model.Sample{pyDump(0, model.FormatPySpyText, idle, other)}, classify.ClassBlocked, classify.WhyDumpOffCPU, model.WaitPython},
		{"faulthandler at a line that calls nothing", []model.Sample{pyDump(0, model.FormatFaulthandler, &model.PythonThread{}, spin)}, classify.ClassWorking, classify.WhyDumpRunning, model.WaitNone},
		{"faulthandler, the same pure line twice", []model.Sample{pyDump(0, model.FormatFaulthandler, &model.PythonThread{}, spin), pyDump(1, model.FormatFaulthandler, &model.PythonThread{}, spin)}, classify.ClassSpinning, classify.WhyDumpSpins, model.WaitNone},
		{"--native names the C function", []model.Sample{pyDump(0, model.FormatPySpyText, idle, model.Frame{Func: "clock_nanosleep", File: "libc.so.6"}, model.Frame{Func: "time_sleep", File: "libpython3.12.so.1.0"}, other)}, classify.ClassIdle, classify.WhyDumpWaitsIn, model.WaitSleep},
		{"the stack moved between dumps", []model.Sample{pyDump(0, model.FormatFaulthandler, &model.PythonThread{}, spin), pyDump(1, model.FormatFaulthandler, &model.PythonThread{}, other)}, classify.ClassWorking, classify.WhyStackMoved, model.WaitNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Classify(tc.samples, World{Sources: sources}, classify.DefaultOptions())
			th := d.Threads[0]
			if th.Class != tc.class || th.Why.Rule != tc.rule || th.Wait != tc.kind {
				t.Errorf("class %s, rule %d, wait %s (%s); want %s, %d, %s", th.Class, th.Why.Rule, th.Wait, d.R.Threads[0].Why, tc.class, tc.rule, tc.kind)
			}
			if th.CPU.Known {
				t.Errorf("CPU known for a thread read from a dump")
			}
		})
	}
}

// TestCrashDumps: the goroutine that writes a crash's dump (the panicking
// one, testing's timeout alarm) is running because it prints, not because
// the program works; synctest's bubble deadlock is the runtime saying so.
func TestCrashDumps(t *testing.T) {
	alarm := gr(22, "running", []model.Frame{{Func: "testing.(*M).startAlarm.func1", File: "/go/src/testing/testing.go", Line: 2802}})
	waiter := gr(20, "sync.Mutex.Lock", lockStack)
	d := Classify([]model.Sample{dumpSample(0, model.GoTestTimeout, alarm, waiter)}, World{}, classify.DefaultOptions())
	if d.Verdict != classify.Blocked || d.Goroutines[1].Aside != classify.AsideDumper {
		t.Errorf("test timeout: verdict %s (%s), alarm aside %d; want blocked, the alarm the dumper", d.Verdict, d.Summary, d.Goroutines[1].Aside)
	}
	panicking := gr(18, "running", []model.Frame{
		{Func: "testing.tRunner.func1.2", File: "/go/src/testing/testing.go", Line: 1974},
		{Func: "panic", File: "/go/src/runtime/panic.go", Line: 860},
		{Func: "internal/synctest.Run", File: "/go/src/runtime/synctest.go", Line: 251},
	})
	durable := gr(21, "chan receive (durable)", []model.Frame{{Func: "main.serve", File: "/src/x_test.go", Line: 9}})
	s := dumpSample(0, model.GoPanic, panicking, durable)
	s.Message = "deadlock: all goroutines in bubble are blocked [recovered, repanicked]"
	d = Classify([]model.Sample{s}, World{}, classify.DefaultOptions())
	if d.Verdict != classify.Deadlock || d.Confidence != classify.High {
		t.Errorf("synctest bubble: %s (%s) %s, want a deadlock, high", d.Verdict, d.Confidence, d.Summary)
	}
}
