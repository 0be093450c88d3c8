package harmcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The checks can fail: a stopped process, a byte changed in its code and
// a frozen heartbeat are each reported.
func TestCheckFindsHarm(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	for end := time.Now().Add(20 * time.Second); State(pid) != "S"; {
		if time.Now().After(end) {
			t.Fatalf("sleep is %q, not sleeping", State(pid))
		}
		time.Sleep(time.Millisecond)
	}
	if err := Check(pid, ""); err != nil {
		t.Fatalf("Check of an untouched sleep: %v", err)
	}

	syscall.Kill(pid, syscall.SIGSTOP)
	for end := time.Now().Add(20 * time.Second); State(pid) != "T"; {
		if time.Now().After(end) {
			t.Fatal("sleep did not stop")
		}
		time.Sleep(time.Millisecond)
	}
	if err := Check(pid, ""); err == nil || !strings.Contains(err.Error(), "stopped threads") {
		t.Errorf("Check of a stopped process = %v, want stopped threads", err)
	}
	syscall.Kill(pid, syscall.SIGCONT)

	// A byte of its code changed, as a breakpoint left behind would.
	if err := TextIntact(pid); err != nil {
		t.Fatal(err)
	}
	if err := poke(pid); err != nil {
		t.Fatal(err)
	}
	if err := TextIntact(pid); err == nil || !strings.Contains(err.Error(), "0xcc") {
		t.Errorf("TextIntact after a 0xcc was written = %v, want it found", err)
	}

	beat := filepath.Join(t.TempDir(), "beat")
	os.WriteFile(beat, []byte("00000000000000000007\n"), 0o644)
	if err := WaitBeat(beat, 3, 50*time.Millisecond); err == nil {
		t.Error("WaitBeat of a counter nobody writes = nil, want frozen")
	}
}

// poke writes 0xcc at the first byte of pid's first executable mapping.
func poke(pid int) error {
	maps, err := os.ReadFile("/proc/" + itoa(pid) + "/maps")
	if err != nil {
		return err
	}
	exe, _ := os.Readlink("/proc/" + itoa(pid) + "/exe")
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != exe || !strings.Contains(f[1], "x") {
			continue
		}
		lo, _, _ := strings.Cut(f[0], "-")
		addr, err := strconv.ParseInt(lo, 16, 64)
		if err != nil {
			return err
		}
		mem, err := os.OpenFile("/proc/"+itoa(pid)+"/mem", os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer mem.Close()
		_, err = mem.WriteAt([]byte{0xcc}, addr)
		return err
	}
	return os.ErrNotExist
}

func itoa(n int) string { return strconv.Itoa(n) }
