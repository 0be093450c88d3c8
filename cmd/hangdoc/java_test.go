package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
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
