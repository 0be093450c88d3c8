package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// words turns one diagnosis into words: it knows the recording (the
// resources, the family of processes) and every actor of every process.
type words struct {
	rec    *model.Recording
	d      *classify.Diagnosis
	actors map[classify.Ref]*classify.Actor
	procs  map[int]*classify.Process
	waitOf map[classify.Ref]*classify.Wait
	// labels are the goroutines' pprof labels, by id, from the last
	// sample that saw each; nil until asked for.
	labels map[int64]map[string]string
	// twins finds a goroutine's actor by a twin's id; nil until asked for.
	twins map[int64]*classify.Actor
	// lockIdx finds a lock by id; nil until asked for.
	lockIdx map[string]*classify.Lock
}

// actor is the actor a reference names: a thread, a goroutine, or a
// goroutine's twin (the refs in locks, causes and waits name each
// goroutine; a twin is its actor).
func (w *words) actor(r classify.Ref) *classify.Actor {
	if a := w.actors[r]; a != nil || r.Goroutine == 0 {
		return a
	}
	if w.twins == nil {
		w.twins = map[int64]*classify.Actor{}
		for i := range w.d.Goroutines {
			a := &w.d.Goroutines[i]
			for _, id := range a.Twins {
				w.twins[id] = a
			}
		}
	}
	if a := w.twins[r.Goroutine]; a != nil && a.Ref.PID == r.PID {
		return a
	}
	return nil
}

// labelsOf is a goroutine's pprof labels, nil for none.
func (w *words) labelsOf(id int64) map[string]string {
	if w.labels == nil {
		w.labels = map[int64]map[string]string{}
		for _, s := range w.rec.Samples {
			for _, g := range s.Goroutines {
				if g.Labels != nil {
					w.labels[g.ID] = g.Labels
					for _, id := range g.Twins {
						w.labels[id] = g.Labels
					}
				}
			}
		}
	}
	return w.labels[id]
}

// labelText is pprof labels as Go 1.27 prints them: "{request: r4, tenant:
// "acme, inc. [eu]"}", keys in order; "" for none.
func labelText(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	q := func(s string) string {
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '/' || r == '_') {
				return strconv.Quote(s)
			}
		}
		return s
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = q(k) + ": " + q(labels[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func newWords(rec *model.Recording, d *classify.Diagnosis) *words {
	w := &words{rec: rec, d: d, actors: map[classify.Ref]*classify.Actor{}, procs: map[int]*classify.Process{},
		waitOf: map[classify.Ref]*classify.Wait{}}
	for _, list := range [][]classify.Actor{d.Threads, d.Goroutines} {
		for i := range list {
			w.actors[list[i].Ref] = &list[i]
		}
	}
	for i := range d.Waits {
		w.waitOf[d.Waits[i].From] = &d.Waits[i]
	}
	for i := range d.Processes {
		p := &d.Processes[i]
		w.procs[p.PID] = p
		for j := range p.Actors {
			w.actors[p.Actors[j].Ref] = &p.Actors[j]
		}
		for j := range p.Waits {
			w.waitOf[p.Waits[j].From] = &p.Waits[j]
		}
	}
	return w
}

// kindText words what a thread waits for.
var kindText = map[model.WaitKind]string{
	model.WaitLock:             "waiting for a lock",
	model.WaitFutex:            "waiting on a futex (a condition, a semaphore, or a lock with no recorded owner)",
	model.WaitPipeWrite:        "writing to a full pipe",
	model.WaitPipeRead:         "reading an empty pipe",
	model.WaitSocketWrite:      "writing to a socket whose send buffer is full",
	model.WaitSocketRead:       "reading a socket that sends nothing",
	model.WaitSocketConnect:    "connecting a socket",
	model.WaitAccept:           "waiting for a connection",
	model.WaitStdin:            "reading its standard input",
	model.WaitTTYRead:          "reading a terminal",
	model.WaitTTYWrite:         "writing to a terminal",
	model.WaitFileRead:         "reading a file",
	model.WaitFileWrite:        "writing a file",
	model.WaitFileLock:         "waiting for a file lock",
	model.WaitChildExit:        "waiting for a child process to exit",
	model.WaitSleep:            "sleeping",
	model.WaitPoll:             "waiting for events (epoll, poll, select)",
	model.WaitPollFDs:          "waiting on its descriptors (poll, select)",
	model.WaitSignal:           "waiting for a signal",
	model.WaitUninterruptible:  "in uninterruptible sleep (D)",
	model.WaitStopped:          "stopped by a signal",
	model.WaitTraced:           "stopped by a tracer (a debugger, strace)",
	model.WaitThreadExit:       "waiting for another thread to exit (join)",
	model.WaitQueue:            "waiting in queue.get() for work",
	model.WaitCondition:        "waiting on a condition (Condition.wait, Event.wait)",
	model.WaitPythonLock:       "waiting to acquire a lock",
	model.WaitPython:           "in Python code",
	model.WaitQueueJoin:        "waiting in queue.join() for a task_done() for every task",
	model.WaitEvent:            "waiting in Event.wait() for a set()",
	model.WaitFuture:           "waiting for a future's result (concurrent.futures)",
	model.WaitExecutorShutdown: "waiting in ThreadPoolExecutor.shutdown() for its workers to finish",
	model.WaitPoolResult:       "waiting for a result from a multiprocessing pool's worker processes",
	model.WaitLoopBlocked:      "running an asyncio event loop that a synchronous call in a coroutine blocks",
	model.WaitRunning:          "running",
	model.WaitSyscall:          "in a syscall",
	model.WaitUnknown:          "waiting in the kernel",
	model.WaitMutex:            "waiting for a sync.Mutex",
	model.WaitRWMutex:          "waiting for a sync.RWMutex",
	model.WaitChannel:          "blocked on a channel",
	model.WaitSelect:           "blocked in select",
	model.WaitIO:               "waiting for network or file I/O (netpoll)",
	model.WaitWaitGroup:        "waiting in sync.WaitGroup.Wait",
	model.WaitCond:             "waiting in sync.Cond.Wait",
	model.WaitRuntime:          "parked by the Go scheduler until a goroutine can run",
	model.WaitOther:            "waiting",
	model.WaitDBConn:           "waiting in database/sql for a free connection of a full pool",
	model.WaitHTTPResponse:     "waiting for an HTTP response (net/http client)",
	model.WaitErrgroup:         "waiting in errgroup.Group.Wait for the group's goroutines",
	model.WaitSingleflight:     "waiting in singleflight for the first caller's result",
	model.WaitSemaphore:        "waiting in semaphore.Weighted.Acquire for a Release",
	model.WaitFIFO:             "opening a FIFO that nobody has open at the other end",
	model.WaitLockRetry:        "retrying a record lock another process holds, asleep between tries",
	model.WaitJavaMonitor:      "waiting to enter a synchronized block (a Java monitor)",
	model.WaitJavaLock:         "waiting for a java.util.concurrent lock (ReentrantLock)",
	model.WaitJavaPark:         "parked (LockSupport.park) on a synchronizer that records no owner (a CountDownLatch, a Condition, a barrier)",
	model.WaitObjectWait:       "waiting in Object.wait() for a notify()",
	model.WaitJavaFuture:       "waiting for a future's result (CompletableFuture.join(), Future.get())",
	model.WaitJavaSemaphore:    "waiting in Semaphore.acquire() for a permit",
	model.WaitJavaPool:         "waiting in a thread pool for a task",
	model.WaitEventfd:          "waiting for a write to an eventfd",
	model.WaitSignalfd:         "waiting for a signal (signalfd)",
	model.WaitTimerfd:          "sleeping until a timer expires (timerfd)",
	model.WaitInotify:          "waiting for a change to a watched file (inotify)",
	model.WaitPidfd:            "waiting for a process to exit (pidfd)",
	model.WaitIOUring:          "waiting for io_uring completions",
	model.WaitSysVSem:          "waiting on a SysV semaphore",
	model.WaitSysVMsg:          "waiting on a SysV message queue",
	model.WaitGIL:              "waiting for the GIL, which another thread holds throughout",
}

// missingText says, for a wait no live actor is left to end, what nobody
// is left to do.
var missingText = map[model.WaitKind]string{
	model.WaitFutex:            "wake it (post the semaphore, signal the condition, release the lock)",
	model.WaitLock:             "release it",
	model.WaitFileLock:         "release it (its own process holds it through another open of the file)",
	model.WaitPythonLock:       "release it",
	model.WaitCondition:        "notify() it",
	model.WaitQueueJoin:        "call task_done()",
	model.WaitEvent:            "call set()",
	model.WaitFuture:           "run the future and set its result",
	model.WaitExecutorShutdown: "finish the pool's work",
	model.WaitThreadExit:       "exit",
	model.WaitWaitGroup:        "call Done",
	model.WaitCond:             "call Signal or Broadcast",
	model.WaitDBConn:           "return a connection to the pool",
	model.WaitErrgroup:         "finish the group's work",
	model.WaitSingleflight:     "finish the first call",
	model.WaitSemaphore:        "call Release",
	model.WaitJavaMonitor:      "release it",
	model.WaitJavaLock:         "release it",
	model.WaitJavaPark:         "count it down, signal it or arrive",
	model.WaitObjectWait:       "notify() it",
	model.WaitJavaFuture:       "complete the future",
	model.WaitJavaSemaphore:    "release() a permit",
}

func missingWords(k model.WaitKind) string {
	if s, ok := missingText[k]; ok {
		return s
	}
	return "end it"
}

// goKindText words what a goroutine waits for, where it says it otherwise
// than a thread's.
var goKindText = map[model.WaitKind]string{
	model.WaitSyscall: "in a system call",
	model.WaitRuntime: "a runtime wait",
}

func kindWords(k model.WaitKind) string { return kindText[k] }

func goKindWords(k model.WaitKind) string {
	if s, ok := goKindText[k]; ok {
		return s
	}
	return kindText[k]
}

// roleText words where a wait's edge leads.
var roleText = map[model.Role]string{
	model.RoleHeldBy:    "held by",
	model.RoleJoining:   "joining",
	model.RoleChild:     "child",
	model.RoleReadBy:    "read by",
	model.RoleWrittenBy: "written by",
	model.RoleOtherEnd:  "the other end held by",
	model.RoleTracedBy:  "traced by",
	model.RolePolled:    "the other end held by",
}

func roleWords(k model.WaitKind) string {
	if s, ok := roleText[k.Role()]; ok && k.Role() != model.RoleNone {
		return s
	}
	return "the other end held by"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// cpuText says how much of a core a thread used and, when it did not get
// all it wanted, how long it waited for one, and why as far as the run
// tells: its cgroup's quota, a busy machine.
func (w *words) cpuText(a *classify.Actor) string {
	if a.CPU.RunqueuePercent < 5 {
		return fmt.Sprintf("%.0f%% of a core", a.CPU.Percent)
	}
	why := "waiting for one"
	switch {
	case w.d.Throttle.Significant():
		why = fmt.Sprintf("waiting for one: its cgroup's CPU quota of %s cores throttles it", cores(w.d.Throttle.QuotaCores))
	case w.d.Machine.Busy():
		why = "waiting for one (the machine is busy)"
	case w.d.Machine != nil:
		why = fmt.Sprintf("waiting for one (the machine's CPUs were %.0f%% busy)", w.d.Machine.BusyPercent)
	}
	return fmt.Sprintf("%.0f%% of a core, and %.0f%% %s", a.CPU.Percent, a.CPU.RunqueuePercent, why)
}

// cores prints a number of cores the way a quota is read: "0.05", "2".
func cores(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

// actorName names a thread or a goroutine.
func (w *words) actorName(a *classify.Actor) string {
	if a.Kind == classify.ActorGoroutine {
		return fmt.Sprintf("goroutine %d (%s)", a.Ref.Goroutine, Where(a.Stack))
	}
	return threadName(a)
}

func actorNoun(a *classify.Actor) string {
	if a.Kind == classify.ActorGoroutine {
		return "goroutine of the program's own"
	}
	return "thread"
}

func threadName(a *classify.Actor) string {
	if a == nil {
		return "?"
	}
	return fmt.Sprintf("tid %d (%s)", a.Ref.TID, a.Name)
}

// callText is a thread's call as strace would print it, "" when it is in none.
func callText(sc model.Syscall) string {
	if v := view(sc); v != nil {
		return v.Text
	}
	return ""
}

// whyText words the rule that classified an actor.
func (w *words) whyText(a *classify.Actor) string {
	y := a.Why
	var s string
	switch y.Rule {
	case classify.WhyExited:
		s = fmt.Sprintf("exited during the run, after %d of the samples", y.N)
	case classify.WhyOnCPUOnce:
		s = "on a CPU in the only sample it was seen in"
	case classify.WhySpins:
		s = fmt.Sprintf("%s with no voluntary switch or syscall wait in %d samples", w.cpuText(a), y.N)
		if len(a.Stack) > 0 {
			s += " and the same stack in each"
		}
	case classify.WhyBusy:
		s = fmt.Sprintf("%.1f%% CPU", a.CPU.Percent)
		if a.Moved {
			s += ", and it moves"
		}
	case classify.WhyStackMoved:
		s = "its stack changed between samples"
	case classify.WhyRunnable:
		s = fmt.Sprintf("runnable in all %d samples, with little CPU", y.N)
	case classify.WhyParked:
		s = "parked: " + kindWords(y.Kind)
	case classify.WhySlow:
		if y.N == 0 {
			// Moved without a switch of its own: its wait changed between
			// samples (it left one wait for another).
			s = fmt.Sprintf("%s, but its wait changed between samples: slow, not stopped", kindWords(y.Kind))
		} else {
			s = fmt.Sprintf("%s, but woke %d times during the run: slow, not stopped", kindWords(y.Kind), y.N)
		}
	case classify.WhyRewaits:
		s = fmt.Sprintf("%s, the same in every sample; woken %d times between them with no CPU, and back in the same wait each time (a timed wait that keeps timing out, or a wake that found nothing to do): no progress shown", kindWords(y.Kind), y.N)
	case classify.WhyBlockedOnce:
		s = fmt.Sprintf("waiting in the only %s it was seen in: %s", w.sampleWord(), kindWords(y.Kind))
	case classify.WhyBlocked:
		s = fmt.Sprintf("%s, unchanged in %d samples, no CPU", kindWords(y.Kind), y.N)
		if !a.CPU.Known {
			s = fmt.Sprintf("%s, unchanged in %d dumps", kindWords(y.Kind), y.N)
		}
	case classify.WhyDumpRunning:
		s = "on a CPU in the only dump: " + onCPUText(y) + "; one dump cannot tell a loop from work"
	case classify.WhyDumpSpins:
		s = fmt.Sprintf("on a CPU with the same stack in all %d dumps: %s", y.N, onCPUText(y))
	case classify.WhyDumpWaitsIn:
		verb := "waiting in"
		if y.Kind.Idle() {
			verb = "parked in"
		}
		s = fmt.Sprintf("%s %s() (%s), the call its innermost frame makes", verb, y.Site, kindWords(y.Kind))
		if y.N > 1 {
			s += fmt.Sprintf(", in all %d dumps", y.N)
		}
	case classify.WhyDumpOffCPU:
		s = "py-spy saw it waiting (idle), in a call its stack does not name"
		if y.N > 1 {
			s += fmt.Sprintf(", in all %d dumps", y.N)
		}
	case classify.WhyWithBlock:
		s = "waits to enter the with-block at " + y.Site
	case classify.WhyBehind:
		o := w.actor(*y.Other)
		who, how := "?", "moves"
		if o != nil {
			who, how = w.actorName(o), classWord(o)
		}
		which := "the one that could end it"
		if y.N > 1 {
			which = fmt.Sprintf("one of the %d that could end it", y.N)
		}
		s = fmt.Sprintf("parked: %s; %s, %s, is %s", kindWords(y.Kind), who, which, how)
	case classify.WhyNobodyLeft:
		s = fmt.Sprintf("%s%s, and no live %s is left that could %s", kindWords(y.Kind), anyFutex(a.Resource), actorNoun(a), missingWords(y.Kind))
	case classify.WhyGoAside:
		s = "a runtime goroutine, or an HTTP server's own connection handling"
	case classify.WhyJavaMachinery:
		s = "the JVM's own thread (GC, compiler, VM thread, reference handling, signal dispatch, attach): not the program's"
	case classify.WhyGoObserver:
		s = "the pprof handler writing this goroutine profile (hangdoc's own request)"
	case classify.WhyGoDumper:
		s = "the program's own goroutine writing this dump (runtime.Stack): caught running by its own dump"
	case classify.WhyGoMoved:
		s = "its stack or state changed between samples"
	case classify.WhyGoRunningOnce:
		s = fmt.Sprintf("%s in the only %s it was seen in", a.GoState, w.sampleWord())
		if w.dumps() {
			s += ": on a CPU or about to be; one dump cannot tell a loop from work"
		}
	case classify.WhyGoBetweenWaits:
		s = "ran between waits"
	case classify.WhyGoSpinsOnThread:
		t := w.actor(*y.Other)
		s = fmt.Sprintf("%s in all %d samples with the same stack, on tid %d using %s", a.GoState, y.N, y.Other.TID, w.cpuText(t))
	case classify.WhyGoSpinsWhile:
		t := w.actor(*y.Other)
		s = fmt.Sprintf("%s in all %d samples with the same stack, while %s spins (%s); the source does not say which thread runs it", a.GoState, y.N, threadName(t), w.cpuText(t))
	case classify.WhyGoSpinsProcess:
		where := "in the same loop"
		if len(a.Stack) == 0 {
			where = "(its stack unread: it ran at every read)"
		}
		s = fmt.Sprintf("%s in all %d samples %s, while the process uses %.0f%% of a core across its threads (the scheduler moves a goroutine between threads)", a.GoState, y.N, where, y.ProcessCPU)
	case classify.WhyGoSpinsInDumps:
		s = fmt.Sprintf("%s in all %d dumps with the same stack (no CPU evidence in a file: probably spinning)", a.GoState, y.N)
	case classify.WhyGoUnreadRuns:
		s = fmt.Sprintf("%s in all %d samples, its stack unread while it ran, on tid %d, which slept and woke during the run (%d voluntary switches): work, not one loop", a.GoState, y.N, y.Other.TID, w.actor(*y.Other).Voluntary)
	case classify.WhyGoRunsLittle:
		s = fmt.Sprintf("%s in all %d samples, but the process uses only %.0f%% of a core", a.GoState, y.N, y.ProcessCPU)
	case classify.WhyGoParked:
		s = "parked: " + goKindWords(y.Kind)
	case classify.WhyGoAccept:
		s = "parked: waiting for a connection"
	case classify.WhyGoServerRead:
		s = "parked: an HTTP server connection waiting for its next request"
	case classify.WhyGoSelectForever:
		s = "parked for good in select {} (usually on purpose: a main that leaves the work to others)"
	case classify.WhyGoBlockedOnce:
		s = fmt.Sprintf("%s in the only %s it was seen in", goKindWords(y.Kind), w.sampleWord())
	case classify.WhyGoBlocked:
		s = fmt.Sprintf("%s, unchanged in %d %ss", goKindWords(y.Kind), y.N, w.sampleWord())
	case classify.WhyGoPool:
		s = fmt.Sprintf("parked receiving in %s with %d others at the same place; nothing is left that could send", Where(a.Stack), y.N)
	case classify.WhyGoIdleWorkers:
		s = fmt.Sprintf("parked receiving in %s with %d others at the same place, waiting for work; no goroutine is sending to them", Where(a.Stack), y.N)
	case classify.WhyGoExcerpt:
		s = fmt.Sprintf("%s; the dump is an excerpt: it does not show the goroutines that could %s", goKindWords(y.Kind), missingWords(y.Kind))
	case classify.WhyGoFedBy:
		s = fmt.Sprintf("%s; goroutine %d, which refers to the channel (memory scan), is not blocked: it waits for work from it", goKindWords(y.Kind), y.Other.Goroutine)
	}
	if a.Kind == classify.ActorThread && !a.CPU.Known && y.Kind == model.WaitPython && y.Rule != classify.WhyDumpOffCPU {
		s += " (the dump does not say whether it runs there or waits in a call its line makes)"
	}
	if a.Kind == classify.ActorGoroutine && a.WaitMinutes > 0 && a.Class == classify.ClassBlocked {
		s += fmt.Sprintf(", for at least %d minutes", a.WaitMinutes)
	}
	if y.Siblings > 0 {
		s = fmt.Sprintf("%s; but %s started by the same go statement (%s:%d) moved: a busy worker caught in one long task", s,
			plural(y.Siblings, "goroutine", "goroutines"), y.SiblingsAt.Func, y.SiblingsAt.Line)
	}
	if y.ChanWait != nil {
		s = fmt.Sprintf("%s; blocked %s", s, chanWaitText(y.ChanWait))
	}
	if y.Crowded > 0 {
		s += "; it wants a CPU it does not get"
		if y.Crowded < 100 {
			s += fmt.Sprintf(" (the crowded machine gave a runnable task about %.0f%% of a core)", y.Crowded)
		}
	}
	return s
}

// onCPUText words what shows a thread of a dump on a CPU.
func onCPUText(y classify.Why) string {
	switch y.OnCPU {
	case classify.OnCPUJavaState:
		return "the JVM prints it RUNNABLE in Java code, in no call that waits"
	case classify.OnCPUJavaCPU:
		return fmt.Sprintf("the JVM prints it RUNNABLE in Java code, in no call that waits, and its cpu= grew by %.0f ms between the dumps", y.CPUMillis)
	case classify.OnCPUFlag:
		return "py-spy saw its OS thread running (active)"
	case classify.OnCPUGIL:
		return "it held the GIL"
	case classify.OnCPULine:
		return "it stands at a line of Python that calls nothing, so it runs it (or waits for the GIL to)"
	}
	return "?"
}

// dumps reports a recording of stack dumps read from files: no kernel
// evidence.
func (w *words) dumps() bool { return w.rec.StackSource.IsDump() }

// sampleWord is what one look at the process is called: a sample, or a
// dump read from a file.
func (w *words) sampleWord() string {
	if w.dumps() {
		return "dump"
	}
	return "sample"
}

// chanWaitText words a goroutine's wait in a channel deadlock.
func chanWaitText(c *classify.ChanWait) string {
	var others []string
	for _, o := range c.Only {
		others = append(others, strconv.FormatInt(o, 10))
	}
	return fmt.Sprintf("%s on chan %s, which only goroutine %s (itself blocked) refers to", c.State, strings.Join(c.Chans, ", "), strings.Join(others, ", "))
}

// mutexKindNames are glibc's mutex types.
var mutexKindNames = []string{"normal", "recursive", "error-checking", "adaptive"}

// mutexKindText words glibc's __kind: "kind normal, robust".
func mutexKindText(k int32) string {
	s := []string{"kind " + mutexKindNames[k&3]}
	for _, f := range []struct {
		bit  int32
		name string
	}{{classify.MutexRobust, "robust"}, {classify.MutexPI, "priority-inheritance"}, {classify.MutexPP, "priority-protect"}, {classify.MutexPShared, "process-shared"}} {
		if k&f.bit != 0 {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, ", ")
}

// futexOpText words a futex operation: FUTEX_WAIT_PRIVATE.
func futexOpText(op uint64) string {
	cmd := op & 0x7f
	if cmd >= uint64(len(futexOps)) {
		return hex(op)
	}
	s := futexOps[cmd]
	if op&128 != 0 {
		s += "_PRIVATE"
	}
	if op&256 != 0 {
		s += "|FUTEX_CLOCK_REALTIME"
	}
	return s
}

// fileLockBasis words what /proc/locks says of a file lock.
func (w *words) fileLockBasis(l *classify.Lock) string {
	b := l.Basis
	e := b.File
	switch {
	case e == nil && b.Err != "":
		return "the file could not be named: " + b.Err
	case e == nil:
		return "/proc/locks shows no lock held on the file: it was released as it was read"
	case b.ByFDInfo && l.Holder != nil:
		return fmt.Sprintf("exact: fd %d of %s holds it: its fdinfo lists the %s %s lock on bytes %s (such a lock belongs to an open file, not to the process /proc/locks names)", b.HeldFD, w.procName(l.Holder.PID), e.Class, e.Type, e.Range)
	case e.PID > 0:
		return fmt.Sprintf("/proc/locks: a %s %s lock on bytes %s of the file, taken by %s", e.Class, e.Type, e.Range, w.procName(e.PID))
	case l.Holder != nil:
		return fmt.Sprintf("/proc/locks: an %s %s lock on bytes %s, which names no process (it belongs to an open file); %s is the only other process with the file open", e.Class, e.Type, e.Range, w.procName(l.Holder.PID))
	}
	return fmt.Sprintf("/proc/locks: an %s %s lock on bytes %s, which names no process; %d other processes have the file open, so no holder is named", e.Class, e.Type, e.Range, len(b.Opened))
}

// basisText words how a lock's holder was established, or why none is.
func (w *words) basisText(l *classify.Lock) string {
	b := l.Basis
	reason := ""
	switch b.Rule {
	case classify.BasisFileLock:
		return w.fileLockBasis(l)
	case classify.BasisJavaLocked:
		return fmt.Sprintf("exact: a frame of %s prints \"- locked <%s>\", the object the waiters wait to lock", w.actorLabel(*l.Holder), b.Address)
	case classify.BasisJavaOwnable:
		return fmt.Sprintf("exact: the waiters park on <%s>, which %s lists in its \"Locked ownable synchronizers\"", b.Address, w.actorLabel(*l.Holder))
	case classify.BasisJavaOwner:
		return fmt.Sprintf("exact: the JVM's JSON thread dump names %s as the owner of the waiters' park blocker", w.actorLabel(*l.Holder))
	case classify.BasisJVMDeadlock:
		return fmt.Sprintf("exact: the JVM's own deadlock report says it \"is held by\" %s", w.actorLabel(*l.Holder))
	case classify.BasisRustOnlyOther:
		return fmt.Sprintf("inferred: the waiters wait in Rust's std Mutex::lock (a futex word, no owner recorded); %s is the one thread of pid %d that neither waits for it nor joins another", w.actorLabel(*l.Holder), b.PID)
	case classify.BasisRustSameSite:
		return fmt.Sprintf("inferred: the waiters wait in Rust's std Mutex::lock (a futex word, no owner recorded), called from %s; of the %d threads of pid %d that could hold it, %s is the one whose stack stands in %s too", b.Frame, b.Value, b.PID, w.actorLabel(*l.Holder), b.Frame)
	case classify.BasisRustNoOwner:
		return fmt.Sprintf("the waiters wait in Rust's std Mutex::lock, which records no owner, and %d threads could hold it: its holder is not named", b.Value)
	case classify.BasisGILFlag:
		return fmt.Sprintf("exact: py-spy read %s as the GIL's holder from the interpreter in every sample; the waiters wake every 5 ms to ask for it (the interpreter's switch interval) and run no Python", w.actorLabel(*l.Holder))
	case classify.BasisJavaSameClass:
		return fmt.Sprintf("inferred: the waiters' %s is named by its identity hash (the JSON thread dump's, which has the virtual threads), the holders' by address (the text dump's); every virtual thread waits for it, and %s is the one thread that holds a synchronizer of that class unclaimed by other waiters", b.Address, w.actorLabel(*l.Holder))
	case classify.BasisJavaNoOwner:
		return fmt.Sprintf("no thread of the dump shows holding %s (no \"- locked\" frame, no ownable synchronizer), so no holder is named", l.Address)
	case classify.BasisJavaNoL:
		return "the dump was taken without -l (jstack -l, jcmd Thread.print -l prints each thread's \"Locked ownable synchronizers\"; a SIGQUIT dump does under -XX:+PrintConcurrentLocks), so who owns this lock is not in it"
	case classify.BasisGlibcOwner:
		word := fmt.Sprintf("lock word %d", b.Word)
		if b.PI {
			word = fmt.Sprintf("priority-inheritance lock word 0x%x", uint32(b.Word))
		}
		return fmt.Sprintf("glibc mutex: __owner %d read at +8 from the target's memory, a live thread of pid %d; %s, %s", b.Owner, b.PID, word, mutexKindText(b.MutexKind))
	case classify.BasisSharedOwner:
		return sharedOwnerBasis(b)
	case classify.BasisMemoryErr:
		reason = "its memory could not be read (" + b.Err + ")"
	case classify.BasisNotRead:
		reason = "the futex word was not read"
	case classify.BasisFutexWait2:
		reason = "the waiters use futex_wait(2), which glibc mutexes do not"
	case classify.BasisNotTwo:
		reason = fmt.Sprintf("tid %d waits for the value %d, not a contended mutex's 2", b.TID, b.Value)
	case classify.BasisOtherOp:
		reason = "the waiters use " + futexOpText(b.Op)
	case classify.BasisBadKind:
		reason = fmt.Sprintf("its __kind %d is not a mutex type", b.MutexKind)
	case classify.BasisUnlocked:
		reason = "the word reads 0, unlocked (it was released as it was read)"
	case classify.BasisNoOwner:
		reason = fmt.Sprintf("its __owner reads %d", b.Owner)
		if b.Owner > classify.PIDMaxLimit {
			reason += ", more than any thread id can be: not a glibc mutex (a Rust Mutex, say, whose data follows its word)"
		}
	case classify.BasisOwnerShared:
		reason = fmt.Sprintf("its __owner %d is not a thread of pid %d: a process-shared mutex held by another process", b.Owner, b.PID)
	case classify.BasisOwnerGone:
		reason = fmt.Sprintf("its __owner %d is not a live thread of pid %d (an owner that exited, or not a mutex)", b.Owner, b.PID)
	case classify.BasisSameObject, classify.BasisSameExpr, classify.BasisSameSite, classify.BasisOnlyCandidate, classify.BasisUnseen, classify.BasisArgAddress,
		classify.BasisStackWord, classify.BasisReaders, classify.BasisCandidates, classify.BasisNoCandidate, classify.BasisCopiedLock:
		return w.frameBasis(l)
	}
	return fmt.Sprintf("%d threads wait on the same futex word; %s, so no holder is named", b.Waiters, reason)
}

// actorLabel names an actor in a basis: "goroutine 7 (main.(*Service).refresh)",
// "tid 5 (MainThread)".
func (w *words) actorLabel(r classify.Ref) string {
	a := w.actor(r)
	switch {
	case r.Goroutine != 0 && a != nil:
		return fmt.Sprintf("goroutine %d (%s)", r.Goroutine, ownFunc(a.Stack))
	case r.Goroutine != 0:
		return fmt.Sprintf("goroutine %d", r.Goroutine)
	case a != nil:
		return threadName(a)
	}
	return fmt.Sprintf("tid %d", r.TID)
}

// locked is what a frame locked, "" when the source was not read.
func locked(expr string) string {
	if expr == "" {
		return ""
	}
	return expr + " "
}

// frameBasis words a lock named from the stacks' frames (holders.go).
func (w *words) frameBasis(l *classify.Lock) string {
	b := l.Basis
	where := fmt.Sprintf("%s at line %d", b.WaitFunc, b.WaitLine)
	if b.Expr != "" {
		op := "Lock()"
		if b.ReadLock {
			op = "RLock()"
		}
		where = fmt.Sprintf("%s.%s in %s at line %d", b.Expr, op, b.WaitFunc, b.WaitLine)
		if l.Kind == classify.LockPython {
			where = fmt.Sprintf("%s in %s at line %d", b.Expr, shortFunc(b.WaitFunc), b.WaitLine)
		}
	}
	src := ""
	switch {
	case b.Stale:
		src = fmt.Sprintf("; the source of %s does not match the stacks (no Lock call at line %d: edited since the build?), so the lock is named by where it is taken", shortFunc(b.WaitFunc), b.WaitLine)
	case !b.Sourced && model.GoStd(b.WaitFunc):
		src = "; the standard library's source was not read (it is read only from the toolchain of the program's own Go version), so the lock is named by where it is taken"
	case !b.Sourced:
		src = "; the source was not read, so the lock is named by where it is taken"
	}
	var s string
	switch b.Rule {
	case classify.BasisSameObject:
		s = fmt.Sprintf("exact: %s locked %sin %s at line %d, the very object the waiters wait on (they take %s)",
			w.actorLabel(*l.Holder), locked(b.HeldExpr), shortFunc(b.Frame), b.Line, where)
	case classify.BasisSameExpr:
		s = fmt.Sprintf("probable: %s holds %s, locked in %s at line %d, which the source names as the lock the waiters take (%s); the runtime records no owner",
			w.actorLabel(*l.Holder), b.HeldExpr, shortFunc(b.Frame), b.Line, where)
	case classify.BasisSameSite:
		s = fmt.Sprintf("probable: %s is inside %s at line %d, past where the waiters lock (%s), and does not wait for this lock there",
			w.actorLabel(*l.Holder), shortFunc(b.Frame), b.Line, where)
		if b.Receiver != "" {
			s += "; same receiver " + b.Receiver
		}
		s += "; the runtime records no owner"
	case classify.BasisOnlyCandidate:
		s = fmt.Sprintf("inferred: %s is the only one holding a lock that nothing else is named for, so nothing else could hold this one (the waiters take %s)",
			w.actorLabel(*l.Holder), where)
	case classify.BasisUnseen:
		s = fmt.Sprintf("inferred: no stack that can be read holds it, and %s runs: its stack cannot be read without stopping it, so it is the one that could (the waiters take %s)",
			w.actorLabel(*l.Holder), where)
	case classify.BasisArgAddress:
		s = fmt.Sprintf("inferred: %s is the only goroutine that does not wait for it whose frame %s prints its address %s among its arguments, and the runtime records no owner (the waiters take %s); the program's source would show whether %s locked it",
			w.actorLabel(*l.Holder), shortFunc(b.Frame), b.Address, where, shortFunc(b.Frame))
	case classify.BasisStackWord:
		s = fmt.Sprintf("inferred: %s is the only goroutine not waiting for it whose stack refers to its address %s (a word of its stack, or of an object the stack points to, read from memory), and the runtime records no owner (the waiters take %s); the program's source would show where it locked it",
			w.actorLabel(*l.Holder), b.Address, where)
	case classify.BasisReaders:
		var names []string
		for _, r := range l.Readers {
			names = append(names, w.actorLabel(r))
		}
		s = fmt.Sprintf("%s: held for reading by %s; a writer waits for every reader to unlock, and new readers queue behind the writer (the waiters take %s)",
			b.Kind, strings.Join(names, ", "), where)
	case classify.BasisCandidates:
		var names []string
		for _, r := range b.Ranked {
			names = append(names, fmt.Sprintf("%s (%s: %sin %s at line %d)", w.actorLabel(r.Ref), r.Kind, locked(r.Expr), shortFunc(r.Frame), r.Line))
		}
		if b.Unranked > 0 {
			names = append(names, fmt.Sprintf("%d more", b.Unranked))
		}
		s = fmt.Sprintf("no single holder: %s could hold it, strongest first (the waiters take %s)", strings.Join(names, "; "), where)
	case classify.BasisNoCandidate:
		s = fmt.Sprintf("no holder is named: no frame of any stack holds it (the waiters take %s); the holder took it in code that is not on a stack now, or a path returned without unlocking", where)
	case classify.BasisCopiedLock:
		s = fmt.Sprintf("no holder is named, as no stack holds it: it is a copy (the waiters take %s, a mutex field of %s's value receiver, copied with the struct at each call, locked if the original was locked then; go vet: copylocks); the original's holder holds another lock", where, shortFunc(b.WaitFunc))
	}
	if b.Self {
		s += "; the holder is itself one of the waiters: it waits for a lock it already holds, a self-deadlock"
		if len(b.Reentry) > 0 {
			s += ", back to it through " + reentryText(b.Reentry) + handlerText(b.Handler)
		}
	}
	if b.Futex != "" {
		s += fmt.Sprintf("; the kernel agrees that the %d waiters wait on one lock: they share futex %s", b.Waiters, b.Futex)
	}
	return s + src
}

// shortFunc drops the file a Python frame's function is qualified with
// ("put@queue.py" → "put").
func shortFunc(fn string) string {
	f, _, _ := strings.Cut(fn, "@")
	return f
}

// handlerText names the signal handler of a re-entry: "" for none.
func handlerText(h *classify.SignalHandler) string {
	if h == nil {
		return ""
	}
	return fmt.Sprintf(" (%s is the %s handler, set at %s:%d: it ran on top of the frame that held the lock)", shortFunc(h.Func), h.Signal, filepath.Base(h.File), h.Line)
}

// reentryText is the path by which a thread that holds a lock came back
// to it, outermost first: the call made while holding it, and the one
// after, say most (a callback, a signal handler run on top of it); the
// rest is counted.
// Native frames (py-spy --native: no line) are passed over when there
// are others, and counted.
func reentryText(frames []model.Frame) string {
	shown := frames
	if slices.ContainsFunc(frames, func(f model.Frame) bool { return f.Line > 0 }) {
		shown = nil
		for _, f := range frames {
			if f.Line > 0 {
				shown = append(shown, f)
			}
		}
	}
	var parts []string
	for i, f := range shown {
		if len(shown) > 3 && i == 2 {
			break
		}
		parts = append(parts, frameWhere(f))
	}
	if rest := len(frames) - len(parts); rest > 0 {
		parts = append(parts, fmt.Sprintf("… %d more calls", rest))
	}
	return strings.Join(parts, " → ")
}

// anyFutex words the futex words of a wait on several at once
// (futex_waitv, any of which ends it): " at any of 0x… or 0x…"; "" for
// any other wait.
func anyFutex(resource string) string {
	if addrs, ok := strings.CutPrefix(resource, "futex:"); ok && strings.Contains(addrs, " or ") {
		return " at any of " + addrs
	}
	return ""
}

// classWord is a thread's class in words: "waiting" for one parked in a
// wait that is not for work (a join, a lock, a condition, a child) behind
// one that moves and can end it; classify ranks it with the idle (it is
// not stuck while the other moves), but a join is never idle.
func classWord(a *classify.Actor) string {
	if a.Class == classify.ClassIdle && a.Why.Rule == classify.WhyBehind && !a.Why.Kind.Idle() {
		return "waiting"
	}
	return a.Class.String()
}

// lockKindWord is how a lock's kind reads before its address: the GIL
// (kind gil, address GIL) is "the GIL".
func lockKindWord(kind string) string {
	if kind == classify.LockGIL.String() {
		return "the"
	}
	return kind
}
