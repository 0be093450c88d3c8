import java.util.concurrent.CompletableFuture;

// FutureNever: three "client-N" threads and main join a CompletableFuture
// that nothing will ever complete. Prints "ready" once the clients wait.
public class FutureNever {
    public static void main(String[] args) throws Exception {
        CompletableFuture<String> never = new CompletableFuture<>();
        Thread[] clients = new Thread[3];
        for (int i = 0; i < clients.length; i++) {
            clients[i] = new Thread(never::join, "client-" + (i + 1));
            clients[i].start();
        }
        Victim.until(() -> {
            for (Thread c : clients) {
                if (c.getState() != Thread.State.WAITING) {
                    return false;
                }
            }
            return never.getNumberOfDependents() == clients.length;
        });
        Victim.mark("main");
        Victim.ready();
        never.join();
    }
}
