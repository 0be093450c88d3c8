import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

// IdlePool: a ThreadPoolExecutor of four workers with nothing to do, and a
// main thread asleep: idle. Prints "ready" once every worker waits for a task.
public class IdlePool {
    public static void main(String[] args) throws Exception {
        ThreadPoolExecutor pool = new ThreadPoolExecutor(4, 4, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>());
        pool.prestartAllCoreThreads();
        pool.submit(() -> {});
        Victim.until(() -> pool.getCompletedTaskCount() == 1 && pool.getActiveCount() == 0);
        Victim.mark("main");
        Victim.ready();
        Victim.forever();
    }
}
