import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;

// SemaphorePool: a pool of two connections bounded by a Semaphore. Two
// "holder-N" threads took both permits and read sockets a mute server
// (a "mute-server" thread that accepts and never writes) leaves silent;
// three "client-N" threads wait for a permit. Prints "ready" once they do.
public class SemaphorePool {
    static final Semaphore pool = new Semaphore(2);

    public static void main(String[] args) throws Exception {
        ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        List<Socket> kept = new ArrayList<>();
        Thread server = new Thread(() -> {
            try {
                while (true) {
                    kept.add(ss.accept());
                }
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "mute-server");
        server.setDaemon(true);
        server.start();
        Thread[] holders = new Thread[2];
        for (int i = 0; i < holders.length; i++) {
            String key = i == 0 ? "holdera" : "holderb";
            holders[i] = new Thread(() -> {
                Victim.mark(key);
                try {
                    pool.acquire();
                    Socket s = new Socket(InetAddress.getLoopbackAddress(), ss.getLocalPort());
                    InputStream in = s.getInputStream();
                    in.read();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "holder-" + (i + 1));
            holders[i].start();
        }
        Victim.until(() -> pool.availablePermits() == 0 && Victim.inNative(holders[0], "read") && Victim.inNative(holders[1], "read"));
        for (int i = 1; i <= 3; i++) {
            new Thread(() -> {
                try {
                    pool.acquire();
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, "client-" + i).start();
        }
        Victim.until(() -> pool.getQueueLength() == 3);
        Victim.ready();
        holders[0].join();
    }
}
