package python

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hangdoc/hangdoc/model"
)

// fr builds a frame; the tables below are long enough for it to matter.
func fr(fn, file string, line int) model.Frame {
	return model.Frame{Func: fn, File: file, Line: line}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCorpus parses the real dumps from public issues (see
// testdata/corpus/SOURCES.md). Every one is an excerpt cut mid-line, so
// every one is Truncated.
func TestCorpus(t *testing.T) {
	const fhLib = "/home/vstinner/python/main/Lib/"
	tests := []struct {
		file string
		sha  string // sha256 prefix from SOURCES.md: the bytes as found
		want []Dump
	}{
		{
			// Hand-abbreviated by its poster: no thread ids, a "..." line
			// and a "_poll → poll → get" line py-spy never prints; both
			// are skipped.
			file: "ami-data-companion-140-dataloader-dead-worker-pyspy.txt",
			sha:  "97ae2009392c370a",
			want: []Dump{{
				Format: FormatPySpyText, Truncated: true,
				Threads: []Thread{
					{Name: "MainThread", Frames: []model.Frame{
						fr("wait", "threading.py", 359),
						fr("get", "queue.py", 180),
						fr("_try_get_data", "torch/utils/data/dataloader.py", 1310),
						fr("_get_data", "torch/utils/data/dataloader.py", 1473),
						fr("_next_data", "torch/utils/data/dataloader.py", 1524),
						fr("__next__", "torch/utils/data/dataloader.py", 741),
						fr("_preload", "trapdata/antenna/datasets.py", 455),
						fr("__next__", "trapdata/antenna/datasets.py", 478),
						fr("_process_job", "trapdata/antenna/worker.py", 477),
					}},
					{Name: "Thread-... (_pin_memory_loop)", Frames: []model.Frame{
						fr("select", "selectors.py", 415),
						fr("wait", "multiprocessing/connection.py", 1136),
					}},
				},
			}},
		},
		{
			// The dump_traceback_later banner starts mid-line, after the
			// test runner's "... "; the second thread's header is cut.
			file: "cpython-125451-ppe-shutdown-lock-faulthandler.txt",
			sha:  "465fcf68c438a4c5",
			want: []Dump{{
				Format: FormatFaulthandler, Truncated: true,
				Threads: []Thread{{Ident: 0x00007f955fe006c0, Frames: []model.Frame{
					fr("_on_queue_feeder_error", fhLib+"concurrent/futures/process.py", 182),
					fr("_feed", fhLib+"multiprocessing/queues.py", 290),
					fr("run", fhLib+"threading.py", 992),
					fr("_bootstrap_inner", fhLib+"threading.py", 1041),
					fr("_bootstrap", fhLib+"threading.py", 1012),
				}}},
			}},
		},
		{
			// No process header; --locals blocks between the frames.
			file: "gprofiler-744-popen-wait-no-timeout-pyspy.txt",
			sha:  "674ad8ea8e8c1f0e",
			want: []Dump{{
				Format: FormatPySpyText, Truncated: true,
				Threads: []Thread{{NativeID: 16815, Name: "ThreadPoolExecutor-0_3", Frames: []model.Frame{
					fr("_try_wait", "subprocess.py", 1901),
					fr("_wait", "subprocess.py", 1943),
					fr("wait", "subprocess.py", 1209),
					fr("_terminate", "python_ebpf.py", 254),
					fr("_dump", "python_ebpf.py", 221),
					fr("snapshot", "python_ebpf.py", 227),
					fr("snapshot", "python.py", 403),
					fr("run", "thread.py", 58),
					fr("_worker", "thread.py", 83),
				}}},
			}},
		},
		{
			// Python 3.6: no OS thread id, so py-spy printed the pthread_t
			// in upper-case hex, and no thread name. The pasted command
			// line before the header is skipped.
			file: "patroni-3413-sigchld-logging-reentrancy-pyspy.txt",
			sha:  "74f03c3b9573dd28",
			want: []Dump{{
				Format: FormatPySpyText, PID: 6201, Python: "3.6.8", Truncated: true,
				Threads: []Thread{{Ident: 0x7F0C4C8FE100, Active: true, Frames: []model.Frame{
					fr("__enter__", "threading.py", 240),
					fr("put", "queue.py", 126),
					fr("put_nowait", "queue.py", 184),
					fr("_put_record", "patroni/log.py", 40),
					fr("emit", "patroni/log.py", 55),
					fr("handle", "logging/__init__.py", 865),
					fr("callHandlers", "logging/__init__.py", 1516),
				}}},
			}},
		},
	}
	files, err := filepath.Glob("testdata/corpus/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("testdata/corpus has %d dumps, the table %d: add the new ones", len(files), len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			in := readTestdata(t, filepath.Join("corpus", tc.file))
			if sum := fmt.Sprintf("%x", sha256.Sum256(in)); !strings.HasPrefix(sum, tc.sha) {
				t.Fatalf("sha256 %s, want %s...: not the bytes SOURCES.md describes", sum, tc.sha)
			}
			got, err := Parse(in)
			if err != nil {
				t.Fatalf("Parse: %v\ninput:\n%s", err, in)
			}
			if diff := cmp.Diff(tc.want, got, noVars, ignoreCommand); diff != "" {
				t.Errorf("Parse (-want +got):\n%s\ninput:\n%s", diff, in)
			}
		})
	}
}

// ignoreCommand leaves py-spy's command line out of comparisons of whole
// dumps: TestLiveSubprocesses checks it.
// ignoreCommand leaves out what the tables do not spell out: the command
// line, and the interpreter's path (TestInterpreterPath checks it).
var ignoreCommand = cmpopts.IgnoreFields(Dump{}, "Command", "Interpreter")

// victimIDs is what testdata/live/victim.py records of itself.
type victimIDs struct {
	PID     int    `json:"pid"`
	Python  string `json:"python"`
	Child   int    `json:"child"`
	Threads map[string]struct {
		NativeID int    `json:"native_id"`
		Ident    uint64 `json:"ident"`
	} `json:"threads"`
}

func readIDs(t *testing.T, name string) victimIDs {
	t.Helper()
	var ids victimIDs
	if err := json.Unmarshal(readTestdata(t, filepath.Join("live", name)), &ids); err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	if len(ids.Threads) != 3 {
		t.Fatalf("%s records %d threads, want 3", name, len(ids.Threads))
	}
	return ids
}

// TestLive parses dumps captured from testdata/live/victim.py by
// capture.sh, and joins them to the ids the victim recorded of itself.
func TestLive(t *testing.T) {
	const (
		py310  = "/root/.pyenv/versions/3.10.13/lib/python3.10/"
		py312  = "/root/.pyenv/versions/3.12.1/lib/python3.12/"
		py313  = "/root/.pyenv/versions/3.13.0/lib/python3.13/"
		victim = "/work/main/sampler/python/testdata/live/victim.py"
	)
	// The victim's two hung threads, innermost frames first. lock-waiter
	// blocks in a C call (lock.acquire via `with lock:`), which has no
	// Python frame: its innermost frame is the with-statement's line.
	type stacks struct{ main, lockWaiter, queueGetter []model.Frame }
	pySpy312 := stacks{
		main:        []model.Frame{fr("main", "victim.py", 96), fr("<module>", "victim.py", 100)},
		lockWaiter:  []model.Frame{fr("lock_waiter", "victim.py", 45), fr("Thread.run", "threading.py", 1010)},
		queueGetter: []model.Frame{fr("Condition.wait", "threading.py", 355), fr("Queue.get", "queue.py", 171), fr("queue_getter", "victim.py", 52)},
	}
	tests := []struct {
		file, ids string
		format    model.Format
		dumps     int
		// Which facts the format carries.
		pid, python, native, ident, names, current bool
		want                                       stacks
	}{
		{
			file: "pyspy-3.12.txt", ids: "pyspy-3.12.ids.json", format: FormatPySpyText, dumps: 1,
			pid: true, python: true, native: true, names: true, want: pySpy312,
		},
		{
			file: "pyspy-3.12-color.txt", ids: "pyspy-3.12.ids.json", format: FormatPySpyText, dumps: 1,
			pid: true, python: true, native: true, names: true, want: pySpy312,
		},
		{
			file: "pyspy-3.12-locals.txt", ids: "pyspy-3.12.ids.json", format: FormatPySpyText, dumps: 1,
			pid: true, python: true, native: true, names: true, want: pySpy312,
		},
		{
			// --native: the C frames stay, merged innermost first.
			file: "pyspy-3.12-native.txt", ids: "pyspy-3.12.ids.json", format: FormatPySpyText, dumps: 1,
			pid: true, python: true, native: true, names: true,
			want: stacks{
				main: []model.Frame{
					fr("clock_nanosleep", "libc.so.6", 0),
					fr("time_sleep", "libpython3.12.so.1.0", 0),
					fr("main", "victim.py", 96),
					fr("<module>", "victim.py", 100),
					fr("0x7f651a84524a", "libc.so.6", 0),
				},
				lockWaiter: []model.Frame{
					fr("0x7f651a8a3f16", "libc.so.6", 0),
					fr("0x7f651a8aed90", "libc.so.6", 0),
					fr("PyThread_acquire_lock_timed", "libpython3.12.so.1.0", 0),
					fr("lock_PyThread_acquire_lock", "libpython3.12.so.1.0", 0),
					fr("lock_waiter", "victim.py", 45),
				},
				queueGetter: []model.Frame{
					fr("0x7f651a8a3f16", "libc.so.6", 0),
					fr("0x7f651a8aed90", "libc.so.6", 0),
					fr("PyThread_acquire_lock_timed", "libpython3.12.so.1.0", 0),
					fr("lock_PyThread_acquire_lock", "libpython3.12.so.1.0", 0),
					fr("Condition.wait", "threading.py", 355),
				},
			},
		},
		{
			file: "pyspy-3.12.json", ids: "pyspy-3.12.ids.json", format: FormatPySpyJSON, dumps: 1,
			pid: true, native: true, ident: true, names: true,
			want: stacks{
				main:        []model.Frame{fr("main", victim, 96), fr("<module>", victim, 100)},
				lockWaiter:  []model.Frame{fr("lock_waiter", victim, 45), fr("Thread.run", py312+"threading.py", 1010)},
				queueGetter: []model.Frame{fr("Condition.wait", py312+"threading.py", 355), fr("Queue.get", py312+"queue.py", 171)},
			},
		},
		{
			// --subprocesses: the parent's dump; the child's is checked
			// in TestLiveSubprocesses.
			file: "pyspy-3.12-subprocesses.txt", ids: "pyspy-3.12-subprocesses.ids.json", format: FormatPySpyText, dumps: 2,
			pid: true, python: true, native: true, names: true, want: pySpy312,
		},
		{
			// 3.10 with --nonblocking: py-spy knows no TIDs, so the text
			// has hex pthread_t ids and the JSON null os_thread_ids; names
			// are bare co_names before 3.11.
			file: "pyspy-3.10-nonblocking.txt", ids: "pyspy-3.10-nonblocking.ids.json", format: FormatPySpyText, dumps: 1,
			pid: true, python: true, ident: true, names: true,
			want: stacks{
				main:        []model.Frame{fr("main", "victim.py", 96), fr("<module>", "victim.py", 100)},
				lockWaiter:  []model.Frame{fr("lock_waiter", "victim.py", 45), fr("run", "threading.py", 953)},
				queueGetter: []model.Frame{fr("wait", "threading.py", 320), fr("get", "queue.py", 171)},
			},
		},
		{
			file: "pyspy-3.10-nonblocking.json", ids: "pyspy-3.10-nonblocking.ids.json", format: FormatPySpyJSON, dumps: 1,
			pid: true, ident: true, names: true,
			want: stacks{
				main:        []model.Frame{fr("main", victim, 96), fr("<module>", victim, 100)},
				lockWaiter:  []model.Frame{fr("lock_waiter", victim, 45), fr("run", py310+"threading.py", 953)},
				queueGetter: []model.Frame{fr("wait", py310+"threading.py", 320), fr("get", py310+"queue.py", 171)},
			},
		},
		{
			// dump_traceback_later(0.4, repeat=True): two dumps with a
			// line of the victim's own stderr between them.
			file: "faulthandler-later-3.12.txt", ids: "faulthandler-later-3.12.ids.json", format: FormatFaulthandler, dumps: 2,
			ident: true,
			want: stacks{
				lockWaiter:  []model.Frame{fr("lock_waiter", victim, 45), fr("run", py312+"threading.py", 1010)},
				queueGetter: []model.Frame{fr("wait", py312+"threading.py", 355), fr("get", py312+"queue.py", 171)},
			},
		},
		{
			// register(SIGUSR1), signalled twice: the dumps follow each
			// other with no banner or blank line between.
			file: "faulthandler-signal-3.13.txt", ids: "faulthandler-signal-3.13.ids.json", format: FormatFaulthandler, dumps: 2,
			ident: true, current: true,
			want: stacks{
				main:        []model.Frame{fr("main", victim, 96), fr("<module>", victim, 100)},
				lockWaiter:  []model.Frame{fr("lock_waiter", victim, 45), fr("run", py313+"threading.py", 992)},
				queueGetter: []model.Frame{fr("wait", py313+"threading.py", 359), fr("get", py313+"queue.py", 202)},
			},
		},
		{
			// Printed outermost first; parsed innermost first.
			file: "current-frames-3.12.txt", ids: "current-frames-3.12.ids.json", format: FormatCurrentFrames, dumps: 1,
			ident: true, names: true,
			want: stacks{
				main:        []model.Frame{fr("recipe", victim, 60), fr("main", victim, 91), fr("<module>", victim, 100)},
				lockWaiter:  []model.Frame{fr("lock_waiter", victim, 45), fr("run", py312+"threading.py", 1010)},
				queueGetter: []model.Frame{fr("wait", py312+"threading.py", 355), fr("get", py312+"queue.py", 171)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			in := readTestdata(t, filepath.Join("live", tc.file))
			ids := readIDs(t, tc.ids)
			dumps, err := Parse(in)
			if err != nil {
				t.Fatalf("Parse: %v\ninput:\n%s", err, in)
			}
			if len(dumps) != tc.dumps {
				t.Fatalf("Parse gave %d dumps, want %d\ninput:\n%s", len(dumps), tc.dumps, in)
			}
			// Every repeat of a dump shows the same threads; check all.
			for i, d := range dumps {
				if tc.file == "pyspy-3.12-subprocesses.txt" && i == 1 {
					continue // the child
				}
				if d.Format != tc.format || d.Truncated || len(d.Threads) != 3 {
					t.Errorf("dump %d: format %q, truncated %v, %d threads; want %q, false, 3\ninput:\n%s", i, d.Format, d.Truncated, len(d.Threads), tc.format, in)
					continue
				}
				if wantPID := ids.PID * btoi(tc.pid); d.PID != wantPID {
					t.Errorf("dump %d: PID %d, want %d", i, d.PID, wantPID)
				}
				if wantPy := ids.Python; tc.python && d.Python != wantPy || !tc.python && d.Python != "" {
					t.Errorf("dump %d: Python %q, want %q (or \"\" if the format has none: %v)", i, d.Python, wantPy, !tc.python)
				}
				for _, th := range d.Threads {
					// Find which of the victim's threads this is, by
					// whichever id the format has.
					name := ""
					for n, id := range ids.Threads {
						if tc.native && th.NativeID == id.NativeID || !tc.native && th.Ident == id.Ident {
							name = n
						}
					}
					if name == "" {
						t.Errorf("dump %d: thread %+v matches none of the victim's threads %+v", i, th, ids.Threads)
						continue
					}
					id := ids.Threads[name]
					// The join hangdoc relies on: NativeID is the TID.
					if want := id.NativeID * btoi(tc.native); th.NativeID != want {
						t.Errorf("dump %d, %s: NativeID %d, want %d", i, name, th.NativeID, want)
					}
					if want := id.Ident * uint64(btoi(tc.ident)); th.Ident != want {
						t.Errorf("dump %d, %s: Ident %d, want %d", i, name, th.Ident, want)
					}
					if tc.names && th.Name != name {
						t.Errorf("dump %d: thread %d named %q, want %q", i, th.NativeID, th.Name, name)
					}
					if want := tc.current && name == "MainThread"; th.Current != want {
						t.Errorf("dump %d, %s: Current %v, want %v", i, name, th.Current, want)
					}
					var want []model.Frame
					switch name {
					case "lock-waiter":
						want = tc.want.lockWaiter
					case "queue-getter":
						want = tc.want.queueGetter
					case "MainThread":
						want = tc.want.main
					}
					if want == nil {
						continue
					}
					if len(th.Frames) < len(want) {
						t.Errorf("dump %d, %s: %d frames, want at least %d: %v", i, name, len(th.Frames), len(want), th.Frames)
						continue
					}
					if diff := cmp.Diff(want, th.Frames[:len(want)]); diff != "" {
						t.Errorf("dump %d, %s: innermost frames (-want +got):\n%s", i, name, diff)
					}
				}
			}
		})
	}
}

// dumpCase and dumpsCase are table rows shared with the fuzz targets'
// seeds: a named input and the result or the error string it gives.
type dumpCase struct {
	name    string
	in      string
	want    Dump
	wantErr string
}

type dumpsCase struct {
	name    string
	in      string
	want    []Dump
	wantErr string
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestLiveVictimLines pins the victim's line numbers that TestLive's
// frames name: recapturing after editing victim.py must update both.
func TestLiveVictimLines(t *testing.T) {
	lines := strings.Split(string(readTestdata(t, "live/victim.py")), "\n")
	for n, want := range map[int]string{45: "with lock:", 52: "q.get()", 84: "time.sleep(0.6)", 87: "time.sleep(0.4)", 96: "time.sleep(3600)", 100: "main()"} {
		if got := strings.TrimSpace(lines[n-1]); got != want {
			t.Errorf("victim.py line %d is %q, want %q", n, got, want)
		}
	}
}

// TestLiveLaterRepeats checks that dump_traceback_later's two repeats
// are two snapshots: MainThread moved on between them.
func TestLiveLaterRepeats(t *testing.T) {
	const victim = "/work/main/sampler/python/testdata/live/victim.py"
	in := readTestdata(t, "live/faulthandler-later-3.12.txt")
	dumps, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]model.Frame
	for _, d := range dumps {
		// faulthandler prints the main thread last.
		got = append(got, d.Threads[len(d.Threads)-1].Frames)
	}
	want := [][]model.Frame{
		{fr("main", victim, 84), fr("<module>", victim, 100)}, // time.sleep(0.6)
		{fr("main", victim, 87), fr("<module>", victim, 100)}, // time.sleep(0.4)
	}
	if diff := cmp.Diff(want, got, noVars); diff != "" {
		t.Errorf("MainThread's frames in each dump (-want +got):\n%s\ninput:\n%s", diff, in)
	}
}

func TestLiveSubprocesses(t *testing.T) {
	in := readTestdata(t, "live/pyspy-3.12-subprocesses.txt")
	ids := readIDs(t, "pyspy-3.12-subprocesses.ids.json")
	dumps, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	want := Dump{
		Format: FormatPySpyText, PID: ids.Child, Python: "3.12.1", Parent: ids.PID,
		Command: "/root/.pyenv/versions/3.12.1/bin/python -c import sys; sys.stdin.read()",
		// The child never imported threading, so it has no thread name.
		Threads: []Thread{{NativeID: ids.Child, Frames: []model.Frame{fr("<module>", "<string>", 1)}}},
	}
	if len(dumps) != 2 {
		t.Fatalf("Parse gave %d dumps, want 2", len(dumps))
	}
	if diff := cmp.Diff(want, dumps[1], noVars, cmpopts.IgnoreFields(Dump{}, "Interpreter")); diff != "" {
		t.Errorf("the child's dump (-want +got):\n%s\ninput:\n%s", diff, in)
	}
	// ParsePySpyText, for one dump, gives the first.
	first, err := ParsePySpyText(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dumps[0], first, noVars); diff != "" {
		t.Errorf("ParsePySpyText differs from Parse's first dump (-parse +text):\n%s", diff)
	}
}

// TestLiveTruncated cuts every complete live dump at every byte that is
// not just after a newline: the result is Truncated, or an error when
// nothing was left to parse. JSON is checked at every cut inside the
// array.
func TestLiveTruncated(t *testing.T) {
	files, err := filepath.Glob("testdata/live/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".ids.json") || strings.HasSuffix(f, ".py") || strings.HasSuffix(f, ".sh") {
			continue
		}
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		isJSON := strings.HasSuffix(f, ".json")
		end := len(in)
		if isJSON {
			end = bytes.LastIndexByte(in, ']') + 1
		}
		for i := 1; i < end; i++ {
			if !isJSON && in[i-1] == '\n' {
				continue
			}
			n++
			dumps, err := Parse(in[:i])
			if err == nil && !dumps[len(dumps)-1].Truncated {
				t.Errorf("%s cut at byte %d of %d: not Truncated, no error\ninput:\n%s", f, i, len(in), in[:i])
				break
			}
		}
	}
	if n == 0 {
		t.Fatal("no live dump to cut")
	}
}

var pySpyTextCases = []dumpCase{
	{
		name: "statuses, names, hex and decimal ids",
		in: "Process 31718: /usr/bin/python3.12 app.py --flag\n" +
			"Python v3.12.1 (/usr/bin/python3.12)\n" +
			"\n" +
			"Thread 31718 (idle): \"MainThread\"\n" +
			"    compute (app.py:17)\n" +
			"Thread 31722 (active+gil): \"spinner\"\n" +
			"    spinner (app.py:12)\n" +
			"Thread 0x7ED3637AE700 (active): \"ThreadPoolExecutor-275_6\"\n" +
			"    _worker (concurrent/futures/thread.py:81)\n",
		want: Dump{Format: FormatPySpyText, PID: 31718, Python: "3.12.1", Threads: []Thread{
			{NativeID: 31718, Name: "MainThread", Frames: []model.Frame{fr("compute", "app.py", 17)}},
			{NativeID: 31722, Name: "spinner", Active: true, OwnsGIL: true, Frames: []model.Frame{fr("spinner", "app.py", 12)}},
			{Ident: 0x7ED3637AE700, Name: "ThreadPoolExecutor-275_6", Active: true, Frames: []model.Frame{fr("_worker", "concurrent/futures/thread.py", 81)}},
		}},
	},
	{
		name: "awkward names and locations",
		in: "Process 7: python3 x.py\n" +
			"Python v3.13.0t (/usr/bin/python3.13t (deleted))\n" +
			"\n" +
			"Thread 7 (idle): \"say \"hi\"\"\n" +
			"    <lambda> (x.py:3)\n" +
			"    operator() (src/thing.cpp:12)\n" +
			"    <genexpr> (C:\\work\\x.py:9)\n" +
			"    f (/srv/app (old)/x.py:4)\n" +
			"    frozen (<frozen importlib._bootstrap>)\n" +
			"    0x7f3a2b1c4d5e (/usr/lib/libfoo.so (deleted))\n" +
			"    0x7f3a2b1c4d5f (?)\n" +
			"Thread 8 (idle)\n",
		want: Dump{Format: FormatPySpyText, PID: 7, Python: "3.13.0t", Threads: []Thread{
			{NativeID: 7, Name: `say "hi"`, Frames: []model.Frame{
				fr("<lambda>", "x.py", 3),
				fr("operator()", "src/thing.cpp", 12),
				fr("<genexpr>", `C:\work\x.py`, 9),
				fr("f", "/srv/app (old)/x.py", 4),
				fr("frozen", "<frozen importlib._bootstrap>", 0),
				fr("0x7f3a2b1c4d5e", "/usr/lib/libfoo.so (deleted)", 0),
				fr("0x7f3a2b1c4d5f", "?", 0),
			}},
			// A thread with no Python frames prints only its header.
			{NativeID: 8},
		}},
	},
	{
		name: "ansi colour and crlf",
		in: "Process \x1b[33m\x1b[1m42\x1b[0m: python3 a.py\r\n" +
			"Python v\x1b[1m3.11.7\x1b[0m (\x1b[2m/usr/bin/python3.11\x1b[0m)\r\n" +
			"\r\n" +
			"Thread \x1b[33m\x1b[1m42\x1b[0m (idle): \"MainThread\"\r\n" +
			"    \x1b[32mwait\x1b[0m (\x1b[36mthreading.py\x1b[0m:\x1b[2m320\x1b[0m)\r\n",
		want: Dump{Format: FormatPySpyText, PID: 42, Python: "3.11.7", Threads: []Thread{
			{NativeID: 42, Name: "MainThread", Frames: []model.Frame{fr("wait", "threading.py", 320)}},
		}},
	},
	{
		name: "locals skipped, even ones that look like frames",
		in: "Thread 5 (idle): \"w\"\n" +
			"    get (queue.py:171)\n" +
			"        Arguments:\n" +
			"            self: <Queue at 0x7f0c43b4f390>\n" +
			"            msg: \"  x (y.py:1)\"\n" +
			"        Locals:\n" +
			"            item: None\n" +
			"    run (w.py:9)\n",
		want: Dump{Format: FormatPySpyText, Threads: []Thread{
			{NativeID: 5, Name: "w", Frames: []model.Frame{fr("get", "queue.py", 171), fr("run", "w.py", 9)}},
		}},
	},
	{
		name: "pasted with tabs",
		in:   "Thread 5 (idle): \"w\"\n\tget (queue.py:171)\n\t\tArguments:\n\t\t\tself: <Queue at 0x7f0c43b4f390>\n\trun (w.py:9)\n",
		want: Dump{Format: FormatPySpyText, Threads: []Thread{
			{NativeID: 5, Name: "w", Frames: []model.Frame{fr("get", "queue.py", 171), fr("run", "w.py", 9)}},
		}},
	},
	{
		name: "core dump: gil or no status",
		in: "Signal 11: /tmp/core.1234\n" +
			"Process 1234: python3 crash.py\n" +
			"Python v3.11.7\n" +
			"\n" +
			"Thread 1234 (gil): \"MainThread\"\n" +
			"    crash (crash.py:3)\n" +
			"Thread 1240\n" +
			"    idle (crash.py:9)\n",
		want: Dump{Format: FormatPySpyText, PID: 1234, Python: "3.11.7", Threads: []Thread{
			{NativeID: 1234, Name: "MainThread", OwnsGIL: true, Frames: []model.Frame{fr("crash", "crash.py", 3)}},
			{NativeID: 1240, Frames: []model.Frame{fr("idle", "crash.py", 9)}},
		}},
	},
	{
		name: "cut mid-frame",
		in: "Process 9: python3 a.py\n" +
			"Python v3.12.1 (/usr/bin/python3.12)\n" +
			"\n" +
			"Thread 9 (idle): \"MainThread\"\n" +
			"    wait (threading.py:355)\n" +
			"    get (queu",
		want: Dump{Format: FormatPySpyText, PID: 9, Python: "3.12.1", Truncated: true, Threads: []Thread{
			{NativeID: 9, Name: "MainThread", Frames: []model.Frame{fr("wait", "threading.py", 355)}},
		}},
	},
	{
		// py-spy prints the header, then fails to read the stacks
		// (the process died): the dump ends at the header.
		name: "header only",
		in:   "Process 9: python3 a.py\nPython v3.12.1 (/usr/bin/python3.12)\n\n",
		want: Dump{Format: FormatPySpyText, PID: 9, Python: "3.12.1", Truncated: true},
	},
	{
		name:    "empty",
		in:      "",
		wantErr: "parsing py-spy text dump: no process header or thread found",
	},
	{
		name:    "an error, not a dump",
		in:      "Error: Failed to find python version from target process\n",
		wantErr: "parsing py-spy text dump: no process header or thread found",
	},
	{
		// "Thread started" and the like are not thread headers.
		name:    "prose",
		in:      "Thread started\nThread: \"x\"\n    not a frame\n",
		wantErr: "parsing py-spy text dump: no process header or thread found",
	},
}

func TestParsePySpyText(t *testing.T) {
	tests := pySpyTextCases
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePySpyText([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ParsePySpyText error %v, want %q\ninput:\n%s", err, tc.wantErr, tc.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePySpyText: %v\ninput:\n%s", err, tc.in)
			}
			if diff := cmp.Diff(tc.want, got, noVars, ignoreCommand); diff != "" {
				t.Errorf("ParsePySpyText (-want +got):\n%s\ninput:\n%s", diff, tc.in)
			}
		})
	}
}

var pySpyJSONCases = []dumpCase{
	{
		// 0.3.x frames lack is_entry; unknown fields are skipped;
		// nulls are unknowns.
		name: "old and new fields",
		in: `[{"pid": 31718, "thread_id": 139762825057984, "thread_name": null, "os_thread_id": null,
		      "active": true, "owns_gil": true, "new_field": {"a": [1, 2]},
		      "frames": [{"name": "spin", "filename": "/app/x.py", "module": null, "short_filename": "x.py", "line": 12, "locals": null},
		                 {"name": "", "filename": "", "short_filename": "y.py", "line": 0, "locals": [{"name": "a", "addr": 18446744073709551615, "arg": true, "repr": "1"}]}],
		      "process_info": null},
		     {"pid": 31718, "thread_id": 1, "frames": null}]`,
		want: Dump{Format: FormatPySpyJSON, PID: 31718, Threads: []Thread{
			{Ident: 139762825057984, Active: true, OwnsGIL: true, Frames: []model.Frame{fr("spin", "/app/x.py", 12), fr(unknownFunc, "y.py", 0)}},
			{Ident: 1},
		}},
	},
	{
		name: "command line before the array",
		in:   "$ py-spy dump --json --pid 5\n[\n  {\"pid\": 5, \"thread_id\": 2, \"os_thread_id\": 5, \"thread_name\": \"MainThread\", \"frames\": []}\n]\n",
		want: Dump{Format: FormatPySpyJSON, PID: 5, Threads: []Thread{{Ident: 2, NativeID: 5, Name: "MainThread"}}},
	},
	{
		name: "empty array",
		in:   "[]\n",
		want: Dump{Format: FormatPySpyJSON},
	},
	{
		name: "cut mid-frame keeps the frames before",
		in:   `[{"pid": 5, "thread_id": 2, "os_thread_id": 5, "frames": [{"name": "a", "filename": "/a.py", "line": 1}, {"name": "b", "filena`,
		want: Dump{Format: FormatPySpyJSON, PID: 5, Truncated: true, Threads: []Thread{{Ident: 2, NativeID: 5, Frames: []model.Frame{fr("a", "/a.py", 1)}}}},
	},
	{
		name: "cut after a thread",
		in:   `[{"pid": 5, "thread_id": 2, "frames": []}, {"pid"`,
		want: Dump{Format: FormatPySpyJSON, PID: 5, Truncated: true, Threads: []Thread{{Ident: 2}, {}}},
	},
	{
		name: "garbage after a thread",
		in:   `[{"pid": 5, "thread_id": 2, "frames": []}, 17]`,
		want: Dump{Format: FormatPySpyJSON, PID: 5, Truncated: true, Threads: []Thread{{Ident: 2}}},
	},
	{
		// A thread id must be a u64: a negative one is garbage.
		name: "wrong type",
		in:   `[{"pid": 5, "thread_id": 2, "frames": []}, {"thread_id": -1}]`,
		want: Dump{Format: FormatPySpyJSON, PID: 5, Truncated: true, Threads: []Thread{{Ident: 2}, {}}},
	},
	{
		name:    "cut before any thread",
		in:      "[\n  {",
		wantErr: "parsing py-spy json dump: no thread read: unexpected EOF",
	},
	{
		name:    "not json",
		in:      "Error: Failed to find python version from target process\n",
		wantErr: "parsing py-spy json dump: no json array found",
	},
	{
		name:    "log line is not an array",
		in:      "[2024-02-28T03:25:41.527520400Z INFO py_spy::python_spy] found libpython\n",
		wantErr: "parsing py-spy json dump: no json array found",
	},
	{
		name:    "empty",
		in:      " \n",
		wantErr: "parsing py-spy json dump: empty input",
	},
}

func TestParsePySpyJSON(t *testing.T) {
	tests := pySpyJSONCases
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePySpyJSON([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ParsePySpyJSON error %v, want %q\ninput:\n%s", err, tc.wantErr, tc.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePySpyJSON: %v\ninput:\n%s", err, tc.in)
			}
			if diff := cmp.Diff(tc.want, got, noVars); diff != "" {
				t.Errorf("ParsePySpyJSON (-want +got):\n%s\ninput:\n%s", diff, tc.in)
			}
		})
	}
}

var faulthandlerCases = []dumpsCase{
	{
		// Python 3.14's OS thread names (composed from cpython PR
		// #132016's description: not run here).
		name: "3.14 thread names",
		in: "Thread 0x00007f58c25be6c0 [sleeper] (most recent call first):\n" +
			"  File \"/tmp/t.py\", line 7 in sleeper\n" +
			"\n" +
			"Thread 0x00007f58c25be6c1 [odd] name] (most recent call first):\n" +
			"  <no Python frame>\n" +
			"\n" +
			"Current thread 0x00007f58d06bb740 [main_thread] (most recent call first):\n" +
			"  File \"/tmp/t.py\", line 20 in <module>\n",
		want: []Dump{{Format: FormatFaulthandler, Threads: []Thread{
			{Ident: 0x00007f58c25be6c0, Name: "sleeper", Frames: []model.Frame{fr("sleeper", "/tmp/t.py", 7)}},
			{Ident: 0x00007f58c25be6c1, Name: "odd] name"},
			{Ident: 0x00007f58d06bb740, Name: "main_thread", Current: true, Frames: []model.Frame{fr("<module>", "/tmp/t.py", 20)}},
		}}},
	},
	{
		name: "fatal error, markers, unknowns, extension modules, c stack",
		in: "Fatal Python error: Segmentation fault\n" +
			"\n" +
			"Thread 0x00007f1e6108e6c0 (most recent call first):\n" +
			"  File ???, line ??? in ???\n" +
			"  File \"/tmp/a \\xe9.py\", line 3 in f\n" +
			"  ...\n" +
			"\n" +
			"Thread 0x00007f1e6108e6c1 (most recent call first):\n" +
			"  <tstate is freed>\n" +
			"\n" +
			"Current thread 0x00007f1e62424b80 (most recent call first):\n" +
			"  Garbage-collecting\n" +
			"  File \"/usr/lib/python3.13/ctypes/__init__.py\", line 538 in string_at\n" +
			"  File \"/tmp/fh.py\", line 30 in <module>\n" +
			"\n" +
			"Current thread's C stack trace (most recent call first):\n" +
			"  Binary file \"/opt/python/python\", at _Py_DumpStack+0x42 [0x5b27f7d7147e]\n" +
			"  <truncated rest of calls>\n" +
			"\n" +
			"Extension modules: _ctypes (total: 1)\n",
		want: []Dump{{Format: FormatFaulthandler, Threads: []Thread{
			{Ident: 0x00007f1e6108e6c0, Frames: []model.Frame{fr("???", "", 0), fr("f", `/tmp/a \xe9.py`, 3)}},
			{Ident: 0x00007f1e6108e6c1},
			{Ident: 0x00007f1e62424b80, Current: true, Frames: []model.Frame{
				fr("string_at", "/usr/lib/python3.13/ctypes/__init__.py", 538),
				fr("<module>", "/tmp/fh.py", 30),
			}},
		}}},
	},
	{
		// dump_traceback(all_threads=False), twice, and a
		// free-threaded fatal error: one thread each, the caller's.
		name: "single-thread stacks",
		in: "Stack (most recent call first):\n" +
			"  File \"/tmp/a.py\", line 3 in f\n" +
			"Stack (most recent call first):\n" +
			"  File \"/tmp/a.py\", line 4 in f\n" +
			"Fatal Python error: Aborted\n" +
			"\n" +
			"<Cannot show all threads while the GIL is disabled>\n" +
			"Stack (most recent call first):\n" +
			"  File \"/tmp/a.py\", line 5 in g\n",
		want: []Dump{
			{Format: FormatFaulthandler, Threads: []Thread{{Current: true, Frames: []model.Frame{fr("f", "/tmp/a.py", 3)}}}},
			{Format: FormatFaulthandler, Threads: []Thread{{Current: true, Frames: []model.Frame{fr("f", "/tmp/a.py", 4)}}}},
			{Format: FormatFaulthandler, Threads: []Thread{{Current: true, Frames: []model.Frame{fr("g", "/tmp/a.py", 5)}}}},
		},
	},
	{
		// faulthandler writes straight to the fd, so its lines can
		// land among other output, and a Python traceback's frame
		// lines (with a comma) are not its frames.
		name: "interleaved output",
		in: "INFO starting\n" +
			"Timeout (0:00:05)!\n" +
			"Thread 0x0000000000000001 (most recent call first):\n" +
			"  File \"/a.py\", line 1 in a\n" +
			"WARNING something else\n" +
			"  File \"/b.py\", line 2, in b\n" +
			"  File \"/a.py\", line 2 in b\n" +
			"\n" +
			"log line\n" +
			"Thread 0x0000000000000002 (most recent call first):\n" +
			"  File \"/a.py\", line 3 in c\n" +
			"...\n",
		want: []Dump{{Format: FormatFaulthandler, Threads: []Thread{
			{Ident: 1, Frames: []model.Frame{fr("a", "/a.py", 1), fr("b", "/a.py", 2)}},
			{Ident: 2, Frames: []model.Frame{fr("c", "/a.py", 3)}},
		}}},
	},
	{
		name: "cut after a header",
		in: "Timeout (0:00:05)!\n" +
			"Thread 0x0000000000000001 (most recent call first):\n" +
			"  File \"/a.py\", line 1 in a\n" +
			"\n" +
			"Thread 0x0000000000000002 (most recent call first):\n",
		want: []Dump{{Format: FormatFaulthandler, Truncated: true, Threads: []Thread{
			{Ident: 1, Frames: []model.Frame{fr("a", "/a.py", 1)}},
			{Ident: 2},
		}}},
	},
	{
		name: "second repeat cut after its banner",
		in: "Timeout (0:00:00.500000)!\n" +
			"Thread 0x0000000000000001 (most recent call first):\n" +
			"  File \"/a.py\", line 1 in a\n" +
			"Timeout (0:00:00.500000)!\n",
		want: []Dump{
			{Format: FormatFaulthandler, Threads: []Thread{{Ident: 1, Frames: []model.Frame{fr("a", "/a.py", 1)}}}},
			{Format: FormatFaulthandler, Truncated: true},
		},
	},
	{
		name: "cut mid-frame",
		in: "Thread 0x0000000000000001 (most recent call first):\n" +
			"  File \"/a.py\", line 1 in a\n" +
			"  File \"/a.p",
		want: []Dump{{Format: FormatFaulthandler, Truncated: true, Threads: []Thread{
			{Ident: 1, Frames: []model.Frame{fr("a", "/a.py", 1)}},
		}}},
	},
	{
		name:    "banner only",
		in:      "Timeout (0:00:05)!\n",
		wantErr: "parsing faulthandler dump: no thread after the banner",
	},
	{
		name:    "a traceback is not a dump",
		in:      "Traceback (most recent call last):\n  File \"/a.py\", line 1, in <module>\nValueError: x\n",
		wantErr: "parsing faulthandler dump: no thread found",
	},
}

func TestParseFaulthandler(t *testing.T) {
	tests := faulthandlerCases
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFaulthandler([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ParseFaulthandler error %v, want %q\ninput:\n%s", err, tc.wantErr, tc.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFaulthandler: %v\ninput:\n%s", err, tc.in)
			}
			if diff := cmp.Diff(tc.want, got, noVars); diff != "" {
				t.Errorf("ParseFaulthandler (-want +got):\n%s\ninput:\n%s", diff, tc.in)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Dump
		wantErr error
	}{
		{
			name: "concatenated json dumps",
			in:   "[{\"pid\": 5, \"thread_id\": 1, \"frames\": []}]\n$ again\n[\n  {\"pid\": 5, \"thread_id\": 1, \"frames\": []}\n]\n",
			want: []Dump{
				{Format: FormatPySpyJSON, PID: 5, Threads: []Thread{{Ident: 1}}},
				{Format: FormatPySpyJSON, PID: 5, Threads: []Thread{{Ident: 1}}},
			},
		},
		{
			// Dumps appended without their headers split where a thread
			// comes again.
			name: "py-spy text repeated without headers",
			in:   "Thread 5 (idle): \"a\"\n    f (a.py:1)\nThread 6 (idle)\nThread 5 (idle): \"a\"\n    f (a.py:2)\n",
			want: []Dump{
				{Format: FormatPySpyText, Threads: []Thread{{NativeID: 5, Name: "a", Frames: []model.Frame{fr("f", "a.py", 1)}}, {NativeID: 6}}},
				{Format: FormatPySpyText, Threads: []Thread{{NativeID: 5, Name: "a", Frames: []model.Frame{fr("f", "a.py", 2)}}}},
			},
		},
		{
			name: "current-frames recipe, ThreadID header, twice",
			in: "\n# ThreadID: 140\n" +
				"File: \"/a.py\", line 1, in <module>\n" +
				"  main()\n" +
				"File: \"/a.py\", line 5, in main\n" +
				"\n# ThreadID: 140\n" +
				"File: \"/a.py\", line 6, in main\n",
			want: []Dump{
				{Format: FormatCurrentFrames, Threads: []Thread{{Ident: 140, Frames: []model.Frame{fr("main", "/a.py", 5), fr("<module>", "/a.py", 1)}}}},
				{Format: FormatCurrentFrames, Threads: []Thread{{Ident: 140, Frames: []model.Frame{fr("main", "/a.py", 6)}}}},
			},
		},
		{
			// gunicorn's header names threads; one not made by
			// threading has no name; logging prefixes are tolerated.
			name: "current-frames recipe with names and log prefixes",
			in: "2024-01-01 INFO # Thread: (7)\n" +
				"2024-01-01 INFO File: \"/a.py\", line 1, in f\n" +
				"2024-01-01 INFO # Thread: Worker (x)(8)\n" +
				"2024-01-01 INFO File: \"/a.py\", line 2, in g\n",
			want: []Dump{{Format: FormatCurrentFrames, Threads: []Thread{
				{Ident: 7, Frames: []model.Frame{fr("f", "/a.py", 1)}},
				{Ident: 8, Name: "Worker (x)", Frames: []model.Frame{fr("g", "/a.py", 2)}},
			}}},
		},
		{
			// traceback.print_stack output with an ad-hoc header.
			name: "print_stack style",
			in: "Thread 12345:\n" +
				"  File \"/a.py\", line 1, in <module>\n" +
				"    main()\n" +
				"  File \"/a.py\", line 5, in main\n" +
				"    time.sleep(1)\n",
			want: []Dump{{Format: FormatCurrentFrames, Threads: []Thread{
				{Ident: 12345, Frames: []model.Frame{fr("main", "/a.py", 5), fr("<module>", "/a.py", 1)}},
			}}},
		},
		{
			name: "tracebacks with no header",
			in: "Traceback (most recent call last):\n" +
				"  File \"/a.py\", line 1, in <module>\n" +
				"ValueError: x\n" +
				"Traceback (most recent call last):\n" +
				"  File \"/b.py\", line 2, in <module>\n" +
				"  File \"/b.py\", line 3, in f\n" +
				"KeyError: y\n",
			want: []Dump{{Format: FormatCurrentFrames, Threads: []Thread{
				{Frames: []model.Frame{fr("<module>", "/a.py", 1)}},
				{Frames: []model.Frame{fr("f", "/b.py", 3), fr("<module>", "/b.py", 2)}},
			}}},
		},
		{
			// Something more distinctive than a traceback wins.
			name: "faulthandler after an exception traceback",
			in: "Traceback (most recent call last):\n" +
				"  File \"/a.py\", line 1, in <module>\n" +
				"ValueError: x\n" +
				"Thread 0x0000000000000001 (most recent call first):\n" +
				"  File \"/a.py\", line 1 in a\n",
			want: []Dump{{Format: FormatFaulthandler, Threads: []Thread{{Ident: 1, Frames: []model.Frame{fr("a", "/a.py", 1)}}}}},
		},
		{
			// A "Process N:" line in a log is not py-spy's header unless
			// py-spy's "Python v…" line follows.
			name: "faulthandler after process-like log lines",
			in: "Process 12: started\nPython v3 is great\n" +
				"Stack (most recent call first):\n" +
				"  File \"/a.py\", line 1 in a\n",
			want: []Dump{{Format: FormatFaulthandler, Threads: []Thread{{Current: true, Frames: []model.Frame{fr("a", "/a.py", 1)}}}}},
		},
		{
			// Python 3.14 prints each thread's OS name (pthread_getname_np,
			// at most 15 bytes: Thread.name cut, the process's comm for
			// the main thread) between the id and "(most recent call
			// first)", and the current thread's C stack after it.
			name: "faulthandler 3.14 thread names",
			in: "Thread 0x00007f1af6ee96c0 [worker-2] (most recent call first):\n" +
				"  File \"/a.py\", line 9 in worker\n" +
				"\n" +
				"Current thread 0x00007f1af76ea6c0 [python3] (most recent call first):\n" +
				"  File \"/a.py\", line 20 in <module>\n" +
				"\n" +
				"Current thread's C stack trace (most recent call first):\n" +
				"  Binary file \"python3\", at _Py_DumpStack+0x2d [0x5a7e1c]\n",
			want: []Dump{{Format: FormatFaulthandler, Threads: []Thread{
				{Ident: 0x00007f1af6ee96c0, Name: "worker-2", Frames: []model.Frame{fr("worker", "/a.py", 9)}},
				{Ident: 0x00007f1af76ea6c0, Name: "python3", Current: true, Frames: []model.Frame{fr("<module>", "/a.py", 20)}},
			}}},
		},
		{
			// A JSON array of objects with none of py-spy's fields is not
			// a dump of threads without frames.
			name:    "json that is not py-spy's",
			in:      "[{\"a\":1}]\n",
			wantErr: ErrNoDump,
		},
		{
			// A handler that heads each ident of sys._current_frames() with
			// its thread's name, traceback.format_stack below it.
			name: "current-frames with names in parentheses",
			in: "Thread 140677819672256 (submit-2):\n" +
				"  File \"/a.py\", line 25, in submit\n" +
				"    job_lock.acquire()\n",
			want: []Dump{{Format: FormatCurrentFrames, Threads: []Thread{
				{Ident: 140677819672256, Name: "submit-2", Frames: []model.Frame{fr("submit", "/a.py", 25)}},
			}}},
		},
		{
			// Printed from a signal handler: its frame is innermost, on
			// top of the one the signal interrupted, which is the thread's.
			name: "current-frames from a signal handler",
			in: "Thread 140064058022784 (MainThread):\n" +
				"  File \"/s.py\", line 13, in wait_for_file\n" +
				"    time.sleep(0.5)\n" +
				"  File \"/v.py\", line 36, in _dump_frames\n" +
				"    out.write(\"\".join(traceback.format_stack(f)))\n",
			want: []Dump{{Format: FormatCurrentFrames, Threads: []Thread{
				{Ident: 140064058022784, Name: "MainThread", Frames: []model.Frame{fr("wait_for_file", "/s.py", 13)}},
			}}},
		},
		{
			name:    "nothing",
			in:      "hello\n[INFO] world\n",
			wantErr: ErrNoDump,
		},
		{
			name:    "empty",
			in:      "",
			wantErr: ErrNoDump,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Parse error %v, want %v\ninput:\n%s", err, tc.wantErr, tc.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v\ninput:\n%s", err, tc.in)
			}
			if diff := cmp.Diff(tc.want, got, noVars); diff != "" {
				t.Errorf("Parse (-want +got):\n%s\ninput:\n%s", diff, tc.in)
			}
		})
	}
}

// noVars leaves the --locals variables out of comparisons of stacks: the
// tests that are about them say so (TestPySpyVars).
var noVars = cmpopts.IgnoreFields(Thread{}, "Vars")

func TestPySpyVars(t *testing.T) {
	in := `Process 17200: python3 lock_order.py
Python v3.12.1 (/usr/bin/python3.12)

Thread 17205 (idle): "worker-1"
    worker (lock_order.py:18)
        Arguments:
            first: <_thread.lock at 0x7f029b225a00>
            second: <_thread.lock at 0x7F029B20BA40>
            n: 3
            name: "secret"
        Locals:
            old: <unlocked _thread.lock object at 0x7f00000000aa>
    Thread.run (threading.py:1010)
        Arguments:
            self: <Thread at 0x7f029b131010>
`
	d, err := ParsePySpyText([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []model.FrameVars{
		{Frame: 0, Vars: []model.Var{
			{Name: "first", Type: "_thread.lock", Addr: "0x7f029b225a00"},
			{Name: "second", Type: "_thread.lock", Addr: "0x7f029b20ba40"},
			{Name: "old", Type: "_thread.lock", Addr: "0x7f00000000aa"},
		}},
		{Frame: 1, Vars: []model.Var{{Name: "self", Type: "Thread", Addr: "0x7f029b131010"}}},
	}
	if diff := cmp.Diff(want, d.Threads[0].Vars); diff != "" {
		t.Errorf("vars (-want +got):\n%s\n(values that are not objects, like n and name, are never kept)", diff)
	}
	if len(d.Threads[0].Frames) != 2 {
		t.Errorf("frames %+v: the variables are not frames", d.Threads[0].Frames)
	}
}

// TestInterpreterPath: py-spy's header names the interpreter after its
// version; a header without it names none.
func TestInterpreterPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Process 9: python3 a.py\nPython v3.11.7 (/opt/py/bin/python3.11)\n\nThread 9 (idle): \"MainThread\"\n    main (a.py:1)\n", "/opt/py/bin/python3.11"},
		{"Process 9: python3 a.py\nPython v3.11.7\n\nThread 9 (idle): \"MainThread\"\n    main (a.py:1)\n", ""},
	} {
		d, err := ParsePySpyText([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if d.Interpreter != tc.want {
			t.Errorf("interpreter %q, want %q", d.Interpreter, tc.want)
		}
	}
}
