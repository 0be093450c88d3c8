package java

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hangdoc/hangdoc/model"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t *testing.T, name string) []Dump {
	t.Helper()
	ds, err := Parse(bytes.NewReader(read(t, name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ds
}

func find(t *testing.T, d Dump, name string) Thread {
	t.Helper()
	if i := d.thread(name); i >= 0 {
		return d.Threads[i]
	}
	t.Fatalf("no thread %q", name)
	return Thread{}
}

func TestParseHeaders(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Thread
	}{
		{`"main" #1 prio=5 os_prio=0 cpu=34.61ms elapsed=0.31s tid=0x00007fd808017f30 nid=0x14eb in Object.wait()  [0x00007fd80d31e000]`,
			Thread{Name: "main", Number: 1, NID: 0x14eb, CPUMillis: 34.61, CPUKnown: true, ElapsedSeconds: 0.31, Status: "in Object.wait()"}},
		{`"main" #3 [7425] prio=5 os_prio=0 cpu=32.26ms elapsed=0.64s allocated=409K defined_classes=33 tid=0x00007f401402a8a0 nid=7425 in Object.wait()  [0x00007f4018ffe000]`,
			Thread{Name: "main", Number: 3, NID: 7425, CPUMillis: 32.26, CPUKnown: true, ElapsedSeconds: 0.64, Status: "in Object.wait()"}},
		{`"GC Thread#0" os_prio=0 cpu=0.11ms elapsed=0.64s tid=0x00007f401404fb60 nid=7427 runnable  `,
			Thread{Name: "GC Thread#0", NID: 7427, CPUMillis: 0.11, CPUKnown: true, ElapsedSeconds: 0.64, Status: "runnable"}},
		{`"RMI TCP Connection(idle)" daemon prio=10 tid=0x083f6800 nid=0x53d9 waiting on condition [0xce963000..0xce964130]`,
			Thread{Name: "RMI TCP Connection(idle)", Daemon: true, NID: 0x53d9, Status: "waiting on condition"}},
		{`"a "quoted" name" #12 daemon prio=5 os_prio=0 tid=0x1 nid=0x10 runnable`,
			Thread{Name: `a "quoted" name`, Number: 12, Daemon: true, NID: 16, Status: "runnable"}},
		{`"pool-1-thread-4":`, Thread{Name: "pool-1-thread-4"}},
	} {
		got, ok := parseHeader(tc.line)
		if !ok {
			t.Errorf("parseHeader(%q): not a header", tc.line)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("parseHeader(%q) (-want +got):\n%s", tc.line, d)
		}
	}
	for _, bad := range []string{`"unterminated`, `"name" no fields`, `plain`} {
		if _, ok := parseHeader(bad); ok {
			t.Errorf("parseHeader(%q) read a header", bad)
		}
	}
}

func TestParseFrame(t *testing.T) {
	for in, want := range map[string]model.Frame{
		"java.lang.Object.wait(java.base@17.0.15/Native Method)":          {Func: "java.lang.Object.wait"},
		"LockAbba.take(LockAbba.java:30)":                                 {Func: "LockAbba.take", File: "LockAbba.java", Line: 30},
		"java.lang.Thread.run(java.base@25.0.3/Thread.java:1474)":         {Func: "java.lang.Thread.run", File: "Thread.java", Line: 1474},
		"LockAbba$$Lambda$1/0x00007fd794000a08.run(Unknown Source)":       {Func: "LockAbba$$Lambda$1/0x00007fd794000a08.run"},
		"sun.reflect.GeneratedMethodAccessor4.invoke(Unknown Source)":     {Func: "sun.reflect.GeneratedMethodAccessor4.invoke"},
		"org.archive.crawler.framework.ToeThread.run(ToeThread.java:151)": {Func: "org.archive.crawler.framework.ToeThread.run", File: "ToeThread.java", Line: 151},
	} {
		if got := parseFrame(in); got != want {
			t.Errorf("parseFrame(%q) = %+v, want %+v", in, got, want)
		}
	}
}

// TestParseJDK17: jstack -l of JDK 17, the ReentrantLock ABBA: hex nids,
// parking lines, ownable synchronizers, the JVM's deadlock section.
func TestParseJDK17(t *testing.T) {
	ds := parse(t, "jdk17-lockabba.txt")
	if len(ds) != 1 {
		t.Fatalf("%d dumps, want 1", len(ds))
	}
	d := ds[0]
	if d.Format != model.FormatJstack || d.Truncated || d.Excerpt || !strings.HasPrefix(d.VM, "OpenJDK 64-Bit Server VM (17.") {
		t.Errorf("dump: format %v, truncated %v, excerpt %v, VM %q", d.Format, d.Truncated, d.Excerpt, d.VM)
	}
	if want := time.Date(2026, 12, 5, 0, 39, 25, 0, time.UTC); !d.Time.Equal(want) {
		t.Errorf("time %v, want %v", d.Time, want)
	}
	if d.JNIGlobalRefs < 0 {
		t.Errorf("no JNI global refs read")
	}
	one := find(t, d, "lock-abba-1")
	if one.NID != 5374 || one.Number != 12 || one.State != "WAITING (parking)" || !one.CPUKnown {
		t.Errorf("lock-abba-1: %+v", one)
	}
	if len(one.Locks) == 0 || one.Locks[0].Kind != Parking || one.Locks[0].Class != "java.util.concurrent.locks.ReentrantLock$NonfairSync" {
		t.Errorf("lock-abba-1's lock lines: %+v", one.Locks)
	}
	if !one.OwnableRead || len(one.Ownable) != 1 {
		t.Errorf("lock-abba-1's ownable synchronizers: read %v, %+v", one.OwnableRead, one.Ownable)
	}
	if len(d.Deadlocks) != 1 || len(d.Deadlocks[0].Links) != 2 {
		t.Fatalf("deadlocks: %+v", d.Deadlocks)
	}
	l := d.Deadlocks[0].Links[0]
	if l.Thread != "lock-abba-1" || l.HeldBy != "lock-abba-2" || !l.Ownable || l.Addr != one.Locks[0].Addr {
		t.Errorf("the first link: %+v", l)
	}
	// The deadlock section's stacks repeat the threads: not read twice.
	n := 0
	for _, th := range d.Threads {
		if th.Name == "lock-abba-1" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("lock-abba-1 read %d times", n)
	}
}

// TestParseJDK25: jcmd Thread.print -l -e of JDK 25: decimal nids, the
// monitors and the deadlock section.
func TestParseJDK25(t *testing.T) {
	d := parse(t, "jdk25-syncabba-jcmd.txt")[0]
	if d.PID != 7421 {
		t.Errorf("pid %d, want 7421 (jcmd's first line)", d.PID)
	}
	a := find(t, d, "abba-1")
	if a.NID != 7457 || a.State != "BLOCKED (on object monitor)" {
		t.Errorf("abba-1: %+v", a)
	}
	want := []LockKind{WaitingToLock, Locked}
	var got []LockKind
	for _, l := range a.Locks {
		got = append(got, l.Kind)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("abba-1's lock lines (-want +got):\n%s", d)
	}
	gc := find(t, d, "GC Thread#0")
	if gc.Number != 0 || gc.State != "" || len(gc.Frames) != 0 {
		t.Errorf("GC Thread#0: %+v", gc)
	}
	if l := d.Deadlocks[0].Links[1]; l.Thread != "abba-2" || l.HeldBy != "abba-1" || l.Ownable || l.Class != "java.lang.Object" {
		t.Errorf("the second link: %+v", l)
	}
}

// TestParseSnapshots: two jstack runs in one file are two dumps.
func TestParseSnapshots(t *testing.T) {
	ds := parse(t, "jdk25-spinholder-twice.txt")
	if len(ds) != 2 {
		t.Fatalf("%d dumps, want 2", len(ds))
	}
	a, b := find(t, ds[0], "spinner"), find(t, ds[1], "spinner")
	if a.NID != b.NID || !a.CPUKnown || !b.CPUKnown || b.CPUMillis <= a.CPUMillis {
		t.Errorf("spinner: %+v then %+v", a, b)
	}
	var s Snapshots
	s1, s2 := s.Sample(ds[0], time.Time{}), s.Sample(ds[1], time.Time{})
	if !s2.Time.After(s1.Time) {
		t.Errorf("snapshot times %v, %v: not in order", s1.Time, s2.Time)
	}
}

// TestParseExcerpt: the deadlock section alone (JDK 6, a leading space),
// the threads whose stacks it does not hold added from its links.
func TestParseExcerpt(t *testing.T) {
	d := parse(t, "jdk6-deadlock-excerpt.txt")[0]
	if !d.Excerpt {
		t.Errorf("not marked an excerpt")
	}
	if len(d.Deadlocks) != 1 || len(d.Deadlocks[0].Links) != 3 {
		t.Fatalf("deadlocks: %+v", d.Deadlocks)
	}
	awt := find(t, d, "AWT-EventQueue-1")
	if len(awt.Locks) != 1 || awt.Locks[0].Kind != WaitingToLock || awt.Locks[0].Addr != "0x0ab3c0b0" {
		t.Errorf("AWT-EventQueue-1, from the links: %+v", awt)
	}
	var s Snapshots
	sm := s.Sample(d, time.Time{})
	seen := map[int]bool{}
	for _, th := range sm.Threads {
		if th.TID <= 0 || seen[th.TID] || !th.Java.NoNID {
			t.Errorf("thread %q: tid %d (stand-ins must be distinct and marked)", th.Name, th.TID)
		}
		seen[th.TID] = true
	}
	if l := sm.JavaDeadlocks[0].Links[0]; l.TID == 0 || l.HeldBy == 0 {
		t.Errorf("the first link names no thread: %+v", l)
	}
}

// TestParseJDK6: the old header (no #N, no os_prio, no cpu=).
func TestParseJDK6(t *testing.T) {
	d := parse(t, "jdk6-head.txt")[0]
	th := d.Threads[0]
	if th.NID != 0x39bb || !th.Daemon || th.CPUKnown || th.State != "TIMED_WAITING (on object monitor)" {
		t.Errorf("first thread: %+v", th)
	}
	if !d.Truncated {
		t.Errorf("a dump cut in the middle is not marked truncated")
	}
}

// TestParseJSON: the JSON thread dump of JDK 25: virtual threads, park
// blockers, monitors owned.
func TestParseJSON(t *testing.T) {
	ds := parse(t, "jdk25-virtual.json")
	d := ds[0]
	if d.Format != model.FormatJavaJSON || d.PID != 7675 || d.VM != "25.0.3+9-LTS" {
		t.Errorf("dump: %v pid %d VM %q", d.Format, d.PID, d.VM)
	}
	v := find(t, d, "virtual-1")
	if !v.Virtual || v.Number != 23 || len(v.Locks) != 1 || v.Locks[0].Kind != Parking || v.Locks[0].Class != "java.util.concurrent.locks.ReentrantLock$NonfairSync" {
		t.Errorf("virtual-1: %+v", v)
	}
	if v.Frames[0].Func != "java.lang.VirtualThread.park" || v.Frames[0].File != "VirtualThread.java" {
		t.Errorf("virtual-1's first frame: %+v", v.Frames[0])
	}
	f := find(t, d, "Finalizer")
	if !f.Virtual && len(f.Locks) != 2 {
		t.Errorf("Finalizer's waitingOn and monitorsOwned: %+v", f.Locks)
	}
}

func TestNoDump(t *testing.T) {
	for _, in := range []string{"", "hello\n", "goroutine 1 [running]:\nmain.main()\n", `{"threads": []}`} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q): no error", in)
		}
		if Detect([]byte(in)) != model.FormatNone {
			t.Errorf("Detect(%q) found a JVM dump", in)
		}
	}
}

// TestMerge: a dump joined to a live sample by nid: the thread gets its
// stack and Java facts, the sample the JVM's deadlock report.
func TestMerge(t *testing.T) {
	d := parse(t, "jdk17-lockabba.txt")[0]
	s := model.Sample{Threads: []model.Thread{{TID: 5374, Name: "lock-abba-1"}, {TID: 5375, Name: "lock-abba-2"}, {TID: 99, Name: "gone"}}}
	if n := Merge(&s, d); n != 2 {
		t.Errorf("joined %d threads, want 2", n)
	}
	if j := s.Threads[0].Java; j == nil || j.Number != 12 || len(s.Threads[0].Stack) == 0 {
		t.Errorf("lock-abba-1 not joined: %+v", s.Threads[0])
	}
	if s.Threads[2].Java != nil {
		t.Errorf("a thread the dump does not have got Java facts")
	}
	if len(s.JavaDeadlocks) != 1 || s.JavaDeadlocks[0].Links[0].TID != 5374 || s.JavaDeadlocks[0].Links[0].HeldBy != 5375 {
		t.Errorf("deadlocks: %+v", s.JavaDeadlocks)
	}
}
