package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// The Java victims' dumps (testdata/corpus/dumps/jvm, gen/java.sh): each
// analyzed must give the victim's verdict, its holder by name and by
// Linux tid (the victim's ready line names its threads by tid, which a
// text dump prints as nid=), and its cycle. TestCorpus checks the same
// dumps against their .expect files' other keys.

// javaKeys maps a victim thread's name to the key its ready line gives
// its tid under.
var javaKeys = map[string]string{
	"abba-1": "first", "abba-2": "second",
	"lock-abba-1": "first", "lock-abba-2": "second",
	"holder": "holder", "spinner": "spinner",
}

func TestJavaDumps(t *testing.T) {
	expects, err := filepath.Glob(filepath.Join(corpusDir, "jvm", "*.expect"))
	if err != nil || len(expects) < 40 {
		t.Fatalf("%d .expect files in %s/jvm, want the Java victims' dumps: %v", len(expects), corpusDir, err)
	}
	for _, exp := range expects {
		base := strings.TrimSuffix(exp, ".expect")
		dump := base + ".txt"
		if _, err := os.Stat(dump); err != nil {
			dump = base + ".json"
		}
		t.Run(filepath.Base(base), func(t *testing.T) {
			e := readExpect(t, exp)
			ready := readyTIDs(t, exp)
			stdout, stderr, code := hangdoc(t, "analyze", "--json", dump)
			var r struct {
				Verdict string `json:"verdict"`
				Threads []struct {
					TID  int    `json:"tid"`
					Name string `json:"name"`
				} `json:"threads"`
				Locks []struct {
					Holder *struct {
						TID int `json:"tid"`
					} `json:"holder"`
					BasisKind string `json:"basis_kind"`
				} `json:"locks"`
				Cycles [][]struct {
					TID int `json:"tid"`
				} `json:"cycles"`
			}
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("exit %d, report not JSON: %v\n%s", code, err, stderr)
			}
			name := map[int]string{}
			for _, th := range r.Threads {
				name[th.TID] = th.Name
			}
			if r.Verdict != e.verdict {
				t.Errorf("verdict %s, want %s", r.Verdict, e.verdict)
			}
			text := strings.HasSuffix(dump, ".txt")
			for i, h := range e.holders {
				want := strings.TrimPrefix(h, "thread ")
				found := false
				for _, l := range r.Locks {
					if l.Holder == nil || name[l.Holder.TID] != want {
						continue
					}
					found = true
					if i < len(e.bases) && l.BasisKind != e.bases[i] {
						t.Errorf("%s holds its lock on the basis %q, want %s", want, l.BasisKind, e.bases[i])
					}
					if tid, ok := ready[javaKeys[want]]; text && ok && l.Holder.TID != tid {
						t.Errorf("holder %s is tid %d, want %d (its ready line's)", want, l.Holder.TID, tid)
					}
				}
				if !found {
					t.Errorf("%s holds no lock", want)
				}
			}
			if len(e.cycle) > 0 {
				ok := false
				for _, cy := range r.Cycles {
					var names []string
					for _, m := range cy {
						names = append(names, "thread "+name[m.TID])
						if tid, known := ready[javaKeys[name[m.TID]]]; text && known && m.TID != tid {
							t.Errorf("cycle member %s is tid %d, want %d", name[m.TID], m.TID, tid)
						}
					}
					ok = ok || len(names) == len(e.cycle) && !slices.ContainsFunc(e.cycle, func(w string) bool { return !slices.Contains(names, w) })
				}
				if !ok {
					t.Errorf("no cycle of %v in %v", e.cycle, r.Cycles)
				}
			}
		})
	}
}

// readyTIDs reads the "ready: pid=P key=TID …" line of an .expect.
func readyTIDs(t *testing.T, file string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(l, "ready: ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			if n, err := strconv.Atoi(v); err == nil {
				out[k] = n
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no ready line", file)
	}
	return out
}

// jdks are the JDKs the Java victims run on where they are installed.
var jdks = testvictim.JDKs

// TestJavaVictimDumps compiles two Java victims with each installed JDK,
// hangs them, takes their dump as a user would (jstack -l, jcmd
// Thread.print -l) and analyzes it: the synchronized ABBA is a deadlock of
// its two threads, the ReentrantLock held across a silent socket is
// blocked behind its holder, each named with the tid the victim printed.
func TestJavaVictimDumps(t *testing.T) {
	eachJDK(t, []string{"SyncAbba", "LockOnSocket"}, func(t *testing.T, jdk, classes string) {
		for _, tc := range []struct {
			victim, tool, verdict string
			holders               []string // ready keys
			cycle                 bool
		}{
			{"SyncAbba", "jstack", "deadlock", []string{"first", "second"}, true},
			{"LockOnSocket", "jcmd", "blocked", []string{"holder"}, false},
		} {
			t.Run(tc.victim, func(t *testing.T) {
				v := testvictim.StartCmd(t, exec.Command(filepath.Join(jdk, "bin", "java"), "-Xmx64m", "-cp", classes, tc.victim))
				pid := strconv.Itoa(v.PID)
				var dump []byte
				if tc.tool == "jstack" {
					dump = testvictim.JavaTool(t, time.Minute, filepath.Join(jdk, "bin", "jstack"), "-l", pid)
				} else {
					dump = testvictim.JavaTool(t, time.Minute, filepath.Join(jdk, "bin", "jcmd"), pid, "Thread.print", "-l")
				}
				file := filepath.Join(t.TempDir(), "dump.txt")
				if err := os.WriteFile(file, dump, 0o644); err != nil {
					t.Fatal(err)
				}
				r := javaDiagnose(t, "analyze", "--json", file)
				if r.Verdict != tc.verdict {
					t.Errorf("verdict %s, want %s\n%s", r.Verdict, tc.verdict, dump)
				}
				r.wantHolders(t, v, tc.holders, tc.cycle)
			})
		}
	})
}

// eachJDK compiles the Java victims named with each installed JDK (CI has
// both) and runs fn with the JDK and the classes' directory.
func eachJDK(t *testing.T, victims []string, fn func(t *testing.T, jdk, classes string)) {
	t.Helper()
	found := 0
	for _, jdk := range jdks {
		if _, err := os.Stat(filepath.Join(jdk, "bin", "javac")); err != nil {
			continue
		}
		found++
		t.Run(filepath.Base(jdk), func(t *testing.T) {
			fn(t, jdk, testvictim.BuildJava(t, jdk, victims...))
		})
	}
	if found == 0 {
		t.Fatalf("no JDK in %v", jdks)
	}
}

// javaReport is what the Java tests read of a JSON report.
type javaReport struct {
	Verdict  string `json:"verdict"`
	Summary  string `json:"summary"`
	Sampling struct {
		StackSource string   `json:"stack_source"`
		Notes       []string `json:"notes"`
	} `json:"sampling"`
	Locks []struct {
		Holder *struct {
			TID int `json:"tid"`
		} `json:"holder"`
		BasisKind string `json:"basis_kind"`
	} `json:"locks"`
	Cycles [][]struct {
		TID int `json:"tid"`
	} `json:"cycles"`
}

// javaDiagnose runs hangdoc with args (--json among them) and decodes its
// report.
func javaDiagnose(t *testing.T, args ...string) javaReport {
	t.Helper()
	out, stderr, code := hangdocProcess(t, args...)
	var r javaReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("exit %d, report not JSON: %v\n%s", code, err, stderr)
	}
	return r
}

// wantHolders checks that the threads the victim's ready line names under
// holders each hold a lock exactly, and, with cycle, that they are one
// cycle.
func (r javaReport) wantHolders(t *testing.T, v *testvictim.Victim, holders []string, cycle bool) {
	t.Helper()
	held := map[int]string{}
	for _, l := range r.Locks {
		if l.Holder != nil {
			held[l.Holder.TID] = l.BasisKind
		}
	}
	var want []int
	for _, k := range holders {
		tid, _ := strconv.Atoi(v.Info[k])
		want = append(want, tid)
		if held[tid] != "exact" {
			t.Errorf("thread %s (tid %d) holds no lock exactly: holders %v", k, tid, held)
		}
	}
	if !cycle {
		return
	}
	slices.Sort(want)
	for _, cy := range r.Cycles {
		var got []int
		for _, m := range cy {
			got = append(got, m.TID)
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
	}
	t.Errorf("no cycle of tids %v: %v", want, r.Cycles)
}
