package bench

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/DataDog/gostackparse"
	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// BenchmarkAnalyze times `hangdoc analyze FILE` end to end — read the
// file, parse, group, classify, word the report and render its text —
// against DataDog/gostackparse only parsing the same file, in the same
// run. The inputs are real runtime.Stack dumps of
// testdata/corpus/victims/go/selfdump (the committed 10,000-goroutine
// one, and the 100,000-goroutine one that testdata/corpus/gen/big.sh
// 100000 makes; HANGDOC_BIG_DUMP names another path), and generated ones
// of both shapes at 10,000 and 100,000 goroutines: server (ServerDump,
// goroutines that own their objects, so none reads like another) and
// sites (Dump, goroutines from 48 call sites with random words). Every
// input is read from the page cache, as a second run of a command would.
func BenchmarkAnalyze(b *testing.B) {
	dir := b.TempDir()
	for _, in := range analyzeInputs(b) {
		// A generated dump is written when a benchmark of it runs first.
		path := func(b *testing.B) string {
			if in.gen == nil {
				return in.path
			}
			p := filepath.Join(dir, in.name+".txt")
			if _, err := os.Stat(p); err != nil {
				if err := os.WriteFile(p, in.gen(in.n), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			return p
		}
		b.Run("hangdoc-analyze/"+in.name, func(b *testing.B) {
			p := path(b)
			b.SetBytes(fileSize(b, p))
			b.ReportAllocs()
			for b.Loop() {
				if err := analyze(p); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("gostackparse/"+in.name, func(b *testing.B) {
			p := path(b)
			b.SetBytes(fileSize(b, p))
			b.ReportAllocs()
			for b.Loop() {
				if n, err := gostackparseFile(p); err != nil || n == 0 {
					b.Fatalf("%d goroutines, %v", n, err)
				}
			}
		})
	}
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// analyze is what `hangdoc analyze FILE` does, writing the text report
// nowhere.
func analyze(path string) error {
	rec, err := replay.ReadDumps(context.Background(), replay.DumpOptions{Paths: []string{path}, Version: "bench"})
	if err != nil {
		return err
	}
	r := report.New(rec, classify.Classify(rec, classify.DefaultOptions()))
	return report.Text(io.Discard, r, report.Palette{})
}

func gostackparseFile(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	gs, errs := gostackparse.Parse(bufio.NewReaderSize(f, 64<<10))
	if len(errs) > 0 {
		return len(gs), errs[0]
	}
	return len(gs), nil
}

type analyzeInput struct {
	name, path string
	// gen makes the dump of n goroutines, for a generated input.
	gen func(n int) []byte
	n   int
}

// analyzeInputs are the dumps the benchmark reads: the committed 10k one,
// uncompressed into a temporary file, the 100k one where it was made,
// and the generated ones.
func analyzeInputs(b *testing.B) []analyzeInput {
	b.Helper()
	var out []analyzeInput
	gz := "../testdata/corpus/dumps/go-big/selfdump-10k.go1.26.0.txt.gz"
	f, err := os.Open(gz)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	tmp := filepath.Join(b.TempDir(), "selfdump-10k.txt")
	w, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(w, zr); err != nil || w.Close() != nil {
		b.Fatal(err)
	}
	out = append(out, analyzeInput{name: "selfdump-10k", path: tmp})
	big := os.Getenv("HANGDOC_BIG_DUMP")
	if big == "" {
		big = "/tmp/hangdoc-corpus/selfdump-100k.go1.26.0.txt"
	}
	if _, err := os.Stat(big); err == nil {
		out = append(out, analyzeInput{name: "selfdump-100k", path: big})
	} else {
		b.Logf("no 100k dump at %s (make it with: bash testdata/corpus/gen/big.sh 100000): the 10k one only", big)
	}
	for _, n := range []int{10_000, 100_000} {
		k := strconv.Itoa(n/1000) + "k"
		out = append(out, analyzeInput{name: "server-" + k, gen: ServerDump, n: n}, analyzeInput{name: "sites-" + k, gen: Dump, n: n})
	}
	return out
}
