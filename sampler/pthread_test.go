package sampler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestThreadsByPthread: a Python 3.9 process in a container as its maps
// and syscall files showed it (two threads blocked in futex, each with its
// descriptor at the top of its stack's mapping), and what breaks a join.
func TestThreadsByPthread(t *testing.T) {
	const maps = `55f0e0a00000-55f0e0a01000 r--p 00000000 fe:00 1 /usr/bin/python3.9
7f4c1f607000-7f4c1f608000 ---p 00000000 00:00 0
7f4c1f608000-7f4c1fe08000 rw-p 00000000 00:00 0
7f4c1fe08000-7f4c1fe09000 ---p 00000000 00:00 0
7f4c1fe09000-7f4c20609000 rw-p 00000000 00:00 0
7f4c2060a000-7f4c2060d000 r--p 00000000 fe:00 120050 /lib/math.so
7f4c20700000-7f4c20800000 rw-p 00000000 00:00 0
7ffed1200000-7ffed1221000 rw-p 00000000 00:00 0 [stack]
`
	root := t.TempDir()
	write := func(path, s string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("100/maps", maps)
	write("100/task/100/syscall", "232 0x3 0x7ffed121e2c0 0x1 0xffffffff 0x0 0x0 0x7ffed121e190 0x7f4c2104a0aa\n")
	write("100/task/101/syscall", "202 0x55f0e1a2b0 0x189 0x0 0x0 0x0 0xffffffff 0x7f4c206086a0 0x7f4c2104a0aa\n") // t1
	write("100/task/102/syscall", "202 0x55f0e1a2c0 0x189 0x0 0x0 0x0 0xffffffff 0x7f4c1fe076a0 0x7f4c2104a0aa\n") // t2
	write("100/task/103/syscall", "running\n")
	write("100/task/104/syscall", "-1 0x7f4c207ff000 0x7f4c2104a0aa\n") // a page fault, in the same mapping as 0x7f4c207ff800
	write("100/task/105/syscall", "-1 0x7f4c207fe000 0x7f4c2104a0aa\n")
	fs := NewFS(root)
	const (
		t1, t2 = 0x7f4c206086c0, 0x7f4c1fe076e0
		main   = 0x7f4c21024b80 // in ld.so's TLS block: no mapping here
		shared = 0x7f4c207ff800 // two stacks in one mapping: not joined
		below  = 0x7f4c1f607100 // in a guard page: no stack there
		under  = 0x7ffed1200100 // below the stack pointer of its mapping
	)
	got := ThreadsByPthread(fs, 100, []int{100, 101, 102, 103, 104, 105}, []uint64{t1, t2, main, shared, below, under})
	want := map[uint64]int{t1: 101, t2: 102}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ThreadsByPthread (-want +got):\n%s", diff)
	}
	if got := ThreadsByPthread(fs, 100, []int{101}, []uint64{t1, 0x7f4c20609000 - 8}); len(got) != 0 {
		t.Errorf("two idents in one mapping: joined %v, want none", got)
	}
	if got := ThreadsByPthread(fs, 999, []int{101}, []uint64{t1}); len(got) != 0 {
		t.Errorf("no maps: joined %v, want none", got)
	}
}
