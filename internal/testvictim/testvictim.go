// Package testvictim builds and starts the "victim" programs of
// testdata/victims: small C programs (Build), Go programs (BuildGo) and
// python3 or sh scripts (StartPython, StartShell) that hang in well-known
// ways (ABBA deadlock, mutex held across a blocking pipe write, a pipeline
// writer blocked on a sleeping consumer, ...) for tests to diagnose.
//
// Every victim prints exactly one line to stdout once its hang is in place:
//
//	ready pid=P key=value key=value ...
//
// and then stays hung until it is killed. Start waits for that line, parses
// it into Victim.Info and kills the victim's whole process group when the
// test ends.
//
// The package is meant to be imported from _test.go files only.
package testvictim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ReadyTimeout is how long Start and StartCmd wait for the ready line.
const ReadyTimeout = 75 * time.Second

var (
	cacheOnce sync.Once
	cacheDir  string
	cacheErr  error

	buildsMu   sync.Mutex
	builds     = map[string]*build{} // Build, by victim name
	goBuilds   = map[string]*build{} // BuildGo, by victim name
	rustBuilds = map[string]*build{} // BuildRust, by victim name
)

type build struct {
	once sync.Once
	path string
	err  error
}

// RepoRoot returns the directory holding go.mod, found by walking up from
// the working directory (a package directory while `go test` runs).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found in any parent of the working directory")
		}
		dir = parent
	}
}

// Build compiles testdata/victims/NAME.c with gcc and returns the path of
// the binary. Each victim is built at most once per test binary, into a
// temporary directory shared by the whole process (it is left behind on
// purpose: tests in the same binary may still be using its binaries). A
// missing gcc fails the test: victims are required, not optional.
func Build(t testing.TB, name string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc not found: install it (apt-get install gcc)")
	}

	b := buildOf(builds, name)
	b.once.Do(func() { b.path, b.err = compile(gcc, name) })
	if b.err != nil {
		t.Fatalf("building victim %s: %v", name, b.err)
	}
	return b.path
}

// BuildOptimized builds the C victim testdata/victims/NAME.c as Build
// does but optimised and without frame pointers (-O2
// -fomit-frame-pointer), as release builds of C libraries are, into
// DIR/NAME-O2: at most once per test binary.
func BuildOptimized(t testing.TB, name string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc not found: install it (apt-get install gcc)")
	}
	b := buildOf(builds, name+"-O2")
	b.once.Do(func() {
		b.path, b.err = buildFrom(name+"-O2", name+".c", func(root, src, out string) *exec.Cmd {
			return exec.Command(gcc, "-O2", "-fomit-frame-pointer", "-pthread", "-Wall", "-o", out, src)
		})
	})
	if b.err != nil {
		t.Fatalf("building victim %s -O2: %v", name, b.err)
	}
	return b.path
}

// buildOf returns the build of name in m, adding it if needed.
func buildOf(m map[string]*build, name string) *build {
	buildsMu.Lock()
	defer buildsMu.Unlock()
	b := m[name]
	if b == nil {
		b = &build{}
		m[name] = b
	}
	return b
}

// checkName rejects victim names that are not a plain file name.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return fmt.Errorf("bad victim name %q", name)
	}
	return nil
}

// binDir returns the per-process directory the victims are built into.
func binDir() (string, error) {
	cacheOnce.Do(func() { cacheDir, cacheErr = os.MkdirTemp("", "hangdoc-victims-") })
	return cacheDir, cacheErr
}

func compile(gcc, name string) (string, error) {
	return buildFrom(name, name+".c", func(root, src, out string) *exec.Cmd {
		return exec.Command(gcc, "-O0", "-g", "-pthread", "-Wall", "-o", out, src)
	})
}

// BuildGo builds the Go victim package testdata/victims/NAME with the go
// command on PATH (`go build -o DIR/NAME ./testdata/victims/NAME`, run from
// the repository root) and returns the path of the binary. Like Build, it
// builds each victim at most once per test binary, into the same shared
// directory. A missing go fails the test.
func BuildGo(t testing.TB, name string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found in PATH: install Go (https://go.dev/dl/): %v", err)
	}
	b := buildOf(goBuilds, name)
	b.once.Do(func() { b.path, b.err = goBuild(gobin, name) })
	if b.err != nil {
		t.Fatalf("building Go victim %s: %v", name, b.err)
	}
	return b.path
}

func goBuild(gobin, name string) (string, error) {
	return buildFrom(name, name, func(root, src, out string) *exec.Cmd {
		cmd := exec.Command(gobin, "build", "-o", out, "./testdata/victims/"+name)
		cmd.Dir = root
		return cmd
	})
}

// buildFrom builds testdata/victims/SRC into the shared directory as NAME
// with the command cmd makes from the repository root, the source's path
// and the binary's.
func buildFrom(name, src string, cmd func(root, src, out string) *exec.Cmd) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "testdata", "victims", src)
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	c := cmd(root, path, out)
	if msg, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v\n%s", strings.Join(c.Args, " "), err, msg)
	}
	return out, nil
}

// BuildRust builds the Rust victim testdata/victims/NAME.rs with rustc
// (on PATH, else rustup's ~/.cargo/bin/rustc), optimised and with frame
// pointers, and returns the path of the binary, built at most once per
// test binary. A missing rustc fails the test.
func BuildRust(t testing.TB, name string) string {
	t.Helper()
	rustc, err := exec.LookPath("rustc")
	if err != nil {
		home, _ := os.UserHomeDir()
		if p := filepath.Join(home, ".cargo", "bin", "rustc"); home != "" {
			if _, serr := os.Stat(p); serr == nil {
				rustc, err = p, nil
			}
		}
	}
	if err != nil {
		t.Fatalf("rustc not found: install Rust (rustup, or apt-get install rustc; .ci/run does): %v", err)
	}
	b := buildOf(rustBuilds, name)
	b.once.Do(func() { b.path, b.err = rustBuild(rustc, name) })
	if b.err != nil {
		t.Fatalf("building Rust victim %s: %v", name, b.err)
	}
	return b.path
}

func rustBuild(rustc, name string) (string, error) {
	return buildFrom(name, name+".rs", func(root, src, out string) *exec.Cmd {
		cmd := exec.Command(rustc, "-O", "-C", "force-frame-pointers=yes", "-o", out, src)
		cmd.Dir = filepath.Dir(out)
		return cmd
	})
}

// Script returns the path of testdata/victims/NAME (a script victim). A
// missing file fails the test.
func Script(t testing.TB, name string) string {
	t.Helper()
	if err := checkName(name); err != nil {
		t.Fatal(err)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "testdata", "victims", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("victim %s: %v", name, err)
	}
	return p
}

// StartPython starts the script victim NAME (see Script) with the python3
// on PATH and args, through StartCmd. A missing python3 fails the test.
func StartPython(t testing.TB, name string, args ...string) *Victim {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found: install it (apt-get install python3): %v", err)
	}
	return StartCmd(t, exec.Command(py, append([]string{Script(t, name)}, args...)...))
}

// StartShell starts the script victim NAME (see Script) with the sh on
// PATH and args, through StartCmd. A missing sh fails the test.
func StartShell(t testing.TB, name string, args ...string) *Victim {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("sh not found: install a POSIX shell (apt-get install dash): %v", err)
	}
	return StartCmd(t, exec.Command(sh, append([]string{Script(t, name)}, args...)...))
}

// Victim is a started victim process.
type Victim struct {
	Cmd  *exec.Cmd
	PID  int
	Info map[string]string // key=value pairs of the ready line, "pid" included

	// NSPID is, for a victim in a PID namespace of its own
	// (StartInNamespace), its pid there; 0 otherwise.
	NSPID int

	t      testing.TB
	stderr *syncBuffer
	line   string // the ready line
}

// Start starts the victim binary at path (see Build) with args.
func Start(t testing.TB, path string, args ...string) *Victim {
	t.Helper()
	return StartCmd(t, exec.Command(path, args...))
}

// StartCmd starts cmd as a victim: in its own process group, stdin from
// /dev/null unless cmd.Stdin is set, stdout read by StartCmd (cmd.Stdout
// is overwritten), stderr kept by StartCmd too unless cmd.Stderr is an
// *os.File (a victim whose stderr must be a regular file). It waits up to ReadyTimeout for the
// ready line and fails the test, showing the victim's stderr, if the line
// does not come or the victim exits first. A cleanup registered on t kills
// the whole process group with SIGKILL and reaps the victim.
//
// The process must print its ready line itself (not through a wrapper such
// as a shell): if the line has a pid key it must equal the started pid.
func StartCmd(t testing.TB, cmd *exec.Cmd) *Victim {
	t.Helper()
	v := startCmd(t, cmd)
	if p, ok := v.Info["pid"]; ok && p != strconv.Itoa(v.PID) {
		t.Fatalf("victim %s: ready line says pid=%s but the started process is %d: %q",
			cmd.Path, p, v.PID, v.line)
	}
	return v
}

// startCmd is StartCmd without its check of the ready line's pid.
func startCmd(t testing.TB, cmd *exec.Cmd) *Victim {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	if cmd.WaitDelay == 0 {
		// Bounds Wait if a stray descendant outside the process group
		// keeps stdout/stderr open.
		cmd.WaitDelay = 5 * time.Second
	}
	lines := &lineWriter{ready: make(chan string, 1)}
	stderr := &syncBuffer{}
	// A victim whose stdout the test made a file (as a service's often
	// is) has its ready line read back from that file.
	out, toFile := cmd.Stdout.(*os.File)
	if !toFile {
		cmd.Stdout = lines
	}
	if _, ok := cmd.Stderr.(*os.File); !ok {
		cmd.Stderr = stderr
	}

	if err := cmd.Start(); err != nil {
		t.Fatalf("starting victim %s: %v", cmd.Path, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	if toFile {
		go tail(out.Name(), lines, exited)
	}
	t.Cleanup(func() {
		// The group id is the victim's pid (Setpgid with Pgid 0). The
		// group cannot be recycled before the victim is reaped below.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		<-exited
	})

	v := &Victim{Cmd: cmd, PID: pid, t: t, stderr: stderr}
	timer := time.NewTimer(ReadyTimeout)
	defer timer.Stop()
	var line string
	select {
	case line = <-lines.ready:
	case <-exited:
		// The ready line may have been written just before exiting.
		select {
		case line = <-lines.ready:
		default:
			t.Fatalf("victim %s (pid %d) exited before its ready line: %v\nstdout:\n%s\nstderr:\n%s",
				cmd.Path, pid, waitErr, lines.other(), stderr.String())
		}
	case <-timer.C:
		t.Fatalf("victim %s (pid %d) printed no ready line within %v\nstdout:\n%s\nstderr:\n%s",
			cmd.Path, pid, ReadyTimeout, lines.other(), stderr.String())
	}

	info, err := ParseReady(line)
	if err != nil {
		t.Fatalf("victim %s (pid %d): %v", cmd.Path, pid, err)
	}
	v.Info, v.line = info, line
	return v
}

// ParseReady parses a "ready key=value ..." line.
func ParseReady(line string) (map[string]string, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "ready" {
		return nil, fmt.Errorf("not a ready line: %q", line)
	}
	info := make(map[string]string, len(fields)-1)
	for _, f := range fields[1:] {
		k, val, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("ready line %q: field %q is not key=value", line, f)
		}
		if _, dup := info[k]; dup {
			return nil, fmt.Errorf("ready line %q: duplicate key %q", line, k)
		}
		info[k] = val
	}
	return info, nil
}

// Stderr returns what the victim has written to stderr so far.
func (v *Victim) Stderr() string { return v.stderr.String() }

func (v *Victim) value(key string) string {
	v.t.Helper()
	s, ok := v.Info[key]
	if !ok {
		v.t.Fatalf("victim %d: ready line has no %q key (info %v)", v.PID, key, v.Info)
	}
	return s
}

// TID returns the decimal thread id (or pid) under key of the ready line.
// A missing or malformed value fails the test.
func (v *Victim) TID(key string) int {
	v.t.Helper()
	s := v.value(key)
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		v.t.Fatalf("victim %d: %s=%q is not a thread id", v.PID, key, s)
	}
	return n
}

// TIDs returns the comma-separated thread ids under key ("" gives none).
func (v *Victim) TIDs(key string) []int {
	v.t.Helper()
	s := v.value(key)
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	tids := make([]int, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			v.t.Fatalf("victim %d: %s=%q: %q is not a thread id", v.PID, key, s, p)
		}
		tids = append(tids, n)
	}
	return tids
}

// Addr returns the address under key (C's %p: "0x..." hex).
func (v *Victim) Addr(key string) uint64 {
	v.t.Helper()
	s := v.value(key)
	if !strings.HasPrefix(s, "0x") {
		v.t.Fatalf("victim %d: %s=%q is not a 0x address", v.PID, key, s)
	}
	n, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil {
		v.t.Fatalf("victim %d: %s=%q: %v", v.PID, key, s, err)
	}
	return n
}

// Int returns the decimal integer under key.
func (v *Victim) Int(key string) int {
	v.t.Helper()
	s := v.value(key)
	n, err := strconv.Atoi(s)
	if err != nil {
		v.t.Fatalf("victim %d: %s=%q is not an integer", v.PID, key, s)
	}
	return n
}

// lineWriter receives the victim's stdout: the first line that starts with
// "ready" goes to the ready channel, other lines are kept for error
// messages, and everything after the ready line is discarded (the victim
// must never block on a full stdout).
type lineWriter struct {
	ready chan string

	mu      sync.Mutex
	partial []byte
	others  []byte
	done    bool
}

const maxOther = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if line == "ready" || strings.HasPrefix(line, "ready ") {
			w.done = true
			w.partial = nil
			w.ready <- line
			return len(p), nil
		}
		if len(w.others) < maxOther {
			w.others = append(w.others, line...)
			w.others = append(w.others, '\n')
		}
	}
	if len(w.partial) > maxOther {
		w.partial = w.partial[len(w.partial)-maxOther:]
	}
	return len(p), nil
}

func (w *lineWriter) other() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.others) + string(w.partial)
}

// syncBuffer is a bytes.Buffer safe for the exec copier goroutine and the
// test goroutine at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail copies what is written to the file at path into w until w has its
// ready line or done is closed.
func tail(path string, w *lineWriter, done <-chan struct{}) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		n, _ := f.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			continue
		}
		w.mu.Lock()
		ready := w.done
		w.mu.Unlock()
		if ready {
			return
		}
		select {
		case <-done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitBlocked waits until thread tid of the victim is in a system call
// in two reads 50 ms apart (its /proc/PID/task/TID/syscall names one), or
// fails the test after 20 s: for a victim whose thread prints the ready
// line before it enters its last wait (a join), so that a reader as fast
// as the memory readers does not catch it on its way there.
func (v *Victim) WaitBlocked(tid int) {
	v.t.Helper()
	path := fmt.Sprintf("/proc/%d/task/%d/syscall", v.PID, tid)
	blocked := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		f := strings.Fields(string(b))
		if len(f) < 2 || f[0] == "running" || strings.HasPrefix(f[0], "-") {
			return ""
		}
		return f[0] + " " + f[1]
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if a := blocked(); a != "" {
			time.Sleep(50 * time.Millisecond)
			if blocked() == a {
				return
			}
		}
	}
	v.t.Fatalf("victim %d: thread %d not in a system call within 20 s", v.PID, tid)
}

// MarkedLine is the line of the script at path that ends with the
// comment "# LINE name", 1-based: how a test names a victim's line
// without counting them.
func MarkedLine(t testing.TB, path, name string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasSuffix(l, "# LINE "+name) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line marked %q", path, name)
	return 0
}
