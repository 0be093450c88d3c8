package killtrial

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/harmcheck"
	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler/delve"
)

var (
	buildOnce sync.Once
	hangdoc   string
	buildErr  error
)

// hangdocBinary builds ./cmd/hangdoc (this worktree's) once, unless
// HANGDOC_KILLTRIAL_BINARY names a hangdoc to try instead (an older one, to
// measure what it did).
func hangdocBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if bin := os.Getenv("HANGDOC_KILLTRIAL_BINARY"); bin != "" {
			hangdoc = bin
			return
		}
		root, err := testvictim.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "hangdoc-killtrial-")
		if err != nil {
			buildErr = err
			return
		}
		hangdoc = filepath.Join(dir, "hangdoc")
		cmd := exec.Command("go", "build", "-o", hangdoc, "./cmd/hangdoc")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/hangdoc: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return hangdoc
}

// trials is how many delay (and, for py-spy, traced) trials a test runs.
func trials(def int) int {
	if n, err := strconv.Atoi(os.Getenv("HANGDOC_KILL_TRIALS")); err == nil && n > 0 {
		return n
	}
	return def
}

// delveArgs make hangdoc read a Go target through Delve, which stops it:
// by default it reads the goroutines from memory and never stops it.
var delveArgs = []string{"--source", "delve"}

// pySpyArgs ask for py-spy, which pauses a Python target: the memory
// reader, which comes first, never does.
var pySpyArgs = []string{"--source", "py-spy"}

// run is one hangdoc run on pid (with args), killed when kill (given hangdoc's stderr
// lines as they come) returns; it returns what hangdoc said.
func run(t *testing.T, pid int, env, args []string, kill func(h *os.Process, lines <-chan string)) string {
	t.Helper()
	cmd := exec.Command(hangdocBinary(t), append([]string{strconv.Itoa(pid), "--json", "--samples", "5", "--interval", "100ms", "--timeout", "2m"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	var said strings.Builder
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			said.WriteString(sc.Text() + "\n")
			mu.Unlock()
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	kill(cmd.Process, lines)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	return said.String()
}

// wantUnharmed waits for the target's tracer (py-spy, which dies of its
// parent-death signal after hangdoc) to be gone, then checks the target.
func wantUnharmed(t *testing.T, pid int, beat, what, said string) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); harmcheck.TracerPid(pid) != 0; {
		if time.Now().After(end) {
			break // harmcheck reports it
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := harmcheck.Check(pid, beat); err != nil {
		t.Fatalf("hangdoc killed %s: %v\nhangdoc said:\n%s", what, err, said)
	}
	// Nor may a py-spy of hangdoc's outlive it.
	for end := time.Now().Add(20 * time.Second); ; {
		left := pySpies(pid)
		if len(left) == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("hangdoc killed %s: py-spy left running: %v", what, left)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// pySpies lists the living processes whose command line is a py-spy dump
// of pid.
func pySpies(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 3 && strings.HasSuffix(args[0], "py-spy") && strings.Contains(string(b), "--pid\x00"+strconv.Itoa(pid)+"\x00") {
			if st := harmcheck.State(p); st != "Z" && st != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestKillDuringDelve: hangdoc killed at each point of a Delve stop
// (order-based: a test hook announces the point and waits there), then at
// delays spread over its first samples and stops.
func TestKillDuringDelve(t *testing.T) {
	start := func(t *testing.T) (*testvictim.Victim, string) {
		beat := filepath.Join(t.TempDir(), "beat")
		return testvictim.Start(t, testvictim.BuildGo(t, "goheartbeat"), "-beat", beat, "-idle", "1000"), beat
	}
	shared, sharedBeat := start(t)
	victim := func(t *testing.T) (*testvictim.Victim, string) {
		if fresh() {
			return start(t)
		}
		return shared, sharedBeat
	}
	for i := range trials(1) {
		for _, point := range []string{"opened", "seized", "stopped", "read", "detached"} {
			t.Run(fmt.Sprintf("%s%d", point, i), func(t *testing.T) { killAt(t, point, victim) })
		}
	}
	for i := range trials(6) {
		// Spread over loading the DWARF and the first stops: about the
		// first second and a half of a run here.
		d := time.Duration(rand.Int64N(int64(1500 * time.Millisecond)))
		t.Run(fmt.Sprintf("delay%d", i), func(t *testing.T) {
			v, beat := victim(t)
			said := run(t, v.PID, nil, delveArgs, func(*os.Process, <-chan string) { time.Sleep(d) })
			wantUnharmed(t, v.PID, beat, fmt.Sprintf("after %v", d), said)
		})
	}
}

// fresh: HANGDOC_KILLTRIAL_FRESH=1 gives each trial a victim of its own, so
// that one harmed by a trial (an older hangdoc, measured) does not fail
// the ones after it.
func fresh() bool { return os.Getenv("HANGDOC_KILLTRIAL_FRESH") != "" }

// TestKillDuringPySpy: hangdoc killed while py-spy has the Python target
// paused (order-based: the kill follows the target's TracerPid turning to
// py-spy's), then at spread delays.
func TestKillDuringPySpy(t *testing.T) {
	if _, err := exec.LookPath("py-spy"); err != nil {
		t.Fatalf("py-spy not found: install it with `pip install py-spy`")
	}
	start := func(t *testing.T) (*testvictim.Victim, string) {
		beat := filepath.Join(t.TempDir(), "beat")
		return testvictim.StartPython(t, "py_heartbeat.py", beat), beat
	}
	shared, sharedBeat := start(t)
	victim := func(t *testing.T) (*testvictim.Victim, string) {
		if fresh() {
			return start(t)
		}
		return shared, sharedBeat
	}
	n := trials(4)
	for i := range n {
		t.Run(fmt.Sprintf("traced%d", i), func(t *testing.T) {
			v, beat := victim(t)
			caught := false
			said := run(t, v.PID, nil, pySpyArgs, func(h *os.Process, lines <-chan string) {
				// Until py-spy is the target's tracer, or hangdoc is
				// done (then the trial missed: said below).
				exited := make(chan struct{})
				go func() {
					for range lines {
					}
					close(exited)
				}()
				for {
					if harmcheck.TracerPid(v.PID) > 0 {
						caught = true
						return
					}
					select {
					case <-exited:
						return
					default:
					}
				}
			})
			if !caught {
				t.Fatalf("hangdoc finished before py-spy was seen tracing the target:\n%s", said)
			}
			wantUnharmed(t, v.PID, beat, "while py-spy traced the target", said)
		})
	}
	for i := range n {
		d := time.Duration(rand.Int64N(int64(1500 * time.Millisecond)))
		t.Run(fmt.Sprintf("delay%d", i), func(t *testing.T) {
			v, beat := victim(t)
			said := run(t, v.PID, nil, pySpyArgs, func(*os.Process, <-chan string) { time.Sleep(d) })
			wantUnharmed(t, v.PID, beat, fmt.Sprintf("after %v", d), said)
		})
	}
}

// killAt kills hangdoc at point of its first Delve stop: the test hook
// announces the point on stderr and waits there, and the kill follows the
// line, so it lands there however fast or slow the machine.
func killAt(t *testing.T, point string, victim func(*testing.T) (*testvictim.Victim, string)) {
	v, beat := victim(t)
	said := run(t, v.PID, []string{delve.TestHookEnv + "=" + point}, delveArgs, func(_ *os.Process, lines <-chan string) {
		for l := range lines {
			if strings.HasPrefix(l, "hangdoc-test-hook: "+point) {
				return
			}
		}
	})
	if !strings.Contains(said, "hangdoc-test-hook: "+point) {
		t.Fatalf("hangdoc never reached %s:\n%s", point, said)
	}
	wantUnharmed(t, v.PID, beat, "at "+point, said)
}
