package classify

import (
	"fmt"
	"slices"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// history is one thread across the run: its readings in sample order.
type history struct {
	tid      int
	readings []model.Thread
	times    []time.Time
	paused   []bool // a stack source paused the process after this reading
	// frozen is how long a stack source kept the process stopped after
	// this reading (Delve): time in which no thread could run.
	frozen []time.Duration
}

func (h *history) last() model.Thread { return h.readings[len(h.readings)-1] }

// lastWaiting is the last reading that caught the thread off a CPU, or the
// last reading if none did.
func lastWaiting(readings []model.Thread) model.Thread {
	for i := len(readings) - 1; i >= 0; i-- {
		if readings[i].State != "R" {
			return readings[i]
		}
	}
	return readings[len(readings)-1]
}

// Classify reads samples of one process, oldest first, and the world around
// it, and says what it is doing. It needs at least one sample; two or more
// tell stopped from slow.
func Classify(samples []model.Sample, w World, opts Options) Diagnosis {
	d, sc, byTID := classifyOne(samples, opts)
	if sc == nil {
		return d
	}
	pythonLocks(sc.pid, &d, byTID, w.Sources)
	g := newGraph(samples, &d, byTID, w, opts)
	d.Cycles = g.cycles()
	d.Processes = g.processes()
	d.Orphans = g.orphans()
	g.chains()
	sc.verdict(&d, byTID, g)
	classifyGoroutines(sc.pid, samples, &d, byTID, g, opts)
	return d
}

// classifyOne classifies one process from its own samples: threads, locks
// and waits. The scene is nil when there are no samples.
func classifyOne(samples []model.Sample, opts Options) (Diagnosis, *scene, map[int]*Thread) {
	d := Diagnosis{
		Evidence:   []string{},
		Threads:    []Thread{},
		Locks:      []Lock{},
		Cycles:     [][]Ref{},
		Waits:      []Wait{},
		Memory:     memory(samples, opts),
		Processes:  []Process{},
		Orphans:    []Orphan{},
		Goroutines: []Goroutine{},
		Groups:     []Group{},
	}
	if len(samples) == 0 {
		d.Verdict, d.Confidence = Idle, Low
		d.Summary = "no samples were taken"
		return d, nil, nil
	}
	pid := samples[0].PID
	hist := histories(samples)
	last := samples[len(samples)-1]

	locks := findLocks(pid, last, hist)
	lockOf := map[int]*Lock{}
	for i := range locks {
		for _, w := range locks[i].Waiters {
			lockOf[w.TID] = &locks[i]
		}
	}
	sc := &scene{pid: pid, samples: samples, lockOf: lockOf, live: map[int]bool{}, waiting: map[int]model.Thread{}}
	for _, t := range last.Threads {
		sc.live[t.TID] = !t.Exited
	}
	for _, h := range hist {
		sc.waiting[h.tid] = lastWaiting(h.readings)
	}
	for _, h := range hist {
		d.Threads = append(d.Threads, sc.thread(h, opts))
	}
	byTID := map[int]*Thread{}
	for i := range d.Threads {
		byTID[d.Threads[i].TID] = &d.Threads[i]
	}
	for _, l := range locks {
		for _, w := range l.Waiters {
			byTID[w.TID].Waits = l.ID
		}
		if l.Holder != nil {
			if t := byTID[l.Holder.TID]; t != nil {
				t.Holds = append(t.Holds, l.ID)
			}
		}
	}
	d.Locks = locks
	for _, h := range hist {
		if w, ok := sc.wait(byTID[h.tid]); ok {
			d.Waits = append(d.Waits, w)
		}
	}
	return d, sc, byTID
}

// histories groups every thread's readings, in TID order. Readings of a
// thread that had exited are dropped: its absence is the data.
func histories(samples []model.Sample) []*history {
	byTID := map[int]*history{}
	var order []int
	for _, s := range samples {
		for _, t := range s.Threads {
			h := byTID[t.TID]
			if h == nil {
				h = &history{tid: t.TID}
				byTID[t.TID] = h
				order = append(order, t.TID)
			}
			if !t.Exited {
				h.readings = append(h.readings, t)
				h.times = append(h.times, s.Time)
				h.paused = append(h.paused, s.Paused)
				h.frozen = append(h.frozen, s.Frozen)
			}
		}
	}
	slices.Sort(order)
	var out []*history
	for _, tid := range order {
		if len(byTID[tid].readings) > 0 {
			out = append(out, byTID[tid])
		}
	}
	return out
}

// thread classifies one thread from its readings.
func (s *scene) thread(h *history, opts Options) Thread {
	first, last := h.readings[0], h.last()
	// Its wait is the last one seen: a parked thread caught on a CPU in the
	// last sample (a runtime's housekeeping) still waits where it was.
	waiting := lastWaiting(h.readings)
	t := Thread{
		TID:     h.tid,
		Name:    last.Name,
		State:   waiting.State,
		Wchan:   waiting.Wchan,
		Syscall: view(waiting.Syscall),
		FD:      waiting.FD,
		Seen:    len(h.readings),
		Holds:   []string{},
		Stack:   last.Stack,
		Python:  last.Python,
	}
	if last.Python != nil && last.Python.ThreadName != "" {
		// The OS name of a Python thread is the interpreter's (before 3.14).
		t.Name = last.Python.ThreadName
	}
	if t.Stack == nil {
		t.Stack = []model.Frame{}
	}
	t.Voluntary = last.Voluntary - first.Voluntary
	t.Involuntary = last.Involuntary - first.Involuntary
	// Switches a stack source's pauses caused are not the thread's own.
	pauses := uint64(0)
	for _, p := range h.paused[:len(h.paused)-1] {
		if p {
			pauses++
		}
	}
	own := t.Voluntary - min(t.Voluntary, pauses*opts.PauseSwitches)
	// CPU is shared out over the time the thread could run: the time a
	// stack source kept the process stopped is not idleness.
	elapsed := h.times[len(h.times)-1].Sub(h.times[0])
	for _, f := range h.frozen[:len(h.frozen)-1] {
		elapsed -= f
	}
	elapsed = max(elapsed, h.times[len(h.times)-1].Sub(h.times[0])/10)
	share := 0.0
	if elapsed > 0 {
		share = float64(last.CPUTime-first.CPUTime) / float64(elapsed)
		t.CPUPercent = percent(share)
	}
	// wanted adds the time it waited for a CPU: a spinning thread on a
	// crowded machine wants a core it does not always get.
	wanted := share
	if elapsed > 0 && first.RunDelay > 0 && last.RunDelay > first.RunDelay {
		wanted += float64(last.RunDelay-first.RunDelay) / float64(elapsed)
	}
	t.RunqueuePercent = percent(wanted - share)
	stackMoved := false
	for _, r := range h.readings[1:] {
		if signature(r) != signature(first) {
			t.Moved = true
		}
		if len(r.Stack) > 0 && len(first.Stack) > 0 && !sameStack(r.Stack, first.Stack) {
			stackMoved = true
		}
	}
	t.Moved = t.Moved || own > 0 || stackMoved
	one := len(h.readings) == 1

	kind, _ := s.waitKind(waiting)
	switch {
	case !s.live[h.tid]:
		// Gone before the last sample: it came and went (a reporter, a
		// short task) and says nothing about what the process is stuck on.
		t.Class, t.Why = ClassExited, fmt.Sprintf("exited during the run, after %d of the samples", t.Seen)
	case one && last.State == "R":
		t.Class, t.Why = ClassWorking, "on a CPU in the only sample it was seen in"
	case wanted >= opts.SpinCPU && !stackMoved && float64(own) <= opts.SpinSwitchesPerSecond*elapsed.Seconds():
		t.Class, t.Why = ClassSpinning, fmt.Sprintf("%s with no voluntary switch or syscall wait in %d samples", cpuText(&t), t.Seen)
		if len(last.Stack) > 0 {
			t.Why += " and the same stack in each"
		}
	case share >= opts.BusyCPU:
		t.Class, t.Why = ClassWorking, fmt.Sprintf("%.1f%% CPU", t.CPUPercent)
		if t.Moved {
			t.Why += ", and it moves"
		}
	case stackMoved:
		t.Class, t.Why = ClassWorking, "its stack changed between samples"
	case waiting.State == "R":
		t.Class, t.Why = ClassWorking, fmt.Sprintf("runnable in all %d samples, with little CPU", t.Seen)
	case idleKinds[kind]:
		t.Class, t.Why = ClassIdle, "parked: "+kindText[kind]
	case t.Moved:
		t.Class, t.Why = ClassWorking, fmt.Sprintf("%s, but got through %d times during the run: slow, not stopped", kindText[kind], own)
	case one:
		t.Class, t.Why = ClassBlocked, "waiting in the only sample it was seen in: "+kindText[kind]
	default:
		t.Class, t.Why = ClassBlocked, fmt.Sprintf("%s, unchanged in %d samples, no CPU", kindText[kind], t.Seen)
	}
	return t
}

// sameStack compares two stacks as a loop sees them: the innermost frame by
// function and file only, since a loop over two lines is caught on either.
func sameStack(a, b []model.Frame) bool {
	if len(a) != len(b) || len(a) == 0 {
		return len(a) == len(b)
	}
	if a[0].Func != b[0].Func || a[0].File != b[0].File {
		return false
	}
	return slices.Equal(a[1:], b[1:])
}

// signature is what must stay equal between samples for a thread to count
// as not moving: where it sleeps and the call it is in.
func signature(t model.Thread) string {
	if t.State == "R" {
		// On a CPU or preempted: the syscall file says "running" or "-1"
		// by chance of timing.
		return "R"
	}
	sc := t.Syscall
	return fmt.Sprintf("%s|%s|%v|%d|%x|%x|%x", t.State, t.Wchan, sc.Running, sc.Nr, sc.Args[0], sc.Args[1], sc.Args[2])
}

// memory reads the RSS of every sample and names its trend.
func memory(samples []model.Sample, opts Options) Memory {
	m := Memory{RSSBytes: []int64{}, Trend: "unknown"}
	for _, s := range samples {
		m.RSSBytes = append(m.RSSBytes, s.RSSBytes)
	}
	if len(m.RSSBytes) < 2 {
		return m
	}
	first, last := m.RSSBytes[0], m.RSSBytes[len(m.RSSBytes)-1]
	if slices.Max(m.RSSBytes) == 0 {
		return m // dumps from files: no memory was read
	}
	delta := last - first
	limit := max(opts.RSSGrowthBytes, int64(float64(first)*opts.RSSGrowth))
	switch {
	case delta > limit:
		m.Trend = "growing"
	case -delta > limit:
		m.Trend = "shrinking"
	default:
		m.Trend = "flat"
	}
	return m
}

// percent turns a share of a core into a percentage with one decimal.
func percent(share float64) float64 { return float64(int(share*1000+0.5)) / 10 }

// cpuText says how much of a core a thread used, and, when the machine was
// too busy to give it all it wanted, how long it waited for one.
func cpuText(t *Thread) string {
	if t.RunqueuePercent >= 5 {
		return fmt.Sprintf("%.0f%% of a core, and %.0f%% waiting for one (the machine is busy)", t.CPUPercent, t.RunqueuePercent)
	}
	return fmt.Sprintf("%.0f%% of a core", t.CPUPercent)
}

func threadName(t *Thread) string {
	if t == nil {
		return "?"
	}
	return fmt.Sprintf("tid %d (%s)", t.TID, t.Name)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
