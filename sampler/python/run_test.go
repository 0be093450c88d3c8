package python_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/hangdoc/hangdoc/sampler/python"
)

// fakePySpy returns the absolute path of the fake py-spy
// testdata/fake-py-spy/NAME, making it executable if a checkout lost the
// mode.
func fakePySpy(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "fake-py-spy", name))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("fake py-spy: %v", err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// realPySpy returns the py-spy on PATH; without one the test fails, since
// the live tests are the only check against the real thing.
func realPySpy(t *testing.T) string {
	t.Helper()
	p, err := python.Find(python.Options{})
	if err != nil {
		t.Fatalf("%v (the live py-spy tests need it; CI installs it)", err)
	}
	return p
}

// markFakes puts a marker unique to this test in the environment every
// process RunPySpy starts inherits, and returns it.
func markFakes(t *testing.T) string {
	t.Helper()
	mark := fmt.Sprintf("%s-%d-%d", t.Name(), os.Getpid(), time.Now().UnixNano())
	t.Setenv("HANGDOC_FAKE_MARK", mark)
	return mark
}

// markedProcs returns the living processes (zombies excluded) whose
// environment holds HANGDOC_FAKE_MARK=mark, pid to argv.
func markedProcs(t *testing.T, mark string) map[int]string {
	t.Helper()
	want := []byte("HANGDOC_FAKE_MARK=" + mark)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	found := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !slices.ContainsFunc(bytes.Split(env, []byte{0}), func(v []byte) bool { return bytes.Equal(v, want) }) {
			continue
		}
		if state := procState(pid); state == "" || state == "Z" {
			continue
		}
		argv, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		found[pid] = strings.TrimSpace(string(bytes.ReplaceAll(argv, []byte{0}, []byte{' '})))
	}
	return found
}

// procState returns the state letter of /proc/PID/stat ("" if gone).
func procState(pid int) string {
	return statState(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
}

func statState(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+3 > len(b) {
		return ""
	}
	return string(b[i+2 : i+3])
}

// readPIDs reads the "PID CHILDPID" file a fake writes.
func readPIDs(t *testing.T, path string) (fake, child int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the fake py-spy did not record its pids: %v", err)
	}
	if _, err := fmt.Sscan(string(b), &fake, &child); err != nil {
		t.Fatalf("pids file %q: %v", b, err)
	}
	return fake, child
}

func TestDumpTimeoutKillsGroup(t *testing.T) {
	mark := markFakes(t)
	pids := filepath.Join(t.TempDir(), "pids")
	t.Setenv("HANGDOC_FAKE_PIDS", pids)
	opts := python.Options{PySpy: fakePySpy(t, "hang"), Timeout: 500 * time.Millisecond}

	type dumped struct {
		out     []byte
		err     error
		elapsed time.Duration
	}
	done := make(chan dumped, 1)
	start := time.Now()
	go func() {
		out, _, err := python.RunPySpy(context.Background(), os.Getpid(), opts)
		done <- dumped{out, err, time.Since(start)}
	}()

	// While RunPySpy waits, the fake and its child are both there to be seen:
	// the scan below is not vacuous.
	var seen map[int]string
	var d dumped
poll:
	for {
		select {
		case d = <-done:
			break poll
		case <-time.After(10 * time.Millisecond):
			if m := markedProcs(t, mark); len(m) > len(seen) {
				seen = m
			}
		}
	}
	fake, child := readPIDs(t, pids)
	if _, ok := seen[fake]; !ok {
		t.Errorf("never saw the fake py-spy (pid %d) while RunPySpy ran; saw %v", fake, seen)
	}
	if _, ok := seen[child]; !ok {
		t.Errorf("never saw the fake's child (pid %d) while RunPySpy ran; saw %v", child, seen)
	}

	if !errors.Is(d.err, python.ErrTimeout) {
		t.Fatalf("RunPySpy: got err %v, want ErrTimeout", d.err)
	}
	want := fmt.Sprintf("py-spy dump --pid %d: py-spy did not finish within 500ms: killed it and its process group", os.Getpid())
	if d.err.Error() != want {
		t.Errorf("RunPySpy error:\ngot  %s\nwant %s", d.err, want)
	}
	if d.out != nil {
		t.Errorf("RunPySpy output: got %q, want nil", d.out)
	}
	// Never before its timeout (an upper bound would be a wall-clock
	// assertion: that it returns at all is what the test shows).
	if d.elapsed < 500*time.Millisecond {
		t.Errorf("RunPySpy returned after %v, before its 500ms timeout", d.elapsed)
	}
	t.Logf("RunPySpy returned after %v", d.elapsed)
	if left := markedProcs(t, mark); len(left) != 0 {
		t.Errorf("processes left behind after RunPySpy: %v", left)
	}
	// Not a check of the two pids' states: once reaped, a pid may be
	// reused at once by an unrelated process. The marker in the
	// environment (markedProcs, above) is what names them.
}

func TestDumpCanceledKillsGroup(t *testing.T) {
	mark := markFakes(t)
	pids := filepath.Join(t.TempDir(), "pids")
	t.Setenv("HANGDOC_FAKE_PIDS", pids)
	opts := python.Options{PySpy: fakePySpy(t, "hang"), Timeout: time.Minute}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := python.RunPySpy(ctx, os.Getpid(), opts)
	elapsed := time.Since(start)

	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, python.ErrTimeout) {
		t.Fatalf("RunPySpy: got err %v, want the context's error and not ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "killed py-spy and its process group") {
		t.Errorf("RunPySpy error %q does not say the group was killed", err)
	}
	t.Logf("RunPySpy returned after %v", elapsed)
	fake, child := readPIDs(t, pids)
	if left := markedProcs(t, mark); len(left) != 0 {
		t.Errorf("processes left behind after RunPySpy (fake %d, child %d): %v", fake, child, left)
	}
}

// A child that left the process group cannot be killed with it, and keeps
// py-spy's stdout open: RunPySpy still returns, about a second after the kill.
func TestDumpBoundedWhenChildEscapesGroup(t *testing.T) {
	mark := markFakes(t)
	t.Cleanup(func() {
		for pid := range markedProcs(t, mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	pids := filepath.Join(t.TempDir(), "pids")
	t.Setenv("HANGDOC_FAKE_PIDS", pids)
	opts := python.Options{PySpy: fakePySpy(t, "escape"), Timeout: 500 * time.Millisecond}

	start := time.Now()
	_, _, err := python.RunPySpy(context.Background(), os.Getpid(), opts)
	elapsed := time.Since(start)
	t.Logf("RunPySpy returned after %v", elapsed)
	if !errors.Is(err, python.ErrTimeout) {
		t.Fatalf("RunPySpy: got err %v, want ErrTimeout", err)
	}
	fake, child := readPIDs(t, pids)
	if _, alive := markedProcs(t, mark)[fake]; alive {
		t.Errorf("fake py-spy %d still alive after RunPySpy", fake)
	}
	// Else the test did not test the escape.
	if s := procState(child); s == "" || s == "Z" {
		t.Errorf("escaped child %d is gone (state %q): it should have held stdout open", child, s)
	}
}

// A py-spy that exits but leaves a child holding its stdout must neither
// hold RunPySpy up until the timeout nor leave the child behind.
func TestDumpKillsLeftoverChild(t *testing.T) {
	mark := markFakes(t)
	pids := filepath.Join(t.TempDir(), "pids")
	t.Setenv("HANGDOC_FAKE_PIDS", pids)
	// An hour: a RunPySpy that waited for its timeout would not return
	// within the test's.
	opts := python.Options{PySpy: fakePySpy(t, "leaky"), Timeout: time.Hour}

	start := time.Now()
	out, format, err := python.RunPySpy(context.Background(), os.Getpid(), opts)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("RunPySpy: %v", err)
	}
	if string(out) != "[]\n" || format != "json" {
		t.Errorf("RunPySpy: got %q, %q; want %q, json", out, format, "[]\n")
	}
	t.Logf("RunPySpy returned after %v", elapsed)
	fake, child := readPIDs(t, pids)
	if left := markedProcs(t, mark); len(left) != 0 {
		t.Errorf("processes left behind after RunPySpy (fake %d, child %d): %v", fake, child, left)
	}
}

func TestDumpStdoutLimit(t *testing.T) {
	mark := markFakes(t)
	opts := python.Options{PySpy: fakePySpy(t, "flood"), Timeout: 30 * time.Second}
	out, _, err := python.RunPySpy(context.Background(), os.Getpid(), opts)
	if err == nil || !strings.Contains(err.Error(), "more than 64 MiB") {
		t.Fatalf("RunPySpy: got err %v, want one about more than 64 MiB", err)
	}
	if out != nil {
		t.Errorf("RunPySpy output: got %d bytes, want nil", len(out))
	}
	if left := markedProcs(t, mark); len(left) != 0 {
		t.Errorf("processes left behind after RunPySpy: %v", left)
	}
}

// The stderr below is py-spy 0.4.3's, as it prints it.
func TestDumpErrors(t *testing.T) {
	pid := os.Getpid()
	tests := []struct {
		name   string
		stderr string
		want   error
		msg    string
	}{
		{
			name:   "permission denied",
			stderr: `Permission Denied: Try running again with elevated permissions by going 'sudo env "PATH=$PATH" !!'`,
			want:   python.ErrPermission,
			msg:    "permission denied: run hangdoc as root or with CAP_SYS_PTRACE",
		},
		{
			name:   "operation not permitted",
			stderr: "Error: Operation not permitted (os error 1)",
			want:   python.ErrPermission,
			msg:    "permission denied: run hangdoc as root or with CAP_SYS_PTRACE",
		},
		{
			name:   "no python version",
			stderr: "Error: Failed to find python version from target process",
			want:   python.ErrNotPython,
			msg:    "not a python process, or py-spy does not recognise its interpreter",
		},
		{
			name:   "no interpreter",
			stderr: "Error: Failed to find a python interpreter in the .data section",
			want:   python.ErrNotPython,
			msg:    "not a python process, or py-spy does not recognise its interpreter",
		},
		{
			name: "no such file",
			stderr: "Error: Failed to get process executable name. Check that the process is running.\n\n" +
				"Caused by:\n    0: No such file or directory (os error 2)\n    1: No such file or directory (os error 2)",
			want: python.ErrNoProcess,
			msg:  "no such process: the process exited",
		},
		{
			name:   "failed to open process",
			stderr: "Error: Failed to open process 4187 - check if it is running.",
			want:   python.ErrNoProcess,
			msg:    "no such process: the process exited",
		},
		{
			name:   "other",
			stderr: "Error: Failed to read the frobnicator\n\nStack backtrace:\n   0: anyhow::error",
			msg:    "exit status 1: Failed to read the frobnicator",
		},
	}
	opts := python.Options{PySpy: fakePySpy(t, "fail")}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HANGDOC_FAKE_STDERR", tt.stderr)
			out, _, err := python.RunPySpy(context.Background(), pid, opts)
			if err == nil {
				t.Fatalf("RunPySpy: got %q and no error for stderr %q", out, tt.stderr)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("RunPySpy error %q: not %v, for stderr %q", err, tt.want, tt.stderr)
			}
			for _, s := range []error{python.ErrPermission, python.ErrNotPython, python.ErrNoProcess, python.ErrTimeout, python.ErrNotFound} {
				if s != tt.want && errors.Is(err, s) {
					t.Errorf("RunPySpy error %q is also %v", err, s)
				}
			}
			want := fmt.Sprintf("py-spy dump --pid %d: %s", pid, tt.msg)
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("RunPySpy error:\ngot  %s\nwant %s...\nstderr %q", err, want, tt.stderr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("RunPySpy error is more than one line: %q", err)
			}
		})
	}
}

func TestDumpFallsBackToText(t *testing.T) {
	args := filepath.Join(t.TempDir(), "args")
	t.Setenv("HANGDOC_FAKE_ARGS", args)
	out, format, err := python.RunPySpy(context.Background(), 4187, python.Options{PySpy: fakePySpy(t, "nojson")})
	if err != nil {
		t.Fatalf("RunPySpy: %v", err)
	}
	if format != "text" {
		t.Errorf("RunPySpy format: got %q, want text", format)
	}
	if !strings.HasPrefix(string(out), "Process 4187: python3 worker.py\n") {
		t.Errorf("RunPySpy output: got %q, want the text dump", out)
	}
	got, _ := os.ReadFile(args)
	want := "dump --pid 4187 --json\ndump --pid 4187\n"
	if string(got) != want {
		t.Errorf("py-spy calls:\ngot  %q\nwant %q", got, want)
	}
}

func TestDumpNonBlocking(t *testing.T) {
	tests := []struct {
		nonBlocking bool
		want        string
	}{
		{false, "dump --pid 4187 --json\n"},
		{true, "dump --pid 4187 --nonblocking --json\n"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("nonblocking=%v", tt.nonBlocking), func(t *testing.T) {
			args := filepath.Join(t.TempDir(), "args")
			t.Setenv("HANGDOC_FAKE_ARGS", args)
			opts := python.Options{PySpy: fakePySpy(t, "args"), NonBlocking: tt.nonBlocking}
			out, format, err := python.RunPySpy(context.Background(), 4187, opts)
			if err != nil {
				t.Fatalf("RunPySpy: %v", err)
			}
			if string(out) != "[]\n" || format != "json" {
				t.Errorf("RunPySpy: got %q, %q; want %q, json", out, format, "[]\n")
			}
			got, _ := os.ReadFile(args)
			if string(got) != tt.want {
				t.Errorf("py-spy arguments:\ngot  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDumpBadPID(t *testing.T) {
	_, _, err := python.RunPySpy(context.Background(), 0, python.Options{PySpy: fakePySpy(t, "args")})
	if err == nil {
		t.Fatal("RunPySpy of pid 0: no error")
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "py-spy")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()

	tests := []struct {
		name     string
		path     string // PATH
		pyspy    string // Options.PySpy
		want     string // the path found, if no error
		notFound bool   // the error is ErrNotFound
		msg      string // the error contains this
	}{
		{name: "flag", path: empty, pyspy: exe, want: exe},
		{name: "flag missing", path: dir, pyspy: filepath.Join(dir, "nope"), notFound: true, msg: "pip install py-spy"},
		{name: "flag not executable", path: dir, pyspy: plain, msg: "not executable"},
		{name: "flag directory", path: dir, pyspy: dir, msg: "is a directory"},
		{name: "PATH", path: empty + ":" + dir, want: exe},
		{name: "PATH without py-spy", path: empty, notFound: true, msg: "pip install py-spy"},
		{name: "empty PATH", path: "", notFound: true, msg: "pip install py-spy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			got, err := python.Find(python.Options{PySpy: tt.pyspy})
			if tt.msg == "" {
				if err != nil || got != tt.want {
					t.Fatalf("Find(%q) with PATH=%q: got %q, %v; want %q", tt.pyspy, tt.path, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Find(%q) with PATH=%q: got %q, want an error", tt.pyspy, tt.path, got)
			}
			if errors.Is(err, python.ErrNotFound) != tt.notFound {
				t.Errorf("Find(%q): error %q: errors.Is ErrNotFound = %v, want %v", tt.pyspy, err, !tt.notFound, tt.notFound)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Find(%q): error %q does not contain %q", tt.pyspy, err, tt.msg)
			}
		})
	}
}

// A relative --py-spy is resolved against the working directory, never
// looked up on PATH.
func TestFindRelative(t *testing.T) {
	fakePySpy(t, "args")
	got, err := python.Find(python.Options{PySpy: "testdata/fake-py-spy/args"})
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(got) || !strings.HasSuffix(got, "/testdata/fake-py-spy/args") {
		t.Errorf("Find: got %q, want the absolute path", got)
	}
}

const pyVictim = `
import os, threading, time
def work():
    time.sleep(1000)
threading.Thread(target=work, name="worker", daemon=True).start()
print("ready pid=%d" % os.getpid(), flush=True)
time.sleep(1000)
`

func TestDumpRealPySpy(t *testing.T) {
	realPySpy(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found: install it (apt-get install python3): %v", err)
	}
	v := testvictim.StartCmd(t, exec.Command(py, "-c", pyVictim))

	for _, nonBlocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("nonblocking=%v", nonBlocking), func(t *testing.T) {
			start := time.Now()
			out, format, err := python.RunPySpy(context.Background(), v.PID, python.Options{NonBlocking: nonBlocking})
			if err != nil {
				t.Fatalf("RunPySpy: %v", err)
			}
			t.Logf("RunPySpy took %v", time.Since(start))
			if format != "json" {
				t.Errorf("RunPySpy format: got %q, want json", format)
			}
			var threads []struct {
				ThreadName string `json:"thread_name"`
			}
			if err := json.Unmarshal(out, &threads); err != nil {
				t.Fatalf("RunPySpy output is not a JSON list of threads: %v\n%s", err, out)
			}
			if !slices.ContainsFunc(threads, func(th struct {
				ThreadName string `json:"thread_name"`
			}) bool {
				return th.ThreadName == "worker"
			}) {
				t.Errorf("no thread named worker in the dump:\n%s", out)
			}

			// Unharmed: alive, and no thread left stopped.
			if err := syscall.Kill(v.PID, 0); err != nil {
				t.Fatalf("victim %d after RunPySpy: %v", v.PID, err)
			}
			tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(v.PID), "task", "*", "stat"))
			if err != nil || len(tasks) < 2 {
				t.Fatalf("victim %d threads after RunPySpy: %v, %v", v.PID, tasks, err)
			}
			for _, stat := range tasks {
				if s := statState(stat); s == "" || s == "T" || s == "t" || s == "Z" {
					t.Errorf("%s after RunPySpy: state %q, want running or sleeping", stat, s)
				}
			}
		})
	}
}

func TestDumpRealPySpyNotPython(t *testing.T) {
	realPySpy(t)
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	_, _, err := python.RunPySpy(context.Background(), cmd.Process.Pid, python.Options{})
	if !errors.Is(err, python.ErrNotPython) {
		t.Fatalf("RunPySpy of sleep: got err %v, want ErrNotPython", err)
	}
	t.Log(err)
}

func TestDumpRealPySpyExited(t *testing.T) {
	realPySpy(t)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	_, _, err := python.RunPySpy(context.Background(), cmd.Process.Pid, python.Options{})
	if !errors.Is(err, python.ErrNoProcess) {
		t.Fatalf("RunPySpy of an exited pid: got err %v, want ErrNoProcess", err)
	}
	t.Log(err)
}
