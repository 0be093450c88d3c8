// SyncAbba: two threads take two monitors in opposite orders (synchronized
// ABBA). Prints "ready" once both are BLOCKED on the other's monitor;
// main then joins the first, forever.
public class SyncAbba {
    static final Object a = new Object(), b = new Object();

    public static void main(String[] args) throws Exception {
        java.util.concurrent.CyclicBarrier both = new java.util.concurrent.CyclicBarrier(2);
        Thread t1 = new Thread(() -> {
            Victim.mark("first");
            take(a, b, both);
        }, "abba-1");
        Thread t2 = new Thread(() -> {
            Victim.mark("second");
            take(b, a, both);
        }, "abba-2");
        t1.start();
        t2.start();
        Victim.until(() -> t1.getState() == Thread.State.BLOCKED && t2.getState() == Thread.State.BLOCKED);
        Victim.ready();
        t1.join();
    }

    static void take(Object first, Object second, java.util.concurrent.CyclicBarrier both) {
        synchronized (first) {
            try {
                both.await();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
            synchronized (second) {
                System.out.println("never");
            }
        }
    }
}
