package sampler

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func TestParseNSpid(t *testing.T) {
	for _, tt := range []struct {
		name, status string
		want         []int
		inner        int // innerPID of pid 4187
	}{
		{"host", "Name:\tx\nTgid:\t4187\nNSpid:\t4187\nPPid:\t1\n", []int{4187}, 0},
		{"container", "Name:\tx\nNSpid:\t4187\t1\nNSpgid:\t4187\t1\n", []int{4187, 1}, 1},
		{"nested", "Name:\tx\nNSpid:\t4187\t310\t7", []int{4187, 310, 7}, 7},
		{"old kernel", "Name:\tx\nPid:\t4187\n", nil, 0},
		{"garbage", "Name:\tx\nNSpid:\t4187\tx\n", nil, 0},
		{"zero", "Name:\tx\nNSpid:\t0\n", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := parseNSpid([]byte(tt.status))
			if !slices.Equal(got, tt.want) {
				t.Errorf("parseNSpid(%q) = %v, want %v", tt.status, got, tt.want)
			}
			if inner := innerPID(got, 4187); inner != tt.inner {
				t.Errorf("innerPID(%v, 4187) = %d, want %d", got, inner, tt.inner)
			}
		})
	}
}

// nsTree writes a /proc tree: for each pid its NSpid line and the link
// ns/pid, and self when self is not 0.
func nsTree(t *testing.T, self int, procs map[int]struct {
	nspid string
	ns    string
}) FS {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\tx\nNSpid:\t"+p.nspid+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p.ns, filepath.Join(dir, "ns", "pid")); err != nil {
			t.Fatal(err)
		}
	}
	if self != 0 {
		if err := os.Symlink(strconv.Itoa(self), filepath.Join(root, "self")); err != nil {
			t.Fatal(err)
		}
	}
	return NewFS(root)
}

type nsProc = struct {
	nspid string
	ns    string
}

// TestLocalPID: the host's /proc at --proc, hangdoc in a container of its
// own (pid 500 on the host, 7 in its namespace, pid:[200]).
func TestLocalPID(t *testing.T) {
	host := nsTree(t, 500, map[int]nsProc{
		500: {"500\t7", "pid:[200]"},
		600: {"600\t9", "pid:[200]"},      // in hangdoc's namespace, 9 there
		700: {"700\t3", "pid:[300]"},      // in a container beside it
		800: {"800", "pid:[100]"},         // on the host
		900: {"900\t12\t4", "pid:[400]"},  // in a container below hangdoc's
		950: {"950\t13\t4", "pid:[401]"},  // below a container beside it
		960: {"960\t9\t1", "pid:[402]"},   // 9 is another process in hangdoc's
		970: {"970\tjunk", "pid:[200]"},   // unreadable NSpid
		980: {"980\t14\t2", "pid:[403]"},  // below, but gone from hangdoc's /proc
		990: {"990\t15\t15", "pid:[404]"}, // the same pid at two levels
	})
	own := nsTree(t, 7, map[int]nsProc{
		7:  {"7", "pid:[200]"},
		9:  {"9", "pid:[200]"},
		12: {"12\t4", "pid:[400]"},
		13: {"13", "pid:[200]"},
		15: {"15\t15", "pid:[404]"},
	})
	for _, tt := range []struct {
		name string
		pid  int
		want int
	}{
		{"same namespace", 600, 9},
		{"beside", 700, 0},
		{"host", 800, 0},
		{"below", 900, 12},
		{"below a sibling", 950, 0},
		{"another process under that pid", 960, 0},
		{"unreadable", 970, 0},
		{"gone", 980, 0},
		{"same pid at two levels", 990, 15},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := localPID(host, own, tt.pid)
			if got != tt.want {
				t.Errorf("localPID(%d) = %d (%v), want %d", tt.pid, got, err, tt.want)
			}
			if (err == nil) != (tt.want != 0) || err != nil && !errors.Is(err, ErrOtherNamespace) && !errors.Is(err, ErrNoProcess) {
				t.Errorf("localPID(%d): error %v", tt.pid, err)
			}
		})
	}
	t.Run("own /proc", func(t *testing.T) {
		if got, err := localPID(own, own, 4187); got != 4187 || err != nil {
			t.Errorf("localPID on hangdoc's own /proc = %d, %v; want the pid itself", got, err)
		}
	})
	t.Run("hangdoc not in it", func(t *testing.T) {
		other := nsTree(t, 0, map[int]nsProc{600: {"600", "pid:[300]"}})
		if got, err := localPID(other, own, 600); got != 0 || !errors.Is(err, ErrOtherNamespace) {
			t.Errorf("localPID through a /proc without hangdoc in it = %d, %v; want none, ErrOtherNamespace", got, err)
		}
	})
}
