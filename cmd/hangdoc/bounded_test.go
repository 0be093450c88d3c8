package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/fusehang"
	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// serverDump is a goroutine dump shaped like a server's: every goroutine
// works on objects of its own, so argument words differ and no two read
// alike. conns goroutines wait for their connection's next request; the
// locks of accounts are each held by a goroutine parked in a channel
// receive with the lock taken, and account i has i+1 waiters.
func serverDump(conns, accounts int) []byte {
	var b bytes.Buffer
	id := 1
	fmt.Fprintf(&b, "goroutine %d [running]:\nmain.main()\n\t/build/app/main.go:12 +0x1d\n\n", id)
	created := func(parent int) {
		fmt.Fprintf(&b, "created by main.(*server).serve in goroutine %d\n\t/build/app/server.go:30 +0x65\n\n", parent)
	}
	for i := range conns {
		id++
		c := 0xc000100000 + 0x100*i
		fmt.Fprintf(&b, "goroutine %d [IO wait]:\n", id)
		fmt.Fprintf(&b, "internal/poll.runtime_pollWait(0x7f%08x, 0x72)\n\t/usr/local/go/src/runtime/netpoll.go:351 +0x85\n", i)
		fmt.Fprintf(&b, "internal/poll.(*pollDesc).wait(0x%x, 0x72, 0x0)\n\t/usr/local/go/src/internal/poll/fd_poll_runtime.go:84 +0x27\n", c+0x18)
		fmt.Fprintf(&b, "internal/poll.(*FD).Read(0x%x, {0x%x, 0x1000, 0x1000})\n\t/usr/local/go/src/internal/poll/fd_unix.go:165 +0x27a\n", c, c+0x1000000)
		fmt.Fprintf(&b, "net.(*conn).Read(0x%x, {0x%x, 0x1000, 0x1000})\n\t/usr/local/go/src/net/net.go:196 +0x45\n", c+0x40, c+0x1000000)
		fmt.Fprintf(&b, "main.(*server).handle(0xc000010000, 0x%x)\n\t/build/app/server.go:42 +0x8e\n", c+0x40)
		created(1)
	}
	for a := range accounts {
		acct := 0xc000200000 + 0x40*a
		id++
		fmt.Fprintf(&b, "goroutine %d [chan receive]:\n", id)
		fmt.Fprintf(&b, "main.(*account).update(0x%x, 0x%x)\n\t/build/app/account.go:19 +0x45\n", acct, 0xc000300000+0x40*a)
		fmt.Fprintf(&b, "main.(*server).handle(0xc000010000, 0x%x)\n\t/build/app/server.go:44 +0x8e\n", 0xc000400000+0x40*a)
		created(1)
		for w := 0; w <= a; w++ {
			id++
			fmt.Fprintf(&b, "goroutine %d [sync.Mutex.Lock]:\n", id)
			fmt.Fprintf(&b, "sync.runtime_SemacquireMutex(0x%x, 0x0, 0x1)\n\t/usr/local/go/src/runtime/sema.go:95 +0x25\n", acct+4)
			fmt.Fprintf(&b, "sync.(*Mutex).lockSlow(0x%x)\n\t/usr/local/go/src/sync/mutex.go:173 +0x15d\n", acct)
			fmt.Fprintf(&b, "sync.(*Mutex).Lock(...)\n\t/usr/local/go/src/sync/mutex.go:92\n")
			fmt.Fprintf(&b, "main.(*account).update(0x%x, 0x%x)\n\t/build/app/account.go:17 +0x45\n", acct, 0xc000500000+0x40*id)
			fmt.Fprintf(&b, "main.(*server).handle(0xc000010000, 0x%x)\n\t/build/app/server.go:44 +0x8e\n", 0xc000600000+0x40*id)
			created(1)
		}
	}
	return b.Bytes()
}

// TestAnalyzeMemoryBudget: with a budget hangdoc's heap is past half of
// once the dump is read, analyze degrades as it says (groups by stack
// shape, holders for the most waited-for locks) and says so in the
// report; it never dies. It runs as a process of its own: --max-memory
// sets the runtime's memory limit.
func TestAnalyzeMemoryBudget(t *testing.T) {
	const conns, accounts = 4000, 40
	dump := filepath.Join(t.TempDir(), "server.txt")
	if err := os.WriteFile(dump, serverDump(conns, accounts), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		Verdict  string `json:"verdict"`
		Sampling struct {
			Notes   []string `json:"notes"`
			Partial bool     `json:"partial"`
		} `json:"sampling"`
		Groups []struct {
			Count int    `json:"count"`
			State string `json:"state"`
		} `json:"groups"`
	}
	run := func(args ...string) (result, ExitCode, string) {
		out, stderr, code := hangdocProcess(t, append([]string{"analyze", "--json", dump}, args...)...)
		var r result
		if err := jsonUnmarshal(out, &r); err != nil {
			t.Fatalf("%v: exit %d, the report is not JSON: %v\nstdout: %s\nstderr: %s", args, code, err, out, stderr)
		}
		for _, n := range r.Sampling.Notes {
			if strings.HasPrefix(n, "memory budget:") {
				return r, code, n
			}
		}
		return r, code, ""
	}
	whole, wholeCode, note := run()
	if note != "" {
		t.Fatalf("the default budget is past half: %s", note)
	}
	r, code, note := run("--max-memory", "3MiB")
	if !strings.Contains(note, "grouped by stack shape alone") || !strings.Contains(note, "the 32 locks with the most waiters") {
		t.Errorf("notes %q: want the memory budget's, saying how the diagnosis was degraded", r.Sampling.Notes)
	}
	// The same verdict as with the memory to read every goroutine, and a
	// hang's.
	if r.Verdict != whole.Verdict || code != wholeCode || r.Sampling.Partial || code != ExitBlocked && code != ExitIdle && code != ExitDeadlock {
		t.Errorf("verdict %q (exit %d, partial %v), want %q (exit %d) as with the default budget, whole", r.Verdict, code, r.Sampling.Partial, whole.Verdict, wholeCode)
	}
	total, waiting := 0, 0
	for _, g := range r.Groups {
		total += g.Count
		if g.State == "sync.Mutex.Lock" {
			waiting += g.Count
		}
	}
	if want := 1 + conns + accounts + accounts*(accounts+1)/2; total != want || waiting != accounts*(accounts+1)/2 {
		t.Errorf("groups hold %d goroutines (%d waiting for a lock), want %d (%d)", total, waiting, want, accounts*(accounts+1)/2)
	}
}

// hostileDump is a one-goroutine dump whose frames name the given files.
func hostileDump(t *testing.T, files ...string) string {
	var b strings.Builder
	b.WriteString("goroutine 1 [sync.Mutex.Lock]:\nsync.runtime_SemacquireMutex(0xc000012344, 0x0, 0x1)\n\t/usr/local/go/src/runtime/sema.go:95 +0x25\n")
	b.WriteString("sync.(*Mutex).lockSlow(0xc000012340)\n\t/usr/local/go/src/sync/mutex.go:173 +0x15d\n")
	for i, f := range files {
		fmt.Fprintf(&b, "main.acquire%d()\n\t%s:%d +0x1d\n", i, f, i+1)
	}
	b.WriteString("\n")
	path := filepath.Join(t.TempDir(), "hostile.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// analyzeWithin runs hangdoc analyze in-process; guard only turns a hang
// into a failure rather than the test binary's timeout.
func analyzeWithin(t *testing.T, guard time.Duration, args ...string) (stdout, stderr string, code ExitCode) {
	t.Helper()
	type result struct {
		out, err string
		code     ExitCode
	}
	done := make(chan result, 1)
	go func() {
		o, e, c := hangdoc(t, append([]string{"analyze"}, args...)...)
		done <- result{o, e, c}
	}()
	select {
	case r := <-done:
		return r.out, r.err, r.code
	case <-time.After(guard):
		t.Fatalf("hangdoc analyze %v did not finish in %v", args, guard)
	}
	return
}

// Source files named by a dump are read only when they are regular
// files, and never hang the run: a FIFO (whose open would wait for a
// writer), /dev/zero (which never ends), a file on a filesystem that
// never answers (given up once, and said so).
func TestAnalyzeHostileSources(t *testing.T) {
	t.Run("FIFO and /dev/zero", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "x.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		dump := hostileDump(t, fifo, "/dev/zero")
		out, stderr, code := analyzeWithin(t, 2*time.Minute, "--timeout", "5s", dump)
		if code != ExitBlocked || !strings.Contains(out, "BLOCKED") || strings.Contains(out, "PARTIAL") {
			t.Errorf("exit %d, want a whole report, blocked\nstdout: %s\nstderr: %s", code, out, stderr)
		}
	})
	t.Run("a dump that is a FIFO nobody writes to", func(t *testing.T) {
		// Its open waits for a writer, in the kernel: the run gives it up
		// at --timeout (and a grace), with one line. A process of its own,
		// so that the open left blocked ends with it.
		fifo := filepath.Join(t.TempDir(), "dump.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := hangdocProcess(t, "analyze", "--timeout", "1s", fifo)
		if code != ExitError || out != "" || !strings.Contains(stderr, "reading the dumps did not stop") {
			t.Errorf("exit %d, want %d and one line saying the reading was given up\nstdout: %s\nstderr: %s", code, ExitError, out, stderr)
		}
		oneLine(t, stderr)
	})
	t.Run("source on a hung mount", func(t *testing.T) {
		fs, err := fusehang.Mount(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		a, b := filepath.Join(fs.Dir, "hang-a.go"), filepath.Join(fs.Dir, "hang-b.go")
		dump := hostileDump(t, a, b)
		out, stderr, code := analyzeWithin(t, 2*time.Minute, "--source-timeout", "1s", "--json", dump)
		if code != ExitBlocked {
			t.Fatalf("exit %d, want %d (blocked)\nstderr: %s", code, ExitBlocked, stderr)
		}
		var r struct {
			Sampling struct {
				Notes   []string `json:"notes"`
				Partial bool     `json:"partial"`
			} `json:"sampling"`
		}
		if err := jsonUnmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		said := false
		for _, n := range r.Sampling.Notes {
			said = said || strings.Contains(n, "source "+a+" not read") && strings.Contains(n, "did not return in time") &&
				strings.Contains(n, "1 more source file(s) on "+fs.Dir+" not tried")
		}
		if !said || r.Sampling.Partial {
			t.Errorf("notes %q, partial %v: want a whole report whose note says %s was given up and the other file there not tried", r.Sampling.Notes, r.Sampling.Partial, a)
		}
		if n := fs.Held(); n > 1 {
			t.Errorf("%d requests held: the hung mount was tried more than once", n)
		}
	})
}

// startHangdoc starts hangdoc as a process of its own (this test binary);
// its standard output and error go to files, which can be read while it
// runs.
func startHangdoc(t *testing.T, env []string, args ...string) (cmd *exec.Cmd, stdout, stderr string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stdout, stderr = filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")
	cmd = exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), "HANGDOC_MAIN=1"), env...)
	for _, f := range []struct {
		path string
		to   *io.Writer
	}{{stdout, &cmd.Stdout}, {stderr, &cmd.Stderr}} {
		w, err := os.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		*f.to = w
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stdout, stderr
}

// read is a file's text, "" when it cannot be read.
func read(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// waitFile waits until the file holds s; guard bounds a failure only.
func waitFile(path, s string, guard time.Duration) bool {
	for end := time.Now().Add(guard); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(read(path), s) {
			return true
		}
	}
	return false
}

// exitOf waits for cmd; guard bounds a failure only.
func exitOf(t *testing.T, cmd *exec.Cmd, guard time.Duration) ExitCode {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			return 0
		}
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() < 0 {
			t.Fatalf("hangdoc: %v", err)
		}
		return ExitCode(ee.ExitCode())
	case <-time.After(guard):
		// Its goroutines, for the failure's message.
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
		}
		t.Fatalf("hangdoc did not end within %v of the signal", guard)
	}
	return 0
}

// TestAnalyzeInterrupted: SIGTERM or SIGINT ends a run that is stuck, at
// once, with the report of what was read, marked partial, and exit code
// ExitInterrupted. The order of events cannot flip: the signal is sent
// once the stuck read is seen held, and the read's own deadline
// (--source-timeout, --timeout) is far past any load.
func TestAnalyzeInterrupted(t *testing.T) {
	t.Run("source on a hung mount", func(t *testing.T) {
		fs, err := fusehang.Mount(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		dump := hostileDump(t, filepath.Join(fs.Dir, "hang.go"))
		// The grace for the report is long too: what is checked is that
		// the signal ends the read, and the report is of what was read.
		cmd, stdout, stderr := startHangdoc(t, []string{interruptGraceEnv + "=1h"}, "analyze", "--source-timeout", "1h", "--timeout", "1h", dump)
		if err := fs.WaitHeld(1, 2*time.Minute); err != nil {
			t.Fatalf("%v\nstderr: %s", err, read(stderr))
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// The report is written at once. The process ends only once the
		// filesystem answers: its thread in the lookup waits in the kernel,
		// where no signal reaches a FUSE request already sent.
		if !waitFile(stdout, "\nHINT", 2*time.Minute) {
			cmd.Process.Signal(syscall.SIGQUIT)
			time.Sleep(time.Second)
			t.Fatalf("no report after the signal\nstdout: %s\nstderr: %s", read(stdout), read(stderr))
		}
		fs.Close()
		code := exitOf(t, cmd, 2*time.Minute)
		out := read(stdout)
		if code != ExitInterrupted || !strings.Contains(out, "PARTIAL: interrupted by SIGTERM while reading the source files") || !strings.Contains(out, "BLOCKED") {
			t.Errorf("exit %d, want %d and a partial report\nstdout: %s\nstderr: %s", code, ExitInterrupted, out, read(stderr))
		}
	})
	t.Run("dump from a FIFO", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "dump.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd, stdout, stderr := startHangdoc(t, nil, "analyze", "--timeout", "1h", fifo)
		// The open returns once hangdoc opened the other end; the write
		// once it is in the pipe. Whether hangdoc read the goroutine
		// before the signal or not, both outcomes are right: a partial
		// report, or one line saying nothing was read.
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		fmt.Fprintf(w, "goroutine 1 [select (no cases)]:\nmain.main()\n\t/build/app/main.go:12 +0x1d\n\n")
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		code := exitOf(t, cmd, 2*time.Minute)
		out, errs := read(stdout), read(stderr)
		partial := strings.Contains(out, "PARTIAL: interrupted by SIGINT while reading "+fifo)
		oneLine := out == "" && strings.HasPrefix(errs, "hangdoc: interrupted by SIGINT") && strings.Count(errs, "\n") == 1
		if code != ExitInterrupted || !partial && !oneLine {
			t.Errorf("exit %d, want %d with a partial report or one line\nstdout: %s\nstderr: %s", code, ExitInterrupted, out, errs)
		}
	})
}

// TestLiveInterrupted: a live run ends at SIGTERM with exit code
// ExitInterrupted and the report of the samples taken, marked partial.
// hangdoc holds the target's claim file from before its first sample to
// the end of the run: once the file names hangdoc's pid, the run is under
// way. The report is given up if it is not ready within a grace of the
// signal (on a loaded machine, the scan of other processes that goes with
// it may take that long): then one line says so, also right.
func TestLiveInterrupted(t *testing.T) {
	v := testvictim.Start(t, testvictim.Build(t, "abba"))
	cmd, stdout, stderr := startHangdoc(t, nil, strconv.Itoa(v.PID), "--samples", "1000", "--interval", "1s", "--timeout", "1h", "--json")
	if !waitClaimed(v.PID, cmd.Process.Pid, 2*time.Minute) {
		t.Fatalf("hangdoc never claimed pid %d\nstderr: %s", v.PID, read(stderr))
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := exitOf(t, cmd, 2*time.Minute)
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, ExitInterrupted, read(stdout), read(stderr))
	}
	out := read(stdout)
	if out == "" {
		if errs := read(stderr); !strings.HasPrefix(errs, "hangdoc: interrupted by SIGTERM") || strings.Count(errs, "\n") != 1 {
			t.Errorf("no report, and stderr %q is not one line saying it was interrupted", errs)
		}
		return
	}
	c := decode(t, out)
	if !c.Sampling.Partial || !strings.Contains(c.Sampling.PartialReason, "interrupted by SIGTERM") || c.Sampling.Samples < 1 || c.Sampling.Samples >= 1000 {
		t.Errorf("sampling %+v: want a partial run interrupted by SIGTERM", c.Sampling)
	}
}

// waitClaimed waits until pid's claim file names hangdoc (sampler/claim.go).
func waitClaimed(pid, hangdoc int, guard time.Duration) bool {
	end := time.Now().Add(guard)
	for time.Now().Before(end) {
		for _, dir := range []string{"/run/hangdoc", filepath.Join(os.TempDir(), "hangdoc-"+strconv.Itoa(os.Getuid()))} {
			files, _ := filepath.Glob(filepath.Join(dir, strconv.Itoa(pid)+"-*.lock"))
			for _, f := range files {
				if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(hangdoc) {
					return true
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
