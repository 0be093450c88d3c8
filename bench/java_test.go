package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkJavaAnalyze times `hangdoc analyze` of a generated jstack -l
// dump of a JVM server (JstackDump) at 1,000 and 10,000 threads, end to
// end as the command does it (analyze, above), from the page cache.
// bench/jvm.sh runs the command itself beside `wc -l` of the file, the
// floor of any reading of it.
func BenchmarkJavaAnalyze(b *testing.B) {
	dir := b.TempDir()
	for _, n := range []int{1000, 10000} {
		p := filepath.Join(dir, "jstack-"+strconv.Itoa(n)+".txt")
		if err := os.WriteFile(p, JstackDump(n), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run("jstack-"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(fileSize(b, p))
			b.ReportAllocs()
			for b.Loop() {
				if err := analyze(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
