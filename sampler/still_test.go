package sampler

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSampleStillThread: a thread whose schedstat line has not changed has
// not run, so its status, wchan and syscall are not re-read; any change in
// schedstat or in the state from stat brings them back, and a kernel that
// prints "0 0 0" (schedstat off) never takes the shortcut.
func TestSampleStillThread(t *testing.T) {
	r := fixtureReadyLine(t)
	tid := r.waiters[0]
	root := copyFixture(t)
	dir := filepath.Join(root, strconv.Itoa(fixturePID), "task", strconv.Itoa(tid))
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit := func(name, old, new string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s has no %q:\n%s", name, old, b)
		}
		write(name, strings.Replace(string(b), old, new, 1))
	}
	vol := func(s *Sampler) uint64 {
		t.Helper()
		sample, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		th, ok := threadByTID(sample, tid)
		if !ok {
			t.Fatalf("thread %d not sampled", tid)
		}
		return th.Voluntary
	}

	write("schedstat", "1000 0 3\n")
	s := newFixture(t, root)
	if got := vol(s); got != 3 {
		t.Fatalf("first sample: voluntary %d, want 3", got)
	}
	edit("status", "voluntary_ctxt_switches:\t3", "voluntary_ctxt_switches:\t4")
	if got := vol(s); got != 3 {
		t.Errorf("schedstat unchanged: voluntary %d, want the 3 of the last sample (status not re-read)", got)
	}
	write("schedstat", "2000 0 4\n")
	if got := vol(s); got != 4 {
		t.Errorf("schedstat changed: voluntary %d, want 4", got)
	}
	edit("status", "voluntary_ctxt_switches:\t4", "voluntary_ctxt_switches:\t5")
	edit("stat", ") S ", ") D ")
	if got := vol(s); got != 5 {
		t.Errorf("state changed S to D: voluntary %d, want 5", got)
	}

	write("schedstat", "0 0 0\n")
	s = newFixture(t, root)
	vol(s)
	edit("status", "voluntary_ctxt_switches:\t5", "voluntary_ctxt_switches:\t6")
	if got := vol(s); got != 6 {
		t.Errorf("schedstat 0 0 0: voluntary %d, want 6 (always re-read)", got)
	}
}
