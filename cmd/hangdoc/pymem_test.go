package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// TestPythonFromMemory diagnoses Python victims with their stacks read
// from the interpreter's memory (--source memory, and no py-spy on PATH), on
// Python 3.8, 3.10, 3.12 and 3.13: a lock's holder found by the source
// rule, an ABBA deadlock between two threads, and a C call that blocks
// holding the GIL. The report says where the stacks came from and that
// the target was never stopped.
func TestPythonFromMemory(t *testing.T) {
	for _, v := range []string{"3.8", "3.10", "3.12", "3.13"} {
		t.Run(v, func(t *testing.T) {
			py := pyenvPython(t, v)
			t.Parallel()
			run := func(t *testing.T, script string, args ...string) (*testvictim.Victim, pycontract, ExitCode) {
				t.Helper()
				vic := testvictim.StartCmd(t, exec.Command(py, append([]string{testvictim.Script(t, script)}, args...)...))
				vic.WaitBlocked(vic.PID) // main's last wait: a join, a sleep, a read
				out, stderr, code := hangdocProcessEnv(t, []string{"PATH=" + pathWithout("py-spy")}, strconv.Itoa(vic.PID), "--json", "--source", "memory", "--samples", "2", "--interval", "300ms")
				c := pydecodeAs(t, out, "memory")
				if !slices.ContainsFunc(c.Sampling.Notes, func(n string) bool {
					return strings.Contains(n, "from the interpreter's memory") && strings.Contains(n, "CPython "+v) && strings.Contains(n, "never stopped")
				}) {
					t.Errorf("notes %q: want the memory reader's, with the version (%s)", c.Sampling.Notes, stderr)
				}
				return vic, c, code
			}
			t.Run("holder", func(t *testing.T) {
				vic, c, code := run(t, "py_mem_threads.py")
				if code != ExitBlocked || c.Verdict != "blocked" {
					t.Fatalf("exit %d, verdict %q (%s), want blocked", code, c.Verdict, c.Summary)
				}
				basis, waiters := c.heldBy(vic.TID("holder"))
				if !strings.HasPrefix(basis, "probable") || !slices.Equal(waiters, []int{vic.TID("waiter")}) {
					t.Errorf("locks %+v: want holder %d, probable, with waiter %d", c.Locks, vic.TID("holder"), vic.TID("waiter"))
				}
				// The spinner's loop is two lines: caught on either, its
				// stack moves (working) or not (spinning); on a CPU in spin.
				for _, th := range c.Threads {
					// The reporter thread, which ends after the ready line,
					// may be caught on its way out.
					name, known := map[int]string{vic.TID("holder"): "holder", vic.TID("waiter"): "waiter", vic.TID("spinner"): "spinner", vic.PID: "MainThread"}[th.TID]
					if known && (th.Python == nil || th.Python.ThreadName != name || th.Name != name) {
						t.Errorf("tid %d: named %q (python %+v), want %q", th.TID, th.Name, th.Python, name)
					}
					if th.TID == vic.TID("spinner") && (th.Class != "spinning" && th.Class != "working" || len(th.Stack) == 0 || th.Stack[0].Func != "spin") {
						t.Errorf("spinner: %+v, want on a CPU in spin", th)
					}
				}
			})
			t.Run("abba", func(t *testing.T) {
				vic, c, code := run(t, "py_lock_identity.py", "abba")
				if code != ExitDeadlock || c.Verdict != "deadlock" || len(c.Cycles) != 1 {
					t.Fatalf("exit %d, verdict %q (%s), cycles %v: want one deadlock", code, c.Verdict, c.Summary, c.Cycles)
				}
				var tids []int
				for _, r := range c.Cycles[0] {
					tids = append(tids, r.TID)
				}
				slices.Sort(tids)
				if want := sorted(vic.TID("first"), vic.TID("second")); !slices.Equal(tids, want) {
					t.Errorf("cycle %v, want %v", tids, want)
				}
			})
			t.Run("GIL held in a C call", func(t *testing.T) {
				vic, c, code := run(t, "py_gil_held.py")
				if code != ExitBlocked || !strings.Contains(c.Summary, "holds the GIL") {
					t.Fatalf("exit %d, summary %q: want main blocked holding the GIL", code, c.Summary)
				}
				for _, th := range c.Threads {
					if holds := th.Python != nil && th.Python.OwnsGIL; holds != (th.TID == vic.TID("main")) {
						t.Errorf("tid %d: owns the GIL %v; main (%d) alone holds it", th.TID, holds, vic.TID("main"))
					}
				}
			})
		})
	}
}

// TestAsyncioDeadlockFromMemory: two asyncio tasks that take two
// asyncio.Locks in opposite orders are a deadlock between the two tasks,
// read from the interpreter's memory on 3.11 to 3.13 — each task named,
// waiting for the lock the other holds (by address: the ready line
// gives both) — though the loop's one thread sits idle in epoll. The
// other tasks say what they wait for: a sleep, an Event.
func TestAsyncioDeadlockFromMemory(t *testing.T) {
	type task struct {
		Name       string   `json:"name"`
		State      string   `json:"state"`
		Waits      string   `json:"waits"`
		Object     string   `json:"object"`
		Holds      []string `json:"holds"`
		Deadlocked bool     `json:"deadlocked"`
	}
	for _, v := range []string{"3.11", "3.12", "3.13"} {
		t.Run(v, func(t *testing.T) {
			vic, out, stderr, code := diagnosePython(t, v, "py_asyncio_abba.py")
			var r struct {
				Verdict   string `json:"verdict"`
				Summary   string `json:"summary"`
				HintBasis string `json:"hint_basis"`
				Tasks     []task `json:"tasks"`
				Evidence  []string
			}
			if err := jsonUnmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			if code != ExitDeadlock || r.Verdict != "deadlock" || r.HintBasis != "asyncio-lock-order" {
				t.Fatalf("exit %d, verdict %q (%s), hint %s: want a deadlock of asyncio tasks\n%s", code, r.Verdict, r.Summary, r.HintBasis, stderr)
			}
			a, b := vic.Info["locka"], vic.Info["lockb"]
			want := map[string]task{
				"first":    {Name: "first", State: "waiting", Waits: "asyncio.Lock", Object: b, Holds: []string{a}, Deadlocked: true},
				"second":   {Name: "second", State: "waiting", Waits: "asyncio.Lock", Object: a, Holds: []string{b}, Deadlocked: true},
				"sleeper":  {Name: "sleeper", State: "waiting", Waits: "sleep"},
				"on-event": {Name: "on-event", State: "waiting", Waits: "asyncio.Event"},
			}
			seen := 0
			for _, tk := range r.Tasks {
				w, ok := want[tk.Name]
				if !ok {
					continue
				}
				seen++
				if tk.Name == "on-event" {
					tk.Object = "" // the Event's address is not in the ready line
				}
				if !slices.Equal(tk.Holds, w.Holds) || tk.State != w.State || tk.Waits != w.Waits || tk.Object != w.Object || tk.Deadlocked != w.Deadlocked {
					t.Errorf("task %+v, want %+v", tk, w)
				}
			}
			if seen != len(want) {
				t.Errorf("tasks %+v: want %d named ones", r.Tasks, len(want))
			}
			for _, s := range []string{"deadlock between 2 asyncio tasks", "task first waits for asyncio.Lock " + b, "held by task second"} {
				if !strings.Contains(r.Summary, s) {
					t.Errorf("summary %q lacks %q", r.Summary, s)
				}
			}
			for _, e := range r.Evidence {
				if strings.Contains(e, "tasks parked on an await") {
					t.Errorf("evidence %q: the tasks were read", e)
				}
			}
		})
	}
}

// TestAsyncioAwaitCycleFromMemory: a task that awaits a gather of a
// second task, which awaits the first, is a deadlock between them, on
// 3.11 to 3.13; the gathered task that finished is done, awaited by the
// first's gather, and the main task (Task-1) awaits the first.
func TestAsyncioAwaitCycleFromMemory(t *testing.T) {
	for _, v := range []string{"3.11", "3.12", "3.13"} {
		t.Run(v, func(t *testing.T) {
			_, out, stderr, code := diagnosePython(t, v, "py_asyncio_gather.py")
			var r struct {
				Verdict   string `json:"verdict"`
				Summary   string `json:"summary"`
				HintBasis string `json:"hint_basis"`
				Tasks     []struct {
					Name       string   `json:"name"`
					State      string   `json:"state"`
					Waits      string   `json:"waits"`
					AwaitedBy  []string `json:"awaited_by"`
					Deadlocked bool     `json:"deadlocked"`
				} `json:"tasks"`
			}
			if err := jsonUnmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			if code != ExitDeadlock || r.Verdict != "deadlock" || r.HintBasis != "asyncio-await-cycle" {
				t.Fatalf("exit %d, verdict %q (%s), hint %s: want a deadlock of tasks awaiting each other\n%s", code, r.Verdict, r.Summary, r.HintBasis, stderr)
			}
			got := map[string]string{}
			for _, tk := range r.Tasks {
				got[tk.Name] = fmt.Sprintf("%s %s %v by %v", tk.State, tk.Waits, tk.Deadlocked, tk.AwaitedBy)
			}
			for name, want := range map[string]string{
				"ping":   "waiting gather true by [Task-1 pong]",
				"pong":   "waiting task true by [ping]",
				"worker": "done  false by [ping]", // gathered, and finished
			} {
				if !strings.HasPrefix(got[name], want) {
					t.Errorf("task %s: %q, want %q…; tasks %v", name, got[name], want, got)
				}
			}
			if !strings.Contains(r.Summary, "task ping awaits a gather of task pong") || !strings.Contains(r.Summary, "task pong awaits task ping") {
				t.Errorf("summary %q", r.Summary)
			}
		})
	}
}

// TestAsyncioBlockedFromMemory: a task waiting for an Event whose setter
// failed is blocked, not idle, although the loop's one thread waits in
// epoll (the tasks from memory, 3.11 to 3.13); the summary names the
// waiter, its Event and the failed setter, and, the loop having no timer
// and no other thread, that nothing is left that could wake it.
func TestAsyncioBlockedFromMemory(t *testing.T) {
	for _, v := range []string{"3.11", "3.12", "3.13"} {
		t.Run(v, func(t *testing.T) {
			script := testvictim.Script(t, "py_asyncio_event.py")
			_, out, stderr, code := diagnosePython(t, v, "py_asyncio_event.py")
			c := pydecodeAs(t, out, "memory")
			var r struct {
				HintBasis string `json:"hint_basis"`
				Tasks     []struct {
					Name  string `json:"name"`
					State string `json:"state"`
					Waits string `json:"waits"`
				} `json:"tasks"`
			}
			if err := jsonUnmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			// Nothing is left that could set the Event: the loop's only
			// thread waits with no timer, on its own wake-up socket.
			if code != ExitBlocked || c.Verdict != "blocked" || r.HintBasis != "asyncio-nobody-left" {
				t.Fatalf("exit %d, verdict %q (%s), hint %s: want blocked tasks\n%s", code, c.Verdict, c.Summary, r.HintBasis, stderr)
			}
			for _, s := range []string{"2 tasks are blocked", "task waiter waits for asyncio.Event", "task Task-1 waits for task 0x", "nothing is left that could wake the loop", fmt.Sprintf("wait_ready (py_asyncio_event.py:%d)", testvictim.MarkedLine(t, script, "wait")), "1 task failed with an exception: setter"} {
				if !strings.Contains(c.Summary, s) {
					t.Errorf("summary %q lacks %q", c.Summary, s)
				}
			}
			states := map[string]string{}
			for _, tk := range r.Tasks {
				states[tk.Name] = tk.State + " " + tk.Waits
			}
			if states["setter"] != "failed " || states["waiter"] != "waiting asyncio.Event" {
				t.Errorf("tasks %v: want setter failed, waiter waiting for an Event", states)
			}
		})
	}
}

// diagnosePython starts the script victim on pyenv's Python v, in
// parallel with the test's others, waits for its main thread to be in
// its last wait, and diagnoses it (JSON, two samples, stacks from
// wherever hangdoc takes them first) in a process of its own whose PATH
// has no py-spy: the tasks come from the interpreter's memory alone.
func diagnosePython(t *testing.T, v, script string, args ...string) (*testvictim.Victim, string, string, ExitCode) {
	t.Helper()
	py := pyenvPython(t, v)
	t.Parallel()
	vic := testvictim.StartCmd(t, exec.Command(py, append([]string{testvictim.Script(t, script)}, args...)...))
	vic.WaitBlocked(vic.PID)
	out, stderr, code := hangdocProcessEnv(t, []string{"PATH=" + pathWithout("py-spy")}, strconv.Itoa(vic.PID), "--json", "--samples", "2", "--interval", "300ms")
	return vic, out, stderr, code
}

// pathWithout is $PATH less the directories that hold an executable
// named name.
func pathWithout(name string) string {
	var keep []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode()&0o111 != 0 {
			continue
		}
		keep = append(keep, dir)
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// asyncioTask is a task of the JSON report, as the asyncio tests read it.
type asyncioTask struct {
	Name       string   `json:"name"`
	State      string   `json:"state"`
	Waits      string   `json:"waits"`
	Object     string   `json:"object"`
	Holds      []string `json:"holds"`
	HoldsAt    []string `json:"holds_at"`
	HoldsBasis string   `json:"holds_basis"`
	FD         *int     `json:"fd"`
	Peers      []int    `json:"peers"`
	Thread     int      `json:"thread"`
	AwaitedBy  []string `json:"awaited_by"`
}

// TestAsyncioWaitsLeadOut: what an asyncio task awaits, followed out of
// the event loop, on 3.11 to 3.13 with py-spy absent — a TaskGroup child
// awaiting a future nobody is left to resolve (the loop waits with no
// timer, on its own wake-up socket alone, the only thread: blocked, not
// idle); a lock held by a task awaiting a socket whose peer (a forked
// server) never writes (the socket's descriptor from its transport, the
// peer's pid from the kernel); a task awaiting a thread-pool call whose
// thread waits for a lock (the pool thread by the work item's callback);
// an Event nobody sets beside a sleeper's timer: blocked, and no claim
// that nothing is left.
func TestAsyncioWaitsLeadOut(t *testing.T) {
	for _, v := range []string{"3.11", "3.12", "3.13"} {
		t.Run(v, func(t *testing.T) {
			t.Run("taskgroup", func(t *testing.T) {
				vic, r, code := diagnoseTasks(t, v, "py_asyncio_taskgroup.py")
				if code != ExitBlocked || r.Verdict != "blocked" || r.HintBasis != "asyncio-nobody-left" {
					t.Fatalf("exit %d, verdict %q (%s), hint %s: want blocked, nobody left", code, r.Verdict, r.Summary, r.HintBasis)
				}
				for _, s := range []string{"2 tasks are blocked", "task fetch waits for future 0x", fmt.Sprintf("fetch (py_asyncio_taskgroup.py:%d)", testvictim.MarkedLine(t, testvictim.Script(t, "py_asyncio_taskgroup.py"), "await")), "its TaskGroup's tasks", "nothing is left that could wake the loop but a signal"} {
					if !strings.Contains(r.Summary, s) {
						t.Errorf("summary %q lacks %q", r.Summary, s)
					}
				}
				if tk := r.task("fetch"); tk.Waits != "future" || tk.State != "waiting" || !slices.Equal(tk.AwaitedBy, []string{"Task-1"}) {
					t.Errorf("fetch %+v: want waiting for a future, awaited by Task-1 (its TaskGroup's owner)", tk)
				}
				if tk := r.task("Task-1"); tk.Waits != "TaskGroup" {
					t.Errorf("Task-1 %+v: want waiting for its TaskGroup", tk)
				}
				_ = vic
			})
			t.Run("mute socket", func(t *testing.T) {
				vic, r, code := diagnoseTasks(t, v, "py_asyncio_mute_socket.py")
				if code != ExitBlocked || r.Verdict != "blocked" || r.HintBasis != "asyncio-lock-across-io" {
					t.Fatalf("exit %d, verdict %q (%s), hint %s: want blocked behind a lock held across a socket read", code, r.Verdict, r.Summary, r.HintBasis)
				}
				server, _ := strconv.Atoi(vic.Info["server"])
				caller := r.task("caller")
				if caller.Waits != "socket read" || caller.FD == nil || !slices.Equal(caller.Peers, []int{server}) || len(caller.Holds) != 1 || caller.HoldsBasis != "probable" ||
					!slices.Equal(caller.HoldsAt, []string{fmt.Sprintf("call (py_asyncio_mute_socket.py:%d)", testvictim.MarkedLine(t, testvictim.Script(t, "py_asyncio_mute_socket.py"), "hold"))}) {
					t.Errorf("caller %+v: want a socket read with the server %d at the other end, holding the lock", caller, server)
				}
				if w := r.task("second"); w.Waits != "asyncio.Lock" || len(caller.Holds) == 1 && w.Object != caller.Holds[0] {
					t.Errorf("second %+v: want waiting for the lock caller holds", w)
				}
				for _, s := range []string{"task second waits for asyncio.Lock", "held by task caller, which waits for a read from socket fd", fmt.Sprintf("whose other end is held by pid %d", server)} {
					if !strings.Contains(r.Summary, s) {
						t.Errorf("summary %q lacks %q", r.Summary, s)
					}
				}
			})
			t.Run("event with a timer left", func(t *testing.T) {
				// The Event's setter failed, but a sleeper's timer is
				// left: the loop waits with a timeout, so nothing proves
				// that no one is left.
				_, r, code := diagnoseTasks(t, v, "py_asyncio_event.py", "timer")
				if code != ExitBlocked || r.Verdict != "blocked" || r.HintBasis != "asyncio-blocked" {
					t.Fatalf("exit %d, verdict %q (%s), hint %s: want blocked tasks, a timer left", code, r.Verdict, r.Summary, r.HintBasis)
				}
				if strings.Contains(r.Summary, "nothing is left") || !strings.Contains(r.Summary, "1 task is blocked") {
					t.Errorf("summary %q: want the waiter alone, and no claim that nothing is left", r.Summary)
				}
			})
			t.Run("thread-pool call", func(t *testing.T) {
				vic, r, code := diagnoseTasks(t, v, "py_asyncio_executor.py")
				if code != ExitBlocked || r.Verdict != "blocked" {
					t.Fatalf("exit %d, verdict %q (%s): want blocked", code, r.Verdict, r.Summary)
				}
				var pool int
				for _, th := range r.Threads {
					if len(th.Stack) > 0 && th.Stack[0].Func == "load" {
						pool = th.TID
					}
				}
				h := r.task("handler")
				if pool == 0 || h.Waits != "thread-pool call" || h.Thread != pool {
					t.Fatalf("handler %+v: want awaiting the thread-pool call of tid %d (threads %+v)", h, pool, r.Threads)
				}
				for _, s := range []string{"(keeper) probably holds", fmt.Sprintf("task handler awaits, at handle (py_asyncio_executor.py:%d), the thread-pool call that tid %d", testvictim.MarkedLine(t, testvictim.Script(t, "py_asyncio_executor.py"), "await"), pool)} {
					if !strings.Contains(r.Summary, s) {
						t.Errorf("summary %q lacks %q", r.Summary, s)
					}
				}
				_ = vic
			})
		})
	}
}

// tasksReport is the JSON report as the asyncio tests read it.
type tasksReport struct {
	pycontract
	HintBasis string        `json:"hint_basis"`
	Tasks     []asyncioTask `json:"tasks"`
}

// task is the report's task named name; the zero task for none.
func (r tasksReport) task(name string) asyncioTask {
	for _, t := range r.Tasks {
		if t.Name == name {
			return t
		}
	}
	return asyncioTask{}
}

// diagnoseTasks is diagnosePython with its report decoded: the stacks from
// memory.
func diagnoseTasks(t *testing.T, v, script string, args ...string) (*testvictim.Victim, tasksReport, ExitCode) {
	t.Helper()
	vic, out, stderr, code := diagnosePython(t, v, script, args...)
	var r tasksReport
	r.pycontract = pydecodeAs(t, out, "memory")
	if err := jsonUnmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict == "" {
		t.Fatalf("no verdict\n%s", stderr)
	}
	return vic, r, code
}
