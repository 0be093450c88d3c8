package sources

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/java"
)

// TestJcmdFallback: where hangdoc's own attach client gets no dump, the
// JDK's jcmd gives one. The JVM runs as another user (nobody); jcmd runs
// as that user (JDK 8 answers no other), and its dump is joined to the
// JVM's threads by nid: the deadlocked pair has its Java stacks. While the
// JVM's attach listener has no socket, jcmd is not run at all, since it
// would start the listener with a SIGQUIT without asking.
func TestJcmdFallback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: its JVM runs as another user")
	}
	jdk := testvictim.JDKs[0]
	classes := testvictim.BuildJava(t, jdk, "SyncAbba")
	for _, dir := range []string{classes, filepath.Dir(classes)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const nobody = 65534
	cmd := exec.Command(filepath.Join(jdk, "bin", "java"), "-Xmx64m", "-cp", classes, "SyncAbba")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	v := testvictim.StartCmd(t, cmd)

	fs := sampler.NewFS("/proc")
	o, err := sampler.Open(context.Background(), fs, v.PID, sampler.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Claim.Release()
	stacks := javaStacks(fs, o.Target, Options{})
	if len(stacks.Sources) != 2 || stacks.Sources[1].Name() != model.SourceJcmd {
		t.Fatalf("sources %v: want jvm attach, then jcmd", stacks.Sources)
	}
	jcmd := stacks.Sources[1]
	a := stacks.Sources[0].(*dumpSource).t
	if !a.OwnerKnown || a.UID != nobody || a.GID != nobody {
		t.Fatalf("the JVM's owner read as %d:%d (known %v), want %d:%d", a.UID, a.GID, a.OwnerKnown, nobody, nobody)
	}

	// No socket yet: the JVM has not been attached to.
	os.Remove(filepath.Join("/proc", strconv.Itoa(v.PID), "root", "tmp", ".java_pid"+strconv.Itoa(v.PID)))
	var s model.Sample
	if err := jcmd.Stacks(context.Background(), &s); err == nil || !strings.Contains(err.Error(), "not run") {
		t.Fatalf("jcmd with no attach socket: %v, want not run", err)
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(v.PID))); err != nil {
		t.Fatalf("the JVM is gone: %v", err)
	}

	// Started by hangdoc's own client, as on a first sample that gave
	// nothing: jcmd then reads the dump.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := java.ThreadDump(ctx, a); err != nil {
		t.Fatalf("starting the attach listener: %v", err)
	}
	rec, err := sampler.Record(ctx, o.Target, o.First, sampler.Options{Samples: 1, Interval: time.Millisecond,
		Stacks: sampler.Stacks{Sources: []sampler.StackSource{jcmd}, What: "Java threads"}})
	if err != nil {
		t.Fatal(err)
	}
	if rec.StackSource != model.SourceJcmd {
		t.Fatalf("stack source %v, want jcmd; notes %q", rec.StackSource, rec.Notes)
	}
	t.Logf("notes %q", rec.Notes)
	last := rec.Samples[len(rec.Samples)-1]
	for _, key := range []string{"first", "second"} {
		tid, _ := strconv.Atoi(v.Info[key])
		i := slices.IndexFunc(last.Threads, func(th model.Thread) bool { return th.TID == tid })
		if i < 0 || last.Threads[i].Java == nil || len(last.Threads[i].Stack) == 0 {
			t.Errorf("thread %s (tid %d) has no Java stack from jcmd", key, tid)
		}
	}
	if len(last.JavaDeadlocks) == 0 {
		t.Errorf("jcmd's dump reported no deadlock")
	}
}
