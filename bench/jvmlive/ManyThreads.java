import java.util.concurrent.CountDownLatch;

// ManyThreads N: N platform threads parked on one latch that never opens,
// a server's worth of idle Java threads. Prints "ready pid=P" once all
// are parked.
public class ManyThreads {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        CountDownLatch never = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            Thread t = new Thread(() -> {
                started.countDown();
                try {
                    never.await();
                } catch (InterruptedException e) {
                }
            }, "worker-" + i);
            t.setDaemon(true);
            t.start();
        }
        started.await();
        Thread.sleep(200);
        System.out.println("ready pid=" + ProcessHandle.current().pid());
        System.out.flush();
        never.await();
    }
}
