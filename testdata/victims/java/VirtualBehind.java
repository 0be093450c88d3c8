import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

// VirtualBehind (JDK 21+): a platform thread ("holder") takes a
// ReentrantLock and sleeps for good; five virtual threads ("virtual-N")
// wait for the lock. Prints "ready" once all five are queued.
public class VirtualBehind {
    static final ReentrantLock lock = new ReentrantLock();

    public static void main(String[] args) throws Exception {
        Thread holder = new Thread(() -> {
            Victim.mark("holder");
            lock.lock();
            try {
                Victim.forever();
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            } finally {
                lock.unlock();
            }
        }, "holder");
        holder.setDaemon(true);
        holder.start();
        Victim.until(lock::isLocked);
        List<Thread> vs = new ArrayList<>();
        for (int i = 1; i <= 5; i++) {
            vs.add(Thread.ofVirtual().name("virtual-" + i).start(() -> {
                lock.lock();
                lock.unlock();
            }));
        }
        Victim.until(() -> lock.getQueueLength() == 5);
        Victim.ready();
        vs.get(0).join();
    }
}
