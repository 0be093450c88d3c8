package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler/oncpu"
)

// The Python victims need py-spy, which .ci/run installs with pip: a
// missing py-spy fails these tests, it does not skip them.

type pycontract struct {
	xcontract
	Sampling struct {
		Samples     int      `json:"samples"`
		StackSource string   `json:"stack_source"`
		Notes       []string `json:"notes"`
	} `json:"sampling"`
	Threads []pythread `json:"threads"`
}

// pythread is a thread of the JSON report, with what Python adds.
type pythread struct {
	TID    int    `json:"tid"`
	Name   string `json:"name"`
	Class  string `json:"class"`
	Python *struct {
		ThreadName string `json:"thread_name"`
		OwnsGIL    bool   `json:"owns_gil"`
	} `json:"python"`
	Stack []struct {
		Func string `json:"func"`
		File string `json:"file"`
		Line int    `json:"line"`
	} `json:"stack"`
}

func pydecode(t *testing.T, out string) pycontract {
	t.Helper()
	return pydecodeAs(t, out, "memory")
}

func needPySpy(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("py-spy"); err != nil {
		t.Fatalf("py-spy not found: install it with pip install py-spy (.ci/run does)")
	}
}

// heldBy returns the basis of the lock tid holds.
func (c pycontract) heldBy(tid int) (basis string, waiters []int) {
	for _, l := range c.Locks {
		if l.Holder != nil && l.Holder.TID == tid {
			for _, w := range l.Waiters {
				waiters = append(waiters, w.TID)
			}
			slices.Sort(waiters)
			return l.Basis, waiters
		}
	}
	return "", nil
}

func TestPythonNDJSONWritersUnderOneLock(t *testing.T) {
	needPySpy(t)
	v := testvictim.StartPython(t, "py_ndjson_pipe.py")
	holder := v.TID("holder")
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
	c := pydecode(t, out)
	if code != ExitBlocked || c.Verdict != "blocked" {
		t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
	}
	basis, waiters := c.heldBy(holder)
	if !strings.Contains(basis, fmt.Sprintf("out_lock in writer at line %s", v.Info["lockline"])) || !strings.Contains(basis, "probable: ") {
		t.Errorf("holder %d: basis %q, want the with-block at line %s (locks %+v)", holder, basis, v.Info["lockline"], c.Locks)
	}
	if !slices.Equal(waiters, v.TIDs("waiters")) {
		t.Errorf("waiters %v, want %v", waiters, v.TIDs("waiters"))
	}
	if !strings.Contains(c.Summary, fmt.Sprintf("tid %d (writer-", holder)) || !strings.Contains(c.Summary, "write(") {
		t.Errorf("summary %q should name the holder by its Python name, blocked in write()", c.Summary)
	}
}

func TestPythonRendererSpinsHoldingTheLock(t *testing.T) {
	needPySpy(t)
	v := testvictim.StartPython(t, "py_spin_renderers.py")
	holder := v.TID("holder")
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
	c := pydecode(t, out)
	if code != ExitSpinning || c.Verdict != "spinning" {
		t.Fatalf("exit %d verdict %q (%s), want spinning\n%s", code, c.Verdict, c.Summary, stderr)
	}
	basis, waiters := c.heldBy(holder)
	if basis == "" || !slices.Equal(waiters, v.TIDs("waiters")) {
		t.Errorf("holder %d holds nothing or the wrong waiters: %v (locks %+v)", holder, waiters, c.Locks)
	}
	if got := c.class(holder); got != "spinning" {
		t.Errorf("holder class %s, want spinning", got)
	}
	for _, w := range v.TIDs("waiters") {
		if got := c.class(w); got != "blocked" {
			t.Errorf("waiter %d class %s, want blocked", w, got)
		}
	}
}

// TestPythonLockIdentity: locks named by their expression alone (issue
// 19): the textbook ABBA on two module globals with one-line `with b:
// pass` is a deadlock of t1 and t2, also when main joins t1 (main waits
// behind the cycle, it is not in it); a lock taken by lock.acquire() at a
// script's top level is held by main, whose only frame is <module>.
func TestPythonLockIdentity(t *testing.T) {
	needPySpy(t)
	for _, mode := range []string{"abba", "abba-join"} {
		t.Run(mode, func(t *testing.T) {
			v := testvictim.StartPython(t, "py_lock_identity.py", mode)
			t1, t2 := v.TID("first"), v.TID("second")
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
			c := pydecode(t, out)
			if code != ExitDeadlock || c.Verdict != "deadlock" {
				t.Fatalf("exit %d verdict %q (%s), want deadlock\n%s", code, c.Verdict, c.Summary, stderr)
			}
			if len(c.Cycles) != 1 || !slices.Equal(cycleTIDs(c.Cycles[0]), []int{min(t1, t2), max(t1, t2)}) {
				t.Errorf("cycles %+v, want one of t1 (%d) and t2 (%d) alone", c.Cycles, t1, t2)
			}
			for _, h := range []struct{ tid, waiter int }{{t1, t2}, {t2, t1}} {
				basis, waiters := c.heldBy(h.tid)
				if !strings.HasPrefix(basis, "probable: ") || !slices.Equal(waiters, []int{h.waiter}) {
					t.Errorf("tid %d holds a lock for %v on basis %q, want %d waiting, probable (locks %+v)", h.tid, waiters, basis, h.waiter, c.Locks)
				}
			}
		})
	}
	t.Run("module", func(t *testing.T) {
		v := testvictim.StartPython(t, "py_lock_identity.py", "module")
		out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
		c := pydecode(t, out)
		if code != ExitBlocked || c.Verdict != "blocked" {
			t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
		}
		basis, waiters := c.heldBy(v.PID)
		if !strings.Contains(basis, "holds lock, locked in <module>") || !slices.Equal(waiters, v.TIDs("waiters")) {
			t.Errorf("main holds a lock for %v on basis %q, want %v waiting for lock taken in <module> (locks %+v)", waiters, basis, v.TIDs("waiters"), c.Locks)
		}
		if !strings.Contains(c.Summary, fmt.Sprintf("tid %d (MainThread) probably holds", v.PID)) { // probable: by the expression in source
			t.Errorf("summary %q should lead with main holding the lock", c.Summary)
		}
	})
}

// TestPythonSignalReentry: a SIGHUP handler, run on the main thread on top
// of start()'s `with state_lock:` block, calls start() again: a
// self-deadlock named with its path through the handler; with an RLock
// the same re-entry is no deadlock.
func TestPythonSignalReentry(t *testing.T) {
	needPySpy(t)
	t.Run("lock", func(t *testing.T) {
		v := testvictim.StartPython(t, "py_signal_reenter.py", "lock")
		out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
		c := pydecode(t, out)
		if code != ExitDeadlock || c.Verdict != "deadlock" {
			t.Fatalf("exit %d verdict %q (%s), want deadlock\n%s", code, c.Verdict, c.Summary, stderr)
		}
		if len(c.Cycles) != 1 || !slices.Equal(cycleTIDs(c.Cycles[0]), []int{v.PID}) {
			t.Errorf("cycles %+v, want main (%d) alone", c.Cycles, v.PID)
		}
		basis, waiters := c.heldBy(v.PID)
		if !strings.Contains(basis, fmt.Sprintf("state_lock in start at line %d", v.Int("withline"))) || !slices.Equal(waiters, []int{v.PID}) {
			t.Errorf("main holds a lock for %v on basis %q, want itself waiting at line %d", waiters, basis, v.Int("withline"))
		}
		for _, s := range []string{"self-deadlock", "run_sighup is the SIGHUP handler"} {
			if !strings.Contains(c.Summary, s) {
				t.Errorf("summary %q lacks %q", c.Summary, s)
			}
		}
		if strings.Contains(c.Hint, "outside world") || !strings.Contains(c.Hint, "signal handler") {
			t.Errorf("hint %q: want the re-entry's, not a timeout's", c.Hint)
		}
	})
	t.Run("rlock", func(t *testing.T) {
		v := testvictim.StartPython(t, "py_signal_reenter.py", "rlock")
		out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
		c := pydecode(t, out)
		if code == ExitDeadlock || c.Verdict == "deadlock" || len(c.Cycles) > 0 || strings.Contains(c.Summary, "self-deadlock") {
			t.Errorf("exit %d verdict %q (%s), cycles %+v: an RLock taken again is no deadlock\n%s", code, c.Verdict, c.Summary, c.Cycles, stderr)
		}
	})
}

// cycleTIDs are a cycle's TIDs, sorted.
func cycleTIDs(cy []ref) []int {
	var tids []int
	for _, r := range cy {
		tids = append(tids, r.TID)
	}
	slices.Sort(tids)
	return tids
}

// TestPythonPoolWithDeadFeederIsBlocked: the workers wait in queue.get()
// for work nobody is left to put, and main, alive, joins them: the
// program waits for what never comes, blocked (not an idle pool).
func TestPythonPoolWithDeadFeederIsBlocked(t *testing.T) {
	needPySpy(t)
	v := testvictim.StartPython(t, "py_dead_feeder.py")
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
	c := pydecode(t, out)
	if code != ExitBlocked || c.Verdict != "blocked" {
		t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
	}
	for _, s := range []string{fmt.Sprintf("tid %d (MainThread) waits in join()", v.PID), "queue.get()", "feeder thread is gone"} {
		if !strings.Contains(c.Summary, s) {
			t.Errorf("summary %q lacks %q: main joins the pool, which waits in queue.get() with its feeder gone", c.Summary, s)
		}
	}
	named := 0
	for _, th := range c.Threads {
		if th.Python != nil && strings.HasPrefix(th.Python.ThreadName, "worker-") && len(th.Stack) > 0 {
			named++
		}
	}
	if named != len(v.TIDs("workers")) {
		t.Errorf("%d threads carry a worker's Python name and stack, want %d", named, len(v.TIDs("workers")))
	}
}

func TestPythonWorking(t *testing.T) {
	needPySpy(t)
	v := testvictim.StartPython(t, "py_working.py")
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
	c := pydecode(t, out)
	if code != ExitWorking || c.Verdict != "working" {
		t.Fatalf("exit %d verdict %q (%s), want working\n%s", code, c.Verdict, c.Summary, stderr)
	}
}

// TestPythonWithoutPySpyStillDiagnoses: without py-spy, the stacks come
// from the interpreter's memory, and the report says why py-spy was not
// used.
func TestPythonWithoutPySpyStillDiagnoses(t *testing.T) {
	v := testvictim.StartPython(t, "py_ndjson_pipe.py")
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms", "--py-spy", "/nonexistent/py-spy")
	c := pydecodeAs(t, out, "memory")
	if code != ExitBlocked {
		t.Fatalf("exit %d (%s): want blocked\n%s\n%s", code, c.Summary, stderr, out)
	}
	if !strings.Contains(strings.Join(c.Sampling.Notes, " "), "py-spy not used: py-spy not found at /nonexistent/py-spy") {
		t.Errorf("notes %q: want one saying why py-spy was not used", c.Sampling.Notes)
	}
	if !slices.ContainsFunc(c.Threads, func(th pythread) bool { return th.TID == v.TID("holder") && len(th.Stack) > 0 }) {
		t.Errorf("threads %+v: want the holder's stack", c.Threads)
	}
}

// TestHangingPySpy: a py-spy that never returns, and leaves a child holding
// its output pipe, must not hang hangdoc: the run ends at --timeout with a
// partial report, and neither the fake nor its child is left running.
func TestHangingPySpy(t *testing.T) {
	root, err := testvictim.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	fake := root + "/sampler/python/testdata/fake-py-spy/hang"
	pids := t.TempDir() + "/pids"
	t.Setenv("HANGDOC_FAKE_PIDS", pids)
	v := testvictim.StartPython(t, "py_dead_feeder.py")

	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--source", "py-spy", "--py-spy", fake, "--timeout", "2s")
	if code == ExitError || code == ExitUsage {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	c := xdecode(t, out)
	if !c.Sampling.Partial || !strings.Contains(c.Sampling.PartialReason, "--timeout") {
		t.Errorf("sampling %+v: want a partial report cut by --timeout", c.Sampling)
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatalf("the fake py-spy never ran: %v", err)
	}
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		if alive(pid) {
			t.Errorf("pid %d (the fake py-spy or its child) is still alive after hangdoc returned", pid)
		}
	}
}

// alive says whether pid runs, and is still what it was: a sleep or a sh.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	return (strings.Contains(s, "(sleep)") || strings.Contains(s, "(sh)") || strings.Contains(s, "(hang)")) && !strings.Contains(s, ") Z ")
}

// A Python thread inside one C call that never returns (a regex that
// backtracks forever): one unchanging Python frame, a core used. The
// kernel's on-CPU samples, walked by call-frame information through the
// interpreter built without frame pointers, say where in C it is: the
// regex engine, joined above the Python frame that called it (JSON
// native_stack, the summary's "in a C call from"), and the hint is the
// regex's. A walk gone astray is cut, never named as the loop ("spins in
// 0x…"). The same thread looping in Python code instead is "in Python
// code" at its line: the interpreter's own helpers it is caught in, in
// turn, are not a C call.
func TestPythonSpinsInC(t *testing.T) {
	needPySpy(t)
	eachPython(t, "py_re_spin.py", nil, func(t *testing.T, v *testvictim.Victim) { pythonSpins(t, v, "regex") })
	t.Run("python-loop", func(t *testing.T) {
		pythonSpins(t, testvictim.StartPython(t, "py_re_spin.py", "python"), "python")
	})
}

func pythonSpins(t *testing.T, v *testvictim.Victim, mode string) {
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
	var r struct {
		Verdict   string `json:"verdict"`
		Summary   string `json:"summary"`
		HintBasis string `json:"hint_basis"`
		Threads   []struct {
			TID   int    `json:"tid"`
			Class string `json:"class"`
			Why   string `json:"why"`
			Stack []struct {
				Func string `json:"func"`
			} `json:"stack"`
			Native []struct {
				Func   string `json:"func"`
				Native bool   `json:"native"`
			} `json:"native_stack"`
		} `json:"threads"`
	}
	wantVerdict(t, out, stderr, code, &r, ExitSpinning, "spinning")
	if err := oncpu.Probe(); err != nil {
		return // the refusal's note is TestVictimSpinHolder's
	}
	want := fmt.Sprintf("tid %d (renderer) spins in ", v.TID("renderer"))
	if !strings.Contains(r.Summary, want) || strings.Contains(r.Summary, "spins in 0x") || strings.Contains(r.Summary, "callers unread") {
		t.Errorf("summary %q: want %q, a named function, its callers read", r.Summary, want)
	}
	for _, th := range r.Threads {
		if th.TID == v.PID && th.Class != "waiting" {
			// Joining the spinner, or (when the spinner took the GIL
			// before start() returned) wanting the GIL it never lets go:
			// neither is idle, and neither is work.
			t.Errorf("main thread: class %s (%s), want waiting behind the spinner", th.Class, th.Why)
		}
	}
	for _, th := range r.Threads {
		if th.TID != v.TID("renderer") {
			continue
		}
		switch mode {
		case "regex":
			if !strings.Contains(r.Summary, want+"sre_") || !strings.Contains(r.Summary, ", in a C call from match (") || r.HintBasis != "regex-backtracking" {
				t.Errorf("summary %q, hint %s: want the regex engine (sre_…) in a C call from match, hint regex-backtracking", r.Summary, r.HintBasis)
			}
			if len(th.Native) == 0 || !strings.HasPrefix(th.Native[0].Func, "sre_") || !th.Native[0].Native || len(th.Stack) == 0 || th.Stack[0].Func != "match" {
				t.Errorf("renderer's native_stack %+v above stack %+v: want the regex engine above Python's match", th.Native, th.Stack)
			}
		case "python":
			if !strings.Contains(r.Summary, want+"Python code at paginate (") || r.HintBasis != "spinning-python" {
				t.Errorf("summary %q, hint %s: want in Python code at paginate, hint spinning-python", r.Summary, r.HintBasis)
			}
			if len(th.Native) != 0 {
				t.Errorf("renderer's native_stack %+v: want none, it runs Python code", th.Native)
			}
		}
		return
	}
	t.Errorf("no thread %d in the report", v.TID("renderer"))
}

// A Python thread blocked inside C: its Python stack ends at the recv
// line, and its native frames above it, unwound from its memory without a
// stop (no py-spy --native), name the C it is in: the socket module's
// sock_recv (with its source line: the interpreter is built with -g) and
// libc's recv. JSON keeps them apart (native_stack, each frame marked
// native), so that stack[0] is still the Python frame; the text report
// shows them above it.
func TestPythonNativeFrames(t *testing.T) {
	needPySpy(t)
	for _, ver := range []string{"3.8", "3.9", "3.10", "3.11", "3.12", "3.13"} {
		t.Run("python"+ver, func(t *testing.T) {
			py := pyenvPython(t, ver)
			v := testvictim.StartCmd(t, exec.Command(py, testvictim.Script(t, "py_in_c.py")))
			pythonNativeFrames(t, v)
		})
	}
}

func pythonNativeFrames(t *testing.T, v *testvictim.Victim) {
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms")
	var r struct {
		Verdict string `json:"verdict"`
		Threads []struct {
			TID   int `json:"tid"`
			Stack []struct {
				Func string `json:"func"`
			} `json:"stack"`
			Native []struct {
				Func   string `json:"func"`
				File   string `json:"file"`
				Line   int    `json:"line"`
				Native bool   `json:"native"`
			} `json:"native_stack"`
		} `json:"threads"`
	}
	if err := jsonUnmarshal(out, &r); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	reader := v.TID("reader")
	for _, th := range r.Threads {
		if th.TID != reader {
			continue
		}
		if len(th.Stack) == 0 || th.Stack[0].Func != "read" {
			t.Errorf("reader's stack %+v: want its Python frame read first", th.Stack)
		}
		sock := slices.IndexFunc(th.Native, func(f struct {
			Func   string `json:"func"`
			File   string `json:"file"`
			Line   int    `json:"line"`
			Native bool   `json:"native"`
		}) bool {
			return strings.HasPrefix(f.Func, "sock_recv") && strings.HasSuffix(f.File, "socketmodule.c") && f.Line > 0 && f.Native
		})
		if sock < 0 || !strings.Contains(th.Native[0].Func, "recv") {
			t.Errorf("reader's native frames %+v: want libc's recv innermost and the socket module's sock_recv with its line", th.Native)
		}
		for _, f := range th.Native {
			if strings.HasPrefix(f.Func, "_PyEval_EvalFrame") || strings.HasPrefix(f.Func, "PyObject_Vectorcall") {
				t.Errorf("reader's native frames %+v reach into the interpreter (%s)", th.Native, f.Func)
			}
		}
		text, _, _ := hangdoc(t, strconv.Itoa(v.PID), "--samples", "2", "--interval", "300ms")
		if !strings.Contains(text, "[native]") {
			t.Errorf("text report shows no native frame:\n%s", text)
		}
		return
	}
	t.Fatalf("no thread %d (reader) in the report: %s", reader, out)
}

// A multiprocessing.Pool whose worker was killed running a task (as the
// OOM killer would): the pool starts a new worker, the task is lost with
// the old one, and map() waits for ever. Blocked, and the summary says
// why no result comes: every worker (named by pid) waits on the parent
// for a task, so none runs it, and each is idle; the hint is the lost
// task's. A pool whose
// worker still runs its task (py_nobody pool: it sleeps) is not that.
func TestPythonPoolLostTask(t *testing.T) {
	needPySpy(t)
	eachPython(t, "py_nobody.py", []string{"poollost"}, func(t *testing.T, v *testvictim.Victim) {
		out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
		c := tdecode(t, out)
		if c.Verdict != "blocked" {
			t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
		}
		for _, w := range v.TIDs("workers") {
			if !strings.Contains(c.Summary, strconv.Itoa(w)) {
				t.Errorf("summary %q does not name worker %d", c.Summary, w)
			}
		}
		if !strings.Contains(c.Summary, "waits on it for a task, so none runs the task whose result it awaits") || !strings.Contains(c.Hint, "never reruns") {
			t.Errorf("summary %q, hint %q: want every worker waiting for a task, and the lost task's hint", c.Summary, c.Hint)
		}
		// Each worker waits for a task: idle, a wait for work.
		var ps struct {
			Processes []struct {
				PID     int    `json:"pid"`
				Verdict string `json:"verdict"`
			} `json:"processes"`
		}
		if err := jsonUnmarshal(out, &ps); err != nil {
			t.Fatal(err)
		}
		for _, w := range v.TIDs("workers") {
			if !slices.ContainsFunc(ps.Processes, func(p struct {
				PID     int    `json:"pid"`
				Verdict string `json:"verdict"`
			}) bool {
				return p.PID == w && p.Verdict == "idle"
			}) {
				t.Errorf("processes %+v: want worker %d idle (it waits for a task)", ps.Processes, w)
			}
		}
		// The worker that took the lost task's place started later than
		// the pool's first: the pool replaced one that exited.
		late := "pid " + v.Info["replacement"] + " started "
		if !strings.Contains(c.Summary, late) || !strings.Contains(c.Summary, "to replace a worker that exited") ||
			!strings.Contains(c.Hint, "(pid "+v.Info["replacement"]+") replaced a worker that exited") {
			t.Errorf("summary %q, hint %q: want worker %s named as a replacement", c.Summary, c.Hint, v.Info["replacement"])
		}
		// The pool's task handler waits in queue.SimpleQueue.get, which
		// is C: its native frames name it, a wait for work.
		var th struct {
			Threads []struct {
				Class string `json:"class"`
				Stack []struct {
					Func string `json:"func"`
				} `json:"stack"`
			} `json:"threads"`
		}
		if err := jsonUnmarshal(out, &th); err != nil {
			t.Fatal(err)
		}
		handlers := 0
		for _, x := range th.Threads {
			if len(x.Stack) > 0 && strings.HasSuffix(x.Stack[0].Func, "_handle_tasks") {
				handlers++
				if x.Class != "idle" {
					t.Errorf("the pool's task handler: class %s, want idle (SimpleQueue.get)", x.Class)
				}
			}
		}
		if handlers != 1 {
			t.Errorf("%d threads in the pool's _handle_tasks, want 1", handlers)
		}
	})
	t.Run("worker-runs-its-task", func(t *testing.T) {
		v := testvictim.StartPython(t, "py_nobody.py", "pool")
		out, _, _ := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
		c := tdecode(t, out)
		if strings.Contains(c.Summary, "waits on it for a task") || strings.Contains(c.Hint, "never reruns") {
			t.Errorf("summary %q, hint %q: its worker runs its task (asleep in it), no task is lost", c.Summary, c.Hint)
		}
	})
}

// A C call that blocks holding the GIL (ctypes.PyDLL's read of a pipe
// nobody writes): the other thread, which wants the GIL to run Python,
// wakes every 5 ms to ask and gets nowhere. It was "working … woke 400
// times: slow, not stopped"; it is blocked behind main, which holds the
// GIL (exact, py-spy's flag) and is itself blocked in read, with the
// GIL's hint.
func TestPythonGILHeldByABlockedCall(t *testing.T) {
	needPySpy(t)
	eachPython(t, "py_gil_held.py", nil, func(t *testing.T, v *testvictim.Victim) {
		out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms")
		var r struct {
			Verdict   string `json:"verdict"`
			Summary   string `json:"summary"`
			HintBasis string `json:"hint_basis"`
			Locks     []struct {
				Kind   string `json:"kind"`
				Holder *struct {
					TID int `json:"tid"`
				} `json:"holder"`
				Waiters []struct {
					TID int `json:"tid"`
				} `json:"waiters"`
			} `json:"locks"`
		}
		wantVerdict(t, out, stderr, code, &r, ExitBlocked, "blocked")
		want := fmt.Sprintf("tid %d (MainThread) holds the GIL and is blocked in read", v.PID)
		if !strings.Contains(r.Summary, want) || r.HintBasis != "gil-held-blocked" {
			t.Errorf("summary %q, hint %s: want %q, hint gil-held-blocked", r.Summary, r.HintBasis, want)
		}
		found := false
		for _, l := range r.Locks {
			if l.Kind == "gil" && l.Holder != nil && l.Holder.TID == v.PID && len(l.Waiters) == 1 && l.Waiters[0].TID == v.TID("worker") {
				found = true
			}
		}
		if !found {
			t.Errorf("locks %+v: want the GIL held by main, the worker waiting", r.Locks)
		}
	})
}

// wantVerdict decodes a JSON report into into and stops the test unless
// it has the verdict and exit code wanted.
func wantVerdict(t *testing.T, out, stderr string, code ExitCode, into any, wantCode ExitCode, verdict string) {
	t.Helper()
	var v struct {
		Verdict string `json:"verdict"`
		Summary string `json:"summary"`
	}
	if err := jsonUnmarshal(out, &v); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	if err := jsonUnmarshal(out, into); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	if code != wantCode || v.Verdict != verdict {
		t.Fatalf("exit %d verdict %q (%s), want %s\n%s", code, v.Verdict, v.Summary, verdict, stderr)
	}
}

// eachPython runs f on the victim script (with args) under each Python
// of pyenv, 3.8–3.13, as a subtest per version.
func eachPython(t *testing.T, script string, args []string, f func(t *testing.T, v *testvictim.Victim)) {
	t.Helper()
	for _, ver := range []string{"3.8", "3.9", "3.10", "3.11", "3.12", "3.13"} {
		t.Run("python"+ver, func(t *testing.T) {
			py := pyenvPython(t, ver)
			f(t, testvictim.StartCmd(t, exec.Command(py, append([]string{testvictim.Script(t, script)}, args...)...)))
		})
	}
}

// A logging handler's lock, taken inside the standard library, held by a
// thread whose write to a full pipe blocks: the holder is named from the
// library's own source, exactly (Handler.acquire() wraps self.lock.acquire()
// before 3.13; a with-block from 3.13). The py-spy pauses break the
// blocked write part-way and Python writes the rest again: that is no
// movement, so the verdict is blocked, never working.
func TestPythonLoggingLock(t *testing.T) {
	needPySpy(t)
	eachPython(t, "py_log_lock.py", nil, func(t *testing.T, v *testvictim.Victim) {
		out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "3")
		c := pydecode(t, out)
		if code != ExitBlocked || c.Verdict != "blocked" {
			t.Fatalf("exit %d verdict %q (%s), want blocked\n%s\n%s", code, c.Verdict, c.Summary, out, stderr)
		}
		basis, waiters := c.heldBy(v.TID("writer"))
		if !strings.HasPrefix(basis, "exact: ") || !strings.Contains(basis, "self.lock") || !slices.Equal(waiters, []int{v.TID("other")}) {
			t.Errorf("writer %d holds with basis %q, waited for by %v: want self.lock, exact, waited for by %d", v.TID("writer"), basis, waiters, v.TID("other"))
		}
	})
}

// A queue.Queue's own mutex held by a thread that blocks: q.get() takes
// that lock first (`with self.not_empty:`, a Condition over q.mutex), so
// the getter waits for the holder's lock, not for an item. Blocked behind
// the holder, never idle.
func TestPythonQueueMutex(t *testing.T) {
	needPySpy(t)
	eachPython(t, "py_queue_mutex.py", nil, func(t *testing.T, v *testvictim.Victim) {
		out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
		c := pydecode(t, out)
		if code != ExitBlocked || c.Verdict != "blocked" {
			t.Fatalf("exit %d verdict %q (%s), want blocked\n%s\n%s", code, c.Verdict, c.Summary, out, stderr)
		}
		for _, th := range c.Threads {
			if th.TID == v.TID("getter") && th.Class != "blocked" {
				t.Errorf("getter is %s, want blocked (it waits for the queue's lock)", th.Class)
			}
		}
		if _, waiters := c.heldBy(v.TID("holder")); !slices.Equal(waiters, []int{v.TID("getter")}) {
			t.Errorf("holder %d holds a lock waited for by %v, want the getter %d: %s", v.TID("holder"), waiters, v.TID("getter"), c.Summary)
		}
	})
}
