import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.locks.ReentrantLock;

// LockAbba: two threads take two ReentrantLocks in opposite orders. Prints
// "ready" once each waits for the lock the other holds.
public class LockAbba {
    static final ReentrantLock a = new ReentrantLock(), b = new ReentrantLock();

    public static void main(String[] args) throws Exception {
        CyclicBarrier both = new CyclicBarrier(2);
        Thread t1 = new Thread(() -> {
            Victim.mark("first");
            take(a, b, both);
        }, "lock-abba-1");
        Thread t2 = new Thread(() -> {
            Victim.mark("second");
            take(b, a, both);
        }, "lock-abba-2");
        t1.start();
        t2.start();
        Victim.until(() -> a.hasQueuedThread(t2) && b.hasQueuedThread(t1));
        Victim.ready();
        t1.join();
    }

    static void take(ReentrantLock first, ReentrantLock second, CyclicBarrier both) {
        first.lock();
        try {
            both.await();
            second.lock();
            second.unlock();
        } catch (Exception e) {
            throw new RuntimeException(e);
        } finally {
            first.unlock();
        }
    }
}
