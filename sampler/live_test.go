package sampler

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
)

// TestSampleLiveABBA samples the abba victim, two threads deadlocked on two
// default mutexes, and reads the owners out of the mutexes' memory.
func TestSampleLiveABBA(t *testing.T) {
	t.Parallel()
	v := testvictim.Start(t, testvictim.Build(t, "abba"))
	left, right := v.TID("left"), v.TID("right")
	m1, m2 := v.Addr("m1"), v.Addr("m2")

	s, err := New(NewFS(""), v.PID)
	if err != nil {
		t.Fatalf("New(/proc, %d): %v", v.PID, err)
	}
	defer s.Close()
	if err := s.MemErr(); err != nil {
		t.Fatalf("MemErr() = %v; the test owns the victim and should read its memory", err)
	}

	for i := range 2 {
		sample, err := s.Sample()
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		want := []int{v.PID, left, right}
		slices.Sort(want)
		if got := tids(sample); !slices.Equal(got, want) {
			t.Fatalf("sample %d: threads %v, want %v", i, got, want)
		}
		// left holds m1 and waits for m2; right holds m2 and waits for m1.
		for _, w := range []struct {
			tid   int
			name  string
			waits uint64
		}{{left, "left", m2}, {right, "right", m1}} {
			th, _ := threadByTID(sample, w.tid)
			if addr, ok := model.FutexWait(th.Syscall); th.Name != w.name || th.Exited || !ok || addr != w.waits {
				t.Errorf("sample %d: thread %d = %+v; want %q waiting in futex on %#x", i, w.tid, th, w.name, w.waits)
			}
		}
		for _, m := range []struct {
			name  string
			addr  uint64
			owner int
		}{{"m1", m1, left}, {"m2", m2, right}} {
			got, ok := sample.Futexes[model.FutexKey(m.addr)]
			if !ok {
				t.Errorf("sample %d: Futexes has no %s (%s): %+v", i, m.name, model.FutexKey(m.addr), sample.Futexes)
				continue
			}
			// Locked with waiters (2), owned by the thread that locked it
			// first, PTHREAD_MUTEX_NORMAL/TIMED (kind 0).
			want := model.Futex{Word: 2, Owner: int32(m.owner), Kind: 0}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("sample %d: Futexes[%s] (%s) (-want +got):\n%s", i, model.FutexKey(m.addr), m.name, d)
			}
		}
	}
}

// TestSampleExitedProcess: a process that exits after New is reported as
// gone, whether it is still a zombie or already reaped.
func TestSampleExitedProcess(t *testing.T) {
	t.Parallel()
	for _, reap := range []bool{false, true} {
		name := "zombie"
		if reap {
			name = "reaped"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("sleep", "0.1")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := false
			defer func() {
				if !waited {
					cmd.Process.Kill()
					cmd.Wait()
				}
			}()
			pid := cmd.Process.Pid
			s, err := New(NewFS(""), pid)
			if err != nil {
				t.Fatalf("New(/proc, %d) on a running sleep: %v", pid, err)
			}
			defer s.Close()

			if reap {
				cmd.Wait()
				waited = true
			} else {
				waitZombie(t, pid)
			}
			_, err = s.Sample()
			if !errors.Is(err, ErrNoProcess) {
				t.Errorf("Sample of exited pid %d (%s): %v, want ErrNoProcess", pid, name, err)
			}
		})
	}
}

// waitZombie waits until pid has exited but not been reaped.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	path := filepath.Join("/proc", strconv.Itoa(pid), "stat")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("pid %d vanished before it was reaped: %v", pid, err)
		}
		if st, err := parseStat(b); err == nil && st.State == model.StateZombie {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d did not exit within 10s", pid)
}
