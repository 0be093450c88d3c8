package procstatus

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Status files read off this machine: a process, a thread of a Rust
// program (its SIGSEGV, SIGBUS and SIGRTMIN handlers), a kernel thread (no
// Vm lines), a zombie.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		file        string
		name        string
		state       byte
		tgid, ppid  int
		threads     int
		rss         uint64
		vol         uint64
		catchesSEGV bool
		noVm        bool
		nspid       []int
	}{
		{file: "process.txt", name: "cp", state: 'R', tgid: 22178, ppid: 22130, threads: 1, rss: 2168, vol: 2, nspid: []int{22178}},
		{file: "thread.txt", name: "rustspin", state: 'S', tgid: 2775, ppid: 1, threads: 5, rss: 2044, vol: 3, catchesSEGV: true, nspid: []int{2775}},
		{file: "kthread.txt", name: "kthreadd", state: 'S', tgid: 2, ppid: 0, threads: 1, noVm: true, nspid: []int{2}},
		{file: "zombie.txt", name: "sleep", state: 'Z', tgid: 22601, threads: 1, noVm: true, nspid: []int{22601}},
	} {
		s, err := Parse(read(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if s.Name != tc.name || s.State != tc.state || s.Tgid != tc.tgid || s.Threads != tc.threads || !slices.Equal(s.NSpid, tc.nspid) {
			t.Errorf("%s: %+v, want name %s state %c tgid %d threads %d nspid %v", tc.file, s, tc.name, tc.state, tc.tgid, tc.threads, tc.nspid)
		}
		if tc.ppid != 0 && s.PPid != tc.ppid {
			t.Errorf("%s: PPid %d, want %d", tc.file, s.PPid, tc.ppid)
		}
		if tc.noVm != (s.Has&HasVmRSS == 0) || !tc.noVm && s.VmRSSKiB != tc.rss {
			t.Errorf("%s: VmRSS %d (read: %v), want %d (read: %v)", tc.file, s.VmRSSKiB, s.Has&HasVmRSS != 0, tc.rss, !tc.noVm)
		}
		if tc.vol != 0 && s.Voluntary != tc.vol {
			t.Errorf("%s: voluntary switches %d, want %d", tc.file, s.Voluntary, tc.vol)
		}
		if s.Catches(11) != tc.catchesSEGV {
			t.Errorf("%s: Catches(SIGSEGV) = %v, want %v (SigCgt %x)", tc.file, s.Catches(11), tc.catchesSEGV, s.SigCgt)
		}
		if s.Uid != [4]int{} || s.Has&HasUid == 0 {
			t.Errorf("%s: Uid %v (read: %v), want root's", tc.file, s.Uid, s.Has&HasUid != 0)
		}
	}
}

func TestParseGarbled(t *testing.T) {
	for _, in := range []string{"", "garbage", "Tgid:\tnot a number\n"} {
		if s, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error: no line read", in, s)
		}
	}
	// A garbled line leaves its field unread; the others are read.
	for in, unread := range map[string]Line{
		"Name:\tx\nTgid:\tnot a number\n": HasTgid, "Name:\tx\nUid:\t0 0\n": HasUid,
		"Name:\tx\nNSpid:\t12 -1\n": HasNSpid, "Name:\tx\nSigCgt:\tzz\n": HasSigCgt,
	} {
		s, err := Parse([]byte(in))
		if err != nil || s.Has&unread != 0 || s.Name != "x" {
			t.Errorf("Parse(%q) = %+v, %v; want Name read, line %b unread", in, s, err, unread)
		}
	}
	// The first of two lines counts.
	if s, _ := Parse([]byte("Tgid:\t5\nTgid:\t6\n")); s.Tgid != 5 {
		t.Errorf("Tgid twice: %d, want the first, 5", s.Tgid)
	}
	if s, err := Parse([]byte("Name:\tx\nNSpid:\t4242\t7\n")); err != nil || !slices.Equal(s.NSpid, []int{4242, 7}) {
		t.Errorf("NSpid of a process in a child namespace: %+v, %v", s.NSpid, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"process.txt", "thread.txt", "kthread.txt", "zombie.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		if s.Has == 0 {
			t.Fatalf("no line read, and no error: %+v", s)
		}
		if len(s.NSpid) > len(b) {
			t.Fatalf("%d NSpid entries from %d bytes", len(s.NSpid), len(b))
		}
	})
}

// TestCatches: a SigCgt mask read from a status text, as a JVM's is
// checked before the SIGQUIT that starts its attach listener (-Xrs leaves
// SIGQUIT out); a garbled or missing mask catches nothing.
func TestCatches(t *testing.T) {
	for _, tc := range []struct {
		status string
		sig    int
		want   bool
	}{
		{"Name:\tjava\nSigCgt:\t0000000000000004\n", 3, true}, // SIGQUIT's bit
		{"Name:\tjava\nSigCgt:\t0000000181005ccf\n", 3, true},
		{"Name:\tjava\nSigCgt:\t0000000181005cc8\n", 3, false}, // -Xrs: no SIGQUIT
		{"Name:\tjava\nSigCgt:\tzz\n", 3, false},
		{"Name:\tjava\n", 3, false},
		{"Name:\tjava\nSigCgt:\t0000000000000004\n", 0, false},
	} {
		st, _ := Parse([]byte(tc.status))
		if got := st.Catches(tc.sig); got != tc.want {
			t.Errorf("Catches(%d) of %q = %v, want %v", tc.sig, tc.status, got, tc.want)
		}
	}
}
