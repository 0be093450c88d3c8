package bench

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestAnalyzeAllocs is a guard, not a timing: `hangdoc analyze` of a
// server-shaped dump of 20,000 goroutines (ServerDump: every goroutine
// owns its objects, so none reads like another) allocates at most 20
// times the file's size. A pass over the goroutines that is quadratic, or
// that builds something per goroutine per goroutine, is past it many
// times over. Bytes allocated do not depend on the machine's load, and
// the bound leaves room for the small differences a run may have (the
// pools of fmt, a map's growth).
func TestAnalyzeAllocs(t *testing.T) {
	const n, most = 20_000, 20
	path := filepath.Join(t.TempDir(), "server-20k.txt")
	dump := ServerDump(n)
	if err := os.WriteFile(path, dump, 0o644); err != nil {
		t.Fatal(err)
	}
	size := uint64(len(dump))
	dump = nil
	// One run first: what is allocated once per process (tables, the
	// first use of a package) is not the input's cost.
	if err := analyze(path); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := analyze(path); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("analyze of %d goroutines, %d bytes: %d bytes allocated, %.1f× the file", n, size, got, float64(got)/float64(size))
	if got > most*size {
		t.Errorf("analyze of a %d-goroutine server-shaped dump (%d bytes) allocated %d bytes, %.1f× the file: more than %d×",
			n, size, got, float64(got)/float64(size), most)
	}
}
