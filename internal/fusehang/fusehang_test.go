package fusehang

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/dstate"
)

func mount(t *testing.T, files map[string][]byte) *FS {
	t.Helper()
	fs, err := Mount(t.TempDir(), files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fs.Close(); err != nil {
			t.Error(err)
		}
	})
	return fs
}

// A stat of a "hang" name sleeps in D until Close, which wakes it.
func TestHangLookup(t *testing.T) {
	fs := mount(t, nil)
	tid := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		_, err := os.Stat(filepath.Join(fs.Dir, "hang"))
		done <- err
	}()
	id := <-tid
	if err := fs.WaitHeld(1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	waitD(t, os.Getpid(), id)
	select {
	case err := <-done:
		t.Fatalf("the stat returned while its request was held: %v", err)
	default:
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("the stat of a hung name succeeded after the abort")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stat did not return after Close")
	}
}

// waitD waits until thread tid of pid sleeps in D. The guard bounds a
// failure only: a thread whose request is held gets there at once.
func waitD(t *testing.T, pid, tid int) {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for {
		s, wchan := dstate.State(pid, tid)
		if s == 'D' {
			t.Logf("thread %d in D, wchan %q", tid, wchan)
			return
		}
		if time.Now().After(end) {
			t.Fatalf("thread %d of pid %d is %q, want D", tid, pid, s)
		}
		time.Sleep(time.Millisecond)
	}
}

// Files are served, and a binary there runs; after HangOpens an open of
// its /proc/PID/exe blocks in D.
func TestFilesAndHangOpens(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	fs := mount(t, map[string][]byte{"hello": []byte("world\n"), "sleep": bin})
	got, err := os.ReadFile(filepath.Join(fs.Dir, "hello"))
	if err != nil || string(got) != "world\n" {
		t.Fatalf("reading hello: %q, %v", got, err)
	}
	cmd := exec.Command(filepath.Join(fs.Dir, "sleep"), "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	fs.HangOpens()
	tid := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		f, err := os.Open("/proc/" + itoa(cmd.Process.Pid) + "/exe")
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	id := <-tid
	if err := fs.WaitHeld(1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	waitD(t, os.Getpid(), id)
	fs.Close()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "connection abort") {
			t.Logf("open after abort: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the open did not return after Close")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
