import java.io.File;
import java.nio.file.Files;
import java.nio.file.Paths;

// WaitForChild: main starts a child process (a shell that writes to its
// stdout forever) with its stdout piped back, never reads the pipe, and
// waits in Process.waitFor(): the child blocks writing to the full pipe,
// the parent waits for a child that cannot finish. Prints "ready" once the
// child is blocked in a write.
public class WaitForChild {
    public static void main(String[] args) throws Exception {
        Victim.mark("main");
        Process child = new ProcessBuilder("sh", "-c", "while :; do echo 0123456789abcdef0123456789abcdef; done")
                .redirectErrorStream(true).start();
        long pid = child.pid();
        // The child fills the pipe (64 KiB) at once, then blocks in write.
        Victim.until(() -> blockedWriting(pid));
        System.out.println("ready pid=" + ProcessHandle.current().pid() + " main=" + tidOfMain() + " child=" + pid);
        System.out.flush();
        child.waitFor();
    }

    static String tidOfMain() {
        try {
            String self = Files.readSymbolicLink(Paths.get("/proc/thread-self")).toString();
            return self.substring(self.lastIndexOf('/') + 1);
        } catch (Exception e) {
            return "0";
        }
    }

    static boolean blockedWriting(long pid) {
        try {
            String s = new String(Files.readAllBytes(Paths.get("/proc/" + pid + "/syscall"))).trim();
            return s.startsWith("1 ") && new File("/proc/" + pid).exists();
        } catch (Exception e) {
            return false;
        }
    }
}
