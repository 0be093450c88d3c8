package classify_test

import (
	"github.com/hangdoc/hangdoc/classify"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// peer builds a sampled process from readings, like the target's.
func peer(p, depth int, cmd string, steps ...[]th) model.Process {
	samples := run(nil, steps...)
	for i := range samples {
		samples[i].PID = p
	}
	return model.Process{PID: p, Cmdline: cmd, Depth: depth, Samples: samples}
}

func pipeRes(name string, queued int, holders ...model.FDRef) model.Resource {
	return model.Resource{Name: name, Holders: holders, Pipe: &model.PipeFill{Queued: queued, Capacity: 65536}}
}

func TestCrossProcess(t *testing.T) {
	const child = 200
	wait4 := call("wait4", child)
	childWrite := th{tid: child, name: "python3", state: "S", call: call("write", 2, 0x10, 100000), fd: "pipe:[7]"}
	popen := World{
		Peers:     []model.Process{peer(child, 1, "python3 -c spam", []th{childWrite}, []th{childWrite})},
		Resources: map[string]model.Resource{"pipe:[7]": pipeRes("pipe:[7]", 65536, model.FDRef{PID: pid, FD: 4, Mode: "r"}, model.FDRef{PID: child, FD: 2, Mode: "w"})},
	}
	parent := steady(2, nil, th{tid: pid, name: "python3", state: "S", call: wait4})

	t.Run("Popen(stderr=PIPE).wait() is a deadlock of two processes", func(t *testing.T) {
		d := Classify(parent, popen, classify.DefaultOptions())
		if d.Verdict != classify.Deadlock {
			t.Fatalf("verdict %s (%s), want deadlock", d.Verdict, d.Summary)
		}
		want := [][]classify.Ref{{{PID: pid, TID: pid}, {PID: child, TID: child}}}
		if !slices.EqualFunc(d.Cycles, want, func(a classify.Cycle, b []classify.Ref) bool { return slices.Equal(a, b) }) {
			t.Errorf("cycles %+v, want %+v", d.Cycles, want)
		}
		for _, s := range []string{"deadlock across 2 processes", "65536/65536 bytes queued", "read by pid 100"} {
			if !strings.Contains(d.Summary, s) {
				t.Errorf("summary %q lacks %q", d.Summary, s)
			}
		}
		if !strings.Contains(d.Hint, "communicate()") {
			t.Errorf("hint %q", d.Hint)
		}
		if len(d.Processes) != 1 || d.Processes[0].PID != child || !strings.Contains(d.R.Processes[0].State, "writing to a full pipe") {
			t.Errorf("processes %+v", d.Processes)
		}
	})

	t.Run("the same child with a working reader is no deadlock", func(t *testing.T) {
		busy := steady(2, nil,
			th{tid: pid, name: "python3", state: "S", call: wait4},
			th{tid: pid + 1, name: "drain", state: "R", cpu: 500 * time.Millisecond, vol: 50, call: running})
		d := Classify(busy, popen, classify.DefaultOptions())
		if d.Verdict == classify.Deadlock || len(d.Cycles) != 0 {
			t.Errorf("verdict %s, cycles %+v: a process with a working thread may still read", d.Verdict, d.Cycles)
		}
	})

	t.Run("a writer's chain reaches the sleeping reader", func(t *testing.T) {
		const reader = 300
		w := World{
			Peers: []model.Process{peer(reader, 1, "/usr/bin/sleep 1000",
				[]th{{tid: reader, name: "sleep", state: "S", call: call("clock_nanosleep", 0)}},
				[]th{{tid: reader, name: "sleep", state: "S", call: call("clock_nanosleep", 0)}})},
			Resources: map[string]model.Resource{"pipe:[9]": pipeRes("pipe:[9]", 65536, model.FDRef{PID: pid, FD: 1, Mode: "w"}, model.FDRef{PID: reader, FD: 0, Mode: "r"})},
		}
		writer := steady(2, nil, th{tid: pid, name: "yes", state: "S", call: call("write", 1, 0x10, 8192), fd: "pipe:[9]"})
		d := Classify(writer, w, classify.DefaultOptions())
		if d.Verdict != classify.Blocked {
			t.Fatalf("verdict %s (%s)", d.Verdict, d.Summary)
		}
		chain := d.R.Waits[0].Chain
		want := "tid 100 write(1, 0x10, 8192) → pipe:[9], 65536/65536 bytes queued → read by pid 300 (sleep 1000) on fd 0: sleeping in clock_nanosleep(…), 0% CPU"
		if chain != want {
			t.Errorf("chain\n got %q\nwant %q", chain, want)
		}
		if d.Waits[0].To == nil || d.Waits[0].To.PID != reader {
			t.Errorf("wait to %+v, want pid %d", d.Waits[0].To, reader)
		}
	})

	t.Run("a pipe read by the writer's own process is no cycle", func(t *testing.T) {
		w := World{Resources: map[string]model.Resource{"pipe:[5]": pipeRes("pipe:[5]", 65536, model.FDRef{PID: pid, FD: 3, Mode: "r"}, model.FDRef{PID: pid, FD: 4, Mode: "w"})}}
		self := steady(2, nil, th{tid: pid, name: "main", state: "S", call: call("write", 4, 0x10, 512), fd: "pipe:[5]"})
		d := Classify(self, w, classify.DefaultOptions())
		if len(d.Cycles) != 0 || d.Verdict != classify.Blocked {
			t.Errorf("verdict %s, cycles %+v", d.Verdict, d.Cycles)
		}
	})
}

func TestOrphans(t *testing.T) {
	proc := func(p, ppid, pgrp, sid int, comm string, cpu time.Duration) model.Proc {
		return model.Proc{PID: p, PPID: ppid, PGRP: pgrp, Session: sid, Comm: comm, State: model.StateSleeping, StartTicks: 100, CPUTime: cpu}
	}
	before := []model.Proc{
		proc(1, 0, 1, 1, "init", 0),
		proc(50, 1, 50, 50, "bash", 0),
		proc(pid, 50, pid, 50, "python3", 0),
		proc(101, pid, pid, 50, "sh", 0),       // a live child: not left behind
		proc(102, 1, pid, 50, "sleep", 0),      // its shell was killed
		proc(103, 1, pid, 50, "spin", 0),       // left behind and busy
		proc(104, 1, 104, 50, "daemon", 0),     // another group: not ours
		proc(105, 50, 105, 50, "other job", 0), // a sibling job of the shell
	}
	after := slices.Clone(before)
	after[5].CPUTime = 900 * time.Millisecond
	w := World{FamilyBefore: before, Family: after, BootTime: t0.Add(-time.Hour)}
	d := Classify(steady(2, nil, th{tid: pid, name: "python3", state: "S", call: call("clock_nanosleep", 1)}), w, classify.DefaultOptions())
	var got []int
	for _, o := range d.Orphans {
		got = append(got, o.PID)
	}
	if !slices.Equal(got, []int{102, 103}) {
		t.Fatalf("orphans %v, want [102 103]: %+v", got, d.Orphans)
	}
	if o := d.Orphans[1]; o.CPUPercent != 90 || o.PPID != 1 || o.AgeSeconds < 3598 {
		t.Errorf("orphan %+v: want 90%% CPU, parent 1, about an hour old", o)
	}
}

// TestGoParentCycleDecidesWithGoroutines: a Go parent in cmd.Wait() whose
// child blocks on the pipe the parent never reads is a deadlock even when
// a goroutine source gave the goroutines: one ladder sees the threads'
// cycle (issue 9).
func TestGoParentCycleDecidesWithGoroutines(t *testing.T) {
	const child = 200
	waitid := model.Syscall{Nr: 247, Name: "waitid", Args: [6]uint64{3, 5, 0, 4}} // P_PIDFD
	parentThread := model.Thread{TID: pid, Name: "gowait", State: model.StateSleeping, Syscall: waitid, FD: "anon_inode:[pidfd]", PidfdPID: child}
	idle := model.Thread{TID: pid + 1, Name: "gowait", State: model.StateSleeping, Syscall: futexWait(0x9000, 0)}
	waiting := []model.Frame{
		{Func: "syscall.Syscall6", File: "/go/src/syscall/syscall_linux.go", Line: 95},
		{Func: "os.(*Process).pidfdWait", File: "/go/src/os/pidfd_linux.go", Line: 100},
		{Func: "os/exec.(*Cmd).Wait", File: "/go/src/os/exec/exec.go", Line: 897},
		{Func: "main.main", File: "/src/main.go", Line: 40},
	}
	samples := goSamples(2, []model.Thread{parentThread, idle}, func(int) []model.Goroutine {
		return []model.Goroutine{gr(1, "syscall", waiting)}
	})
	childWrite := th{tid: child, name: "head", state: "S", call: call("write", 1, 0x10, 8192), fd: "pipe:[7]"}
	w := World{
		Peers:     []model.Process{peer(child, 1, "head -c 200000 /dev/zero", []th{childWrite}, []th{childWrite})},
		Resources: map[string]model.Resource{"pipe:[7]": pipeRes("pipe:[7]", 65536, model.FDRef{PID: pid, FD: 6, Mode: "r"}, model.FDRef{PID: child, FD: 1, Mode: "w"})},
	}
	d := Classify(samples, w, classify.DefaultOptions())
	if d.Verdict != classify.Deadlock || len(d.Cycles) != 1 {
		t.Fatalf("verdict %s, cycles %+v (%s): want a deadlock across the two processes", d.Verdict, d.Cycles, d.Summary)
	}
	if !strings.Contains(d.Summary, "deadlock across 2 processes") || !strings.Contains(d.Hint, "StdoutPipe") {
		t.Errorf("summary %q, hint %q", d.Summary, d.Hint)
	}
}

// The seed case of a poll resolved to its descriptors: a parent in
// communicate() polls its child's stdout and stderr, and the child reads a
// stdin pipe that the parent holds open and never writes.
func TestPollResolvesToItsDescriptors(t *testing.T) {
	const child = 200
	poll := model.Syscall{Nr: 7, Name: "poll", Args: [6]uint64{0x7f00, 2, 0xffffffff}}
	parentReading := model.Thread{TID: pid, Name: "python3", State: model.StateSleeping, Syscall: poll, Wchan: "poll_schedule_timeout",
		Polled: []model.PolledFD{{FD: 5, Read: true, Target: "pipe:[1]"}, {FD: 7, Read: true, Target: "pipe:[2]"}}}
	childRead := th{tid: child, name: "python3", state: "S", call: call("read", 0, 0x10, 8192), fd: "pipe:[3]"}
	world := func(stdinWriter int) World {
		return World{
			Peers: []model.Process{peer(child, 1, "python3 -c import sys; sys.stdin.read()", []th{childRead}, []th{childRead})},
			Resources: map[string]model.Resource{
				"pipe:[1]": pipeRes("pipe:[1]", 0, model.FDRef{PID: pid, FD: 5, Mode: "r"}, model.FDRef{PID: child, FD: 1, Mode: "w"}),
				"pipe:[2]": pipeRes("pipe:[2]", 0, model.FDRef{PID: pid, FD: 7, Mode: "r"}, model.FDRef{PID: child, FD: 2, Mode: "w"}),
				"pipe:[3]": pipeRes("pipe:[3]", 0, model.FDRef{PID: stdinWriter, FD: 4, Mode: "w"}, model.FDRef{PID: pid, FD: 0, Mode: "r"}, model.FDRef{PID: child, FD: 0, Mode: "r"}),
			},
		}
	}
	samples := func() []model.Sample {
		s := run(nil, []th{{tid: pid}}, []th{{tid: pid}})
		for i := range s {
			s[i].Threads[0] = parentReading
		}
		return s
	}

	t.Run("the parent holds the child's stdin open: a deadlock", func(t *testing.T) {
		d := Classify(samples(), world(pid), classify.DefaultOptions())
		if d.Verdict != classify.Deadlock || len(d.Cycles) != 1 {
			t.Fatalf("verdict %s, cycles %+v (%s), want a deadlock of the two", d.Verdict, d.Cycles, d.Summary)
		}
		w := d.Waits[0]
		if w.Kind != model.WaitPollFDs || w.To == nil || w.To.PID != child || len(w.Polled) != 2 || !slices.Equal(w.Polled[0].Ends, []int{child}) {
			t.Errorf("the parent's wait %+v, want poll-fds on both pipes, written by the child", w)
		}
		for _, s := range []string{"deadlock across 2 processes", "pipe:[1]", "written by pid 200"} {
			if !strings.Contains(d.Summary, s) {
				t.Errorf("summary %q lacks %q", d.Summary, s)
			}
		}
		for _, s := range []string{"stdin=subprocess.DEVNULL", "GIT_TERMINAL_PROMPT=0"} {
			if !strings.Contains(d.Hint, s) {
				t.Errorf("hint %q lacks %q", d.Hint, s)
			}
		}
	})
	t.Run("someone else holds it: the child waits on that process, no cycle", func(t *testing.T) {
		d := Classify(samples(), world(999), classify.DefaultOptions())
		if len(d.Cycles) != 0 || d.Verdict != classify.Blocked {
			t.Errorf("verdict %s, cycles %+v (%s), want blocked, no cycle", d.Verdict, d.Cycles, d.Summary)
		}
	})
	t.Run("a poll on a pipe its own process writes waits for work", func(t *testing.T) {
		w := world(pid)
		w.Resources["pipe:[1]"] = pipeRes("pipe:[1]", 0, model.FDRef{PID: pid, FD: 5, Mode: "r"}, model.FDRef{PID: pid, FD: 6, Mode: "w"})
		d := Classify(samples(), w, classify.DefaultOptions())
		if d.Threads[0].Wait != model.WaitPoll || d.Verdict != classify.Idle {
			t.Errorf("wait %s, verdict %s (%s), want a plain poll, idle", d.Threads[0].Wait, d.Verdict, d.Summary)
		}
	})
}
