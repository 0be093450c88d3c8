package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler"
)

// Targets in other namespaces (issue 20, item 6): a target in a PID and
// mount namespace of its own (a container) is reported under both its
// pids, its files are read through /proc/PID/root, and py-spy's thread
// ids (the target's own) are matched through NSpid; hangdoc itself in a
// container, reading the host's /proc through --proc, hands py-spy a pid
// its own namespace has, or says why there is none.

// nsReport is the part of the JSON report these tests read.
type nsReport struct {
	Verdict string `json:"verdict"`
	Summary string `json:"summary"`
	Target  struct {
		PID   int `json:"pid"`
		NSPID int `json:"nspid"`
	} `json:"target"`
	Sampling struct {
		StackSource string   `json:"stack_source"`
		Notes       []string `json:"notes"`
	} `json:"sampling"`
	Threads []struct {
		TID   int    `json:"tid"`
		NSTID int    `json:"nstid"`
		Name  string `json:"name"`
		Stack []struct {
			File string `json:"file"`
		} `json:"stack"`
	} `json:"threads"`
	Cycles [][]ref `json:"cycles"`
	Locks  []struct {
		Holder *ref   `json:"holder"`
		Basis  string `json:"basis"`
	} `json:"locks"`
	Waits     []kwWait `json:"waits"`
	Processes []struct {
		PID   int `json:"pid"`
		NSPID int `json:"nspid"`
	} `json:"processes"`
}

func nsDecode(t *testing.T, out, stderr string) nsReport {
	t.Helper()
	var r nsReport
	if err := jsonUnmarshal(out, &r); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	return r
}

// nstid is the NSTID the report gives thread tid.
func (r nsReport) nstid(tid int) int {
	for _, th := range r.Threads {
		if th.TID == tid {
			return th.NSTID
		}
	}
	return -1
}

// TestNamespacedFIFO: a C victim in a container opens, to write, a FIFO on
// a tmpfs that only its mount namespace has; a child of it holds the FIFO
// open. The report gives the victim's pid on the host and in its
// namespace, the FIFO's path (read through /proc/PID/root: on the host
// there is no such file) and the child by its host pid.
func TestNamespacedFIFO(t *testing.T) {
	bin := testvictim.Build(t, "fifo")
	dir := t.TempDir()
	v := testvictim.StartInNamespace(t, "mount -t tmpfs tmpfs "+dir, "env", "TMPDIR="+dir, bin, "writer")
	path, writer := v.Info["path"], v.HostPID(v.Int("writer"))
	if _, err := os.Stat(path); err == nil {
		t.Fatalf("%s is on the host too: the test would not show that it is read through /proc/PID/root", path)
	}
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
	r := nsDecode(t, out, stderr)
	if code != ExitBlocked || r.Verdict != "blocked" {
		t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, r.Verdict, r.Summary, stderr)
	}
	if r.Target.PID != v.PID || r.Target.NSPID != v.NSPID || r.nstid(v.PID) != v.NSPID {
		t.Errorf("target %+v, thread %d's nstid %d: want pid %d, nspid %d", r.Target, v.PID, r.nstid(v.PID), v.PID, v.NSPID)
	}
	w := kwReport{Waits: r.Waits}.waitOf(t, v.PID)
	if w.Kind != "fifo-open" || w.Path != path || w.FIFO == nil || w.FIFO.Path != path || w.FIFO.WaitsFor != "reader" {
		t.Fatalf("wait %+v, want a fifo-open of %s waiting for a reader", w, path)
	}
	if !slices.Contains(w.FIFO.OpenBy, writer) || !strings.Contains(w.Detail, "pid "+strconv.Itoa(writer)) {
		t.Errorf("fifo %+v, detail %q: want the writer, host pid %d, with it open", w.FIFO, w.Detail, writer)
	}
}

// TestNamespacedUnixSocket: a C victim in a container blocked on a Unix
// socket whose other end another process of the container holds: a
// connect to a listener whose backlog is full (its socket on a tmpfs only
// the container has), a read of a socketpair. The wait leads to that
// process, named by its host pid, with its pid in the container.
func TestNamespacedUnixSocket(t *testing.T) {
	bin := testvictim.Build(t, "unixsock")
	diag := sampler.UnixDiagWorks()
	for _, mode := range []string{"backlog", "pair"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			if mode == "pair" && !diag {
				t.Skip("sock_diag does not answer about Unix sockets on this kernel (CONFIG_UNIX_DIAG): a peer cannot be found")
			}
			// sun_path holds 108 bytes: a short directory of the test's own.
			dir, err := os.MkdirTemp("/tmp", "hd")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			v := testvictim.StartInNamespace(t, "mount -t tmpfs tmpfs "+dir, "env", "TMPDIR="+dir, bin, mode)
			other, path := v.HostPID(v.Int("other")), v.Info["path"]
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
			r := nsDecode(t, out, stderr)
			if code != ExitBlocked || r.Verdict != "blocked" {
				t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, r.Verdict, r.Summary, stderr)
			}
			if r.Target.PID != v.PID || r.Target.NSPID != v.NSPID {
				t.Errorf("target %+v, want pid %d, nspid %d", r.Target, v.PID, v.NSPID)
			}
			w := kwReport{Waits: r.Waits}.waitOf(t, v.PID)
			if w.To == nil || w.To.PID != other || w.Unix == nil || w.Unix.Peer == "" {
				t.Fatalf("wait %+v, want one to pid %d (%d in the container) through a Unix socket's peer", w, other, v.Int("other"))
			}
			if !slices.ContainsFunc(r.Processes, func(p struct {
				PID   int `json:"pid"`
				NSPID int `json:"nspid"`
			}) bool {
				return p.PID == other && p.NSPID == v.Int("other")
			}) {
				t.Errorf("processes %+v, want pid %d with nspid %d", r.Processes, other, v.Int("other"))
			}
			if mode == "backlog" && (w.Kind != "socket-connect" || w.Path != "unix:"+path || !w.Unix.Listener || w.Unix.PeerPath != path) {
				t.Errorf("wait %+v (unix %+v), want a socket-connect to the listener at %s", w, *w.Unix, path)
			}
		})
	}
}

// pyInNamespace starts py_lock_identity.py MODE in a container whose
// tmpfs at a directory of its own holds the script (the host sees that
// directory empty), with the host's /proc bound at hostProc when that is
// not "". It returns the victim and the script's path.
func pyInNamespace(t *testing.T, mode, hostProc string) (*testvictim.Victim, string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found")
	}
	return pyInNamespaceWith(t, py, mode, hostProc)
}

// pyInNamespaceWith is pyInNamespace with the interpreter py.
func pyInNamespaceWith(t *testing.T, py, mode, hostProc string) (*testvictim.Victim, string) {
	t.Helper()
	needPySpy(t)
	dir := t.TempDir()
	setup := "mount -t tmpfs tmpfs " + dir + "\ncp " + testvictim.Script(t, "py_lock_identity.py") + " " + testvictim.Script(t, "victim.py") + " " + dir + "/"
	if hostProc != "" {
		setup = "mount --bind /proc " + hostProc + "\n" + setup
	}
	script := dir + "/py_lock_identity.py"
	return testvictim.StartInNamespace(t, setup, py, script, mode), script
}

// TestNamespacedPython: a Python ABBA in a container is a deadlock: py-spy's
// threads, which it numbers as the container does, are joined to the
// host's through NSpid, and the source that names the locks is read
// through /proc/PID/root. For Python 3.10, whose thread states keep no
// thread id: from memory, the tid in glibc's struct pthread, as the
// container numbers it; through py-spy, which gives none in a container,
// joined by where the pthread_t lies.
func TestNamespacedPython(t *testing.T) {
	t.Run("python3", func(t *testing.T) {
		v, script := pyInNamespace(t, "abba", "")
		out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
		r := nsDecode(t, out, stderr)
		if code != ExitDeadlock || r.Verdict != "deadlock" {
			t.Fatalf("exit %d verdict %q (%s), want deadlock\n%s", code, r.Verdict, r.Summary, stderr)
		}
		checkNamespacedABBA(t, r, v, script)
	})
	for _, source := range []string{"memory", "py-spy"} {
		t.Run("python3.10 "+source, func(t *testing.T) {
			py := pyenvPython(t, "3.10")
			v, script := pyInNamespaceWith(t, py, "abba", "")
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms", "--source", source)
			r := nsDecode(t, out, stderr)
			if code != ExitDeadlock || r.Verdict != "deadlock" {
				t.Fatalf("exit %d verdict %q (%s), want deadlock\n%s\nnotes %q", code, r.Verdict, r.Summary, stderr, r.Sampling.Notes)
			}
			checkNamespacedABBA(t, r, v, script)
			if source == "py-spy" && !slices.ContainsFunc(r.Sampling.Notes, func(n string) bool { return strings.Contains(n, "joined to the kernel's by their pthread_t") }) {
				t.Errorf("notes %q: want the join by pthread_t said", r.Sampling.Notes)
			}
		})
	}
}

// pyenvPython is pyenv's python of version v ("3.10"). CI installs pyenv
// with 3.8 to 3.13; a machine without it skips.
func pyenvPython(t *testing.T, v string) string {
	t.Helper()
	pyenv, err := exec.LookPath("pyenv")
	if err != nil {
		t.Skip("pyenv not found: no Python " + v + " to run")
	}
	root, err := exec.Command(pyenv, "root").Output()
	if err != nil {
		t.Skipf("pyenv root: %v", err)
	}
	found, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(root)), "versions", v+".*", "bin", "python"+v))
	if len(found) == 0 {
		t.Skipf("pyenv has no Python %s", v)
	}
	return found[len(found)-1]
}

// checkNamespacedABBA checks the report of pyInNamespace's abba: both
// pids, the cycle of t1 and t2 by their host tids, each holding the
// other's lock as the script (read through /proc/PID/root) says.
func checkNamespacedABBA(t *testing.T, r nsReport, v *testvictim.Victim, script string) {
	t.Helper()
	t1, t2 := v.HostPID(v.TID("first")), v.HostPID(v.TID("second"))
	if r.Target.PID != v.PID || r.Target.NSPID != v.NSPID {
		t.Errorf("target %+v, want pid %d, nspid %d", r.Target, v.PID, v.NSPID)
	}
	if r.nstid(t1) != v.TID("first") || r.nstid(t2) != v.TID("second") {
		t.Errorf("nstids %d and %d, want t1's %d and t2's %d", r.nstid(t1), r.nstid(t2), v.TID("first"), v.TID("second"))
	}
	if len(r.Cycles) != 1 || !slices.Equal(cycleTIDs(r.Cycles[0]), []int{min(t1, t2), max(t1, t2)}) {
		t.Errorf("cycles %+v, want one of t1 (%d) and t2 (%d)", r.Cycles, t1, t2)
	}
	for _, tid := range []int{t1, t2} {
		held := false
		for _, l := range r.Locks {
			held = held || l.Holder != nil && l.Holder.TID == tid && strings.HasPrefix(l.Basis, "probable: ") && strings.Contains(l.Basis, "line")
		}
		if !held {
			t.Errorf("tid %d holds no lock named by the source (locks %+v)", tid, r.Locks)
		}
	}
	for _, th := range r.Threads {
		if th.TID == t1 && (len(th.Stack) == 0 || th.Stack[0].File != script) {
			t.Errorf("t1's stack %+v, want it in %s", th.Stack, script)
		}
	}
	for _, n := range r.Sampling.Notes {
		if strings.Contains(n, "not joined") {
			t.Errorf("note %q: py-spy's threads should be joined through NSpid", n)
		}
	}
}

// hangdocIn runs this test binary as hangdoc under the command prefix
// (unshare or nsenter) and returns what it printed.
func hangdocIn(t *testing.T, prefix []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	argv := append(append(prefix[1:len(prefix):len(prefix)], self), args...)
	cmd := exec.CommandContext(ctx, prefix[0], argv...)
	cmd.Env = append(os.Environ(), "HANGDOC_MAIN=1")
	// unshare's and nsenter's child outlives them: on the deadline the
	// whole group goes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("%s: %v\n%s", strings.Join(prefix, " "), err, errb.String())
	}
	return out.String(), errb.String(), code
}

// TestProcOfAnotherNamespace: hangdoc in a container of its own reads the
// host's /proc through --proc, so the pid it is given is the host's.
// When the target is in hangdoc's own namespace, py-spy is given the pid
// that namespace numbers it by, and the ABBA is a deadlock; when it is
// not (a container beside hangdoc's), py-spy is not run and a note says
// why, not that the target exited, while a Go program's memory is still
// read (through /proc/PID/mem: process_vm_readv takes a pid).
func TestProcOfAnotherNamespace(t *testing.T) {
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Fatal("nsenter not found: install util-linux")
	}
	t.Run("same namespace", func(t *testing.T) {
		hostProc := t.TempDir()
		v, script := pyInNamespace(t, "abba", hostProc)
		out, stderr, code := hangdocIn(t, []string{"nsenter", "-t", strconv.Itoa(v.PID), "-p", "-m", "--"},
			"--proc", hostProc, "--json", "--interval", "500ms", strconv.Itoa(v.PID))
		r := nsDecode(t, out, stderr)
		if code != int(ExitDeadlock) || r.Verdict != "deadlock" {
			t.Fatalf("exit %d verdict %q (%s), want deadlock\n%s\nnotes %q", code, r.Verdict, r.Summary, stderr, r.Sampling.Notes)
		}
		want := "py-spy was given pid " + strconv.Itoa(v.NSPID) + ": pid " + strconv.Itoa(v.PID) + " as hangdoc's own PID namespace numbers it"
		if !slices.Contains(r.Sampling.Notes, want) {
			t.Errorf("notes %q, want %q", r.Sampling.Notes, want)
		}
		checkNamespacedABBA(t, r, v, script)
	})
	t.Run("beside", func(t *testing.T) {
		needPySpy(t)
		v := testvictim.StartPython(t, "py_lock_identity.py", "abba")
		hostProc := t.TempDir()
		out, stderr, _ := hangdocIn(t, []string{"unshare", "-p", "-m", "--fork", "--propagation", "private", "sh", "-c",
			"set -e; mount --bind /proc " + hostProc + "; mount -t proc proc /proc; exec \"$@\"", "sh"},
			"--proc", hostProc, "--json", "--interval", "300ms", "--samples", "2", strconv.Itoa(v.PID))
		r := nsDecode(t, out, stderr)
		if r.Target.PID != v.PID {
			t.Errorf("target %+v, want pid %d", r.Target, v.PID)
		}
		found := false
		for _, n := range r.Sampling.Notes {
			found = found || strings.Contains(n, "py-spy was not run") && strings.Contains(n, "no pid in hangdoc's own PID namespace")
			if strings.Contains(n, "exited") {
				t.Errorf("note %q: the target did not exit", n)
			}
		}
		if !found || r.Sampling.StackSource != "none" {
			t.Errorf("stack source %q, notes %q: want py-spy not run, and why", r.Sampling.StackSource, r.Sampling.Notes)
		}
	})
	t.Run("beside, Go", func(t *testing.T) {
		v := testvictim.Start(t, testvictim.BuildGo(t, "gomutexpipe"))
		hostProc := t.TempDir()
		out, stderr, code := hangdocIn(t, []string{"unshare", "-p", "-m", "--fork", "--propagation", "private", "sh", "-c",
			"set -e; mount --bind /proc " + hostProc + "; mount -t proc proc /proc; exec \"$@\"", "sh"},
			"--proc", hostProc, "--json", "--interval", "300ms", "--samples", "2", strconv.Itoa(v.PID))
		r := nsDecode(t, out, stderr)
		if code != int(ExitBlocked) || r.Verdict != "blocked" || r.Sampling.StackSource != "memory" {
			t.Fatalf("exit %d verdict %q (%s), stack source %q, want blocked, from memory\n%s\nnotes %q", code, r.Verdict, r.Summary, r.Sampling.StackSource, stderr, r.Sampling.Notes)
		}
		if !strings.Contains(r.Summary, "pid "+v.Info["reader"]) {
			t.Errorf("summary %q should name the pipe's reader, pid %s", r.Summary, v.Info["reader"])
		}
	})
}
