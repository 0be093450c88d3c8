package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
)

// JstackDump returns a jstack -l dump of a JDK 17 server with n Java
// threads, as jstack prints it: a timestamp, the "Full thread dump"
// header, each thread's header (#N, prio, cpu=, elapsed=, tid=, hex
// nid=), its state, frames, lock lines and ownable synchronizers, then
// the JVM's own threads and the JNI refs. The same n always gives the
// same bytes.
//
// The threads are a server's shapes: a request pool, a tenth of it
// BLOCKED on one monitor a thread holds while it reads a socket, a tenth
// parked on a ReentrantLock another owns, idle pool workers in
// LinkedBlockingQueue.take, sleepers, socket readers, schedulers, and a
// few RUNNABLE ones computing.
func JstackDump(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 0x4a617661))
	var b bytes.Buffer
	b.Grow(n * 2200)
	b.WriteString("2026-12-05 01:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing):\n\n")
	b.WriteString("Threads class SMR info:\n_java_thread_list=0x00007f0000001000, length=1, elements={\n0x00007f0000002000\n}\n\n")
	const monitor, sync = "0x00000000c0001000", "0x00000000c0002000"
	nid := 1000
	header := func(name string, num int, daemon bool, status, state string) {
		nid++
		d := ""
		if daemon {
			d = " daemon"
		}
		fmt.Fprintf(&b, "\"%s\" #%d%s prio=5 os_prio=0 cpu=%.2fms elapsed=%.2fs tid=0x00007f%010x nid=0x%x %s  [0x00007f%010x]\n   java.lang.Thread.State: %s\n",
			name, num, d, r.Float64()*5000, 3600+r.Float64()*100, 0x1000+num*0x800, nid, status, 0x2000+num*0x1000, state)
	}
	at := func(fs ...string) {
		for _, f := range fs {
			fmt.Fprintf(&b, "\tat %s\n", f)
		}
	}
	obj := func(kind, addr, class string) { fmt.Fprintf(&b, "\t- %s <%s> (a %s)\n", kind, addr, class) }
	ownable := func(addrs ...string) {
		b.WriteString("\n   Locked ownable synchronizers:\n")
		if len(addrs) == 0 {
			b.WriteString("\t- None\n")
		}
		for _, a := range addrs {
			fmt.Fprintf(&b, "\t- <%s> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)\n", a)
		}
		b.WriteString("\n")
	}
	request := []string{
		"com.shop.web.OrderController.place(OrderController.java:88)",
		"com.shop.web.Dispatcher.handle(Dispatcher.java:212)",
		"org.eclipse.jetty.server.handler.HandlerWrapper.handle(HandlerWrapper.java:127)",
		"org.eclipse.jetty.server.Server.handle(Server.java:516)",
		"org.eclipse.jetty.server.HttpChannel.handle(HttpChannel.java:487)",
		"org.eclipse.jetty.io.AbstractConnection$ReadCallback.succeeded(AbstractConnection.java:311)",
		"org.eclipse.jetty.util.thread.QueuedThreadPool.runJob(QueuedThreadPool.java:883)",
		"org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run(QueuedThreadPool.java:1034)",
		"java.lang.Thread.run(java.base@17.0.15/Thread.java:840)",
	}
	num := 10
	// The monitor's holder, reading a socket while it holds it; the lock's
	// owner, asleep.
	num++
	header("qtp-holder", num, false, "runnable", "RUNNABLE")
	at("sun.nio.ch.SocketDispatcher.read0(java.base@17.0.15/Native Method)",
		"sun.nio.ch.SocketDispatcher.read(java.base@17.0.15/SocketDispatcher.java:47)",
		"sun.nio.ch.NioSocketImpl.tryRead(java.base@17.0.15/NioSocketImpl.java:261)",
		"sun.nio.ch.NioSocketImpl.read(java.base@17.0.15/NioSocketImpl.java:323)",
		"java.net.Socket$SocketInputStream.read(java.base@17.0.15/Socket.java:966)",
		"com.shop.inventory.Client.reserve(Client.java:57)")
	obj("locked", monitor, "com.shop.inventory.Client")
	at(request...)
	ownable()
	num++
	header("ledger-owner", num, false, "waiting on condition", "TIMED_WAITING (sleeping)")
	at("java.lang.Thread.sleep(java.base@17.0.15/Native Method)", "com.shop.ledger.Ledger.flush(Ledger.java:140)")
	at(request...)
	ownable(sync)
	for i := 2; i < n; i++ {
		num++
		switch k := r.IntN(100); {
		case k < 10:
			header(fmt.Sprintf("qtp-%d", num), num, false, "waiting for monitor entry", "BLOCKED (on object monitor)")
			at("com.shop.inventory.Client.reserve(Client.java:51)")
			obj("waiting to lock", monitor, "com.shop.inventory.Client")
			at(request...)
			ownable()
		case k < 20:
			header(fmt.Sprintf("qtp-%d", num), num, false, "waiting on condition", "WAITING (parking)")
			at("jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)")
			obj("parking to wait for ", sync, "java.util.concurrent.locks.ReentrantLock$NonfairSync")
			at("java.util.concurrent.locks.LockSupport.park(java.base@17.0.15/LockSupport.java:211)",
				"java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire(java.base@17.0.15/AbstractQueuedSynchronizer.java:715)",
				"java.util.concurrent.locks.ReentrantLock.lock(java.base@17.0.15/ReentrantLock.java:322)",
				"com.shop.ledger.Ledger.append(Ledger.java:77)")
			at(request...)
			ownable()
		case k < 60:
			header(fmt.Sprintf("pool-1-thread-%d", num), num, false, "waiting on condition", "WAITING (parking)")
			at("jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)")
			obj("parking to wait for ", fmt.Sprintf("0x00000000d%07x", i%16), "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject")
			at("java.util.concurrent.locks.LockSupport.park(java.base@17.0.15/LockSupport.java:341)",
				"java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await(java.base@17.0.15/AbstractQueuedSynchronizer.java:1623)",
				"java.util.concurrent.LinkedBlockingQueue.take(java.base@17.0.15/LinkedBlockingQueue.java:435)",
				"java.util.concurrent.ThreadPoolExecutor.getTask(java.base@17.0.15/ThreadPoolExecutor.java:1062)",
				"java.util.concurrent.ThreadPoolExecutor.runWorker(java.base@17.0.15/ThreadPoolExecutor.java:1122)",
				"java.util.concurrent.ThreadPoolExecutor$Worker.run(java.base@17.0.15/ThreadPoolExecutor.java:635)",
				"java.lang.Thread.run(java.base@17.0.15/Thread.java:840)")
			ownable()
		case k < 75:
			header(fmt.Sprintf("poller-%d", num), num, true, "waiting on condition", "TIMED_WAITING (sleeping)")
			at("java.lang.Thread.sleep(java.base@17.0.15/Native Method)",
				fmt.Sprintf("com.shop.jobs.Poller%d.loop(Poller%d.java:%d)", i%40, i%40, 20+i%7),
				"java.lang.Thread.run(java.base@17.0.15/Thread.java:840)")
			ownable()
		case k < 95:
			header(fmt.Sprintf("conn-%d", num), num, true, "runnable", "RUNNABLE")
			at("sun.nio.ch.SocketDispatcher.read0(java.base@17.0.15/Native Method)",
				"sun.nio.ch.SocketDispatcher.read(java.base@17.0.15/SocketDispatcher.java:47)",
				"sun.nio.ch.NioSocketImpl.read(java.base@17.0.15/NioSocketImpl.java:323)",
				"java.net.Socket$SocketInputStream.read(java.base@17.0.15/Socket.java:966)",
				"java.io.BufferedInputStream.fill(java.base@17.0.15/BufferedInputStream.java:244)",
				"java.io.BufferedInputStream.read(java.base@17.0.15/BufferedInputStream.java:263)",
				fmt.Sprintf("com.shop.db.Wire.readPacket(Wire.java:%d)", 100+i%50),
				"com.shop.db.Session.run(Session.java:64)",
				"java.lang.Thread.run(java.base@17.0.15/Thread.java:840)")
			ownable()
		default:
			header(fmt.Sprintf("worker-%d", num), num, false, "runnable", "RUNNABLE")
			at(fmt.Sprintf("com.shop.pricing.Model.score(Model.java:%d)", 300+r.IntN(40)),
				"com.shop.pricing.Model.rank(Model.java:212)",
				"com.shop.pricing.Batch.run(Batch.java:55)",
				"java.lang.Thread.run(java.base@17.0.15/Thread.java:840)")
			ownable()
		}
	}
	for _, name := range []string{"VM Thread", "GC Thread#0", "GC Thread#1", "G1 Main Marker", "G1 Conc#0", "G1 Refine#0", "G1 Service", "VM Periodic Task Thread"} {
		nid++
		fmt.Fprintf(&b, "\"%s\" os_prio=0 cpu=%.2fms elapsed=3700.00s tid=0x00007f00000%05x nid=0x%x runnable  \n\n", name, r.Float64()*9000, nid, nid)
	}
	b.WriteString("JNI global refs: 42, weak refs: 0\n\n")
	return b.Bytes()
}
