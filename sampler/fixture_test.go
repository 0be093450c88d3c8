package sampler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
)

// fixturePID is the pipeholder victim captured into testdata/proc by
// testdata/capture.sh (recipe in the script's header), on x86_64, and
// fixtureReady is the ready line it printed. Both are fixture data: the
// tests check that the sampler finds in the files what the victim said.
const (
	fixtureRoot  = "testdata/proc"
	fixturePID   = 32266
	fixtureReady = "ready pid=32266 holder=32279 waiters=32277,32278,32280,32281,32282,32283,32284 lock=0x55bef9e35160 reader=32276 pipefd=4"
	fixturePipe  = "pipe:[716071]" // readlink of fd/4 when captured
	fixtureArch  = "x86_64"
)

// ready is the fixture's ready line, decoded.
type ready struct {
	pid, holder int
	waiters     []int
	lock        uint64
	pipeFD      int
}

func fixtureReadyLine(t *testing.T) ready {
	t.Helper()
	info, err := testvictim.ParseReady(fixtureReady)
	if err != nil {
		t.Fatal(err)
	}
	atoi := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("ready line %q: %v", fixtureReady, err)
		}
		return n
	}
	r := ready{pid: atoi(info["pid"]), holder: atoi(info["holder"]), pipeFD: atoi(info["pipefd"])}
	for _, w := range strings.Split(info["waiters"], ",") {
		r.waiters = append(r.waiters, atoi(w))
	}
	lock, err := strconv.ParseUint(strings.TrimPrefix(info["lock"], "0x"), 16, 64)
	if err != nil {
		t.Fatalf("ready line %q: lock: %v", fixtureReady, err)
	}
	r.lock = lock
	return r
}

// newFixture opens a sampler on the /proc tree at root and decodes syscall
// numbers as the machine the fixture was captured on.
func newFixture(t *testing.T, root string) *Sampler {
	t.Helper()
	s, err := New(NewFS(root), fixturePID)
	if err != nil {
		t.Fatalf("New(NewFS(%q), %d): %v", root, fixturePID, err)
	}
	t.Cleanup(func() { s.Close() })
	s.arch = fixtureArch
	return s
}

// copyFixture copies the captured tree into a fresh directory and returns
// its root.
func copyFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(fixtureRoot)); err != nil {
		t.Fatalf("copying %s: %v", fixtureRoot, err)
	}
	return root
}

func threadByTID(sample model.Sample, tid int) (model.Thread, bool) {
	for _, th := range sample.Threads {
		if th.TID == tid {
			return th, true
		}
	}
	return model.Thread{}, false
}

func tids(sample model.Sample) []int {
	var ids []int
	for _, th := range sample.Threads {
		ids = append(ids, th.TID)
	}
	return ids
}

func TestSampleFixture(t *testing.T) {
	r := fixtureReadyLine(t)
	s := newFixture(t, fixtureRoot)
	// The fixture has no mem file: New says so instead of failing.
	wantMemErr := "opening " + filepath.Join(fixtureRoot, strconv.Itoa(fixturePID), "mem") + ": no such process"
	if err := s.MemErr(); err == nil || err.Error() != wantMemErr || !errors.Is(err, ErrNoProcess) {
		t.Fatalf("MemErr() = %v, want %q wrapping ErrNoProcess", err, wantMemErr)
	}

	// The second sample reads through the descriptors the first kept open.
	for i := range 2 {
		sample, err := s.Sample()
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if sample.PID != fixturePID || sample.State != model.StateSleeping || sample.StartTicks != 92769 ||
			sample.RSSBytes != 630*int64(os.Getpagesize()) || sample.Time.IsZero() {
			t.Errorf("sample %d: pid %d, state %q, start %d, rss %d bytes, time %v; want %d, S, 92769, 630 pages",
				i, sample.PID, sample.State, sample.StartTicks, sample.RSSBytes, sample.Time, fixturePID)
		}

		want := append([]int{r.pid, r.holder}, r.waiters...)
		slices.Sort(want)
		if got := tids(sample); !slices.Equal(got, want) {
			t.Fatalf("sample %d: threads %v, want %v (the ready line's)", i, got, want)
		}

		holder, _ := threadByTID(sample, r.holder)
		if sc := holder.Syscall; !sc.InCall() || sc.Nr != 1 || sc.Name != "write" || sc.Args[0] != uint64(r.pipeFD) {
			t.Errorf("sample %d: holder %d syscall %+v, want write on fd %d", i, r.holder, sc, r.pipeFD)
		}
		if !strings.HasPrefix(holder.FD, "pipe:[") || holder.FD != fixturePipe {
			t.Errorf("sample %d: holder %d FD %q, want %q", i, r.holder, holder.FD, fixturePipe)
		}
		if holder.Wchan != "anon_pipe_write" {
			t.Errorf("sample %d: holder %d wchan %q, want anon_pipe_write", i, r.holder, holder.Wchan)
		}

		for _, w := range r.waiters {
			th, _ := threadByTID(sample, w)
			sc := th.Syscall
			if sc.Name != "futex" || sc.Args[0] != r.lock || sc.Args[2] != 2 {
				t.Errorf("sample %d: waiter %d syscall %+v, want futex(%#x, _, 2)", i, w, sc, r.lock)
			}
			if addr, ok := model.FutexWait(sc); !ok || addr != r.lock {
				t.Errorf("sample %d: FutexWait(%+v) = %#x, %v; want %#x, true", i, sc, addr, ok, r.lock)
			}
			if th.FD != "" || th.Exited {
				t.Errorf("sample %d: waiter %d: FD %q, exited %v", i, w, th.FD, th.Exited)
			}
		}

		// Main joins worker-0: a futex wait on the thread's tid word,
		// which is also read (and also cannot be).
		join := model.FutexKey(0x7f9f7d3ad990)
		wantFutexes := map[string]model.Futex{model.FutexKey(r.lock): {Err: wantMemErr}, join: {Err: wantMemErr}}
		if d := cmp.Diff(wantFutexes, sample.Futexes); d != "" {
			t.Errorf("sample %d: Futexes (-want +got):\n%s", i, d)
		}

		// Per-thread facts as the captured files give them: main burned
		// 20+20 ticks before main (testdata/burncpu.c).
		for _, want := range []struct {
			tid      int
			name     string
			cpu      time.Duration
			vol, inv uint64
			wchan    string
		}{
			{32266, "pipeholder", 400 * time.Millisecond, 2, 10, "futex_do_wait"},
			{32277, "worker-0", 0, 3, 0, "futex_do_wait"},
			{32278, "worker-1", 0, 3, 0, "futex_do_wait"},
			{32279, "worker-2", 0, 2, 1, "anon_pipe_write"},
			{32280, "worker-3", 0, 2, 0, "futex_do_wait"},
			{32281, "worker-4", 0, 2, 0, "futex_do_wait"},
			{32282, "worker-5", 0, 2, 0, "futex_do_wait"},
			{32283, "worker-6", 0, 2, 0, "futex_do_wait"},
			{32284, "worker-7", 0, 1, 1, "futex_do_wait"},
		} {
			th, ok := threadByTID(sample, want.tid)
			if !ok {
				t.Errorf("sample %d: no thread %d", i, want.tid)
				continue
			}
			if th.Name != want.name || th.State != model.StateSleeping || th.CPUTime != want.cpu ||
				th.Voluntary != want.vol || th.Involuntary != want.inv || th.Wchan != want.wchan || th.Exited {
				t.Errorf("sample %d: thread %d = %+v; want name %q, state S, cpu %v, ctxt %d/%d, wchan %q",
					i, want.tid, th, want.name, want.cpu, want.vol, want.inv, want.wchan)
			}
		}
	}
}

// TestSampleVanishedThread: a thread listed in task/ whose files are gone
// by the time they are read is reported Exited; the others are unaffected.
func TestSampleVanishedThread(t *testing.T) {
	r := fixtureReadyLine(t)
	base := newFixture(t, fixtureRoot)
	baseline, err := base.Sample()
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		remove []string // files removed from the vanished thread's directory
	}{
		{"all files", []string{"stat", "status", "wchan", "syscall"}},
		{"stat", []string{"stat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gone := r.waiters[3]
			root := copyFixture(t)
			for _, f := range tc.remove {
				if err := os.Remove(filepath.Join(root, strconv.Itoa(fixturePID), "task", strconv.Itoa(gone), f)); err != nil {
					t.Fatal(err)
				}
			}
			s := newFixture(t, root)
			sample, err := s.Sample()
			if err != nil {
				t.Fatalf("Sample with thread %d vanished: %v", gone, err)
			}
			if got, want := tids(sample), tids(baseline); !slices.Equal(got, want) {
				t.Fatalf("threads %v, want %v: a vanished thread is still listed", got, want)
			}
			for j, th := range sample.Threads {
				want := baseline.Threads[j]
				if th.TID == gone {
					want = model.Thread{TID: gone, Exited: true}
				}
				if d := cmp.Diff(want, th); d != "" {
					t.Errorf("thread %d (-want +got):\n%s", th.TID, d)
				}
			}
			if _, ok := sample.Futexes[model.FutexKey(r.lock)]; !ok {
				t.Errorf("Futexes %v: no entry for the lock the other waiters wait on", sample.Futexes)
			}
			if _, ok := s.threads[gone]; ok {
				t.Errorf("the sampler still holds the files of exited thread %d", gone)
			}
		})
	}

	t.Run("gone from the listing", func(t *testing.T) {
		gone := r.waiters[3]
		root := copyFixture(t)
		s := newFixture(t, root)
		if _, err := s.Sample(); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(root, strconv.Itoa(fixturePID), "task", strconv.Itoa(gone))); err != nil {
			t.Fatal(err)
		}
		sample, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		want := slices.DeleteFunc(tids(baseline), func(tid int) bool { return tid == gone })
		if got := tids(sample); !slices.Equal(got, want) {
			t.Errorf("threads %v, want %v", got, want)
		}
		if _, ok := s.threads[gone]; ok {
			t.Errorf("the sampler still holds the files of unlisted thread %d", gone)
		}
	})
}

// TestSampleRunningThread: a thread in state R is on a CPU or waiting for
// one, so its syscall is "running" whatever the file says, and its run-queue
// delay is read from schedstat.
func TestSampleRunningThread(t *testing.T) {
	r := fixtureReadyLine(t)
	spinner := r.waiters[2]
	for _, tc := range []struct {
		name      string
		schedstat string // "" means no schedstat file
		wantDelay time.Duration
	}{
		{"schedstat", "5000000 1234567 9\n", 1234567 * time.Nanosecond},
		{"garbled schedstat", "5000000\n", 0},
		// Kernels without CONFIG_SCHED_INFO have no schedstat file for any
		// thread: its absence, while the thread's directory is there, does
		// not mean the thread exited.
		{"no schedstat file", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyFixture(t)
			dir := filepath.Join(root, strconv.Itoa(fixturePID), "task", strconv.Itoa(spinner))
			b, err := os.ReadFile(filepath.Join(dir, "stat"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(withField(string(b), 3, "R")), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.schedstat != "" {
				if err := os.WriteFile(filepath.Join(dir, "schedstat"), []byte(tc.schedstat), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s := newFixture(t, root)
			sample, err := s.Sample()
			if err != nil {
				t.Fatal(err)
			}
			th, _ := threadByTID(sample, spinner)
			want := model.Thread{
				TID: spinner, Name: "worker-3", State: model.StateRunning,
				Syscall: model.Syscall{Running: true, Nr: -1}, RunDelay: tc.wantDelay,
				Voluntary: 2,
			}
			if d := cmp.Diff(want, th); d != "" {
				t.Errorf("running thread %d (-want +got):\n%s", spinner, d)
			}
		})
	}
}

// mkProc writes a minimal /proc tree for fixturePID with the given stat and
// returns its root: stat, syscall, and one task with its four files.
func mkProc(t *testing.T, stat string) string {
	t.Helper()
	root := t.TempDir()
	pid := strconv.Itoa(fixturePID)
	task := filepath.Join(root, pid, "task", pid)
	if err := os.MkdirAll(task, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(root, pid, "stat"):    stat,
		filepath.Join(root, pid, "syscall"): "running\n",
		filepath.Join(task, "stat"):         stat,
		filepath.Join(task, "status"):       "Name:\tpipeholder\nvoluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t2\n",
		filepath.Join(task, "wchan"):        "0",
		filepath.Join(task, "syscall"):      "running\n",
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestNewErrors(t *testing.T) {
	sentinels := []error{ErrNoProcess, ErrPermission, ErrKernelThread, ErrZombie, ErrPIDReused}
	pidDir := func(root string) string { return filepath.Join(root, strconv.Itoa(fixturePID)) }

	for _, tc := range []struct {
		name    string
		root    func(t *testing.T) string
		pid     int
		wantIs  error  // nil: no sentinel
		wantErr string // a substring; ROOT stands for the tree's root
	}{
		{
			name:    "missing pid dir",
			pid:     fixturePID,
			root:    func(t *testing.T) string { return t.TempDir() },
			wantIs:  ErrNoProcess,
			wantErr: "reading ROOT/32266/stat: no such process",
		},
		{name: "pid 0", root: func(t *testing.T) string { return t.TempDir() }, pid: 0, wantIs: ErrNoProcess},
		{name: "negative pid", root: func(t *testing.T) string { return t.TempDir() }, pid: -1, wantIs: ErrNoProcess},
		{
			name:    "zombie",
			pid:     fixturePID,
			root:    func(t *testing.T) string { return mkProc(t, withField(statMain, 3, "Z")) },
			wantIs:  ErrZombie,
			wantErr: "pid 32266 (pipeholder): zombie process",
		},
		{
			name:   "dead",
			pid:    fixturePID,
			root:   func(t *testing.T) string { return mkProc(t, withField(statMain, 3, "X")) },
			wantIs: ErrNoProcess,
		},
		{
			name: "kernel thread",
			pid:  fixturePID,
			root: func(t *testing.T) string {
				return mkProc(t, withField(withComm(statMain, "kworker/0:1"), 9, "2129984"))
			},
			wantIs:  ErrKernelThread,
			wantErr: "pid 32266 (kworker/0:1): kernel thread",
		},
		{
			name:    "garbled stat",
			pid:     fixturePID,
			root:    func(t *testing.T) string { return mkProc(t, firstFields(statMain, 5)) },
			wantErr: "reading ROOT/32266/stat: parsing stat: too few fields",
		},
		{
			name: "syscall missing",
			pid:  fixturePID,
			root: func(t *testing.T) string {
				root := mkProc(t, statMain)
				if err := os.Remove(filepath.Join(pidDir(root), "syscall")); err != nil {
					t.Fatal(err)
				}
				return root
			},
			wantIs:  ErrNoProcess,
			wantErr: "reading ROOT/32266/syscall: no such process",
		},
		{
			// As root, chmod 000 does not stop a read: a directory in the
			// file's place is the unreadable syscall file root can make.
			name: "syscall a directory",
			pid:  fixturePID,
			root: func(t *testing.T) string {
				root := mkProc(t, statMain)
				path := filepath.Join(pidDir(root), "syscall")
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
				return root
			},
			wantIs:  syscall.EISDIR,
			wantErr: "reading ROOT/32266/syscall: is a directory",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root(t)
			pid := tc.pid
			s, err := New(NewFS(root), pid)
			if err == nil {
				s.Close()
				t.Fatalf("New(%s, %d) succeeded; want an error", root, pid)
			}
			if s != nil {
				t.Errorf("New(%s, %d) returned a sampler with error %v", root, pid, err)
			}
			if want := strings.ReplaceAll(tc.wantErr, "ROOT", root); !strings.Contains(err.Error(), want) {
				t.Errorf("New(%s, %d) error %q, want it to contain %q", root, pid, err, want)
			}
			for _, sentinel := range append(sentinels, tc.wantIs) {
				if sentinel == nil {
					continue
				}
				if got, want := errors.Is(err, sentinel), sentinel == tc.wantIs; got != want {
					t.Errorf("New(%s, %d) error %q: errors.Is(err, %v) = %v, want %v", root, pid, err, sentinel, got, want)
				}
			}
		})
	}
}

// A permission error from a live process is tested end to end, as another
// user, in cmd/hangdoc TestNoPermission; classifyErr in TestClassifyErr.

func TestClassifyErr(t *testing.T) {
	const path = "/proc/4187/task/4190/syscall"
	for _, tc := range []struct {
		name string
		err  error
		want error
		msg  string
	}{
		{"fs.ErrPermission", fs.ErrPermission, ErrPermission, "reading /proc/4187/task/4190/syscall: permission denied"},
		{"EPERM", syscall.EPERM, ErrPermission, "reading /proc/4187/task/4190/syscall: permission denied"},
		{"EACCES", syscall.EACCES, ErrPermission, "reading /proc/4187/task/4190/syscall: permission denied"},
		{"wrapped EACCES", &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}, ErrPermission, "reading " + path + ": permission denied"},
		{"fs.ErrNotExist", fs.ErrNotExist, ErrNoProcess, "reading " + path + ": no such process"},
		{"ENOENT", syscall.ENOENT, ErrNoProcess, "reading " + path + ": no such process"},
		{"ESRCH", syscall.ESRCH, ErrNoProcess, "reading " + path + ": no such process"},
		{"EIO", syscall.EIO, syscall.EIO, "reading " + path + ": input/output error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classifyErr("reading", path, tc.err)
			if !errors.Is(err, tc.want) || err.Error() != tc.msg {
				t.Errorf("classifyErr(reading, %s, %v) = %q; want %q wrapping %v", path, tc.err, err, tc.msg, tc.want)
			}
			for _, other := range []error{ErrPermission, ErrNoProcess} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("classifyErr(reading, %s, %v) = %q wraps %v too", path, tc.err, err, other)
				}
			}
		})
	}
}

// TestSampleTargetChanged: the pid's stat changes under an open sampler.
func TestSampleTargetChanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stat   string
		wantIs error
	}{
		{"pid reused", withField(statMain, 22, "99999"), ErrPIDReused},
		{"became a zombie", withField(statMain, 3, "Z"), ErrNoProcess},
		{"died", withField(statMain, 3, "X"), ErrNoProcess},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := mkProc(t, statMain)
			s, err := New(NewFS(root), fixturePID)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Sample(); err != nil {
				t.Fatal(err)
			}
			// WriteFile rewrites the same inode: the descriptor the
			// sampler keeps open sees the new text.
			if err := os.WriteFile(filepath.Join(root, strconv.Itoa(fixturePID), "stat"), []byte(tc.stat), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Sample(); !errors.Is(err, tc.wantIs) {
				t.Errorf("Sample after the stat became %q: %v, want %v", tc.stat, err, tc.wantIs)
			}
		})
	}
}

// TestNewClosesOnError: a New that fails leaves no descriptor open.
func TestNewClosesOnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		stat string
	}{
		{"zombie", withField(statMain, 3, "Z")},
		{"kernel thread", withField(statMain, 9, "2129984")},
		{"dead", withField(statMain, 3, "X")},
		{"garbled stat", firstFields(statMain, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := mkProc(t, tc.stat)
			if _, err := New(NewFS(root), fixturePID); err == nil {
				t.Fatal("New succeeded; want an error")
			}
			if open := openUnder(t, root); len(open) > 0 {
				t.Errorf("after New failed: descriptors still open on %v", open)
			}
		})
	}
}

// openUnder lists the files under dir this process has open.
func openUnder(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("cannot list descriptors: %v", err)
	}
	var open []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			open = append(open, fmt.Sprintf("fd %s: %s", e.Name(), target))
		}
	}
	return open
}
