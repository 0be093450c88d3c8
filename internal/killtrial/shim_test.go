package killtrial

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/harmcheck"
	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// TestKillWithPySpyShim (issue 21, item 6): a py-spy reached through a
// version manager's shim must not outlive a hangdoc killed with SIGKILL.
// The test makes a pyenv-like root of its own: a shim that runs the
// "real" py-spy as its child (as a shim that does not exec does), and a
// fake py-spy that never finishes its dump. hangdoc resolves the shim to
// the binary and runs that itself, with its parent-death signal; run
// through the shim, the binary would be the shim's child, with none, and
// live on. Each trial waits for the fake py-spy to run before the kill,
// and gives the kernel a generous deadline to end it after.
func TestKillWithPySpyShim(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "versions", "3.99", "bin", "py-spy")
	shim := filepath.Join(root, "shims", "py-spy")
	for _, f := range []struct{ path, text string }{
		// Dumps nothing and never ends, like a py-spy stuck on its target.
		{real, "#!/bin/sh\nwhile :; do sleep 1; done\n"},
		// pyenv's shim's layout, but running the binary as its child.
		{shim, fmt.Sprintf("#!/bin/sh\nexport PYENV_ROOT=%q\n%q \"$@\"\n", root, real)},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	beat := filepath.Join(t.TempDir(), "beat")
	v := testvictim.StartPython(t, "py_heartbeat.py", beat)
	env := []string{"PYENV_VERSION=3.99"}
	for i := range trials(3) {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			var seen []int
			said := run(t, v.PID, env, []string{"--source", "py-spy", "--py-spy", shim}, func(h *os.Process, lines <-chan string) {
				// Until the fake py-spy runs (hangdoc waits for it
				// until its dump's budget, seconds from now).
				for end := time.Now().Add(75 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
					if seen = running(root); len(seen) > 0 {
						return
					}
				}
			})
			if len(seen) == 0 {
				t.Fatalf("py-spy (%s) never ran:\n%s", real, said)
			}
			var left []int
			for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				if left = running(root); len(left) == 0 {
					break
				}
			}
			if len(left) > 0 {
				for _, pid := range left {
					syscall.Kill(pid, syscall.SIGKILL) // the test's own fakes
				}
				t.Fatalf("a py-spy outlived hangdoc: pids %v (seen running: %v)\nhangdoc said:\n%s", left, seen, said)
			}
			if err := harmcheck.Check(v.PID, beat); err != nil {
				t.Fatalf("the target was harmed: %v", err)
			}
		})
	}
}

// running lists the living processes that run a script under root: the
// shim and the fake py-spy.
func running(root string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		// "/bin/sh ROOT/versions/3.99/bin/py-spy dump …": the script is
		// the first or second word (hangdoc's --py-spy comes later).
		args := strings.SplitN(string(b), "\x00", 3)
		if !strings.HasPrefix(args[0], root+"/") && (len(args) < 2 || !strings.HasPrefix(args[1], root+"/")) {
			continue
		}
		if st := harmcheck.State(pid); st != "Z" && st != "" {
			out = append(out, pid)
		}
	}
	return out
}
