package sampler

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hangdoc/hangdoc/model"
	"golang.org/x/sys/unix"
)

// writeTree makes a /proc-like tree under a temporary directory: each key
// of files is a path; a value starting with "->" makes a symbolic link to
// the rest, anything else a regular file with that content.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, path)
		} else {
			err = os.WriteFile(path, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestScanProcsFixture(t *testing.T) {
	// statOf is statMain as process pid, child of ppid.
	statOf := func(pid, ppid int, comm string) string {
		s := withField(statMain, 4, strconv.Itoa(ppid))
		s = withComm(s, comm)
		return strconv.Itoa(pid) + s[strings.IndexByte(s, ' '):]
	}
	procOf := func(pid, ppid int, comm string) model.Proc {
		return model.Proc{PID: pid, PPID: ppid, PGRP: mainStat.PGRP, Session: mainStat.Session,
			Comm: comm, State: mainStat.State, StartTicks: mainStat.StartTicks, CPUTime: mainStat.CPUTime}
	}
	for _, tc := range []struct {
		name    string
		root    string            // a tree in testdata, or "" for files
		files   map[string]string // the tree to make
		want    []model.Proc
		wantErr string
	}{{
		name: "captured pipeholder",
		root: fixtureRoot,
		want: []model.Proc{{PID: 32266, PPID: 1, PGRP: 32250, Session: 7923, Comm: "pipeholder", State: model.StateSleeping,
			StartTicks: 92769, CPUTime: 390 * time.Millisecond}},
	}, {
		name: "sorted by pid, numerically",
		files: map[string]string{
			"100/stat": statOf(100, 1, "b"),
			"20/stat":  statOf(20, 1, "a"),
			"3/stat":   statOf(3, 20, "c d"),
		},
		want: []model.Proc{procOf(3, 20, "c d"), procOf(20, 1, "a"), procOf(100, 1, "b")},
	}, {
		name: "names that are not pids are not processes",
		files: map[string]string{
			"7/stat":       statOf(7, 1, "x"),
			"self":         "->7",
			"net/tcp":      "",
			"stat":         "cpu 1 2 3\n",
			"0/stat":       statOf(0, 0, "zero"),
			"-5/stat":      statOf(5, 1, "negative"),
			"12abc/stat":   statOf(12, 1, "suffix"),
			"sys/kernel/x": "",
		},
		want: []model.Proc{procOf(7, 1, "x")},
	}, {
		name: "a process that vanished is skipped",
		files: map[string]string{
			"7/stat":   statOf(7, 1, "x"),
			"8/status": "Name: exited\n",
		},
		want: []model.Proc{procOf(7, 1, "x")},
	}, {
		name:  "empty tree",
		files: map[string]string{},
		want:  []model.Proc{},
	}, {
		name: "a garbled stat is an error",
		files: map[string]string{
			"7/stat": statOf(7, 1, "x"),
			"9/stat": "9 (short) S 1\n",
		},
		wantErr: "9/stat: parsing stat: too few fields",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root
			if root == "" {
				root = writeTree(t, tc.files)
			}
			got, err := ScanProcs(NewFS(root))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ScanProcs(%s) = %v, %v; want error containing %q", root, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ScanProcs(%s): %v", root, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ScanProcs(%s) (-want +got):\n%s", root, diff)
			}
		})
	}
}

func TestScanProcsMissingRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "absent")
	if got, err := ScanProcs(NewFS(root)); !errors.Is(err, ErrNoProcess) {
		t.Errorf("ScanProcs(%s) = %v, %v; want an error wrapping ErrNoProcess", root, got, err)
	}
}

// TestScanProcsLive finds the test process and a child of it in /proc.
func TestScanProcsLive(t *testing.T) {
	t.Parallel()
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		unix.Kill(child.Process.Pid, unix.SIGKILL)
		child.Wait()
	}()

	procs, err := ScanProcs(NewFS(""))
	if err != nil {
		t.Fatalf("ScanProcs(/proc): %v", err)
	}
	if !slices.IsSortedFunc(procs, func(a, b model.Proc) int { return a.PID - b.PID }) {
		t.Errorf("ScanProcs(/proc) is not sorted by pid")
	}
	find := func(pid int) model.Proc {
		t.Helper()
		i, ok := slices.BinarySearchFunc(procs, pid, func(p model.Proc, pid int) int { return p.PID - pid })
		if !ok {
			t.Fatalf("ScanProcs(/proc): pid %d missing from %d processes", pid, len(procs))
		}
		return procs[i]
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	comm := filepath.Base(exe)
	if len(comm) > 15 {
		comm = comm[:15] // TASK_COMM_LEN less the NUL
	}
	sid, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	self := find(os.Getpid())
	want := model.Proc{PID: os.Getpid(), PPID: os.Getppid(), PGRP: unix.Getpgrp(), Session: sid, Comm: comm}
	if diff := cmp.Diff(want, self, cmpIgnoreTimes, cmpIgnoreState); diff != "" {
		t.Errorf("the test process (-want +got):\n%s", diff)
	}
	if self.StartTicks == 0 {
		t.Errorf("the test process: StartTicks 0")
	}
	kid := find(child.Process.Pid)
	want = model.Proc{PID: child.Process.Pid, PPID: os.Getpid(), PGRP: unix.Getpgrp(), Session: sid, Comm: "sleep"}
	if diff := cmp.Diff(want, kid, cmpIgnoreTimes, cmpIgnoreState); diff != "" {
		t.Errorf("the child (-want +got):\n%s", diff)
	}
	if kid.StartTicks < self.StartTicks {
		t.Errorf("the child started at tick %d, before its parent at %d", kid.StartTicks, self.StartTicks)
	}
}

var (
	cmpIgnoreTimes = cmp.FilterPath(func(p cmp.Path) bool {
		s := p.String()
		return s == "StartTicks" || s == "CPUTime"
	}, cmp.Ignore())
	// A process's state is its main thread's, which may sleep while
	// another runs, and a child may not have reached its sleep yet.
	cmpIgnoreState = cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "State" }, cmp.Ignore())
)

// holderTree is a /proc tree with descriptors on pipe:[7] and socket:[9]:
//
//	100: fd 0 reads the pipe, fd 1 is the socket, fd 5 a file
//	200: fd 1 writes the pipe; fd 2 once did (fdinfo shows another
//	     inode: the number was reused); fd 3 closed after its link was read
//	     (no fdinfo and, in a live tree, no link: here it keeps its link, so
//	     it is kept, as a captured tree without fdinfo is)
//	300: exited: no fd directory
//	400: fd 4 reads the pipe, but its fdinfo is garbled
var holderTree = map[string]string{
	"100/fd/0":      "->pipe:[7]",
	"100/fdinfo/0":  "pos:\t0\nflags:\t02000000\nmnt_id:\t16\nino:\t7\n",
	"100/fd/1":      "->socket:[9]",
	"100/fdinfo/1":  "pos:\t0\nflags:\t02\nmnt_id:\t10\nino:\t9\n",
	"100/fd/5":      "->/dev/null",
	"100/fdinfo/5":  "pos:\t0\nflags:\t0100000\nmnt_id:\t3\nino:\t4\n",
	"200/fd/1":      "->pipe:[7]",
	"200/fdinfo/1":  "pos:\t0\nflags:\t01\nmnt_id:\t16\nino:\t7\n",
	"200/fd/2":      "->pipe:[7]",
	"200/fdinfo/2":  "pos:\t0\nflags:\t01\nmnt_id:\t16\nino:\t8\n",
	"200/fd/3":      "->pipe:[7]",
	"200/stat":      "",
	"300/stat":      "",
	"400/fd/4":      "->pipe:[7]",
	"400/fdinfo/4":  "garbage\n",
	"400/fd/README": "->pipe:[7]",
}

func TestFindHoldersFixture(t *testing.T) {
	root := writeTree(t, holderTree)
	pipe, sock := "pipe:[7]", "socket:[9]"
	for _, tc := range []struct {
		name         string
		root         string
		targets      []string
		order        []int
		budget       time.Duration
		want         map[string][]model.FDRef
		wantScanned  int
		wantComplete bool
	}{{
		name:    "every holder, in order",
		targets: []string{pipe, sock},
		order:   []int{100, 200, 300, 400},
		want: map[string][]model.FDRef{
			pipe: {{PID: 100, FD: 0, Mode: "r"}, {PID: 200, FD: 1, Mode: "w"}, {PID: 200, FD: 3, Mode: ""}, {PID: 400, FD: 4, Mode: ""}},
			sock: {{PID: 100, FD: 1, Mode: "rw"}},
		},
		wantScanned: 3, wantComplete: true,
	}, {
		name:    "order is the caller's",
		targets: []string{pipe},
		order:   []int{400, 200, 100},
		want: map[string][]model.FDRef{
			pipe: {{PID: 400, FD: 4, Mode: ""}, {PID: 200, FD: 1, Mode: "w"}, {PID: 200, FD: 3, Mode: ""}, {PID: 100, FD: 0, Mode: "r"}},
		},
		wantScanned: 3, wantComplete: true,
	}, {
		name:        "repeated and impossible pids are read once or not at all",
		targets:     []string{sock},
		order:       []int{100, 0, -1, 100, 100},
		want:        map[string][]model.FDRef{sock: {{PID: 100, FD: 1, Mode: "rw"}}},
		wantScanned: 1, wantComplete: true,
	}, {
		name:        "processes not in order are not read",
		targets:     []string{pipe},
		order:       []int{200},
		want:        map[string][]model.FDRef{pipe: {{PID: 200, FD: 1, Mode: "w"}, {PID: 200, FD: 3, Mode: ""}}},
		wantScanned: 1, wantComplete: true,
	}, {
		name:        "a target nobody holds",
		targets:     []string{"pipe:[99]"},
		order:       []int{100, 200, 300, 400},
		want:        map[string][]model.FDRef{},
		wantScanned: 3, wantComplete: true,
	}, {
		name:        "no targets",
		order:       []int{100, 200},
		want:        map[string][]model.FDRef{},
		wantScanned: 0, wantComplete: true,
	}, {
		name:        "a spent budget stops after the first process",
		targets:     []string{pipe, sock},
		order:       []int{100, 200, 400},
		budget:      time.Nanosecond,
		want:        map[string][]model.FDRef{pipe: {{PID: 100, FD: 0, Mode: "r"}}, sock: {{PID: 100, FD: 1, Mode: "rw"}}},
		wantScanned: 1, wantComplete: false,
	}, {
		name:        "a budget that lasts",
		targets:     []string{sock},
		order:       []int{100, 200},
		budget:      time.Hour,
		want:        map[string][]model.FDRef{sock: {{PID: 100, FD: 1, Mode: "rw"}}},
		wantScanned: 2, wantComplete: true,
	}, {
		name:        "captured pipeholder, which has no fdinfo",
		root:        fixtureRoot,
		targets:     []string{fixturePipe},
		order:       []int{fixturePID},
		want:        map[string][]model.FDRef{fixturePipe: {{PID: fixturePID, FD: 4, Mode: ""}}},
		wantScanned: 1, wantComplete: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := root
			if tc.root != "" {
				r = tc.root
			}
			targets := make(map[string]bool)
			for _, s := range tc.targets {
				targets[s] = true
			}
			found, scanned, complete := FindHolders(NewFS(r), targets, tc.order, tc.budget)
			if diff := cmp.Diff(tc.want, found); diff != "" {
				t.Errorf("FindHolders(%v, %v, %v) found (-want +got):\n%s", tc.targets, tc.order, tc.budget, diff)
			}
			if scanned != tc.wantScanned || complete != tc.wantComplete {
				t.Errorf("FindHolders(%v, %v, %v): scanned %d, complete %v; want %d, %v",
					tc.targets, tc.order, tc.budget, scanned, complete, tc.wantScanned, tc.wantComplete)
			}
		})
	}
}

// startPipeWriter starts `head -c 100000 /dev/zero` with stdout a pipe
// whose read end the test keeps and never reads: the child blocks in
// write() once the pipe is full. It returns the read end and the child.
func startPipeWriter(t *testing.T) (*os.File, *exec.Cmd) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sh", "-c", "head -c 100000 /dev/zero")
	child.Stdout = w
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		unix.Kill(child.Process.Pid, unix.SIGKILL)
		child.Wait()
		r.Close()
	})
	return r, child
}

// waitFull waits until the pipe behind fd of pid is full.
func waitFull(t *testing.T, pid, fd int) model.PipeFill {
	t.Helper()
	var fill model.PipeFill
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		fill, err = ReadPipeFill(NewFS(""), pid, fd)
		if err == nil && fill.Capacity > 0 && fill.Queued == fill.Capacity {
			return fill
		}
	}
	t.Fatalf("pipe of pid %d fd %d not full after 10s: %+v, %v", pid, fd, fill, err)
	return fill
}

// TestPipeLive: a child blocked writing to a pipe the test holds. The
// holders are the test's read end and the child's write end, and the pipe
// is full; after it all, every byte the child wrote is still there to read.
func TestPipeLive(t *testing.T) {
	t.Parallel()
	r, child := startPipeWriter(t)
	self, kid, rfd := os.Getpid(), child.Process.Pid, int(r.Fd())
	target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", rfd))
	if err != nil {
		t.Fatal(err)
	}
	// An independent look at the capacity, through the test's own end.
	wantCap, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if wantCap != 65536 {
		t.Logf("this pipe holds %d bytes, not the default 65536 (pipe-user-pages-soft?)", wantCap)
	}

	for _, end := range []struct {
		name    string
		pid, fd int
	}{{"the test's read end", self, rfd}, {"the child's write end", kid, 1}} {
		t.Run("ReadPipeFill/"+end.name, func(t *testing.T) {
			fill := waitFull(t, end.pid, end.fd)
			if want := (model.PipeFill{Queued: wantCap, Capacity: wantCap}); fill != want {
				t.Errorf("ReadPipeFill(%d, %d) = %+v, want %+v", end.pid, end.fd, fill, want)
			}
		})
	}

	t.Run("FindHolders", func(t *testing.T) {
		targets := map[string]bool{target: true}
		found, scanned, complete := FindHolders(NewFS(""), targets, []int{self, kid}, time.Minute)
		want := map[string][]model.FDRef{target: {{PID: self, FD: rfd, Mode: "r"}, {PID: kid, FD: 1, Mode: "w"}}}
		if diff := cmp.Diff(want, found); diff != "" {
			t.Errorf("FindHolders(%s, [%d %d]) (-want +got):\n%s", target, self, kid, diff)
		}
		if scanned != 2 || !complete {
			t.Errorf("FindHolders: scanned %d, complete %v; want 2, true", scanned, complete)
		}
	})

	t.Run("FindHolders/every process", func(t *testing.T) {
		procs, err := ScanProcs(NewFS(""))
		if err != nil {
			t.Fatal(err)
		}
		order := []int{self, kid}
		for _, p := range procs {
			order = append(order, p.PID)
		}
		found, _, complete := FindHolders(NewFS(""), map[string]bool{target: true}, order, time.Minute)
		if !complete {
			t.Fatalf("FindHolders over %d processes did not finish in a minute", len(procs))
		}
		for _, ref := range []model.FDRef{{PID: self, FD: rfd, Mode: "r"}, {PID: kid, FD: 1, Mode: "w"}} {
			if !slices.ContainsFunc(found[target], func(f model.FDRef) bool { return f.PID == ref.PID && f.FD == ref.FD && f.Mode == ref.Mode }) {
				t.Errorf("FindHolders over every process: %v lacks %v", found[target], ref)
			}
		}
	})

	// Nothing was read: the child's 100000 bytes all reach the test.
	n, err := io.Copy(io.Discard, r)
	if err != nil || n != 100000 {
		t.Errorf("reading the pipe after the test: %d bytes, %v; want 100000", n, err)
	}
}

// BenchmarkFindHolders scans the benchmark's own descriptor table, made
// big with pipes, for one pipe.
func BenchmarkFindHolders(b *testing.B) {
	const pipes = 500
	var target string
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		if i == pipes/2 {
			target, _ = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", r.Fd()))
		}
	}
	targets := map[string]bool{target: true}
	order := []int{os.Getpid()}
	b.ReportAllocs()
	for b.Loop() {
		found, _, _ := FindHolders(NewFS(""), targets, order, 0)
		if len(found[target]) != 2 {
			b.Fatalf("found %v, want both ends of %s", found, target)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*pipes), "ns/fd")
}
