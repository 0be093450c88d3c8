import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

// LockOnSocket: a thread ("holder") takes a ReentrantLock and reads a
// socket whose server, another process, never writes; three "waiter-N"
// threads wait for the lock. "LockOnSocket serve" is that mute server: it
// prints its port, accepts, never writes, and exits when its stdin ends
// (its parent died). Prints "ready" once the holder is in its read and
// the waiters are queued.
public class LockOnSocket {
    static final ReentrantLock lock = new ReentrantLock();

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("serve")) {
            serve();
            return;
        }
        String java = System.getProperty("java.home") + "/bin/java";
        Process server = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "LockOnSocket", "serve")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        int port = Integer.parseInt(new BufferedReader(new InputStreamReader(server.getInputStream())).readLine().trim());
        Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
        Thread holder = new Thread(() -> {
            Victim.mark("holder");
            lock.lock();
            try {
                InputStream in = s.getInputStream();
                in.read();
            } catch (Exception e) {
                throw new RuntimeException(e);
            } finally {
                lock.unlock();
            }
        }, "holder");
        holder.start();
        Victim.until(() -> lock.isLocked());
        List<Thread> waiters = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            Thread w = new Thread(() -> {
                lock.lock();
                lock.unlock();
            }, "waiter-" + i);
            w.start();
            waiters.add(w);
        }
        Victim.until(() -> lock.getQueueLength() == 3 && Victim.inNative(holder, "read"));
        Victim.ready();
        holder.join();
    }

    static void serve() throws Exception {
        ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        System.out.println(ss.getLocalPort());
        System.out.flush();
        List<Socket> kept = new ArrayList<>();
        Thread acceptor = new Thread(() -> {
            try {
                while (true) {
                    kept.add(ss.accept());
                }
            } catch (Exception e) {
                // the server is closing
            }
        }, "mute-server");
        acceptor.setDaemon(true);
        acceptor.start();
        while (System.in.read() >= 0) {
        }
        System.exit(0);
    }
}
