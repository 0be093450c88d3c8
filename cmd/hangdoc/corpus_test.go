package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/reportcheck"
)

// The corpus test runs every dump of testdata/corpus/dumps (a series as
// one run) through `hangdoc analyze`, in-process, and checks the report
// against the dump's .expect file (testdata/corpus/README.md says what
// each key means and where the expectations come from).

const corpusDir = "../../testdata/corpus/dumps"

// corpusSources points analyze at the victims' sources: the dumps name
// them by the paths of the machine that made the corpus, or, py-spy, by
// their short names; the live tests' victims (testdata/victims) for the
// dumps gen/py_lockid.sh takes of them.
var corpusSources = []string{"--src", "../../testdata/corpus/victims/python", "--src", "../../testdata/corpus/victims/go", "--src", "../../testdata/victims"}

// expectation is one .expect file.
type expectation struct {
	verdict, confidence string
	holders             []string // "goroutine 7", "thread refresher", "thread 0x00007f…"
	bases               []string // paired with holders: exact, probable
	cycle               []string
	goroutines          int // -1: not said
	programGoroutines   int
	threads             int
	mentions            []string
	producer            string
}

func readExpect(t *testing.T, file string) expectation {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := expectation{goroutines: -1, programGoroutines: -1, threads: -1}
	sc := bufio.NewScanner(f)
	num := func(v string) int {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %q is not a number", file, v)
		}
		return n
	}
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		switch k {
		case "verdict":
			e.verdict = v
		case "confidence":
			e.confidence = v
		case "holder":
			e.holders = append(e.holders, v)
		case "basis":
			e.bases = append(e.bases, v)
		case "cycle":
			for _, m := range strings.Split(v, ",") {
				e.cycle = append(e.cycle, strings.TrimSpace(m))
			}
		case "goroutines":
			e.goroutines = num(v)
		case "program-goroutines":
			e.programGoroutines = num(v)
		case "threads":
			e.threads = num(v)
		case "mentions":
			e.mentions = append(e.mentions, v)
		case "producer":
			e.producer = v
		}
	}
	return e
}

// corpusCase is one run of analyze: one dump, or a series of them.
type corpusCase struct {
	name   string // the .expect's path under dumps/, without .expect
	files  []string
	expect string
}

// series numbers the files of a series: NAME.1.txt, NAME.2.txt, ….
var seriesRE = regexp.MustCompile(`\.(\d+)\.(txt|json)$`)

func corpusCases(t *testing.T) []corpusCase {
	t.Helper()
	var cases []corpusCase
	err := filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".expect") {
			return err
		}
		base := strings.TrimSuffix(p, ".expect")
		c := corpusCase{name: strings.TrimPrefix(filepath.ToSlash(base), corpusDir+"/"), expect: p}
		for _, ext := range []string{".txt", ".json", ".txt.gz"} {
			if _, err := os.Stat(base + ext); err == nil {
				c.files = append(c.files, base+ext)
			}
		}
		if len(c.files) == 0 {
			matches, _ := filepath.Glob(base + ".[0-9]*")
			sort.Slice(matches, func(i, j int) bool {
				a, _ := strconv.Atoi(seriesRE.FindStringSubmatch(matches[i])[1])
				b, _ := strconv.Atoi(seriesRE.FindStringSubmatch(matches[j])[1])
				return a < b
			})
			c.files = matches
		}
		if len(c.files) == 0 {
			return fmt.Errorf("%s: no dump beside it", p)
		}
		cases = append(cases, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// corpusReport is the part of the JSON report the corpus checks.
type corpusReport struct {
	Verdict    string `json:"verdict"`
	Confidence string `json:"confidence"`
	Sampling   struct {
		StackSource string `json:"stack_source"`
	} `json:"sampling"`
	Threads []struct {
		TID    int    `json:"tid"`
		Name   string `json:"name"`
		Python *struct {
			ThreadName string `json:"thread_name"`
			Ident      string `json:"ident"`
		} `json:"python"`
	} `json:"threads"`
	Locks []struct {
		Holder    *corpusRef  `json:"holder"`
		Readers   []corpusRef `json:"readers"`
		BasisKind string      `json:"basis_kind"`
	} `json:"locks"`
	Cycles     [][]corpusRef `json:"cycles"`
	Goroutines []struct {
		ID     int64 `json:"id"`
		System bool  `json:"system"`
	} `json:"goroutines"`
}

type corpusRef struct {
	PID       int   `json:"pid"`
	TID       int   `json:"tid"`
	Goroutine int64 `json:"goroutine"`
}

// who names an actor as the .expect files do.
func (r *corpusReport) who(ref corpusRef) []string {
	if ref.Goroutine != 0 {
		return []string{fmt.Sprintf("goroutine %d", ref.Goroutine)}
	}
	var names []string
	for _, t := range r.Threads {
		if t.TID != ref.TID {
			continue
		}
		names = append(names, "thread "+t.Name)
		if t.Python != nil && t.Python.Ident != "" {
			names = append(names, "thread "+t.Python.Ident)
		}
	}
	return names
}

// producers maps the .expect's producer names to the report's stack_source.
var producers = map[string]string{
	"sigquit":         "go dump (sigquit)",
	"pprof-debug2":    "go dump (pprof-debug2)",
	"runtime-stack":   "go dump (stack)",
	"fatal-error":     "go dump (fatal)",
	"panic":           "go dump (panic)",
	"go-test-timeout": "go dump (test-timeout)",
	"py-spy-text":     "py-spy-text",
	"py-spy-json":     "py-spy-json",
	"faulthandler":    "faulthandler",
	"current-frames":  "current-frames",
	"jstack":          "jstack",
	"jcmd":            "jstack",
	"jcmd-json":       "jvm json",
}

// A check is one kind of expectation.
type check string

const (
	checkVerdict    check = "verdict"
	checkConfidence check = "confidence"
	checkHolder     check = "holder"
	checkBasis      check = "basis"
	checkCycle      check = "cycle"
	checkGoroutines check = "goroutines"
	checkProgram    check = "program-goroutines"
	checkThreads    check = "threads"
	checkMentions   check = "mentions"
	checkProducer   check = "producer"
)

// notYet lists the checks that rows of the corpus (a pattern of case
// names, as path.Match reads it) do not pass yet, and why: work of other
// issues, or a policy that is not the analyze path's. Every other check of
// every row must pass. A row that no longer suppresses any failure fails
// the test: switch it on by deleting it (or its checks).
var notYet = []struct {
	pattern string
	checks  []check
	needs   string // "issue 11" (lock holders, proven deadlocks: the lead's), "issue 10", or the policy
	why     string
}{
	// Left by issue 11: the waiter is the goroutine the truncation cut.
	{"go-selfdump/selfdump-truncated.*", []check{checkHolder}, "issue 11, left", "the only goroutine waiting for mu is the one the truncation cut: its frames end inside sync, so no frame of the program's says which lock; an address-only wait would need the parser to mark the cut goroutine (model), so that the inferred rule may use it without inventing holders for the standard library's own mutexes"},
	// The ladder's confidence policy (classify/verdict.go, the lead's): one
	// sample is low; the corpus takes one dump for at most medium.
	{"*/*", []check{checkConfidence}, "confidence policy", "one snapshot is low confidence in the ladder; the corpus expects medium (high where the runtime says deadlock)"},
}

// suppressed counts, per row of notYet, the failures it kept quiet.
var suppressed = make([]int, len(notYet))

func skipped(name string, c check) (string, bool) {
	for i, row := range notYet {
		if ok, _ := path.Match(row.pattern, name); ok && slices.Contains(row.checks, c) {
			suppressed[i]++
			return row.why, true
		}
	}
	return "", false
}

func TestCorpus(t *testing.T) {
	cases := corpusCases(t)
	if len(cases) < 700 {
		t.Fatalf("%d corpus cases, want the whole corpus (over 700)", len(cases))
	}
	clear(suppressed)
	defer func() {
		for i, row := range notYet {
			if suppressed[i] == 0 {
				t.Errorf("notYet row %q %v (%s) no longer fails anywhere: delete it", row.pattern, row.checks, row.needs)
			}
		}
	}()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := readExpect(t, c.expect)
			args := append([]string{"analyze", "--json"}, corpusSources...)
			stdout, stderr, code := hangdoc(t, append(args, c.files...)...)
			if e.verdict == "error" {
				if code != ExitError {
					t.Errorf("exit %d, want %d (error)\n%s", code, ExitError, stderr)
				}
				for _, m := range e.mentions {
					if !strings.Contains(stderr, m) {
						t.Errorf("the error %q does not say %q", strings.TrimSpace(stderr), m)
					}
				}
				return
			}
			var r corpusReport
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("exit %d, report not JSON: %v\n%s", code, err, stderr)
			}
			text, _, _ := hangdoc(t, append(append([]string{"analyze"}, corpusSources...), c.files...)...)
			md, _, _ := hangdoc(t, append(append([]string{"analyze", "--format", "markdown"}, corpusSources...), c.files...)...)
			// No empty slot, no word the JSON contradicts (item 7 of issue 18).
			for _, p := range reportcheck.Check([]byte(text), []byte(md), []byte(stdout)) {
				t.Errorf("%s: %s", c.name, p)
			}
			if len(c.files) > 1 {
				// A series' counts are its first dump's.
				first, _, _ := hangdoc(t, append(append([]string{"analyze", "--json"}, corpusSources...), c.files[0])...)
				var r1 corpusReport
				if err := json.Unmarshal([]byte(first), &r1); err != nil {
					t.Fatalf("the first dump's report is not JSON: %v", err)
				}
				r.Goroutines, r.Threads = r1.Goroutines, r1.Threads
			}
			fail := func(k check, format string, args ...any) {
				t.Helper()
				if _, skip := skipped(c.name, k); skip {
					return
				}
				t.Errorf("%s: %s: %s", c.name, k, fmt.Sprintf(format, args...))
			}
			if r.Verdict != e.verdict {
				fail(checkVerdict, "%s, want %s", r.Verdict, e.verdict)
			}
			if e.confidence != "" && r.Confidence != e.confidence {
				fail(checkConfidence, "%s, want %s", r.Confidence, e.confidence)
			}
			var holders []string
			bases := map[string][]string{} // holder → the basis kinds of the locks it holds
			for _, l := range r.Locks {
				// An RWMutex's readers hold it (for reading) as its
				// holder would.
				held := l.Readers
				if l.Holder != nil {
					held = append(held, *l.Holder)
				}
				for _, h := range held {
					for _, who := range r.who(h) {
						holders = append(holders, who)
						bases[who] = append(bases[who], l.BasisKind)
					}
				}
			}
			for i, h := range e.holders {
				if !slices.Contains(holders, h) {
					fail(checkHolder, "%s holds no lock; holders %v", h, holders)
				} else if i < len(e.bases) && !slices.Contains(bases[h], e.bases[i]) {
					fail(checkBasis, "%s holds its lock on a basis %v, want %s", h, bases[h], e.bases[i])
				}
			}
			if len(e.cycle) > 0 {
				found := false
				for _, cy := range r.Cycles {
					var members []string
					for _, m := range cy {
						members = append(members, r.who(m)...)
					}
					all := true
					for _, m := range e.cycle {
						all = all && slices.Contains(members, m)
					}
					found = found || all && len(cy) == len(e.cycle)
				}
				if !found {
					fail(checkCycle, "no cycle of %v; cycles %v", e.cycle, r.Cycles)
				}
			}
			if e.goroutines >= 0 && len(r.Goroutines) != e.goroutines {
				fail(checkGoroutines, "%d, want %d", len(r.Goroutines), e.goroutines)
			}
			if e.programGoroutines >= 0 {
				n := 0
				for _, g := range r.Goroutines {
					if !g.System {
						n++
					}
				}
				if n != e.programGoroutines {
					fail(checkProgram, "%d, want %d", n, e.programGoroutines)
				}
			}
			if e.threads >= 0 && len(r.Threads) != e.threads {
				fail(checkThreads, "%d, want %d", len(r.Threads), e.threads)
			}
			for _, m := range e.mentions {
				if !strings.Contains(text, m) {
					fail(checkMentions, "the text report does not mention %q", m)
				}
			}
			if want, ok := producers[e.producer]; e.producer != "" && (!ok || r.Sampling.StackSource != want) {
				fail(checkProducer, "stack source %q, want %q (%s)", r.Sampling.StackSource, want, e.producer)
			}
		})
	}
}

// TestRecordedDumpsCheck: the Go victims' recorded dumps (testdata/go),
// analyzed in the three formats, have no empty slot and no word the JSON
// contradicts (internal/reportcheck; TestCorpus does the same for the
// corpus).
func TestRecordedDumpsCheck(t *testing.T) {
	files, err := filepath.Glob("testdata/go/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dumps in testdata/go: %v", err)
	}
	for _, f := range files {
		if strings.Contains(f, "-debug1") {
			continue // refused by design (TestAnalyze…)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			out := map[string]string{}
			for _, format := range []string{"text", "markdown", "json"} {
				stdout, stderr, code := hangdoc(t, "analyze", "--format", format, f)
				if code == ExitError || code == ExitUsage {
					t.Fatalf("%s: exit %d: %s", format, code, stderr)
				}
				out[format] = stdout
			}
			for _, p := range reportcheck.Check([]byte(out["text"]), []byte(out["markdown"]), []byte(out["json"])) {
				t.Error(p)
			}
		})
	}
}
