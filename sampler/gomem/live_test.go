package gomem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/model"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/internal/harmcheck"
	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/golive"
	"github.com/hangdoc/hangdoc/sampler/gomem/internal/layout"
)

// victim is the module testdata/victims/gomem.
const victimModule = "gomem"

// build is one way the victim is built for the live tests.
type build struct {
	name string
	b    testvictim.ModuleBuild
}

const strip = "-s -w"

// liveBuilds are the builds the live tests read: Go 1.22, this machine's
// Go and Go 1.27, each with and without symbols and DWARF, a stripped PIE,
// and a stripped build of every version in between (the layout table is
// what reads those).
var liveBuilds = []build{
	{"go1.22.0", testvictim.ModuleBuild{Toolchain: "go1.22.0"}},
	{"go1.22.0-stripped", testvictim.ModuleBuild{Toolchain: "go1.22.0", LDFlags: strip}},
	{"go1.23.0-stripped", testvictim.ModuleBuild{Toolchain: "go1.23.0", LDFlags: strip}},
	{"go1.24.0-stripped", testvictim.ModuleBuild{Toolchain: "go1.24.0", LDFlags: strip}},
	{"go1.25.0-stripped", testvictim.ModuleBuild{Toolchain: "go1.25.0", LDFlags: strip}},
	{"go1.26.0-stripped", testvictim.ModuleBuild{Toolchain: "go1.26.0", LDFlags: strip}},
	{"host", testvictim.ModuleBuild{}},
	{"host-stripped", testvictim.ModuleBuild{LDFlags: strip}},
	{"host-pie", testvictim.ModuleBuild{BuildMode: "pie"}},
	{"host-stripped-pie", testvictim.ModuleBuild{LDFlags: strip, BuildMode: "pie"}},
	{"host-nocgo-stripped", testvictim.ModuleBuild{LDFlags: strip, Env: []string{"CGO_ENABLED=0"}}},
	{"go1.27.0", testvictim.ModuleBuild{Toolchain: "go1.27.0"}},
	{"go1.27.0-stripped", testvictim.ModuleBuild{Toolchain: "go1.27.0", LDFlags: strip}},
}

// startVictim starts the victim built by b with args. GODEBUG asks Go
// 1.26 and later to print pprof labels in their dumps; older versions
// ignore it.
func startVictim(t testing.TB, b testvictim.ModuleBuild, args ...string) *testvictim.Victim {
	t.Helper()
	cmd := exec.Command(testvictim.BuildModule(t, victimModule, b), args...)
	cmd.Env = append(os.Environ(), "GODEBUG=tracebacklabels=1")
	return testvictim.StartCmd(t, cmd)
}

func openReader(t testing.TB, pid int) *Reader {
	t.Helper()
	r, err := Open(sampler.NewFS(""), pid)
	if err != nil {
		t.Fatalf("Open(%d): %v", pid, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func fetch(t testing.TB, v *testvictim.Victim) []model.Goroutine {
	t.Helper()
	gs, err := golive.Fetch(context.Background(), "http://"+v.Info["pprof"], 20*time.Second)
	if err != nil {
		t.Fatalf("fetching the victim's goroutine profile: %v", err)
	}
	return gs
}

func byID(gs []model.Goroutine) map[int64]model.Goroutine {
	m := make(map[int64]model.Goroutine, len(gs))
	for _, g := range gs {
		m[g.ID] = g
	}
	return m
}

// ids returns the goroutine ids of the ready line's role keys.
func ids(t testing.TB, v *testvictim.Victim, roles ...string) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for _, r := range roles {
		s, ok := v.Info[r]
		if !ok {
			t.Fatalf("ready line has no %s: %v", r, v.Info)
		}
		for _, p := range strings.Split(s, ",") {
			id, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				t.Fatalf("ready line %s=%s: %v", r, s, err)
			}
			out[r] = append(out[r], id)
		}
	}
	return out
}

var parkedRoles = []string{"holder", "waiter", "sender", "receiver", "selector", "nilrecv", "sleeper",
	"cond", "wg", "deep", "inlined", "generic", "locked", "labelled", "syscall"}

// TestMatchesPprof reads each build of the victim while a watcher looks
// for any stop, between two pprof debug=2 dumps of it: every goroutine
// that is the same in both dumps must be the same in the reader's list
// (id, state, frames with their argument words, created by, creator,
// labels where the dump prints them), and none may be missing.
func TestMatchesPprof(t *testing.T) {
	for _, lb := range liveBuilds {
		t.Run(lb.name, func(t *testing.T) {
			v := startVictim(t, lb.b, "-pprof")
			roles := ids(t, v, append(parkedRoles, "spinner", "heartbeat")...)
			r := openReader(t, v.PID)
			if strings.Contains(lb.name, "stripped") && r.LayoutSource() != "table" {
				t.Errorf("a stripped build's layout came from %s, want the table", r.LayoutSource())
			}

			d1 := fetch(t, v)
			w := harmcheck.Watch(v.PID)
			gs, st, err := r.Goroutines(context.Background())
			w.Finish(t)
			if err != nil {
				t.Fatalf("Goroutines: %v", err)
			}
			d2 := fetch(t, v)
			moving := map[int64]bool{}
			for _, id := range append(roles["spinner"], roles["heartbeat"]...) {
				moving[id] = true
			}
			if st.Dropped != 0 {
				t.Errorf("stats %+v, want nothing dropped", st)
			}
			for _, id := range st.MovingIDs {
				// The spinner is preempted and resumed, the heartbeat
				// ticks: they may be caught moving; the parked may not.
				if !moving[id] {
					t.Errorf("goroutine %d moving (stats %+v)", id, st)
				}
			}
			got := byID(gs)
			second := byID(d2)
			settled := 0
			for _, want := range d1 {
				if moving[want.ID] || !cmp.Equal(want, second[want.ID]) {
					continue
				}
				settled++
				g, ok := got[want.ID]
				if !ok {
					t.Errorf("goroutine %d [%s] is in both dumps, not in the reader's list", want.ID, want.State)
					continue
				}
				if want.Labels == nil {
					// Before Go 1.26 dumps never print labels.
					g.Labels = nil
				}
				g.WaitChans, g.Thread, g.WaitLock = nil, 0, ""
				if d := cmp.Diff(want, g); d != "" {
					t.Errorf("goroutine %d: dump (-) and reader (+) differ:\n%s", want.ID, d)
				}
			}
			for role, gids := range roles {
				if role == "spinner" || role == "heartbeat" {
					continue
				}
				for _, id := range gids {
					if _, ok := second[id]; !ok && role == "labelled" && layout.MinorNumber(r.Version()) >= 27 {
						// Go 1.27 prints labels after the bracket ("[chan
						// receive] {k: v}:"), which sampler/goroutines does
						// not parse yet: the dump lacks the goroutine.
						continue
					}
					if _, ok := second[id]; !ok || !cmp.Equal(byID(d1)[id], second[id]) {
						t.Errorf("%s goroutine %d moved between the two dumps: %s", role, id, cmp.Diff(byID(d1)[id], second[id]))
					}
				}
			}
			if settled < len(parkedRoles) {
				t.Errorf("only %d goroutines settled", settled)
			}
			checkRoles(t, v, lb, got, roles)
		})
	}
}

// checkRoles checks what the dump cannot show: threads, labels on old
// versions, channel waits, a running goroutine.
func checkRoles(t *testing.T, v *testvictim.Victim, lb build, got map[int64]model.Goroutine, roles map[string][]int64) {
	t.Helper()
	sys := got[roles["syscall"][0]]
	if sys.State != "syscall" || sys.Thread != v.TID("syscall_tid") {
		t.Errorf("syscall goroutine: state %q thread %d, want syscall on thread %d", sys.State, sys.Thread, v.TID("syscall_tid"))
	}
	spin := got[roles["spinner"][0]]
	switch spin.State {
	case "running":
		if spin.Thread != v.TID("spinner_tid") {
			t.Errorf("spinner runs on thread %d, want %d", spin.Thread, v.TID("spinner_tid"))
		}
	case "runnable", "preempted":
		// Preempted: suspended by an asynchronous preemption (the pprof
		// dump taken beside this read stops the world), runnable again next.
	default:
		t.Errorf("spinner is %q, want running, runnable or preempted", spin.State)
	}
	lab := got[roles["labelled"][0]]
	if want := map[string]string{"victim": "labelled", "k2": "v2"}; !cmp.Equal(lab.Labels, want) {
		t.Errorf("labelled goroutine's labels %v, want %v", lab.Labels, want)
	}
	for _, role := range []string{"receiver", "holder", "deep", "inlined", "locked", "labelled"} {
		g := got[roles[role][0]]
		if len(g.WaitChans) != 1 {
			t.Errorf("%s goroutine %d [%s] waits on channels %v, want one", role, g.ID, g.State, g.WaitChans)
		}
	}
	if a, b := got[roles["receiver"][0]].WaitChans, got[roles["holder"][0]].WaitChans; !cmp.Equal(a, b) {
		t.Errorf("receiver and holder wait on %v and %v, the same channel", a, b)
	}
	// The mutex waiters' lock, from the semaphore table: the symbol's, or
	// a stripped build's found by the code that indexes it.
	if len(roles["waiter"]) != 3 {
		t.Errorf("waiters %v, want 3", roles["waiter"])
	}
	for _, id := range roles["waiter"] {
		if g := got[id]; g.WaitLock != v.Info["mu"] {
			t.Errorf("waiter %d [%s] waits for lock %q, want mu at %s", id, g.State, g.WaitLock, v.Info["mu"])
		}
	}
	for _, role := range []string{"receiver", "holder", "sleeper"} {
		if g := got[roles[role][0]]; g.WaitLock != "" {
			t.Errorf("%s goroutine %d [%s] waits for lock %q, want none", role, g.ID, g.State, g.WaitLock)
		}
	}
	if sel := got[roles["selector"][0]]; len(sel.WaitChans) != 2 {
		t.Errorf("selector waits on %v, want two channels", sel.WaitChans)
	}
	if l := got[roles["locked"][0]]; !l.LockedToThread {
		t.Errorf("locked goroutine not LockedToThread")
	}
	// The reader sees the runtime's own goroutines, which the dump hides.
	if !slices.ContainsFunc(slices.Collect(maps.Values(got)), func(g model.Goroutine) bool { return model.RuntimeGoroutine(g.Stack, g.CreatedBy) }) {
		t.Errorf("no system goroutine found")
	}
	_ = lb
}

// TestRunningInSyscall reads a goroutine that is running (a raw system
// call, which the scheduler does not see) while its thread sleeps in
// nanosleep: its stack comes from the thread's registers in
// /proc/PID/task/TID/syscall. The thread leaves the call for an instant
// each second; a read that falls in such an instant finds no stack, so the
// read is repeated until one finds it (each is a whole read).
func TestRunningInSyscall(t *testing.T) {
	v := startVictim(t, testvictim.ModuleBuild{LDFlags: strip}, "-rawsleep", "1s")
	id := ids(t, v, "rawsleep")["rawsleep"][0]
	r := openReader(t, v.PID)
	w := harmcheck.Watch(v.PID)
	defer w.Finish(t)
	var g model.Goroutine
	for try := 0; try < 5; try++ {
		gs, _, err := r.Goroutines(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		g = byID(gs)[id]
		if len(g.Stack) > 0 {
			break
		}
	}
	if g.State != "running" || g.Thread != v.TID("rawsleep_tid") {
		t.Fatalf("rawsleep goroutine: %q on thread %d, want running on %d", g.State, g.Thread, v.TID("rawsleep_tid"))
	}
	var fns []string
	for _, f := range g.Stack {
		fns = append(fns, f.Func)
	}
	if !slices.Contains(fns, "main.rawNanosleep") || !slices.Contains(fns, "main.rawSleeper") {
		t.Errorf("rawsleep goroutine's stack %v lacks main.rawNanosleep and main.rawSleeper", fns)
	}
}

// TestExitMidRead kills the victim between two chunks of goroutines: the
// read returns what it read before, and an error that says the process
// exited.
func TestExitMidRead(t *testing.T) {
	v := startVictim(t, testvictim.ModuleBuild{LDFlags: strip}, "-n", strconv.Itoa(2*chunk))
	r := openReader(t, v.PID)
	r.testHook = func(stage string, i int) {
		if stage != "chunk" || i == 0 {
			return
		}
		syscall.Kill(v.PID, syscall.SIGKILL)
		// Until the kernel has torn down its memory, it is readable.
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", v.PID))
			if err != nil || strings.Contains(string(b[strings.LastIndexByte(string(b), ')')+1:]), " Z ") {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	gs, _, err := r.Goroutines(context.Background())
	if !errors.Is(err, ErrExited) || !errors.Is(err, sampler.ErrNoProcess) {
		t.Fatalf("Goroutines after the victim was killed: %v, want ErrExited and ErrNoProcess", err)
	}
	if !strings.Contains(err.Error(), "partial") {
		t.Errorf("error %q does not say the list is partial", err)
	}
	if len(gs) < chunk/2 || len(gs) > chunk {
		t.Errorf("%d goroutines before the kill, want the first chunk's (%d gs, less the dead)", len(gs), chunk)
	}
}

// TestOpenErrors: what the reader cannot read is ErrUnsupported, so the
// caller falls back to Delve; a gone process is ErrNoProcess.
func TestOpenErrors(t *testing.T) {
	sh := testvictim.StartShell(t, "pipeline.sh")
	if _, err := Open(sampler.NewFS(""), sh.PID); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Open(a shell): %v, want ErrUnsupported", err)
	}
	if _, err := Open(sampler.NewFS(""), 1<<30); !errors.Is(err, sampler.ErrNoProcess) {
		t.Errorf("Open(no such pid): %v, want ErrNoProcess", err)
	}
	old := testvictim.Start(t, testvictim.BuildModule(t, "gomemold", testvictim.ModuleBuild{Toolchain: "go1.21.0"}))
	_, err := Open(sampler.NewFS(""), old.PID)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "go1.21.0") {
		t.Errorf("Open(a Go 1.21 program): %v, want ErrUnsupported naming go1.21.0", err)
	}
}

// TestChurn reads a victim whose goroutines never settle (pairs that hand
// a token back and forth, short-lived goroutines started all the time)
// many times over: no read may fail or drop a goroutine, and every stack
// must be one a goroutine can have — never one stitched from two moments.
func TestChurn(t *testing.T) {
	v := startVictim(t, testvictim.ModuleBuild{LDFlags: strip}, "-churn", "2")
	r := openReader(t, v.PID)
	w := harmcheck.Watch(v.PID)
	defer w.Finish(t)
	src := victimSource(t)
	shapes := map[string][]string{
		"main.pinger": {lineOf(t, src, "a <- n"), lineOf(t, src, "<-b")},
		"main.ponger": {lineOf(t, src, "n := <-a"), lineOf(t, src, "b <- n")},
	}
	// A goroutine preempted in its loop (runnable: on a loaded machine it
	// may wait for a CPU through many reads) stands at any line of it,
	// its loop's head too.
	loops := map[string][]string{
		"main.pinger": append([]string{lineOf(t, src, "for n := 0; ; n++ {")}, shapes["main.pinger"]...),
		"main.ponger": append([]string{strconv.Itoa(atoi(t, lineOf(t, src, "n := <-a")) - 1)}, shapes["main.ponger"]...),
	}
	var total Stats
	seen := 0
	for i := 0; i < 40; i++ {
		gs, st, err := r.Goroutines(context.Background())
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		total.Dropped += st.Dropped
		if st.Dropped > 0 {
			t.Logf("read %d: %v", i, st.Notes)
		}
		total.Moving += st.Moving
		total.Retries += st.Retries
		for _, g := range gs {
			for fn, lines := range shapes {
				if !slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return f.Func == fn }) {
					continue
				}
				seen++
				if g.State == "runnable" {
					lines = loops[fn]
				}
				if len(g.Stack) != 1 || !slices.Contains(lines, strconv.Itoa(g.Stack[0].Line)) {
					t.Errorf("read %d: goroutine %d [%s] has the stack %v: not one %s can have", i, g.ID, g.State, g.Stack, fn)
				}
			}
			if slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return f.Func == "main.spawner.func1" }) {
				var fns []string
				for _, f := range g.Stack {
					fns = append(fns, f.Func)
				}
				// Asleep, or not started yet (at its function's entry).
				if !slices.Equal(fns, []string{"time.Sleep", "main.spawner.func1"}) && !slices.Equal(fns, []string{"main.spawner.func1"}) {
					t.Errorf("read %d: a spawned goroutine %d [%s] has the stack %v", i, g.ID, g.State, fns)
				}
			}
		}
	}
	t.Logf("%d ping-pong stacks checked; over all reads %d moving, %d retries", seen, total.Moving, total.Retries)
	if total.Dropped != 0 {
		t.Errorf("%d goroutines dropped: a churning process is no garbage", total.Dropped)
	}
	if seen == 0 {
		t.Errorf("no ping-pong goroutine read with a stack")
	}
}

func victimSource(t *testing.T) []string {
	t.Helper()
	root, err := testvictim.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(root + "/testdata/victims/" + victimModule + "/main.go")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// lineOf is the number of the line of src that is text, indentation
// aside.
func lineOf(t *testing.T, src []string, text string) string {
	t.Helper()
	for i, l := range src {
		if strings.TrimSpace(l) == text {
			return strconv.Itoa(i + 1)
		}
	}
	t.Fatalf("no line %q in the victim", text)
	return ""
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
