package pymem

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/helper"
	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler"
)

// benchThreads is how many blocked threads the victim runs; with its
// main and heartbeat threads, every read must find at least
// benchThreads+1.
const benchThreads = 100

// BenchmarkThreads reads the same victim (py_many_threads: 100 threads
// blocked at depths 0 to 9, a heartbeat thread stamping a file every
// 5 ms) four ways in one run, on each of Python 3.12 and 3.13:
//
//   - hangdoc: Reader.Threads, the Reader opened once;
//   - hangdoc-open: Open and Threads each op (what a one-shot costs, as
//     py-spy's dump is one);
//   - py-spy: `py-spy dump --pid P`, which pauses the victim;
//   - py-spy-nonblocking: the same with --nonblocking.
//
// Each reports its wall time per read (ns/op), hangdoc's own CPU per read
// (cpu-ms/read, getrusage RUSAGE_SELF), py-spy's (py-spy-cpu-ms/read,
// RUSAGE_CHILDREN: what the reaped dumps used), the threads and frames a
// read found, and the victim's heartbeat: its longest gap between two
// stamps while it was read (maxgap-ms), the longest in an idle stretch of
// the same length right after (idle-maxgap-ms), and the first less the
// second (heartbeat-gap-ms), which a pause of the victim lengthens.
//
//	go test -run '^$' -bench BenchmarkThreads -benchtime 50x -count 3 ./sampler/pymem
func BenchmarkThreads(b *testing.B) {
	for _, v := range []string{"3.12", "3.13"} {
		b.Run(v, func(b *testing.B) {
			py := benchPython(b, v)
			beats := filepath.Join(b.TempDir(), "heartbeat")
			vic := testvictim.StartCmd(b, exec.Command(py, testvictim.Script(b, "py_many_threads.py"), strconv.Itoa(benchThreads), beats))
			for _, src := range []string{"hangdoc", "hangdoc-open", "py-spy", "py-spy-nonblocking"} {
				b.Run(src, func(b *testing.B) {
					benchSource(b, src, vic.PID, beats)
				})
			}
		})
	}
}

func benchSource(b *testing.B, src string, pid int, beats string) {
	var spy string
	var r *Reader
	switch src {
	case "hangdoc":
		var err error
		if r, err = Open(sampler.NewFS(""), pid); err != nil {
			b.Fatal(err)
		}
	case "py-spy", "py-spy-nonblocking":
		spy = benchPySpy(b)
	}
	var threads, frames, torn int
	self0, children0 := rusage(unix.RUSAGE_SELF), rusage(unix.RUSAGE_CHILDREN)
	t0 := monotonic()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var nt, nf int
		switch src {
		case "hangdoc", "hangdoc-open":
			if src == "hangdoc-open" {
				var err error
				if r, err = Open(sampler.NewFS(""), pid); err != nil {
					b.Fatal(err)
				}
			}
			ts, err := r.Threads(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			nt = len(ts)
			for _, t := range ts {
				nf += len(t.Frames)
				if t.Torn {
					torn++
				}
			}
		default:
			nt, nf = countPySpy(pySpyDump(b, spy, src, pid))
		}
		if nt < benchThreads+1 {
			b.Fatalf("read %d of %d: %d threads, want at least %d", i+1, b.N, nt, benchThreads+1)
		}
		threads += nt
		frames += nf
	}
	b.StopTimer()
	t1 := monotonic()
	self, children := rusage(unix.RUSAGE_SELF)-self0, rusage(unix.RUSAGE_CHILDREN)-children0
	beatMetrics(b, beats, t0, t1)

	n := float64(b.N)
	b.ReportMetric(float64(self.Microseconds())/1000/n, "cpu-ms/read")
	if spy != "" {
		b.ReportMetric(float64(children.Microseconds())/1000/n, "py-spy-cpu-ms/read")
	}
	b.ReportMetric(float64(threads)/n, "threads/read")
	b.ReportMetric(float64(frames)/n, "frames/read")
	if spy == "" {
		b.ReportMetric(float64(torn)/n, "torn/read")
	}
}

// beatMetrics reports the victim's heartbeat over reads that ran from t0
// to t1: its longest gap between two stamps then (maxgap-ms), the longest
// in an idle stretch of the same length right after (idle-maxgap-ms), and
// the first less the second (heartbeat-gap-ms), which a pause of the
// victim lengthens.
func beatMetrics(b *testing.B, beats string, t0, t1 int64) {
	// The idle baseline: as long as the reads took, after the last one's
	// effects have passed.
	time.Sleep(50 * time.Millisecond)
	i0 := monotonic()
	time.Sleep(time.Duration(t1 - t0))
	i1 := monotonic()
	time.Sleep(50 * time.Millisecond) // the stamp that closes the last gap
	stamps := readBeats(b, beats)
	gap, idle := maxGap(stamps, t0, t1), maxGap(stamps, i0, i1)
	b.ReportMetric(float64(gap.Microseconds())/1000, "maxgap-ms")
	b.ReportMetric(float64(idle.Microseconds())/1000, "idle-maxgap-ms")
	b.ReportMetric(float64((gap-idle).Microseconds())/1000, "heartbeat-gap-ms")
}

// benchPython is pyenv's interpreter of minor version v. A missing one
// (or a missing pyenv) skips the benchmark, and fails it in CI, which
// installs them.
func benchPython(b *testing.B, v string) string {
	b.Helper()
	missing := func(why string) {
		if os.Getenv("CI") != "" {
			b.Fatalf("%s: .ci/run installs pyenv with Python 3.8 to 3.13", why)
		}
		b.Skip(why)
	}
	pyenv, err := exec.LookPath("pyenv")
	if err != nil {
		missing("pyenv not found")
	}
	root, err := exec.Command(pyenv, "root").Output()
	if err != nil {
		b.Fatalf("pyenv root: %v", err)
	}
	found, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(root)), "versions", v+".*", "bin", "python"+v))
	if len(found) == 0 {
		missing("no Python " + v + " in pyenv")
	}
	return found[len(found)-1]
}

// benchPySpy is the py-spy binary (the real one behind a pyenv shim, as
// hangdoc runs it). A missing one skips the benchmark, and fails it in
// CI, which installs it.
func benchPySpy(b *testing.B) string {
	b.Helper()
	p, err := exec.LookPath("py-spy")
	if err != nil {
		if os.Getenv("CI") != "" {
			b.Fatalf("py-spy not found: .ci/run installs it")
		}
		b.Skip("py-spy not found: pip install py-spy")
	}
	return helper.Resolve(p)
}

// pySpyDump runs `py-spy dump` of pid (with --nonblocking for the source
// py-spy-nonblocking) as hangdoc runs helpers, and returns its output.
func pySpyDump(b *testing.B, spy, src string, pid int) []byte {
	args := []string{"dump", "--pid", strconv.Itoa(pid)}
	if src == "py-spy-nonblocking" {
		args = append(args, "--nonblocking")
	}
	out, err := helper.Run(context.Background(), 30*time.Second, exec.Command(spy, args...), 16<<20)
	if err != nil {
		b.Fatalf("py-spy %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// countPySpy counts the threads ("Thread TID ...") and frames (indented
// "func (file:line)") of a py-spy text dump.
func countPySpy(out []byte) (threads, frames int) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "Thread "):
			threads++
		case strings.HasPrefix(l, "    ") && strings.HasSuffix(l, ")"):
			frames++
		}
	}
	return threads, frames
}

// rusage is the user and system CPU time of who (RUSAGE_SELF,
// RUSAGE_CHILDREN).
func rusage(who int) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// monotonic is CLOCK_MONOTONIC in ns, the clock of Python's
// time.monotonic_ns, and so of the victim's stamps.
func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// readBeats reads the heartbeat file's stamps.
func readBeats(b *testing.B, path string) []int64 {
	b.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	stamps := make([]int64, len(raw)/8)
	for i := range stamps {
		stamps[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return stamps
}

// maxGap is the longest time between two consecutive stamps of which the
// later is after from and the earlier before to: the longest the
// heartbeat did not beat over [from, to].
func maxGap(stamps []int64, from, to int64) time.Duration {
	var gap int64
	for k := 1; k < len(stamps); k++ {
		if stamps[k] > from && stamps[k-1] < to {
			gap = max(gap, stamps[k]-stamps[k-1])
		}
	}
	return time.Duration(gap)
}

// benchTasks is how many pending tasks py_many_tasks runs.
const benchTasks = 10000

// BenchmarkTasks reads py_many_tasks' 10,000 pending asyncio tasks (each
// with an Event of its own, 1 to 5 coroutines above its wait, one in five
// inside `async with` a Lock of its own; a heartbeat thread stamping a
// file every 5 ms) on Python 3.12 and 3.13, four ways in one run:
//
//   - tasks: Reader.Tasks from memory, the Reader opened once;
//   - tasks-and-variables: the same with the frames' variables (a run
//     reads them on its last sample), which must name the 2,000 Locks the
//     `async with` frames hold, or it fails;
//   - py-spy, py-spy-nonblocking: `py-spy dump` of the same victim, which
//     sees its two threads and no task, as the peer that reads it at all.
//
// Each reports its wall time and CPU per read (hangdoc's own, and
// py-spy's), the tasks and frames each read found (all of them, or it
// fails), the process_vm_readv calls and bytes a memory read takes (which
// the machine's load does not move), and the victim's heartbeat gap over
// its idle baseline (beatMetrics).
//
//	go test -run '^$' -bench BenchmarkTasks -benchtime 20x -count 3 ./sampler/pymem
func BenchmarkTasks(b *testing.B) {
	for _, v := range []string{"3.12", "3.13"} {
		b.Run(v, func(b *testing.B) {
			py := benchPython(b, v)
			beats := filepath.Join(b.TempDir(), "heartbeat")
			vic := testvictim.StartCmd(b, exec.Command(py, testvictim.Script(b, "py_many_tasks.py"), strconv.Itoa(benchTasks), beats))
			for _, src := range []string{"tasks", "tasks-and-variables", "py-spy", "py-spy-nonblocking"} {
				b.Run(src, func(b *testing.B) { benchReadTasks(b, src, vic.PID, beats) })
			}
		})
	}
}

func benchReadTasks(b *testing.B, src string, pid int, beats string) {
	var r *Reader
	var spy string
	vars := src == "tasks-and-variables"
	if strings.HasPrefix(src, "py-spy") {
		spy = benchPySpy(b)
	} else {
		var err error
		if r, err = Open(sampler.NewFS(""), pid); err != nil {
			b.Fatal(err)
		}
		r.ReadVars(vars)
	}
	var tasks, frames, locks, calls, bytes int
	self0, children0 := rusage(unix.RUSAGE_SELF), rusage(unix.RUSAGE_CHILDREN)
	t0 := monotonic()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if spy != "" {
			if nt, _ := countPySpy(pySpyDump(b, spy, src, pid)); nt < 2 {
				b.Fatalf("read %d: py-spy found %d threads, want the loop's and the heartbeat's", i+1, nt)
			}
			continue
		}
		ts, err := r.Tasks(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if len(ts) < benchTasks {
			b.Fatalf("read %d: %d tasks, want %d", i+1, len(ts), benchTasks)
		}
		tasks += len(ts)
		calls, bytes = calls+r.mem.reads, bytes+r.mem.bytes
		n := 0
		for _, t := range ts {
			frames += len(t.Stack)
			for _, fv := range t.Vars {
				for _, v := range fv.Vars {
					if v.Name == "lock" && v.Type == "Lock" {
						n++
					}
				}
			}
		}
		if vars && n < benchTasks/5 {
			b.Fatalf("read %d: %d Locks named by async with frames, want %d", i+1, n, benchTasks/5)
		}
		locks += n
	}
	b.StopTimer()
	t1 := monotonic()
	self, children := rusage(unix.RUSAGE_SELF)-self0, rusage(unix.RUSAGE_CHILDREN)-children0
	beatMetrics(b, beats, t0, t1)
	n := float64(b.N)
	b.ReportMetric(float64(self.Microseconds())/1000/n, "cpu-ms/read")
	if spy != "" {
		b.ReportMetric(float64(children.Microseconds())/1000/n, "py-spy-cpu-ms/read")
		return
	}
	b.ReportMetric(float64(tasks)/n, "tasks/read")
	b.ReportMetric(float64(frames)/n, "frames/read")
	if vars {
		b.ReportMetric(float64(locks)/n, "held-locks/read")
	}
	// What the read asks of the kernel, which this shared machine's
	// noise does not move: process_vm_readv calls and bytes.
	b.ReportMetric(float64(calls)/n, "readv-calls/read")
	b.ReportMetric(float64(bytes)/1024/n, "KiB/read")
}
