package classify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// verdict decides the process-level answer, in order of what an on-call
// engineer must hear first: a cycle, a lock holder that spins, a lock holder
// that is stuck, a spinning thread, work, a blocked thread, idleness.
//
// g is the wait-for graph across processes, nil when classifying a peer.
func (s *scene) verdict(d *Diagnosis, byTID map[int]*Thread, g *graph) {
	samples := s.samples
	byClass := map[Class][]*Thread{}
	for i := range d.Threads {
		t := &d.Threads[i]
		byClass[t.Class] = append(byClass[t.Class], t)
	}
	d.Evidence = append(d.Evidence, runEvidence(samples, d.Threads))

	// The lock whose holder matters most: the one with the most waiters.
	var held *Lock
	for i := range d.Locks {
		l := &d.Locks[i]
		if l.Holder != nil && byTID[l.Holder.TID] != nil && (held == nil || len(l.Waiters) > len(held.Waiters)) {
			held = l
		}
	}
	var holder *Thread
	if held != nil {
		holder = byTID[held.Holder.TID]
	}

	// A cycle makes the target deadlocked only if the target is in it.
	var cycle []Ref
	for _, c := range d.Cycles {
		if slices.ContainsFunc(c, func(r Ref) bool { return r.PID == s.pid }) {
			cycle = c
			break
		}
	}
	crossProcess := cycle != nil && slices.ContainsFunc(cycle, func(r Ref) bool { return r.PID != s.pid })

	switch {
	case crossProcess && g != nil:
		d.Verdict, d.Confidence = Deadlock, High
		d.Summary, d.Hint = g.crossDeadlock(cycle)
	case cycle != nil:
		d.Verdict, d.Confidence = Deadlock, High
		d.Summary = deadlockSummary(d, byTID, cycle)
		d.Hint = "Threads take the same locks in opposite orders: fix one global lock order (or try-lock and back off); only a restart frees these threads."
		if len(cycle) == 1 {
			d.Hint = "A thread locks a non-recursive mutex it already holds: it can never get it. Unlock before relocking, or restructure the call path; only a restart frees it."
		}
	case holder != nil && holder.Class == ClassSpinning:
		d.Verdict, d.Confidence = Spinning, High
		d.Summary = fmt.Sprintf("%s spins (%s) while holding %s %s; %s for it",
			threadName(holder), cpuText(holder), held.Kind, held.Address, plural(len(held.Waiters), "thread waits", "threads wait"))
		d.Hint = "One thread spins while holding the lock the others want: look for a loop whose exit condition never becomes true in the code that runs under this lock. Take two stacks of the holder a second apart (gdb -p PID -batch -ex 'thread apply all bt') to see the loop."
	case holder != nil && holder.Class == ClassBlocked:
		d.Verdict, d.Confidence = Blocked, High
		kind, res := s.kind(holder.TID)
		what := kindText[kind]
		if holder.Syscall != nil {
			what = "blocked in " + holder.Syscall.Text
		}
		if res != "" && !strings.HasPrefix(res, "futex:") {
			what += " on " + res
		}
		d.Summary = fmt.Sprintf("%s holds %s %s and is %s; %s for the lock%s",
			threadName(holder), held.Kind, held.Address, what, plural(len(held.Waiters), "thread waits", "threads wait"), g.beyond(holder.TID))
		d.Hint = holderHint(kind, holder)
	case len(byClass[ClassSpinning]) > 0:
		sp := byClass[ClassSpinning]
		d.Verdict, d.Confidence = Spinning, Medium
		d.Summary = fmt.Sprintf("%s (%s) with no syscall wait and no voluntary switch in any sample", spinners(sp), cpuText(sp[0]))
		d.Hint = "A core is pinned and nothing moves: a tight loop, or a long computation or C call the kernel cannot see into. Two stacks a second apart tell which (gdb, py-spy dump, or a goroutine dump)."
		if hasStacks(sp) {
			d.Confidence = High
		}
	case len(byClass[ClassWorking]) > 0:
		w := byClass[ClassWorking]
		total := 0.0
		for _, t := range w {
			total += t.CPUPercent
		}
		d.Verdict, d.Confidence = Working, Medium
		d.Summary = fmt.Sprintf("%s working (%.0f%% CPU in all) and the waits move: slow, not stopped", plural(len(w), "thread is", "threads are"), total)
		d.Hint = "It is making progress. Look for what makes it slow (perf top -p PID, a profiler) rather than for a hang."
	case len(byClass[ClassBlocked]) > 0:
		b := byClass[ClassBlocked]
		d.Verdict, d.Confidence = Blocked, High
		kinds := s.kindCounts(b)
		if len(b) == 1 {
			d.Summary = fmt.Sprintf("%s is blocked, %s, for the whole run; no thread uses CPU%s", threadName(b[0]), s.blockedText(b[0]), g.beyond(b[0].TID))
		} else {
			d.Summary = fmt.Sprintf("%s blocked (%s); no thread uses CPU", plural(len(b), "thread is", "threads are"), kinds)
		}
		d.Hint = s.blockedHint(b)
	default:
		idle := byClass[ClassIdle]
		d.Verdict, d.Confidence = Idle, Medium
		who := fmt.Sprintf("all %d threads are", len(idle))
		if len(idle) == 1 {
			who = "its only thread is"
		}
		d.Summary = fmt.Sprintf("%s parked waiting for work (%s) with no CPU: whatever feeds the process stopped", who, s.kindCounts(idle))
		d.Hint = "Nothing here is stuck on anything of its own: look upstream, at whatever should hand it work (a producer, a connection, a timer) and why it stopped."
		if pool := idlePool(d); pool != nil {
			d.Summary = fmt.Sprintf("all %d workers (%s) wait in queue.get() and no thread is left that could feed the queue: whatever feeds the pool stopped — the feeder thread is gone", len(pool), namesOf(pool))
			d.Hint = "The thread that put work on the queue died or returned: look for the exception that ended it (set threading.excepthook, check the logs), and make a feeder's failure stop the pool loudly."
			d.Confidence = High
		} else if s.allKind(idle, "sleep") {
			d.Summary = fmt.Sprintf("%s sleeping (nanosleep) with no CPU: a loop that polls, retries or backs off", who)
			d.Hint = "It waits for time, not for a resource: find what the loop polls for (a file, a flag, a service) and why it never comes."
		}
		if len(idle) == 0 {
			d.Summary = "no live thread was seen: the process exited"
			d.Confidence = Low
		}
	}
	if len(samples) < 2 {
		d.Confidence = Low
		d.Evidence = append(d.Evidence, "only one sample: it cannot tell stopped from slow, and CPU use is unknown")
	}
	d.Evidence = append(d.Evidence, threadEvidence(d, byTID, holder)...)
	for _, l := range d.Locks {
		d.Evidence = append(d.Evidence, fmt.Sprintf("%s: %s on it; %s", l.ID, plural(len(l.Waiters), "thread waits", "threads wait"), l.Basis))
	}
	d.Evidence = append(d.Evidence, memoryEvidence(d.Memory, d.Verdict))
	for _, t := range d.Threads {
		if t.Python != nil && t.Python.OwnsGIL {
			d.Evidence = append(d.Evidence, fmt.Sprintf("tid %d (%s) holds the GIL at %s", t.TID, t.Name, t.Where()))
		}
	}
	for _, p := range d.Processes {
		d.Evidence = append(d.Evidence, fmt.Sprintf("pid %d (%s), %d wait(s) away: %s", p.PID, shortCmd(p.Cmdline), p.Depth, p.State))
	}
	if n := len(d.Orphans); n > 0 {
		var pids []string
		for _, o := range d.Orphans {
			pids = append(pids, fmt.Sprintf("%d (%s)", o.PID, o.Command))
		}
		d.Evidence = append(d.Evidence, fmt.Sprintf("%s left behind in its process group, reparented when their parent exited: %s",
			plural(n, "process", "processes"), strings.Join(pids, ", ")))
	}
}

func deadlockSummary(d *Diagnosis, byTID map[int]*Thread, cycle []Ref) string {
	lockOf := map[int]Lock{}
	for _, l := range d.Locks {
		for _, w := range l.Waiters {
			lockOf[w.TID] = l
		}
	}
	waitOf := map[int]Wait{}
	for _, w := range d.Waits {
		waitOf[w.From.TID] = w
	}
	var parts []string
	for _, r := range cycle {
		if l, ok := lockOf[r.TID]; ok && l.Holder != nil {
			parts = append(parts, fmt.Sprintf("%s waits for %s %s held by %s", threadName(byTID[r.TID]), l.Kind, l.Address, threadName(byTID[l.Holder.TID])))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", threadName(byTID[r.TID]), waitOf[r.TID].Detail))
	}
	more := ""
	if len(d.Cycles) > 1 {
		more = fmt.Sprintf(" (and %d more cycles)", len(d.Cycles)-1)
	}
	return fmt.Sprintf("deadlock between %s: %s%s", plural(len(d.Cycles[0]), "thread", "threads"), strings.Join(parts, "; "), more)
}

func holderHint(kind string, holder *Thread) string {
	call := "a blocking call"
	if holder.Syscall != nil {
		call = holder.Syscall.Name + "()"
	}
	switch kind {
	case "pipe-write", "socket-write", "tty-write", "file-write":
		return fmt.Sprintf("One thread holds the lock the others want and is itself blocked in %s: never hold a lock across blocking I/O. Find who should drain %s and why it stopped.", call, orSomething(holder.FD, "the descriptor"))
	case "pipe-read", "socket-read", "stdin", "tty-read":
		return fmt.Sprintf("One thread holds the lock the others want and waits in %s for input that does not come: never hold a lock across blocking I/O, and put a timeout on the read.", call)
	case "child-exit":
		return "One thread holds the lock the others want while it waits for a child process: release the lock first, and look at the child."
	case "lock":
		return "The lock holder waits for another lock: a chain of locks. Follow the chain to its end."
	}
	return fmt.Sprintf("One thread holds the lock the others want and is itself %s: never hold a lock across a blocking call.", kindText[kind])
}

func (s *scene) blockedHint(b []*Thread) string {
	kinds := map[string]bool{}
	for _, t := range b {
		k, _ := s.kind(t.TID)
		kinds[k] = true
	}
	switch {
	case kinds["uninterruptible"]:
		return "A thread is in uninterruptible sleep: nothing in user space will move it, not even SIGKILL. Look at the device or filesystem it waits on (as root: cat /proc/PID/task/TID/stack)."
	case kinds["stopped"]:
		return "A thread is stopped by a signal or a tracer: send SIGCONT, or detach the debugger."
	case kinds["child-exit"]:
		return "It waits for a child process to exit: diagnose the child (hangdoc CHILD_PID); if the child writes to a pipe this process never reads, read while waiting (communicate())."
	case kinds["stdin"]:
		return "It waits for input on its standard input that nobody sends: run it with stdin from /dev/null (for git: GIT_TERMINAL_PROMPT=0)."
	case kinds["pipe-write"], kinds["socket-write"]:
		return "It is blocked writing because the other end does not drain: look at the reader, and put a timeout on the write."
	case kinds["lock"]:
		return "Threads wait on a lock whose holder is not recorded (not a glibc mutex): take stacks to see who holds it."
	}
	return "Blocked on the outside world: the fix is a timeout, not a lock change."
}

func (s *scene) allKind(ts []*Thread, kind string) bool {
	for _, t := range ts {
		if k, _ := s.kind(t.TID); k != kind {
			return false
		}
	}
	return len(ts) > 0
}

// namesOf lists thread names compactly: "worker-0…worker-7".
func namesOf(ts []*Thread) string {
	if len(ts) == 0 {
		return ""
	}
	if len(ts) > 2 {
		return ts[0].Name + "…" + ts[len(ts)-1].Name
	}
	return ts[0].Name + ", " + ts[len(ts)-1].Name
}

func spinners(sp []*Thread) string {
	if len(sp) == 1 {
		return threadName(sp[0]) + " spins"
	}
	return fmt.Sprintf("%d threads spin, %s first,", len(sp), threadName(sp[0]))
}

func hasStacks(ts []*Thread) bool {
	for _, t := range ts {
		if len(t.Stack) == 0 {
			return false
		}
	}
	return true
}

// kindCounts says what a set of threads waits for: "7 waiting for a lock, 1 writing to a full pipe".
func (s *scene) kindCounts(ts []*Thread) string {
	count := map[string]int{}
	var order []string
	for _, t := range ts {
		k, _ := s.kind(t.TID)
		if t.Waits != "" {
			k = "lock"
		}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return count[b] - count[a] })
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d %s", count[k], kindText[k]))
	}
	return strings.Join(parts, ", ")
}

func (s *scene) blockedText(t *Thread) string {
	k, res := s.kind(t.TID)
	text := kindText[k]
	if t.Syscall != nil {
		text += " in " + t.Syscall.Text
	}
	if res != "" {
		text += " on " + res
	}
	return text
}

func runEvidence(samples []model.Sample, threads []Thread) string {
	s := fmt.Sprintf("%s", plural(len(samples), "sample", "samples"))
	if len(samples) > 1 {
		s += fmt.Sprintf(" over %.1fs", samples[len(samples)-1].Time.Sub(samples[0].Time).Seconds())
	}
	s += fmt.Sprintf(", %s", plural(len(threads), "thread", "threads"))
	came, went := 0, 0
	if len(samples) > 1 {
		first := map[int]bool{}
		last := map[int]bool{}
		for _, t := range samples[0].Threads {
			first[t.TID] = !t.Exited
		}
		for _, t := range samples[len(samples)-1].Threads {
			last[t.TID] = !t.Exited
		}
		for _, t := range threads {
			if !first[t.TID] {
				came++
			}
			if !last[t.TID] {
				went++
			}
		}
	}
	if came+went == 0 {
		return s + ", none came or went"
	}
	return s + fmt.Sprintf(", %d appeared and %d exited during the run", came, went)
}

// threadEvidence gives a line for each thread that matters: holders,
// spinners, and the first few of each kind of blocked thread.
func threadEvidence(d *Diagnosis, byTID map[int]*Thread, holder *Thread) []string {
	var out []string
	seen := map[int]bool{}
	add := func(t *Thread) {
		if t == nil || seen[t.TID] {
			return
		}
		seen[t.TID] = true
		line := fmt.Sprintf("%s: %s; %.1f%% CPU", threadName(t), t.Why, t.CPUPercent)
		if t.State != "" {
			line += ", state " + t.State
		}
		if w := t.Where(); w != "" {
			line += ", at " + w
		}
		if t.Wchan != "" {
			line += ", wchan " + t.Wchan
		}
		if t.Syscall != nil {
			line += ", " + t.Syscall.Text
		}
		if t.FD != "" {
			line += " → " + t.FD
		}
		line += fmt.Sprintf(", %d voluntary switches", t.Voluntary)
		out = append(out, line)
	}
	for _, c := range d.Cycles {
		for _, r := range c {
			add(byTID[r.TID])
		}
	}
	add(holder)
	for i := range d.Threads {
		if d.Threads[i].Class == ClassSpinning {
			add(&d.Threads[i])
		}
	}
	perWait := map[string]int{}
	for i := range d.Threads {
		t := &d.Threads[i]
		key := string(t.Class) + t.Wchan + t.Waits
		if t.Syscall != nil {
			key += t.Syscall.Name
		}
		if (t.Class == ClassBlocked || t.Class == ClassWorking) && perWait[key] < 2 {
			perWait[key]++
			add(t)
		}
	}
	return out
}

func memoryEvidence(m Memory, v Verdict) string {
	if len(m.RSSBytes) == 0 || slices.Max(m.RSSBytes) == 0 {
		return "memory: not read"
	}
	first, last := m.RSSBytes[0], m.RSSBytes[len(m.RSSBytes)-1]
	switch m.Trend {
	case "flat":
		s := fmt.Sprintf("RSS flat at %s", Bytes(last))
		if v == Blocked || v == Deadlock || v == Idle || v == Spinning {
			s += ": flat memory with flat waits, a stall"
		}
		return s
	case "growing", "shrinking":
		return fmt.Sprintf("RSS %s from %s to %s during the run", m.Trend[:len(m.Trend)-3]+"s", Bytes(first), Bytes(last))
	}
	return fmt.Sprintf("RSS %s (one sample, no trend)", Bytes(last))
}

// Bytes prints a size the way people read it: 1.2 MiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func orSomething(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
