// SpinHolder: a thread ("spinner") spins forever inside a synchronized
// block; two "waiter-N" threads are BLOCKED on its monitor. Prints "ready"
// once both are.
public class SpinHolder {
    static final Object lock = new Object();
    static volatile long spins;

    public static void main(String[] args) throws Exception {
        Thread spinner = new Thread(() -> {
            Victim.mark("spinner");
            synchronized (lock) {
                while (true) {
                    spins++;
                }
            }
        }, "spinner");
        spinner.setDaemon(true);
        spinner.start();
        Victim.until(() -> spins > 0);
        Thread w1 = new Thread(SpinHolder::take, "waiter-1");
        Thread w2 = new Thread(SpinHolder::take, "waiter-2");
        w1.start();
        w2.start();
        Victim.until(() -> w1.getState() == Thread.State.BLOCKED && w2.getState() == Thread.State.BLOCKED);
        Victim.ready();
        w1.join();
    }

    static void take() {
        synchronized (lock) {
            System.out.println("never");
        }
    }
}
