package classify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
)

// crowd gives the samples a machine of 2 CPUs whose load average is load
// and whose CPU pressure is pressure percent.
func crowd(samples []model.Sample, load float64, pressure uint64) model.Recording {
	for i := range samples {
		n := uint64(i)
		samples[i].Machine = &model.Machine{BusyTicks: 100 * n, TotalTicks: 100 * n, Load1: load,
			Pressure: &model.Pressure{CPUUS: pressure * 10000 * n}}
	}
	return model.Recording{Samples: samples, Host: model.Host{CPUs: 2}}
}

// A loop on a crowded machine gets what the machine gives any runnable
// task: judged against that share, not a whole core, it spins, and the
// report says it wants a CPU it does not get (issue 18 item 8).
func TestSpinnerOnACrowdedMachine(t *testing.T) {
	spinner := th{tid: 1, name: "spin", state: "R", cpu: 110 * time.Millisecond, call: running}
	for _, tt := range []struct {
		name     string
		load     float64
		pressure uint64
		want     classify.Class
	}{
		{"load 18 on 2 CPUs, pressure 99%", 18, 99, classify.ClassSpinning},
		{"the load average lags: pressure says the machine is free", 18, 5, classify.ClassWorking},
		{"a quiet machine", 0.3, 0, classify.ClassWorking},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := crowd(steady(3, nil, spinner), tt.load, tt.pressure)
			d := classify.Classify(rec, classify.DefaultOptions())
			a := d.Threads[0]
			if a.Class != tt.want {
				t.Fatalf("class %s (%+v), want %s", a.Class, a.Why, tt.want)
			}
			r := report.New(rec, d)
			says := strings.Contains(r.Threads[0].Why, "wants a CPU it does not get")
			if says != (tt.want == classify.ClassSpinning) {
				t.Errorf("why %q: says it wants a CPU it does not get: %v", r.Threads[0].Why, says)
			}
		})
	}
}

// A running goroutine read from memory has no stack: its saved one is
// stale while it runs. Unknown is no change, no "?" in the report, and
// no sign of one loop when its thread sleeps and wakes all the run.
func TestGoroutineWithNoStackWhileItRuns(t *testing.T) {
	loop := []model.Frame{{Func: "main.spin", File: "/src/main.go", Line: 12}, {Func: "main.main", File: "/src/main.go", Line: 30}}
	holder := func(i int) []model.Goroutine {
		g := model.Goroutine{ID: 6, State: "running", Thread: 2}
		if i == 1 {
			// Preempted at one sample: its saved stack is current.
			g.State, g.Stack = "runnable", loop
		}
		return []model.Goroutine{g}
	}
	stackless := func(int) []model.Goroutine {
		return []model.Goroutine{{ID: 6, State: "running", Thread: 2}}
	}
	pinned := model.Thread{TID: 2, Name: "spin", State: model.StateRunning, CPUTime: time.Duration(0.95 * float64(time.Second)), Syscall: model.Syscall{Running: true, Nr: -1}}
	waking := pinned
	waking.CPUTime = 300 * time.Millisecond
	for _, tt := range []struct {
		name   string
		thread model.Thread
		vol    uint64 // per second
		gs     func(int) []model.Goroutine
		want   classify.Class
	}{
		{"a loop caught once preempted", pinned, 0, holder, classify.ClassSpinning},
		{"never a stack, its thread pinned", pinned, 0, stackless, classify.ClassSpinning},
		{"never a stack, its thread sleeps a thousand times a second", waking, 1000, stackless, classify.ClassWorking},
	} {
		t.Run(tt.name, func(t *testing.T) {
			samples := goSamples(3, []model.Thread{tt.thread}, tt.gs)
			for i := range samples {
				samples[i].Threads[0].Voluntary = tt.vol * uint64(i)
			}
			rec := model.Recording{Samples: samples}
			d := classify.Classify(rec, classify.DefaultOptions())
			g := d.Goroutines[0]
			if g.Class != tt.want || g.Moved {
				t.Errorf("class %s (moved %v, %+v), want %s, not moved", g.Class, g.Moved, g.Why, tt.want)
			}
			r := report.New(rec, d)
			if strings.Contains(r.Summary, " ?") || strings.Contains(r.Summary, "in ?") {
				t.Errorf("summary %q has a ? for the stack it could not read", r.Summary)
			}
		})
	}
}

// On a crowded machine every task waits on a run queue: a thread that
// hardly ran had no chance to sleep, so its lack of switches shows no
// loop (the C working victim at load 30: 0% of a core, 97% waiting for
// one, read as spinning).
func TestRunQueueAloneIsNoLoopOnACrowdedMachine(t *testing.T) {
	starved := run(nil,
		[]th{{tid: 1, name: "cruncher", state: "R", cpu: 0, call: running, delay: 1}},
		[]th{{tid: 1, name: "cruncher", state: "R", cpu: 0, call: running, delay: 970 * time.Millisecond}},
	)
	rec := crowd(starved, 30, 99)
	d := classify.Classify(rec, classify.DefaultOptions())
	if c := d.Threads[0].Class; c == classify.ClassSpinning {
		t.Fatalf("class %s (%+v): a thread that never ran is no proven loop", c, d.Threads[0].Why)
	}
}
