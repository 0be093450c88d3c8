package bench

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/DataDog/gostackparse"
	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// BenchmarkAnalyze times `hangdoc analyze FILE` end to end — read the
// file, parse, group, classify, word the report and render its text —
// against DataDog/gostackparse only parsing the same file, in the same
// run, on real runtime.Stack dumps of testdata/corpus/victims/go/selfdump:
// the committed 10,000-goroutine one, and the 100,000-goroutine one that
// testdata/corpus/gen/big.sh 100000 makes (HANGDOC_BIG_DUMP names another
// path). Both read the file from the page cache, as a second run of a
// command would.
func BenchmarkAnalyze(b *testing.B) {
	for _, in := range analyzeInputs(b) {
		b.Run("hangdoc-analyze/"+in.name, func(b *testing.B) {
			b.SetBytes(in.size)
			b.ReportAllocs()
			for b.Loop() {
				if err := analyze(in.path); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("gostackparse/"+in.name, func(b *testing.B) {
			b.SetBytes(in.size)
			b.ReportAllocs()
			for b.Loop() {
				if n, err := gostackparseFile(in.path); err != nil || n == 0 {
					b.Fatalf("%d goroutines, %v", n, err)
				}
			}
		})
	}
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
	size       int64
}

// analyzeInputs are the dumps the benchmark reads: the committed 10k one,
// uncompressed into a temporary file, and the 100k one where it was made.
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
	n, err := io.Copy(w, zr)
	if err != nil || w.Close() != nil {
		b.Fatal(err)
	}
	out = append(out, analyzeInput{"10k", tmp, n})
	big := os.Getenv("HANGDOC_BIG_DUMP")
	if big == "" {
		big = "/tmp/hangdoc-corpus/selfdump-100k.go1.26.0.txt"
	}
	if fi, err := os.Stat(big); err == nil {
		out = append(out, analyzeInput{"100k", big, fi.Size()})
	} else {
		b.Logf("no 100k dump at %s (make it with: bash testdata/corpus/gen/big.sh 100000): the 10k one only", big)
	}
	return out
}
