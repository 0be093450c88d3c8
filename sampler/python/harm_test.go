package python_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/internal/dstate"
	"github.com/hangdoc/hangdoc/internal/fusehang"
	"github.com/hangdoc/hangdoc/internal/reaper"
	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler/python"
)

// reaperEnv makes the test binary a child subreaper before its tests run:
// set by the tests that re-execute it to test RunPySpy under one.
const reaperEnv = "HANGDOC_PYTHON_TEST_REAPER"

// floodEnv makes the test binary run one RunPySpy of the flood fake and
// exit: BenchmarkFloodRSS measures that process.
const floodEnv = "HANGDOC_PYTHON_TEST_FLOOD"

func TestMain(m *testing.M) {
	if fake := os.Getenv(floodEnv); fake != "" {
		_, _, err := python.RunPySpy(context.Background(), os.Getpid(), python.Options{PySpy: fake, Timeout: time.Minute})
		fmt.Println(err)
		os.Exit(0)
	}
	if os.Getenv(reaperEnv) != "" {
		if err := reaper.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// underReaper runs test t again in a child test binary that is a child
// subreaper, and reports true there (run the test body) or false here
// (the child ran it: return).
func underReaper(t *testing.T) bool {
	t.Helper()
	if reaper.Active() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), reaperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s under a subreaper: %v\n%s", t.Name(), err, out)
	}
	t.Logf("under a subreaper:\n%s", out)
	return false
}

// Under a subreaper, the child that left py-spy's process group is killed
// once py-spy is: it neither outlives the run nor holds its pipe open
// for the grace period.
func TestDumpKillsEscapedChildUnderReaper(t *testing.T) {
	if !underReaper(t) {
		return
	}
	mark := markFakes(t)
	pids := filepath.Join(t.TempDir(), "pids")
	t.Setenv("HANGDOC_FAKE_PIDS", pids)
	opts := python.Options{PySpy: fakePySpy(t, "escape"), Timeout: 500 * time.Millisecond}
	_, _, err := python.RunPySpy(context.Background(), os.Getpid(), opts)
	if !errors.Is(err, python.ErrTimeout) {
		t.Fatalf("RunPySpy: got err %v, want ErrTimeout", err)
	}
	fake, child := readPIDs(t, pids)
	if left := markedProcs(t, mark); len(left) != 0 {
		t.Errorf("processes left behind (fake %d, escaped child %d): %v", fake, child, left)
	}
}

// The caller's deadline is the dump's budget: no DefaultTimeout of its own
// on top, and the error is the caller's.
func TestDumpBudgetIsCallersDeadline(t *testing.T) {
	mark := markFakes(t)
	t.Setenv("HANGDOC_FAKE_PIDS", filepath.Join(t.TempDir(), "pids"))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := python.RunPySpy(ctx, os.Getpid(), python.Options{PySpy: fakePySpy(t, "hang")})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, python.ErrTimeout) {
		t.Fatalf("RunPySpy = %v, want the caller's deadline, not ErrTimeout", err)
	}
	if left := markedProcs(t, mark); len(left) != 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

const pyDVictim = `
import os, sys, threading, time
tid = []
def stat():
    tid.append(threading.get_native_id())
    os.stat(sys.argv[1])
threading.Thread(target=stat, daemon=True).start()
while not tid:
    time.sleep(0.001)
print("ready pid=%d stattid=%d" % (os.getpid(), tid[0]), flush=True)
while True:
    time.sleep(1000)
`

// A Python target with a thread in D on a hung FUSE mount: a pausing dump
// is not started (py-spy would wait for that thread with the others
// stopped until killed); a --nonblocking one reads it.
func TestDumpDState(t *testing.T) {
	realPySpy(t)
	fs, err := fusehang.Mount(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	v := testvictim.StartCmd(t, exec.Command(py, "-c", pyDVictim, filepath.Join(fs.Dir, "hang")))
	if err := fs.WaitHeld(1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	tid := v.TID("stattid")
	for end := time.Now().Add(20 * time.Second); ; {
		if s, _ := dstate.State(v.PID, tid); s == 'D' {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("thread %d never went into D", tid)
		}
		time.Sleep(time.Millisecond)
	}
	_, _, err = python.RunPySpy(context.Background(), v.PID, python.Options{})
	var d *dstate.Error
	if !errors.Is(err, python.ErrUninterruptible) || !errors.As(err, &d) || d.TID != tid {
		t.Fatalf("RunPySpy = %v, want ErrUninterruptible naming thread %d", err, tid)
	}
	t.Log(err)
	out, _, err := python.RunPySpy(context.Background(), v.PID, python.Options{NonBlocking: true})
	if err != nil || !strings.Contains(string(out), "stat") {
		t.Errorf("--nonblocking RunPySpy = %v, %q; want a dump with the stat thread", err, out)
	}
}

// A --py-spy on a hung filesystem: looking it up, or starting it, blocks
// in the kernel; RunPySpy gives up at the caller's deadline and says so.
func TestDumpPySpyOnHungMount(t *testing.T) {
	args, err := os.ReadFile(fakePySpy(t, "args"))
	if err != nil {
		t.Fatal(err)
	}
	for _, hang := range []string{"lookup", "exec"} {
		t.Run(hang, func(t *testing.T) {
			fs, err := fusehang.Mount(t.TempDir(), map[string][]byte{"py-spy": args})
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Close()
			t.Setenv("HANGDOC_FAKE_ARGS", filepath.Join(t.TempDir(), "args"))
			bin := filepath.Join(fs.Dir, "hang-py-spy")
			if hang == "exec" {
				bin = filepath.Join(fs.Dir, "py-spy")
				// The lookup and its attributes are answered (and
				// cached) now; the open that exec makes is not.
				if _, err := os.Stat(bin); err != nil {
					t.Fatal(err)
				}
				fs.HangOpens()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, _, err = python.RunPySpy(ctx, 4187, python.Options{PySpy: bin})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("RunPySpy = %v, want the deadline", err)
			}
			if hang == "lookup" && !errors.Is(err, deadline.ErrAbandoned) {
				t.Errorf("RunPySpy = %v, want it to say the lookup was given up", err)
			}
			if hang == "exec" && !strings.Contains(err.Error(), "did not return") {
				t.Errorf("RunPySpy = %v, want it to say starting py-spy did not return", err)
			}
			if fs.Held() == 0 {
				t.Errorf("no request held: the test did not hang the filesystem")
			}
			t.Log(err)
		})
	}
}

// BenchmarkFloodRSS measures the peak memory (max RSS) of a process that
// runs RunPySpy on a py-spy writing 100 MB to stdout.
func BenchmarkFloodRSS(b *testing.B) {
	fake, err := filepath.Abs(filepath.Join("testdata", "fake-py-spy", "flood"))
	if err != nil {
		b.Fatal(err)
	}
	var rss int64
	for b.Loop() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), floodEnv+"="+fake)
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), "more than 64 MiB") {
			b.Fatalf("%v: %s", err, out)
		}
		rss = max(rss, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	}
	b.ReportMetric(float64(rss)/1024, "maxrss-MiB")
}
