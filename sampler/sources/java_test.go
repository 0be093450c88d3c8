package sources

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/java"
)

// TestStill: a sample takes no thread dump only when no thread the last
// dump gave a Java stack can have moved since.
func TestStill(t *testing.T) {
	frames := []model.Frame{{Func: "Main.run"}}
	jt := func(locks ...model.JavaLock) *model.JavaThread { return &model.JavaThread{Locks: locks} }
	lock := func(kind java.LockKind, addr string) model.JavaLock {
		return model.JavaLock{Kind: kind.String(), JavaObject: model.JavaObject{Addr: addr}}
	}
	// The dumped sample: two threads in the deadlock the JVM reported,
	// a third waiting for a lock one of them holds, a fourth parked
	// elsewhere, and the JVM's VM thread (no Java stack).
	dumped := func() *model.Sample {
		return &model.Sample{Threads: []model.Thread{
			{TID: 10, State: model.StateSleeping, Stack: frames, Java: jt(lock(java.WaitingToLock, "0xb"), lock(java.Locked, "0xa"))},
			{TID: 11, State: model.StateSleeping, Stack: frames, Java: jt(lock(java.WaitingToLock, "0xa"), lock(java.Locked, "0xb"))},
			{TID: 12, State: model.StateSleeping, Stack: frames, Java: jt(lock(java.WaitingToLock, "0xa"))},
			{TID: 13, State: model.StateSleeping, Stack: frames, Java: jt(lock(java.Parking, "0xc")), CPUTime: time.Second},
			{TID: 14, Name: "VM Thread", State: model.StateSleeping, Java: &model.JavaThread{}},
		}, JavaDeadlocks: []model.JavaDeadlock{{Links: []model.JavaDeadlockLink{{TID: 10, HeldBy: 11}, {TID: 11, HeldBy: 10}}}}}
	}
	for _, tc := range []struct {
		name   string
		change func(s *model.Sample)
		want   bool
	}{
		{"nothing ran", func(*model.Sample) {}, true},
		{"the VM thread ran", func(s *model.Sample) { s.Threads[4].Voluntary += 5; s.Threads[4].CPUTime += time.Second }, true},
		{"a deadlocked thread rechecked its monitor", func(s *model.Sample) { s.Threads[0].Voluntary++ }, true},
		{"a waiter behind the deadlock rechecked", func(s *model.Sample) { s.Threads[2].Voluntary++ }, true},
		{"a parked thread woke", func(s *model.Sample) { s.Threads[3].Voluntary++ }, false},
		{"a parked thread was preempted", func(s *model.Sample) { s.Threads[3].Involuntary++ }, false},
		{"a parked thread used CPU", func(s *model.Sample) { s.Threads[3].CPUTime += 10 * time.Millisecond }, false},
		{"a parked thread runs", func(s *model.Sample) { s.Threads[3].State = model.StateRunning }, false},
		{"the attach listener started", func(s *model.Sample) {
			s.Threads = append(s.Threads, model.Thread{TID: 15, Name: "Attach Listener", State: model.StateSleeping})
		}, true},
		{"a thread started", func(s *model.Sample) {
			s.Threads = append(s.Threads, model.Thread{TID: 15, Name: "worker", State: model.StateSleeping})
		}, false},
		{"a thread ended", func(s *model.Sample) { s.Threads = s.Threads[:4] }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := dumped()
			now := dumped()
			for i := range now.Threads {
				now.Threads[i].Stack, now.Threads[i].Java = nil, nil
			}
			now.JavaDeadlocks = nil
			tc.change(now)
			if got := still(prev, now); got != tc.want {
				t.Fatalf("still = %v, want %v", got, tc.want)
			}
			if !tc.want {
				return
			}
			reuse(prev, now)
			if len(now.Threads[0].Stack) == 0 || now.Threads[0].Java == nil || len(now.JavaDeadlocks) != 1 {
				t.Errorf("reused sample lacks the dump's stacks, Java facts or deadlock: %+v", now.Threads[0])
			}
		})
	}
	if still(nil, dumped()) {
		t.Error("still with no dump taken yet")
	}
}

// TestJcmdNotRunAfterUnanswered: a JVM that accepts the attach connection
// but never answers (stuck before a safepoint) is not asked again through
// jcmd, which would wait the same way.
func TestJcmdNotRunAfterUnanswered(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := java.AttachTarget{Root: root, NSPID: 4242}
	ln, err := net.Listen("unix", filepath.Join(root, "tmp", ".java_pid4242"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn // accepted and never answered
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	attach := &dumpSource{name: model.SourceAttach, t: a}
	attach.take = func(ctx context.Context) (java.Reply, error) { return java.ThreadDump(ctx, a) }
	ran := false
	jc := jcmdSource(attach, func(context.Context) (java.Reply, error) {
		ran = true
		return java.Reply{}, errors.New("ran")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var s model.Sample
	if err := attach.Stacks(ctx, &s); err == nil {
		t.Fatal("a dump from a JVM that never answers")
	}
	if !attach.unanswered {
		t.Fatal("an unanswered request not marked so")
	}
	if err := jc.Stacks(context.Background(), &s); err == nil || ran {
		t.Fatalf("jcmd ran after an unanswered request: %v", err)
	}
}

// TestDumpsAgreeBeforeReuse: a sample takes no dump only once two dumps in
// a row agree. A first dump that caught a thread half-way into its wait
// (abba-1's held monitor not yet printed) is taken again, and the run ends
// on a dump that shows the whole deadlock.
func TestDumpsAgreeBeforeReuse(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("..", "java", "testdata", "jdk25-syncabba-jcmd.txt"))
	if err != nil {
		t.Fatal(err)
	}
	half := bytes.Replace(full, []byte("\t- locked <0x00000000ffd17088> (a java.lang.Object)\n"), nil, 1)
	if bytes.Equal(half, full) {
		t.Fatal("the test dump lacks abba-1's locked line")
	}
	sample := func() *model.Sample {
		return &model.Sample{Threads: []model.Thread{{TID: 7457, Name: "abba-1", State: model.StateSleeping}, {TID: 7458, Name: "abba-2", State: model.StateSleeping}}}
	}
	for _, tc := range []struct {
		name  string
		dumps [][]byte
		taken int
	}{
		{"agreeing dumps", [][]byte{full, full}, 2},
		{"a first dump half-way", [][]byte{half, full, full}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			d := &dumpSource{name: model.SourceAttach}
			d.noVirt = true
			d.take = func(context.Context) (java.Reply, error) {
				if n == len(tc.dumps) {
					t.Fatalf("dump %d asked for", n+1)
				}
				n++
				return java.Reply{Dump: tc.dumps[n-1]}, nil
			}
			var last *model.Sample
			for range 3 {
				last = sample()
				if err := d.Stacks(context.Background(), last); err != nil {
					t.Fatal(err)
				}
			}
			if n != tc.taken {
				t.Errorf("%d dumps taken, want %d", n, tc.taken)
			}
			if len(last.JavaDeadlocks) == 0 {
				t.Errorf("the last sample has no deadlock")
			}
		})
	}
}

// TestSameRoot: the target's own jcmd is run only from a root that is
// hangdoc's own, never from another filesystem tree (a container's).
func TestSameRoot(t *testing.T) {
	if !sameRoot("/proc/self/root") {
		t.Error("this process's root is not its own")
	}
	if sameRoot(t.TempDir()) {
		t.Error("a directory taken for the root")
	}
}
