package classify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// withMachine gives the samples machine readings whose CPUs are busy
// percent of the time between each.
func withMachine(samples []model.Sample, busy uint64) []model.Sample {
	for i := range samples {
		n := uint64(i) * 100
		samples[i].Machine = &model.Machine{BusyTicks: n * busy / 100, TotalTicks: n, Load1: 1}
	}
	return samples
}

// withQuota puts the samples in a cgroup with a quota of 0.05 cores that
// throttled throttled of every ten periods.
func withQuota(samples []model.Sample, throttled uint64) []model.Sample {
	for i := range samples {
		n := uint64(i)
		samples[i].Cgroup = &model.Cgroup{Path: "/svc", Limited: "/svc", Version: 2, QuotaUS: 5000, PeriodUS: 100000,
			Periods: 10 * n, Throttled: throttled * n, ThrottledUS: 95000 * throttled * n}
	}
	return samples
}

func TestStarved(t *testing.T) {
	spinner := func() []model.Sample {
		return run(nil,
			[]th{{tid: 1, name: "main", state: "R", cpu: 0, call: running, delay: 1}},
			[]th{{tid: 1, name: "main", state: "R", cpu: 50 * time.Millisecond, call: running, delay: 950 * time.Millisecond}},
		)
	}
	t.Run("a quota that throttles it: starved, not hung", func(t *testing.T) {
		d := Classify(withQuota(spinner(), 7), World{}, classify.DefaultOptions())
		if d.Verdict != classify.Working || d.Cause.Rule != classify.CauseStarved {
			t.Fatalf("verdict %s (%s), want working: starved", d.Verdict, d.Summary)
		}
		for _, s := range []string{"starved, not hung", "throttled in 70% of periods", "CPU quota of 0.05 cores", "/svc"} {
			if !strings.Contains(d.Summary, s) {
				t.Errorf("summary %q lacks %q", d.Summary, s)
			}
		}
		if d.R.CPU == nil || d.R.CPU.Throttled == nil || !d.R.CPU.Throttled.Starved || d.R.CPU.Throttled.Percent != 70 {
			t.Errorf("cpu block %+v", d.R.CPU)
		}
	})
	t.Run("its quota used up, no thread seen waiting for a CPU", func(t *testing.T) {
		// A Go program under cgroup v1, as the CI run read it: the
		// threads park in the scheduler's futex between slices, with no
		// run-queue delay, and between them use the whole quota.
		a := []model.Frame{{Func: "main.work", File: "/src/main.go", Line: 10}}
		b := []model.Frame{{Func: "main.work", File: "/src/main.go", Line: 12}}
		f1, f2 := futexWait(0xc000080148, 0), futexWait(0xc000100148, 0)
		worker := func() []model.Sample {
			return run(nil,
				[]th{{tid: 1, name: "w", state: "S", call: f1, wchan: "futex_do_wait", stack: a}, {tid: 2, name: "w", state: "S", call: f2, wchan: "futex_do_wait", stack: a}},
				[]th{{tid: 1, name: "w", state: "S", cpu: 25 * time.Millisecond, call: f2, wchan: "futex_do_wait", stack: b}, {tid: 2, name: "w", state: "S", cpu: 25 * time.Millisecond, call: f1, wchan: "futex_do_wait", stack: b}},
			)
		}
		if d := Classify(withQuota(worker(), 10), World{}, classify.DefaultOptions()); d.Cause.Rule != classify.CauseStarved {
			t.Errorf("verdict %s (%s), want working: starved", d.Verdict, d.Summary)
		}
		if d := Classify(worker(), World{}, classify.DefaultOptions()); d.Cause.Rule == classify.CauseStarved {
			t.Errorf("no quota, yet starved: %s", d.Summary)
		}
	})
	t.Run("alone under a quota that throttles every period, less than the quota used", func(t *testing.T) {
		// The CI run's Go program on 2 CPUs: each CPU takes its slice of
		// the 0.05 cores, one is throttled while the other's goes unused,
		// and the process uses 0.02 of them, throttled in every period.
		a := []model.Frame{{Func: "main.work", File: "/src/main.go", Line: 10}}
		b := []model.Frame{{Func: "main.work", File: "/src/main.go", Line: 12}}
		f1, f2 := futexWait(0xc000080148, 0), futexWait(0xc000100148, 0)
		worker := func(alone bool) []model.Sample {
			s := withQuota(run(nil,
				[]th{{tid: 1, name: "w", state: "S", call: f1, wchan: "futex_do_wait", stack: a}, {tid: 2, name: "w", state: "S", call: f2, wchan: "futex_do_wait", stack: a}},
				[]th{{tid: 1, name: "w", state: "S", cpu: 8 * time.Millisecond, call: f2, wchan: "futex_do_wait", stack: b}, {tid: 2, name: "w", state: "S", cpu: 8 * time.Millisecond, call: f1, wchan: "futex_do_wait", stack: b}},
			), 10)
			for i := range s {
				s[i].Cgroup.Alone = alone
			}
			return s
		}
		if d := Classify(worker(true), World{}, classify.DefaultOptions()); d.Cause.Rule != classify.CauseStarved || !strings.Contains(strings.Join(d.Evidence, "\n"), "the only process in it") {
			t.Errorf("alone: verdict %s (%s), want working: starved, and evidence that says alone\n%s", d.Verdict, d.Summary, strings.Join(d.Evidence, "\n"))
		}
		if d := Classify(worker(false), World{}, classify.DefaultOptions()); d.Cause.Rule == classify.CauseStarved {
			t.Errorf("sharing its cgroup, 0.016 of 0.05 cores used, yet starved: %s", d.Summary)
		}
	})
	t.Run("a quota that seldom throttles it: still spinning", func(t *testing.T) {
		d := Classify(withQuota(spinner(), 1), World{}, classify.DefaultOptions())
		if d.Verdict != classify.Spinning || strings.Contains(d.Summary, "machine is busy") {
			t.Errorf("verdict %s (%s), want spinning, and no busy machine", d.Verdict, d.Summary)
		}
	})
	t.Run("an idle machine is not called busy", func(t *testing.T) {
		d := Classify(withMachine(spinner(), 30), World{}, classify.DefaultOptions())
		if strings.Contains(d.Summary, "the machine is busy") || !strings.Contains(d.Summary, "machine's CPUs were 30% busy") {
			t.Errorf("summary %q", d.Summary)
		}
		if d.R.CPU == nil || d.R.CPU.Machine == nil || d.R.CPU.Machine.Busy {
			t.Errorf("cpu block %+v", d.R.CPU)
		}
	})
	t.Run("a Go program's GOMAXPROCS above its quota", func(t *testing.T) {
		rec := model.Recording{Samples: withQuota(spinner(), 7), Target: model.Target{Runtime: model.RuntimeGo, RuntimeVersion: "go1.24.3"}, Host: model.Host{CPUs: 8}}
		d := classify.Classify(rec, classify.DefaultOptions())
		if d.Throttle == nil || d.Throttle.GoMaxProcs != 8 || d.Throttle.GoMaxProcsFrom != "default" {
			t.Errorf("throttle %+v: Go 1.24 defaults to the CPU count", d.Throttle)
		}
		rec.Target.RuntimeVersion = "go1.26.0"
		if d := classify.Classify(rec, classify.DefaultOptions()); d.Throttle.GoMaxProcs != 2 {
			t.Errorf("Go 1.26 under 0.05 cores: GOMAXPROCS %d, want 2 (the quota rounded up, at least 2)", d.Throttle.GoMaxProcs)
		}
		rec.Target.GoMaxProcsEnv = "4"
		d = classify.Classify(rec, classify.DefaultOptions())
		if d.Throttle.GoMaxProcs != 4 || d.Throttle.GoMaxProcsFrom != "GOMAXPROCS" {
			t.Errorf("GOMAXPROCS=4 in its environment: %+v", d.Throttle)
		}
		found := false
		for _, f := range d.Evidence {
			found = found || f.Kind == classify.FactGoMaxProcs
		}
		if !found {
			t.Errorf("no GOMAXPROCS fact in %+v", d.Evidence)
		}
	})
}
