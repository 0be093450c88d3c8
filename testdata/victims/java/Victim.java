import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;

// Victim: what every victim shares: its threads note their Linux tids
// (mark), it waits for the hang (until), then prints one line,
// "ready pid=P key=TID ...", naming its threads by their tids.
final class Victim {
    private Victim() {}

    private static final Map<String, String> tids = new TreeMap<>();

    // mark records the calling thread's Linux tid under key (lowercase
    // letters only), from /proc/thread-self ("PID/task/TID").
    static void mark(String key) {
        String tid;
        try {
            String self = Files.readSymbolicLink(Paths.get("/proc/thread-self")).toString();
            tid = self.substring(self.lastIndexOf('/') + 1);
        } catch (Exception e) {
            tid = "0";
        }
        synchronized (tids) {
            tids.put(key, tid);
        }
    }

    // until polls cond every 10 ms: the victims' hangs take a moment to form.
    static void until(BooleanSupplier cond) throws InterruptedException {
        while (!cond.getAsBoolean()) {
            Thread.sleep(10);
        }
    }

    static void ready() {
        StringBuilder b = new StringBuilder("ready pid=").append(ProcessHandle.current().pid());
        synchronized (tids) {
            for (Map.Entry<String, String> e : tids.entrySet()) {
                b.append(' ').append(e.getKey()).append('=').append(e.getValue());
            }
        }
        System.out.println(b);
        System.out.flush();
    }

    // forever parks the caller for good, idle.
    static void forever() throws InterruptedException {
        while (true) {
            Thread.sleep(Long.MAX_VALUE);
        }
    }

    // inNative reports a thread whose innermost frame is a native method
    // (a socket read, an accept): it has entered the call that blocks.
    static boolean inNative(Thread t, String method) {
        StackTraceElement[] st = t.getStackTrace();
        for (StackTraceElement e : st) {
            if (e.getMethodName().contains(method)) {
                return st.length > 0 && st[0].isNativeMethod();
            }
        }
        return false;
    }
}
