package classify_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/java"
)

func javaDump(t *testing.T, path string) java.Dump {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ds, err := java.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return ds[0]
}

// TestJavaLive: a live JVM's threads, parked in futexes of their own, with
// a dump joined by nid (java.Merge): the kernel cannot name the locks, the
// dump can: a deadlock of the two threads, both holders exact.
func TestJavaLive(t *testing.T) {
	d := javaDump(t, "../testdata/corpus/dumps/jvm/lockabba-jdk17-jstack.txt")
	var samples []model.Sample
	start := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	for i := range 3 {
		s := model.Sample{Time: start.Add(time.Duration(i) * time.Second), PID: 5351, State: model.StateSleeping}
		for _, tid := range []int{5374, 5375} {
			s.Threads = append(s.Threads, model.Thread{TID: tid, Name: "java", State: model.StateSleeping,
				Syscall: model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{uint64(0x7f0000000000 + tid*64), 0x80}}})
		}
		java.Merge(&s, d)
		samples = append(samples, s)
	}
	rec := model.Recording{Target: model.Target{PID: 5351, Runtime: model.RuntimeJava}, Samples: samples}
	got := classify.Classify(rec, classify.DefaultOptions())
	if got.Verdict != classify.Deadlock || len(got.Cycles) != 1 || len(got.Cycles[0]) != 2 {
		t.Fatalf("verdict %s, cycles %v; want a deadlock of 5374 and 5375", got.Verdict, got.Cycles)
	}
	for _, l := range got.Locks {
		if l.Holder == nil || l.Basis.Kind != classify.BasisExact || l.Kind != classify.LockJavaSync {
			t.Errorf("lock %s: holder %v, basis %v, kind %v", l.ID, l.Holder, l.Basis.Kind, l.Kind)
		}
	}
}

// TestJavaLiveMonitorRecheck: a monitor ABBA of a live JDK 17 whose one
// waiter wakes a dozen times a second with no CPU and is BLOCKED on the
// same monitor in every dump (HotSpot's "responsible" waiter rechecks
// the monitor with a timed park, 1 ms growing to 1 s): still a deadlock
// of the two. It was "2 threads are working … the waits move" in a CI
// run of TestJavaLiveAttach, although the JVM reported the deadlock in
// every dump.
func TestJavaLiveMonitorRecheck(t *testing.T) {
	d := javaDump(t, "../testdata/corpus/dumps/jvm/syncabba-jdk17-jstack.txt")
	var tids []int
	for _, th := range d.Threads {
		if strings.HasPrefix(th.Name, "abba-") {
			tids = append(tids, th.NID)
		}
	}
	if len(tids) != 2 {
		t.Fatalf("abba threads %v in the dump, want two", tids)
	}
	var samples []model.Sample
	start := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	for i := range 3 {
		s := model.Sample{Time: start.Add(time.Duration(i) * 300 * time.Millisecond), PID: 6000, State: model.StateSleeping}
		for k, tid := range tids {
			th := model.Thread{TID: tid, Name: "abba", State: model.StateSleeping, CPUTime: 3 * time.Millisecond,
				Syscall: model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{uint64(0x7f0000000000 + tid*64), 0x89}}}
			if k == 0 {
				th.Voluntary = uint64(4 * i) // the responsible waiter: 13 wakes a second
			}
			s.Threads = append(s.Threads, th)
		}
		java.Merge(&s, d)
		samples = append(samples, s)
	}
	rec := model.Recording{Target: model.Target{PID: 6000, Runtime: model.RuntimeJava}, Samples: samples}
	got := classify.Classify(rec, classify.DefaultOptions())
	if got.Verdict != classify.Deadlock || len(got.Cycles) != 1 || len(got.Cycles[0]) != 2 {
		t.Fatalf("verdict %s (%+v), cycles %v; want a deadlock of %v", got.Verdict, got.Cause, got.Cycles, tids)
	}
}

// TestJavaMachinery: the JVM's own threads are set aside; the program's
// are not, whatever their names start with.
func TestJavaMachinery(t *testing.T) {
	d := javaDump(t, "../testdata/corpus/dumps/jvm/idlepool-jdk25-jstack.txt")
	var s java.Snapshots
	rec := model.Recording{Target: model.Target{Runtime: model.RuntimeJava}, Samples: []model.Sample{s.Sample(d, time.Time{})}}
	got := classify.Classify(rec, classify.DefaultOptions())
	aside := map[string]bool{}
	for _, a := range got.Threads {
		aside[a.Name] = a.Aside != classify.AsideNone
	}
	for name, want := range map[string]bool{
		"GC Thread#0": true, "VM Thread": true, "C2 CompilerThread0": true, "Reference Handler": true,
		"Signal Dispatcher": true, "Common-Cleaner": true, "Attach Listener": true, "Finalizer": true,
		"main": false, "pool-1-thread-1": false,
	} {
		if got, ok := aside[name]; !ok {
			t.Errorf("no thread %q", name)
		} else if got != want {
			t.Errorf("%s set aside: %v, want %v", name, got, want)
		}
	}
	if got.Verdict != classify.Idle {
		t.Errorf("verdict %s, want idle", got.Verdict)
	}
}

// TestJavaLiveFutexOfTheThreadLayer: threads of a live JVM that wait on a
// futex they share, which the dump names no lock for (two compiler
// threads waiting for work), wait for that futex: they are not said to
// wait for a java.util.concurrent lock, which nothing in the dump shows.
// The dump's own lock waiters are no threads of this sample (taken after
// /proc was read, a dump may name threads gone since): they are left out,
// not a crash.
func TestJavaLiveFutexOfTheThreadLayer(t *testing.T) {
	d := javaDump(t, "../testdata/corpus/dumps/jvm/lockabba-jdk17-jstack.txt")
	var tids []int
	for _, th := range d.Threads {
		if strings.Contains(th.Name, "CompilerThread") {
			tids = append(tids, th.NID)
		}
	}
	if len(tids) < 2 {
		t.Fatalf("compiler threads %v in the dump, want two", tids)
	}
	s := model.Sample{Time: time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC), PID: 5351, State: model.StateSleeping}
	for _, tid := range tids {
		s.Threads = append(s.Threads, model.Thread{TID: tid, Name: "C2 CompilerThre", State: model.StateSleeping,
			Syscall: model.Syscall{Nr: 202, Name: "futex", Args: [6]uint64{0x7f000000f000, 0x89}}})
	}
	java.Merge(&s, d)
	rec := model.Recording{Target: model.Target{PID: 5351, Runtime: model.RuntimeJava}, Samples: []model.Sample{s, s}}
	got := classify.Classify(rec, classify.DefaultOptions())
	for _, a := range got.Threads {
		if a.Wait == model.WaitJavaLock || a.Wait == model.WaitJavaMonitor {
			t.Errorf("tid %d (%s) waits for %v, which its dump does not name", a.Ref.TID, a.Name, a.Wait)
		}
	}
}
