package classify

import (
	"math"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// What limits the CPU the target gets: its cgroup's quota, read at the
// first and last samples that have it, and the machine's load. A thread
// that wants a core and waits for one is spinning on an idle machine,
// starved under a quota that throttles it, and slowed on a busy machine.

// throttle is what the target's cgroup quota did over the run; nil when no
// quota limits it or fewer than two samples read it.
func throttle(samples []model.Sample, target model.Target, host model.Host) *Throttle {
	var first, last *model.Cgroup
	var t0, t1 int
	alone := true
	for i := range samples {
		c := samples[i].Cgroup
		if c == nil || c.Limited == "" || c.PeriodUS <= 0 {
			continue
		}
		if first == nil || c.Limited != first.Limited {
			first, t0, alone = c, i, true
		}
		last, t1 = c, i
		alone = alone && c.Alone
	}
	if first == nil || last == first || last.Periods < first.Periods || last.Throttled < first.Throttled {
		return nil
	}
	t := &Throttle{
		Cgroup: last.Limited, Version: last.Version,
		QuotaCores: float64(last.QuotaUS) / float64(last.PeriodUS),
		Periods:    last.Periods - first.Periods, Throttled: last.Throttled - first.Throttled,
		PressurePercent: -1, Alone: alone,
	}
	if last.ThrottledUS >= first.ThrottledUS {
		t.ThrottledSeconds = float64(last.ThrottledUS-first.ThrottledUS) / 1e6
	}
	if t.Periods > 0 {
		t.Percent = percent(float64(t.Throttled) / float64(t.Periods))
	}
	elapsed := samples[t1].Time.Sub(samples[t0].Time).Microseconds()
	if p0, p1 := first.Pressure, last.Pressure; p0 != nil && p1 != nil && elapsed > 0 && p1.CPUUS >= p0.CPUUS {
		t.PressurePercent = percent(float64(p1.CPUUS-p0.CPUUS) / float64(elapsed))
	}
	if target.Runtime == model.RuntimeGo {
		t.GoMaxProcs, t.GoMaxProcsFrom = goMaxProcs(target, host, t.QuotaCores)
	}
	return t
}

// goMaxProcs is a Go program's GOMAXPROCS as far as its environment and
// version tell: the GOMAXPROCS variable, else the default — the CPU count
// before Go 1.25, since then the quota rounded up, at least 2, at most
// the CPU count.
func goMaxProcs(target model.Target, host model.Host, quota float64) (int, string) {
	if n, err := strconv.Atoi(target.GoMaxProcsEnv); err == nil && n > 0 {
		return n, "GOMAXPROCS"
	}
	if host.CPUs <= 0 {
		return 0, ""
	}
	minor := 0
	if v, ok := strings.CutPrefix(target.RuntimeVersion, "go1."); ok {
		v, _, _ = strings.Cut(v, ".")
		minor, _ = strconv.Atoi(v)
	}
	if minor == 0 {
		return 0, ""
	}
	if minor < 25 {
		return host.CPUs, "default"
	}
	return min(host.CPUs, max(2, int(math.Ceil(quota)))), "default"
}

// machineLoad is how busy the machine was over the run; nil when no two
// samples read it.
func machineLoad(samples []model.Sample, host model.Host) *MachineLoad {
	var first, last *model.Machine
	var t0, t1 int
	for i := range samples {
		if m := samples[i].Machine; m != nil {
			if first == nil {
				first, t0 = m, i
			}
			last, t1 = m, i
		}
	}
	if first == nil || last == first || last.TotalTicks <= first.TotalTicks || last.BusyTicks < first.BusyTicks {
		return nil
	}
	m := &MachineLoad{BusyPercent: percent(float64(last.BusyTicks-first.BusyTicks) / float64(last.TotalTicks-first.TotalTicks)),
		Load1: last.Load1, CPUs: host.CPUs, PressurePercent: -1}
	elapsed := samples[t1].Time.Sub(samples[t0].Time).Microseconds()
	if p0, p1 := first.Pressure, last.Pressure; p0 != nil && p1 != nil && elapsed > 0 && p1.CPUUS >= p0.CPUUS {
		m.PressurePercent = percent(float64(p1.CPUUS-p0.CPUUS) / float64(elapsed))
	}
	return m
}

// wantsMore reports an actor that waited for a CPU a good share of the
// time it could have run.
func wantsMore(a *Actor) bool { return a.CPU.RunqueuePercent >= 20 }

// wantsCPU reports a process with a thread that spins, or whose threads
// wait for a CPU a good share of the time between them (a Go program's
// work moves between its threads, each waiting for a part of the time
// its cgroup's quota keeps them all off a CPU), or that used nearly all
// its quota: a throttled process's threads need not show the wait at all
// (under cgroup v1 a throttled Go program's threads read parked in its
// scheduler's futex, with no run-queue delay), or that was alone under a
// quota that throttled it: a period is throttled only when the quota ran
// out with a task still runnable. The share of the quota used is no proof
// by itself: on several CPUs each takes its slice of the quota, and a
// process can be throttled on one while the slice another took goes
// unused (a Go program on 2 CPUs under 0.05 cores used 0.02 of them while
// throttled in every period, in a CI run).
func (p *proc) wantsCPU() bool {
	waited := 0.0
	for i := range p.threads {
		t := &p.threads[i]
		if t.Class == ClassSpinning || wantsMore(t) {
			return true
		}
		waited += t.CPU.RunqueuePercent
	}
	if p.throttle.Significant() && p.throttle.Alone {
		return true
	}
	return waited >= 20 || p.throttle != nil && p.throttle.QuotaCores > 0 && processCPU(p)/100 >= quotaUsed*p.throttle.QuotaCores
}

// quotaUsed is the share of its CPU quota a throttled process must use
// for its throttling to say it wants more.
const quotaUsed = 0.8
