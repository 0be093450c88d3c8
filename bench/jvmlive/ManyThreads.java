// ManyThreads N: N platform threads shaped as a server's: each waits on a
// connection object of its own (Object.wait, its monitor released), at
// one of 16 call depths, so that no two threads' dump entries read alike
// (the addresses differ) and few share a stack. Prints "ready pid=P" once
// all are waiting.
public class ManyThreads {
    static void serve(Object conn, int depth) throws InterruptedException {
        if (depth > 0) {
            serve(conn, depth - 1);
            return;
        }
        synchronized (conn) {
            conn.wait();
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int depth = i % 16;
            ts[i] = new Thread(() -> {
                try {
                    serve(new Object(), depth);
                } catch (InterruptedException e) {
                }
            }, "conn-" + i);
            ts[i].setDaemon(true);
            ts[i].start();
        }
        for (Thread t : ts) {
            while (t.getState() != Thread.State.WAITING) {
                Thread.sleep(1);
            }
        }
        System.out.println("ready pid=" + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
