package reaper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if err := Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// escape runs a fake helper that starts a grandchild in a session of its
// own (out of the helper's process group) and exits; it returns the
// grandchild's pid, now reparented to this process.
func escape(t *testing.T, script string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "setsid "+script+" </dev/null >/dev/null 2>&1 & echo $!")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the fake helper: %v", err) // its exit status was not stolen
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitFor polls cond; guard bounds a failure only.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestKillAdopted(t *testing.T) {
	pid := escape(t, "sleep 1000")
	waitFor(t, "the grandchild reparented here", func() bool { return stat(pid).ppid == os.Getpid() })
	if a := Adopted(); !slices.Contains(a, pid) {
		t.Fatalf("Adopted() = %v, want %d in it", a, pid)
	}
	if n := KillAdopted(); n < 1 {
		t.Fatalf("KillAdopted() = %d, want at least 1", n)
	}
	// Killed and reaped: no zombie left.
	waitFor(t, "the grandchild gone", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return errors.Is(err, os.ErrNotExist)
	})
}

// An adopted process that exits by itself is reaped on its SIGCHLD.
func TestReapsOnExit(t *testing.T) {
	pid := escape(t, "sleep 0.2")
	waitFor(t, "the grandchild reaped", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return errors.Is(err, os.ErrNotExist)
	})
}

// The reaper never takes the exit status of a child os/exec started:
// many children exiting at once, each Wait gets its own status.
func TestNeverStealsExecChildren(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("sh", "-c", fmt.Sprintf("exit %d", i%7))
			err := cmd.Run()
			var ee *exec.ExitError
			switch {
			case i%7 == 0 && err != nil:
				errs <- fmt.Errorf("child %d: %v, want success", i, err)
			case i%7 != 0 && (!errors.As(err, &ee) || ee.ExitCode() != i%7):
				errs <- fmt.Errorf("child %d: %v, want exit status %d", i, err, i%7)
			}
		}()
		// And reaping runs meanwhile, as on a SIGCHLD.
		Reap()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
