package classify

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// The Java adapter: threads read from JVM thread dumps. The dump records
// what the kernel cannot: which monitor each thread waits to enter and
// which it holds ("- locked <a>"), which j.u.c lock it parks on and which
// it owns ("Locked ownable synchronizers"), and, where the JVM found one,
// the deadlock itself. Those holders are exact. A park on what records no
// owner (a CountDownLatch, a CompletableFuture, a Semaphore) names no one:
// its wakers are candidates, like a condition's. The JVM's own threads (GC,
// compilers, the VM thread…) are machinery, like the Go runtime's.

// javaLockWait reports the kinds of wait that are a Java lock's.
func javaLockWait(k model.WaitKind) bool {
	return k == model.WaitJavaMonitor || k == model.WaitJavaLock
}

// javaRow is one frame that names a Java thread's wait: a function, as a
// suffix of the frame's ("java.util.concurrent.ThreadPoolExecutor.getTask").
type javaRow struct {
	fn   string
	kind model.WaitKind
}

// javaLibrary names waits by the library frame that explains them, tried
// in order: the specific before the primitives it is built on (a pool's
// getTask takes from a queue, which parks).
var javaLibrary = []javaRow{
	{"ThreadPoolExecutor.getTask", model.WaitJavaPool},
	{"ForkJoinPool.awaitWork", model.WaitJavaPool},
	{"ForkJoinPool.runWorker", model.WaitJavaPool},
	{"CompletableFuture.join", model.WaitJavaFuture},
	{"CompletableFuture.get", model.WaitJavaFuture},
	{"CompletableFuture.waitingGet", model.WaitJavaFuture},
	{"CompletableFuture.timedGet", model.WaitJavaFuture},
	{"FutureTask.get", model.WaitJavaFuture},
	{"FutureTask.awaitDone", model.WaitJavaFuture},
	{"Semaphore.acquire", model.WaitJavaSemaphore},
	{"Semaphore.acquireUninterruptibly", model.WaitJavaSemaphore},
	{"Semaphore.tryAcquire", model.WaitJavaSemaphore},
	{"Thread.join", model.WaitThreadExit},
	{"ProcessImpl.waitFor", model.WaitChildExit},
	{"ProcessHandleImpl.waitForProcessExit0", model.WaitChildExit},
	{"UNIXProcess.waitFor", model.WaitChildExit},
	{"LinkedBlockingQueue.take", model.WaitQueue},
	{"LinkedBlockingDeque.take", model.WaitQueue},
	{"ArrayBlockingQueue.take", model.WaitQueue},
	{"SynchronousQueue.take", model.WaitQueue},
	{"SynchronousQueue.poll", model.WaitQueue},
	{"LinkedTransferQueue.take", model.WaitQueue},
	{"PriorityBlockingQueue.take", model.WaitQueue},
	{"DelayQueue.take", model.WaitQueue},
	{"DelayedWorkQueue.take", model.WaitQueue},
	{"LinkedBlockingQueue.poll", model.WaitQueue},
	{"ArrayBlockingQueue.poll", model.WaitQueue},
	{"ServerSocket.accept", model.WaitAccept},
	{"ServerSocket.implAccept", model.WaitAccept},
	{"NioSocketImpl.accept", model.WaitAccept},
	{"ServerSocketChannelImpl.accept", model.WaitAccept},
	{"PlainSocketImpl.socketAccept", model.WaitAccept},
	{"SocketInputStream.socketRead0", model.WaitSocketRead},
	{"SocketInputStream.read", model.WaitSocketRead},
	{"NioSocketImpl.read", model.WaitSocketRead},
	{"NioSocketImpl.timedRead", model.WaitSocketRead},
	{"SocketChannelImpl.read", model.WaitSocketRead},
	{"SocketOutputStream.socketWrite0", model.WaitSocketWrite},
	{"NioSocketImpl.write", model.WaitSocketWrite},
	{"SocketChannelImpl.write", model.WaitSocketWrite},
	{"PlainSocketImpl.socketConnect", model.WaitSocketConnect},
	{"NioSocketImpl.connect", model.WaitSocketConnect},
	{"Net.connect0", model.WaitSocketConnect},
	{"EPoll.wait", model.WaitPoll},
	{"EPollArrayWrapper.epollWait", model.WaitPoll},
	{"EPollSelectorImpl.doSelect", model.WaitPoll},
	{"Thread.sleep", model.WaitSleep},
	{"Thread.sleep0", model.WaitSleep},
	{"Thread.sleepNanos0", model.WaitSleep},
	{"TimeUnit.sleep", model.WaitSleep},
	{"FileInputStream.readBytes", model.WaitFileRead},
	{"FileOutputStream.writeBytes", model.WaitFileWrite},
	{"Object.wait", model.WaitObjectWait},
	{"Object.wait0", model.WaitObjectWait},
	{"Unsafe.park", model.WaitJavaPark},
	{"LockSupport.park", model.WaitJavaPark},
	{"LockSupport.parkNanos", model.WaitJavaPark},
	{"VirtualThread.park", model.WaitJavaPark},
	{"VirtualThread.parkNanos", model.WaitJavaPark},
	{"Reference.waitForReferencePendingList", model.WaitRuntime},
}

// javaWaitKind names what a Java thread waits in, from its lock lines and
// its frames; WaitNone when nothing says it waits (it runs, as far as the
// dump goes).
func (p *proc) javaWaitKind(t model.Thread) (model.WaitKind, string) {
	// Only a Java lock says so: a thread of the JVM's own (a compiler
	// thread) may wait on a futex other threads share, a lock of the
	// thread layer's, which is no java.util.concurrent lock.
	switch l := p.lockOf[t.TID]; {
	case l != nil && l.Kind == LockMonitor:
		return model.WaitJavaMonitor, l.ID
	case l != nil && l.Kind == LockJavaSync:
		return model.WaitJavaLock, l.ID
	}
	for _, r := range javaLibrary {
		if slices.ContainsFunc(t.Stack, func(f model.Frame) bool { return javaFuncIs(f.Func, r.fn) }) {
			if r.kind == model.WaitJavaPool && !javaParked(t) {
				continue // a pool's worker running a task
			}
			return r.kind, javaBlocker(t)
		}
	}
	return model.WaitNone, ""
}

// javaBlocker is the object a thread parks or waits on, "java:ADDR", as
// its wait's resource: threads waiting on one object cannot end each
// other's wait. "" when the dump names none.
func javaBlocker(t model.Thread) string {
	for _, l := range t.Java.Locks {
		if (l.Kind == "parking to wait for" || l.Kind == "waiting on") && l.Addr != "" {
			return "java:" + l.Addr
		}
	}
	return ""
}

// javaFuncIs reports a frame's function fn ("java.lang.Thread.sleep"
// matches "Thread.sleep", "Thread.sleep0" does not).
func javaFuncIs(f, fn string) bool {
	return f == fn || strings.HasSuffix(f, fn) && (f[len(f)-len(fn)-1] == '.' || f[len(f)-len(fn)-1] == '$')
}

// javaParked reports a thread whose innermost frames park or wait: a
// pool's worker waiting for a task, not running one.
func javaParked(t model.Thread) bool {
	for _, f := range t.Stack[:min(len(t.Stack), 8)] {
		for _, fn := range []string{"Unsafe.park", "LockSupport.park", "LockSupport.parkNanos", "Object.wait", "Object.wait0", "VirtualThread.park"} {
			if javaFuncIs(f.Func, fn) {
				return true
			}
		}
	}
	return false
}

// javaMachineryNames are the JVM's own threads, by name or name prefix.
var javaMachineryNames = []string{
	"Reference Handler", "Finalizer", "Signal Dispatcher", "Service Thread", "Monitor Deflation Thread",
	"Notification Thread", "Common-Cleaner", "Attach Listener", "VM Thread", "VM Periodic Task Thread",
	"Sweeper thread", "process reaper", "Surrogate Locker Thread", "VirtualThread-unblocker",
	"Read-Poller", "Write-Poller", "C1 CompilerThread", "C2 CompilerThread", "JVMCI CompilerThread",
	"GC Thread#", "GC task thread", "G1 ", "Gang worker#", "Concurrent Mark-Sweep GC Thread",
	"ZDirector", "ZDriver", "ZStat", "ZUnmapper", "ZWorker", "ZUncommitter", "Shenandoah", "JFR ",
	"Java2D Disposer", "Cleaner-",
}

// javaMachinery reports a JVM's own thread: one of the known names, or a
// thread with no Java state (not a java.lang.Thread at all).
func javaMachinery(t model.Thread) bool {
	if t.Java == nil {
		return false
	}
	if t.Java.State == "" && t.Java.Number == 0 && !t.Java.Virtual {
		return true
	}
	return javaMachineryName(t.Name)
}

// javaMachineryName reports one of the JVM's own threads' names, whole or
// as the kernel keeps it (comm: its first 15 bytes), for a live JVM's
// threads that no thread dump named (--no-stop, attach refused).
func javaMachineryName(name string) bool {
	for _, n := range javaMachineryNames {
		if strings.HasPrefix(name, n) || len(name) == 15 && strings.HasPrefix(n, name) {
			return true
		}
	}
	return false
}

// javaThread classifies a Java thread read from dumps. It runs, as far as
// a dump shows, when its state is RUNNABLE and no frame says it waits:
// one dump cannot tell a loop from work, two with the same stack can;
// cpu= (JDK 11+) in two dumps says whether it used the CPU between them.
func (p *proc) javaThread(h *history, kind model.WaitKind, moved bool) (Class, Why, model.WaitKind) {
	n := len(h.readings)
	last := h.last()
	running := kind == model.WaitNone && strings.HasPrefix(last.Java.State, "RUNNABLE")
	cpu, cpuKnown := javaCPUDelta(h)
	switch {
	case moved:
		return ClassWorking, Why{Rule: WhyStackMoved}, model.WaitNone
	case running && n == 1:
		return ClassWorking, Why{Rule: WhyDumpRunning, N: 1, OnCPU: OnCPUJavaState}, model.WaitNone
	case running && cpuKnown && cpu == 0:
		// RUNNABLE with the same stack, but no CPU between the dumps: in
		// a native call that blocks (a read the table does not name).
		return ClassBlocked, Why{Rule: WhyBlocked, Kind: model.WaitSyscall, N: n}, model.WaitSyscall
	case running:
		w := Why{Rule: WhyDumpSpins, N: n, OnCPU: OnCPUJavaState}
		if cpuKnown {
			w.OnCPU, w.CPUMillis = OnCPUJavaCPU, cpu
		}
		return ClassSpinning, w, model.WaitNone
	case kind == model.WaitNone:
		// Not RUNNABLE, and no frame names the wait.
		kind = model.WaitOther
	}
	switch {
	case kind.Idle():
		return ClassIdle, Why{Rule: WhyParked, Kind: kind}, kind
	case n == 1:
		return ClassBlocked, Why{Rule: WhyBlockedOnce, Kind: kind}, kind
	}
	return ClassBlocked, Why{Rule: WhyBlocked, Kind: kind, N: n}, kind
}

// javaCPUDelta is the CPU a thread used between its first and last dumps,
// from cpu=; known only when both printed it.
func javaCPUDelta(h *history) (float64, bool) {
	if len(h.readings) < 2 {
		return 0, false
	}
	a, b := h.readings[0].Java, h.last().Java
	if a == nil || b == nil || a.CPUMillis == nil || b.CPUMillis == nil {
		return 0, false
	}
	return max(*b.CPUMillis-*a.CPUMillis, 0), true
}

// javaHold is a lock a thread holds, and what says so.
type javaHold struct {
	tid  int
	rule BasisRule
}

// javaLocks finds the monitors and j.u.c locks the threads of the last
// dump wait for, and their holders where the dump records them: a frame's
// "- locked <a>" (not one it waits on in Object.wait, which released it),
// a "Locked ownable synchronizers" entry, the JSON dump's owner, the
// JVM's own deadlock report.
// javaHeldBefore is the last sample with what earlier dumps showed each
// thread holding added to its lock lines: a monitor a thread held in a
// dump whose stack and state are the very ones of the last dump, in every
// dump since, it holds still (it leaves a synchronized block only by
// moving on; a wait() shows as "waiting on"). A dump can miss a "- locked"
// line that another of the same moment printed (JDK 17 did, once, for a
// thread blocked entering its second monitor): the held monitor is not
// dropped for that.
func javaHeldBefore(samples []model.Sample) model.Sample {
	last := samples[len(samples)-1]
	if len(samples) < 2 {
		return last
	}
	byTID := make(map[int]int, len(last.Threads))
	for i, t := range last.Threads {
		if t.Java != nil && !t.Exited {
			byTID[t.TID] = i
		}
	}
	out := last
	out.Threads = slices.Clone(last.Threads)
	still := map[int]bool{}
	for tid := range byTID {
		still[tid] = true
	}
	for k := len(samples) - 2; k >= 0 && len(still) > 0; k-- {
		in := make(map[int]bool, len(samples[k].Threads))
		for _, t := range samples[k].Threads {
			in[t.TID] = true
			i, ok := byTID[t.TID]
			if !ok || !still[t.TID] {
				continue
			}
			lt := &out.Threads[i]
			if t.Java == nil || t.Java.State != lt.Java.State || !slices.Equal(t.Stack, lt.Stack) {
				delete(still, t.TID) // it moved since: what it held then says nothing now
				continue
			}
			for _, l := range t.Java.Locks {
				if l.Kind != "locked" || l.Addr == "" || slices.ContainsFunc(lt.Java.Locks, func(m model.JavaLock) bool { return m.Addr == l.Addr }) {
					continue
				}
				jt := *lt.Java
				jt.Locks = append(slices.Clip(jt.Locks), l)
				lt.Java = &jt
			}
		}
		for tid := range still {
			if !in[tid] {
				delete(still, tid)
			}
		}
	}
	return out
}

func javaLocks(pid int, last model.Sample) []Lock {
	holds := map[string]javaHold{}
	byNumber := map[int64]int{}
	type waiter struct {
		tid     int
		obj     model.JavaObject
		ownable bool
		owner   int64 // a JSON dump's parkBlocker owner
	}
	var waiters []waiter
	type ownedBy struct {
		obj model.JavaObject
		tid int
	}
	var ownables []ownedBy
	for _, t := range last.Threads {
		jt := t.Java
		if jt == nil || t.Exited {
			continue
		}
		if jt.Number > 0 {
			byNumber[jt.Number] = t.TID
		}
		released := map[string]bool{}
		for _, l := range jt.Locks {
			if l.Kind == "waiting on" || l.Kind == "waiting to re-lock in wait()" {
				released[l.Addr] = true
			}
		}
		for _, l := range jt.Locks {
			if l.Kind == "locked" && l.Addr != "" && !released[l.Addr] {
				if _, ok := holds[l.Addr]; !ok {
					holds[l.Addr] = javaHold{t.TID, BasisJavaLocked}
				}
			}
		}
		for _, o := range jt.Ownable {
			holds[o.Addr] = javaHold{t.TID, BasisJavaOwnable}
			ownables = append(ownables, ownedBy{o, t.TID})
		}
		for _, l := range jt.Locks {
			switch {
			case l.Addr == "":
			case l.Kind == "waiting to lock" || l.Kind == "waiting to re-lock in wait()":
				waiters = append(waiters, waiter{tid: t.TID, obj: l.JavaObject})
			case l.Kind == "parking to wait for" && javaOwnable(l.Class):
				waiters = append(waiters, waiter{tid: t.TID, obj: l.JavaObject, ownable: true, owner: jt.BlockerOwner})
			default:
				continue
			}
			break
		}
	}
	// The JVM's own word: who holds what its deadlock's threads wait for.
	said := map[int]bool{}
	waiting := make(map[int]bool, len(waiters))
	for _, w := range waiters {
		waiting[w.tid] = true
	}
	for _, dl := range last.JavaDeadlocks {
		for _, l := range dl.Links {
			if l.TID == 0 {
				continue
			}
			said[l.TID] = true
			if l.HeldBy != 0 && l.Addr != "" {
				if _, ok := holds[l.Addr]; !ok {
					holds[l.Addr] = javaHold{l.HeldBy, BasisJVMDeadlock}
				}
			}
			if !waiting[l.TID] {
				waiting[l.TID] = true
				waiters = append(waiters, waiter{tid: l.TID, obj: l.JavaObject, ownable: l.Ownable})
			}
		}
	}
	index := map[string]int{}
	var locks []Lock
	for _, w := range waiters {
		i, ok := index[w.obj.Addr]
		if !ok {
			i = len(locks)
			index[w.obj.Addr] = i
			l := Lock{ID: "java:" + w.obj.Addr, Kind: LockMonitor, Address: javaObjectText(w.obj)}
			if w.ownable {
				l.Kind = LockJavaSync
			}
			h, held := holds[w.obj.Addr]
			if !held && w.owner > 0 {
				if tid, ok := byNumber[w.owner]; ok {
					h, held = javaHold{tid, BasisJavaOwner}, true
				}
			}
			l.Basis = Basis{Rule: BasisJavaNoOwner, Kind: BasisUnknown, Address: w.obj.Addr}
			if held {
				l.Holder = &Ref{PID: pid, TID: h.tid}
				l.Basis = Basis{Rule: h.rule, Kind: BasisExact, Owner: int64(h.tid), PID: pid, Address: w.obj.Addr}
			}
			if (last.StackSource == model.FormatJstack || last.StackSource == model.SourceSigquit) && w.ownable && !held && !ownableRead(last) {
				l.Basis.Rule = BasisJavaNoL
			}
			locks = append(locks, l)
		}
		l := &locks[i]
		l.Waiters = append(l.Waiters, Ref{PID: pid, TID: w.tid})
		l.Basis.Waiters = len(l.Waiters)
		if said[w.tid] {
			l.Basis.JVMSaid = true
		}
	}
	// A live JVM's virtual threads come from its JSON dump, which names a
	// synchronizer by identity hash; its platform threads' ownable
	// synchronizers come from the text dump, by address. Where one thread
	// alone holds a synchronizer of the waited one's class that nobody
	// else waits for, it is the holder: inferred.
	// Each pass is linear: the virtual threads are counted once, and the
	// unclaimed ownable synchronizers grouped by class once.
	virtual := map[int]bool{}
	for _, t := range last.Threads {
		if t.Java != nil && t.Java.Virtual {
			virtual[t.TID] = true
		}
	}
	holdersOf := map[string][]int{} // a class → the threads holding one nobody waits for
	for _, o := range ownables {
		// ownables are in thread order: a thread's own come together.
		h := holdersOf[o.obj.Class]
		if _, waited := index[o.obj.Addr]; !waited && (len(h) == 0 || h[len(h)-1] != o.tid) {
			holdersOf[o.obj.Class] = append(h, o.tid)
		}
	}
	for i := range locks {
		l := &locks[i]
		if l.Holder != nil || l.Kind != LockJavaSync || !strings.Contains(strings.TrimPrefix(l.ID, "java:"), "@") {
			continue
		}
		// A virtual thread that does not wait for it may hold it, and
		// the JSON dump lists no thread's synchronizers: then nothing
		// is inferred.
		waiting := 0
		for _, w := range l.Waiters {
			if virtual[w.TID] {
				waiting++
			}
		}
		if waiting < len(virtual) {
			continue
		}
		class, _, _ := strings.Cut(strings.TrimPrefix(l.ID, "java:"), "@")
		if who := holdersOf[class]; len(who) == 1 {
			l.Holder = &Ref{PID: pid, TID: who[0]}
			l.Basis = Basis{Rule: BasisJavaSameClass, Kind: BasisInferred, Owner: int64(who[0]), PID: pid, Address: class, Waiters: len(l.Waiters)}
		}
	}
	slices.SortStableFunc(locks, func(a, b Lock) int { return cmp.Compare(len(b.Waiters), len(a.Waiters)) })
	return locks
}

// ownableRead reports a dump that printed the "Locked ownable
// synchronizers" sections (jstack -l, jcmd Thread.print -l).
func ownableRead(s model.Sample) bool {
	return slices.ContainsFunc(s.Threads, func(t model.Thread) bool { return t.Java != nil && t.Java.OwnableRead })
}

// javaOwnable reports the class of a synchronizer that records its owner
// (an AbstractOwnableSynchronizer held exclusively): a ReentrantLock's,
// a ReentrantReadWriteLock's.
func javaOwnable(class string) bool {
	return strings.Contains(class, "ReentrantLock$") || strings.Contains(class, "ReentrantReadWriteLock$")
}

// javaObjectText names an object as the dump does: "<0x…> (a java.lang.Object)".
func javaObjectText(o model.JavaObject) string {
	if o.Class == "" || strings.HasPrefix(o.Addr, o.Class+"@") {
		return o.Addr
	}
	return o.Addr + " (a " + o.Class + ")"
}

// javaRuntimeDeadlock reports that the JVM itself found a deadlock in the
// last dump.
func javaRuntimeDeadlock(s model.Sample) bool { return len(s.JavaDeadlocks) > 0 }

// GCPressure is what a live JVM's own counters (hsperfdata) say of its
// garbage collector over the run.
type GCPressure struct {
	// Percent is the share of the run's wall time the collectors' pauses
	// took; Seconds the wall time between the first and last reading.
	Percent float64
	Seconds float64
	// GCs is how many collections ran during the run.
	GCs int64
	// HeapUsed and HeapMax are the heap at the last reading, bytes.
	HeapUsed, HeapMax int64
	// SafepointPercent is the share of the run in safepoints (GC's and
	// others': thread dumps, deoptimisation, biased-lock revocation).
	SafepointPercent float64
}

// gcThrash is the share of the run in GC pauses from which a JVM is said
// to be thrashing: more time collecting than running the program.
const gcThrash = 50

// Significant reports a JVM that spent most of the run in GC.
func (g *GCPressure) Significant() bool { return g != nil && g.Percent >= gcThrash }

// gcPressure reads the run's GC share from the JVM counters of its first
// and last samples that have them; nil with fewer than two.
func gcPressure(samples []model.Sample) *GCPressure {
	first, last := -1, -1
	for i, s := range samples {
		if s.JVM != nil && s.JVM.TickHz > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || last == first {
		return nil
	}
	a, b := samples[first].JVM, samples[last].JVM
	wall := samples[last].Time.Sub(samples[first].Time).Seconds()
	if wall <= 0 || a.TickHz != b.TickHz || b.GCTicks < a.GCTicks {
		return nil
	}
	hz := float64(b.TickHz)
	g := &GCPressure{
		Seconds:  wall,
		Percent:  min(100, 100*float64(b.GCTicks-a.GCTicks)/hz/wall),
		GCs:      b.GCCount - a.GCCount,
		HeapUsed: b.HeapUsed, HeapMax: b.HeapMax,
	}
	if b.SafepointTicks >= a.SafepointTicks {
		g.SafepointPercent = min(100, 100*float64(b.SafepointTicks-a.SafepointTicks)/hz/wall)
	}
	return g
}
