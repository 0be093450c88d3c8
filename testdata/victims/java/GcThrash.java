import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

// GcThrash: a "worker" thread keeps nearly all of a small heap live (run it
// with -Xmx32m) while it allocates, so each collection frees almost nothing
// and the next comes at once: the JVM spends most of its time in GC pauses.
// Working, but hardly at all. Prints "ready" once the collectors took more
// than half of a second of wall time.
public class GcThrash {
    static volatile Object sink;

    public static void main(String[] args) throws Exception {
        Thread worker = new Thread(GcThrash::thrash, "worker");
        worker.setDaemon(true);
        worker.start();
        long before = gcMillis();
        long since = System.nanoTime();
        while (true) {
            Thread.sleep(500);
            long now = gcMillis(), at = System.nanoTime();
            if ((now - before) * 1_000_000L * 2 > at - since) {
                break;
            }
            before = now;
            since = at;
        }
        Victim.ready();
        worker.join();
    }

    static long gcMillis() {
        long ms = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            ms += Math.max(0, gc.getCollectionTime());
        }
        return ms;
    }

    static void thrash() {
        Victim.mark("worker");
        List<byte[]> live = new ArrayList<>();
        long max = Runtime.getRuntime().maxMemory();
        try {
            while (live.size() * 1024L < max * 85 / 100) {
                live.add(new byte[1024]);
            }
        } catch (OutOfMemoryError e) {
            live.subList(0, live.size() / 10).clear();
        }
        int i = 0;
        while (true) {
            try {
                sink = new byte[4096];
                live.set(i++ % live.size(), new byte[1024]);
            } catch (OutOfMemoryError e) {
                live.remove(live.size() - 1);
            }
        }
    }
}
