package classify_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// The corpus's dumps were made in another checkout: their frames point
// into it. corpusSource reads them from this one.
const corpusBuiltAt = "/work/wt/corpus/testdata/corpus/"

func corpusSource(root string) func(string) ([]string, error) {
	return func(path string) ([]string, error) {
		switch {
		case strings.HasPrefix(path, corpusBuiltAt):
			path = filepath.Join(root, strings.TrimPrefix(path, corpusBuiltAt))
		case !filepath.IsAbs(path):
			// Python 3.8 prints the main script as it was run.
			path = filepath.Join(root, "victims", "python", path)
		default:
			return nil, os.ErrNotExist // not the corpus's: this machine's may differ
		}
		return sampler.ReadLocalSource(path)
	}
}

// expectation is what a dump's .expect file says of its locks.
type expectation struct {
	verdict string
	holders []string // "goroutine 7", "thread refresher"
	bases   []string // each holder's basis
	cycle   []string
}

func readExpect(t *testing.T, path string) expectation {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var e expectation
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		switch k {
		case "verdict":
			e.verdict = v
		case "holder":
			e.holders = append(e.holders, v)
		case "basis":
			e.bases = append(e.bases, v)
		case "cycle":
			for _, m := range strings.Split(v, ", ") {
				e.cycle = append(e.cycle, strings.TrimSpace(m))
			}
		}
	}
	return e
}

// actorName names an actor as the .expect files do.
func actorName(d classify.Diagnosis, r classify.Ref) string {
	if r.Goroutine != 0 {
		return fmt.Sprintf("goroutine %d", r.Goroutine)
	}
	for _, t := range d.Threads {
		if t.Ref == r {
			return "thread " + t.Name
		}
	}
	return "tid " + strconv.Itoa(r.TID)
}

// TestLockHoldersInTheCorpus: the holder of every lock the corpus's lock
// hangs wait on is named with the basis its .expect says, and the cycles
// the evidence proves are found — in the dumps of every Go toolchain and
// every Python (issue 11).
func TestLockHoldersInTheCorpus(t *testing.T) {
	root, err := filepath.Abs("../testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	families := []string{
		"go-sigquit/lockelsewhere.*", "go-sigquit/callerholds.*", "go-sigquit/rwmutex.*", "go-sigquit/abba.*", "go-sigquit/abba-nol.*",
		"go-pprof/lockelsewhere.*", "go-pprof/abba-nol.*", "go-fatal/doublelock.*",
		"py-spy/cache_refresh.*", "py-spy/lock_order.*", "py-spy/acquire_release.*", "py-spy/signal_logging.*",
		"py-spy-locals/lock_order.*", "py-spy-json/cache_refresh.*", "py-spy-json/lock_order.*",
		"go-pprof/rwmutex.*", "go-pprof/callerholds.*", "go-pprof/abba.*",
	}
	for _, fam := range families {
		dumps, err := filepath.Glob(filepath.Join(root, "dumps", fam))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range dumps {
			if strings.HasSuffix(path, ".expect") {
				continue
			}
			name := strings.TrimPrefix(path, root+"/dumps/")
			t.Run(name, func(t *testing.T) {
				want := readExpect(t, strings.TrimSuffix(path, filepath.Ext(path))+".expect")
				rec, err := replay.Dumps([]string{path}, nil, "test")
				if err != nil {
					t.Fatal(err)
				}
				rec.Sources = sampler.ReadSources(rec.Samples, corpusSource(root))
				d := classify.Classify(rec, classify.DefaultOptions())
				r := report.New(rec, d)
				if d.Verdict.String() != want.verdict {
					t.Errorf("verdict %s, want %s: %s", d.Verdict, want.verdict, r.Summary)
				}
				for i, h := range want.holders {
					found := slices.ContainsFunc(d.Locks, func(l classify.Lock) bool {
						named := l.Holder != nil && actorName(d, *l.Holder) == h
						named = named || slices.ContainsFunc(l.Readers, func(r classify.Ref) bool { return actorName(d, r) == h })
						return named && (i >= len(want.bases) || l.Basis.Kind.String() == want.bases[i])
					})
					if !found {
						var got []string
						for _, l := range r.Locks {
							got = append(got, fmt.Sprintf("%s held by %v (%s): %s", l.ID, l.Holder, l.BasisKind, l.Basis))
						}
						t.Errorf("no lock held by %s (basis %s); locks:\n%s", h, want.bases[min(i, len(want.bases)-1)], strings.Join(got, "\n"))
					}
				}
				if len(want.cycle) > 0 {
					ok := slices.ContainsFunc(d.Cycles, func(c classify.Cycle) bool {
						var names []string
						for _, m := range c {
							names = append(names, actorName(d, m))
						}
						slices.Sort(names)
						w := slices.Clone(want.cycle)
						slices.Sort(w)
						return slices.Equal(names, w)
					})
					if !ok {
						t.Errorf("no cycle of %v; cycles %v: %s", want.cycle, d.Cycles, r.Summary)
					}
				}
			})
		}
	}
}
