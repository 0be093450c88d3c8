package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
)

// TestJavaLiveAttach diagnoses hung JVMs live, on each installed JDK:
// their threads come from HotSpot's attach socket (no JDK tool is run),
// joined to /proc's threads by nid. The synchronized ABBA is a deadlock
// of the two threads the victim names; the ReentrantLock held across a
// silent socket is blocked behind its holder. A JVM that would die of the
// SIGQUIT that starts its attach listener (-Xrs, its socket gone), or
// that forbids attach, is never signalled: it is alive afterwards, and
// the report says why it has no Java stacks; so is one under --no-stop,
// since a thread dump is a safepoint.
func TestJavaLiveAttach(t *testing.T) {
	eachJDK(t, []string{"SyncAbba", "LockOnSocket"}, func(t *testing.T, jdk, classes string) {
		for _, tc := range []struct {
			name, victim string
			flags        []string
			verdict      string
			holders      []string // ready keys
			cycle        bool
			refused      string // the note's words when attach is refused
			noStop       bool   // hangdoc runs with --no-stop
			// unlink: the JVM's attach socket is removed first, so
			// that attaching would need the SIGQUIT that starts it.
			unlink bool
			// once: of three samples, the third takes no dump: the
			// first two agree, and no thread with a Java stack can have
			// moved since.
			once bool
			// sigquit: hangdoc runs with --sigquit, and the JVM's
			// stdout is a file, where it prints its thread dumps.
			sigquit bool
			// stale: a socket nobody listens on lies where the JVM's
			// would be, as a killed JVM of the same pid leaves it.
			stale bool
		}{
			{name: "SyncAbba", victim: "SyncAbba", verdict: "deadlock", holders: []string{"first", "second"}, cycle: true, once: true},
			{name: "LockOnSocket", victim: "LockOnSocket", verdict: "blocked", holders: []string{"holder"}, once: true},
			// A JVM run with -Xrs starts its attach listener at startup
			// (no SIGQUIT could start it later): attached, unharmed.
			{name: "Xrs", victim: "SyncAbba", flags: []string{"-Xrs"}, verdict: "deadlock", holders: []string{"first", "second"}, cycle: true},
			{name: "Xrs without its socket", victim: "SyncAbba", flags: []string{"-Xrs"}, unlink: true, refused: "attach refused: the JVM does not catch SIGQUIT"},
			{name: "DisableAttach", victim: "SyncAbba", flags: []string{"-XX:+DisableAttachMechanism"}, refused: "attach refused: the JVM runs with -XX:+DisableAttachMechanism"},
			{name: "stale socket", victim: "SyncAbba", stale: true, verdict: "deadlock", holders: []string{"first", "second"}, cycle: true},
			{name: "DisableAttach stale socket", victim: "SyncAbba", flags: []string{"-XX:+DisableAttachMechanism"}, stale: true, refused: "attach refused: the JVM runs with -XX:+DisableAttachMechanism"},
			// --sigquit has it print its dumps on its stdout instead.
			{name: "DisableAttach sigquit", victim: "SyncAbba", flags: []string{"-XX:+DisableAttachMechanism"}, sigquit: true, verdict: "deadlock", holders: []string{"first", "second"}, cycle: true, once: true},
			{name: "Xrs without its socket sigquit", victim: "SyncAbba", flags: []string{"-Xrs"}, unlink: true, sigquit: true, refused: "attach refused: the JVM does not catch SIGQUIT"},
			// A thread dump is a safepoint, which --no-stop forbids.
			{name: "no-stop", victim: "SyncAbba", noStop: true, refused: "this run may not stop the target"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				args := append(append([]string{"-Xmx64m"}, tc.flags...), "-cp", classes, tc.victim)
				cmd := exec.Command(filepath.Join(jdk, "bin", "java"), args...)
				if tc.sigquit {
					out, err := os.Create(filepath.Join(t.TempDir(), "stdout.log"))
					if err != nil {
						t.Fatal(err)
					}
					defer out.Close()
					cmd.Stdout = out
				}
				v := testvictim.StartCmd(t, cmd)
				if tc.unlink {
					sock := filepath.Join("/proc", strconv.Itoa(v.PID), "root", "tmp", ".java_pid"+strconv.Itoa(v.PID))
					deadline := time.Now().Add(60 * time.Second)
					for {
						if err := os.Remove(sock); err == nil {
							break
						} else if time.Now().After(deadline) {
							t.Fatalf("the JVM's attach socket never appeared: %v", err)
						}
						time.Sleep(50 * time.Millisecond)
					}
				}
				if tc.stale {
					staleSocket(t, filepath.Join("/proc", strconv.Itoa(v.PID), "root", "tmp", ".java_pid"+strconv.Itoa(v.PID)))
				}
				hd := []string{strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms"}
				if tc.once {
					hd[3] = "3"
				}
				if tc.noStop {
					hd = append(hd, "--no-stop")
				}
				if tc.sigquit {
					hd = append(hd, "--sigquit")
				}
				rec := filepath.Join(t.TempDir(), "recording.json")
				r := javaDiagnose(t, append(hd, "--record", rec)...)
				wantUnharmed(t, v.PID)
				if tc.refused != "" {
					said := false
					for _, n := range r.Sampling.Notes {
						said = said || strings.Contains(n, tc.refused)
					}
					if !said || r.Sampling.StackSource == "jvm attach" {
						t.Errorf("stack_source %q, notes %q: want no Java stacks, and why (%s)", r.Sampling.StackSource, r.Sampling.Notes, tc.refused)
					}
					if left, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(v.PID), "cwd", ".attach_pid*")); len(left) > 0 {
						t.Errorf("attach file left behind: %v", left)
					}
					return
				}
				source := "jvm attach"
				if tc.sigquit {
					source = "sigquit"
				}
				if r.Sampling.StackSource != source {
					t.Fatalf("stack_source %q, want %s; notes %q", r.Sampling.StackSource, source, r.Sampling.Notes)
				}
				if r.Verdict != tc.verdict {
					t.Errorf("verdict %s, want %s: %s; notes %q", r.Verdict, tc.verdict, r.Summary, r.Sampling.Notes)
					logJavaLocks(t, rec)
				}
				r.wantHolders(t, v, tc.holders, tc.cycle)
				if tc.once && !slices.ContainsFunc(r.Sampling.Notes, func(n string) bool { return strings.HasPrefix(n, "1 of 3 samples took no thread dump") }) {
					t.Errorf("both samples took a thread dump, though nothing had moved: notes %q", r.Sampling.Notes)
				}
			})
		}
	})
}

// staleSocket leaves a Unix socket nobody listens on at path.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			t.Fatalf("%s exists already: the JVM's attach listener runs", path)
		}
		return // left by a JVM killed before with the same pid: stale already
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	t.Cleanup(func() { os.Remove(path) })
}

// A JVM that collects more than it runs (nearly all of a 32 MiB heap
// live): its own counters (hsperfdata, read each sample without attaching)
// say how much of the run went to GC pauses, and the verdict is working,
// starved by its heap, not blocked or hung.
func TestJavaGCThrash(t *testing.T) {
	eachJDK(t, []string{"GcThrash"}, func(t *testing.T, jdk, classes string) {
		v := testvictim.StartCmd(t, exec.Command(filepath.Join(jdk, "bin", "java"), "-Xmx32m", "-cp", classes, "GcThrash"))
		// --no-stop: no thread dump, whose safepoints would be the
		// JVM's pauses too; the counters file is read all the same.
		out, stderr, code := hangdocProcess(t, strconv.Itoa(v.PID), "--json", "--samples", "3", "--interval", "500ms", "--no-stop")
		wantUnharmed(t, v.PID)
		var r struct {
			Verdict   string `json:"verdict"`
			Summary   string `json:"summary"`
			HintBasis string `json:"hint_basis"`
			CPU       struct {
				JVMGC *struct {
					Percent   float64 `json:"gc_percent"`
					Thrashing bool    `json:"thrashing"`
					HeapMax   int64   `json:"heap_max_bytes"`
				} `json:"jvm_gc"`
			} `json:"cpu"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s\n%s", err, out, stderr)
		}
		if g := r.CPU.JVMGC; g == nil || !g.Thrashing || g.HeapMax <= 0 || g.HeapMax > 64<<20 {
			t.Fatalf("cpu.jvm_gc %+v: want the JVM's counters read, thrashing, a heap of at most 32 MiB\n%s", r.CPU.JVMGC, out)
		}
		if r.Verdict != "working" || code != ExitWorking || r.HintBasis != "gc-thrash" || !strings.Contains(r.Summary, "went to garbage collection pauses") {
			t.Errorf("verdict %s (exit %d), hint %s, summary %q: want working, gc-thrash", r.Verdict, code, r.HintBasis, r.Summary)
		}
	})
}

// Process.waitFor() on a child whose stdout pipe is full and never read:
// the parent waits for the child, the child for the parent to drain the
// pipe — a deadlock across the two processes, through the parent's
// thread in Process.waitFor (the dump's frames). The JVM's own threads,
// woken by each thread dump's safepoint, are machinery and not "working";
// with --no-stop (no dump) they are known by their kernel names, and the
// verdict is blocked: no frame says what main waits for.
func TestJavaWaitForChild(t *testing.T) {
	eachJDK(t, []string{"WaitForChild"}, func(t *testing.T, jdk, classes string) {
		for _, noStop := range []bool{false, true} {
			t.Run(fmt.Sprintf("no-stop=%v", noStop), func(t *testing.T) {
				v := testvictim.StartCmd(t, exec.Command(filepath.Join(jdk, "bin", "java"), "-Xmx64m", "-cp", classes, "WaitForChild"))
				hd := []string{strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms"}
				if noStop {
					hd = append(hd, "--no-stop")
				}
				rec := filepath.Join(t.TempDir(), "recording.json")
				r := javaDiagnose(t, append(hd, "--record", rec)...)
				wantUnharmed(t, v.PID)
				child := v.Info["child"]
				if noStop {
					// No thread dump: nothing says main is in
					// Process.waitFor, and the reaper's wait for every
					// child proves no cycle (LockOnSocket's has one too).
					if r.Verdict != "blocked" {
						t.Errorf("verdict %s: %q; want blocked, and no cycle claimed; notes %q", r.Verdict, r.Summary, r.Sampling.Notes)
					}
					return
				}
				if r.Verdict != "deadlock" || !strings.Contains(r.Summary, "child pid "+child) || !strings.Contains(r.Summary, "full pipe") {
					t.Errorf("verdict %s: %q; want a deadlock through child pid %s writing to a full pipe; notes %q", r.Verdict, r.Summary, child, r.Sampling.Notes)
				}
			})
		}
	})
}

// Every Java victim, live through the attach socket, gets the verdict
// its dumps get, and the holders its dumps name.
func TestJavaLiveVictims(t *testing.T) {
	victims := []string{"LockAbba", "SpinHolder", "IdlePool", "FutureNever", "SemaphorePool"}
	eachJDK(t, victims, func(t *testing.T, jdk, classes string) {
		for _, tc := range []struct {
			victim  string
			verdict string
			holders []string
			cycle   bool
		}{
			{victim: "LockAbba", verdict: "deadlock", holders: []string{"first", "second"}, cycle: true},
			{victim: "SpinHolder", verdict: "spinning", holders: []string{"spinner"}},
			{victim: "IdlePool", verdict: "idle"},
			{victim: "FutureNever", verdict: "blocked"},
			{victim: "SemaphorePool", verdict: "blocked"},
		} {
			t.Run(tc.victim, func(t *testing.T) {
				liveJava(t, jdk, classes, tc.victim, tc.verdict, tc.holders, tc.cycle)
			})
		}
	})
}

// Virtual threads blocked on a ReentrantLock a platform thread holds
// (JDK 21+; the JDK 25 here): they are in no text dump, and the JSON dump
// names no owner; together, read on the last sample, they give the
// holder, inferred: the JSON dump names the synchronizer by identity hash,
// the text dump the holder's ownable synchronizers by address, and one
// thread alone holds one of that class.
func TestJavaLiveVirtualThreads(t *testing.T) {
	jdk := jdks[len(jdks)-1]
	if _, err := os.Stat(filepath.Join(jdk, "bin", "javac")); err != nil {
		t.Fatalf("no JDK 21 or later at %s (.ci/run's machine has Temurin 25): %v", jdk, err)
	}
	classes := testvictim.BuildJava(t, jdk, "VirtualBehind")
	v := testvictim.StartCmd(t, exec.Command(filepath.Join(jdk, "bin", "java"), "-Xmx64m", "-cp", classes, "VirtualBehind"))
	r := javaDiagnose(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms")
	wantUnharmed(t, v.PID)
	if r.Verdict != "blocked" {
		t.Errorf("verdict %s, want blocked: %s; notes %q", r.Verdict, r.Summary, r.Sampling.Notes)
	}
	holder, _ := strconv.Atoi(v.Info["holder"])
	found := false
	for _, l := range r.Locks {
		// The JSON dump names the synchronizer by identity hash, the text
		// dump the holder's by address: the holder is inferred, by class.
		found = found || l.Holder != nil && l.Holder.TID == holder && l.BasisKind == "inferred"
	}
	if !found {
		t.Errorf("no lock held by the platform thread holder (tid %d), inferred: %+v; notes %q", holder, r.Locks, r.Sampling.Notes)
	}
}

// liveJava diagnoses a Java victim live and checks its verdict and holders.
func liveJava(t *testing.T, jdk, classes, victim, verdict string, holders []string, cycle bool) {
	t.Helper()
	v := testvictim.StartCmd(t, exec.Command(filepath.Join(jdk, "bin", "java"), "-Xmx64m", "-cp", classes, victim))
	r := javaDiagnose(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms")
	wantUnharmed(t, v.PID)
	if r.Sampling.StackSource != "jvm attach" {
		t.Fatalf("stack_source %q, want jvm attach; notes %q", r.Sampling.StackSource, r.Sampling.Notes)
	}
	if r.Verdict != verdict {
		t.Errorf("verdict %s, want %s: %s; notes %q", r.Verdict, verdict, r.Summary, r.Sampling.Notes)
	}
	r.wantHolders(t, v, holders, cycle)
}

// logJavaLocks logs, from a run's recording, each sample's Java lock lines
// of the program's own threads: what the JVM's dumps said, when a verdict
// is not the one wanted.
func logJavaLocks(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Logf("no recording: %v", err)
		return
	}
	var rec model.Recording
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Logf("recording: %v", err)
		return
	}
	for i, s := range rec.Samples {
		for _, th := range s.Threads {
			if th.Java != nil && th.Java.Number > 0 && !th.Java.Daemon {
				t.Logf("sample %d: tid %d %q %s: locks %+v; the JVM's deadlocks %+v", i, th.TID, th.Name, th.Java.State, th.Java.Locks, s.JavaDeadlocks)
			}
		}
	}
}
