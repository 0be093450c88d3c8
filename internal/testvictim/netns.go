package testvictim

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// StartInNamespace starts argv as a victim in a PID and a mount namespace
// of its own, as a container runs it: `unshare -p -m --fork`, then, in
// the new mount namespace, the shell line setup (mounts only the victim
// sees: "" for none), then a /proc of the namespace's own, then argv as
// the namespace's pid 1. Its ready line's pids are the namespace's:
// Victim.PID is the victim as this process sees it, Victim.NSPID as its
// namespace does (HostPID translates others). A missing unshare fails the
// test (util-linux: .ci/run installs it).
func StartInNamespace(t testing.TB, setup string, argv ...string) *Victim {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare not found: install util-linux")
	}
	script := "set -e\n"
	if setup != "" {
		script += setup + "\n"
	}
	script += "mount -t proc proc /proc\nexec \"$@\"\n"
	cmd := exec.Command(unshare, append([]string{"-p", "-m", "--fork", "--propagation", "private", "sh", "-c", script, "sh"}, argv...)...)
	v := startCmd(t, cmd)
	wrapper := v.PID
	// unshare --fork's one child is the namespace's pid 1: the victim.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(wrapper) + "/task/" + strconv.Itoa(wrapper) + "/children")
	child, aerr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || aerr != nil {
		t.Fatalf("victim %s: the child of unshare (pid %d): %q, %v", argv[0], wrapper, b, err)
	}
	ns := nspid("/proc/" + strconv.Itoa(child))
	if len(ns) < 2 || strconv.Itoa(ns[len(ns)-1]) != v.Info["pid"] {
		t.Fatalf("victim %s: ready line %q, but unshare's child %d has NSpid %v", argv[0], v.line, child, ns)
	}
	v.PID, v.NSPID = child, ns[len(ns)-1]
	return v
}

// HostPID is the pid, as this process sees it, of the thread or process
// numbered inner in v's PID namespace (a thread or a child of the victim
// named by its ready line); one not found fails the test.
func (v *Victim) HostPID(inner int) int {
	v.t.Helper()
	want, err := os.Readlink("/proc/" + strconv.Itoa(v.PID) + "/ns/pid")
	if err != nil {
		v.t.Fatalf("victim %d: %v", v.PID, err)
	}
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(v.PID) + "/task/[0-9]*")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range append(tasks, dirs...) {
		if ns, err := os.Readlink(d + "/ns/pid"); err != nil || ns != want {
			continue
		}
		if p := nspid(d); len(p) > 0 && p[len(p)-1] == inner {
			return mustAtoi(filepath.Base(d))
		}
	}
	v.t.Fatalf("no process numbered %d in the PID namespace of victim %d", inner, v.PID)
	return 0
}

// nspid is NSpid of dir's status (a /proc/PID or task directory); nil
// when unread.
func nspid(dir string) []int {
	b, err := os.ReadFile(dir + "/status")
	if err != nil {
		return nil
	}
	i := bytes.Index(b, []byte("\nNSpid:"))
	if i < 0 {
		return nil
	}
	line, _, _ := strings.Cut(string(b[i+len("\nNSpid:"):]), "\n")
	var out []int
	for _, f := range strings.Fields(line) {
		out = append(out, mustAtoi(f))
	}
	return out
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
