package bench

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/DataDog/gostackparse"
	"github.com/hangdoc/hangdoc/sampler/goroutines"
	"github.com/maruel/panicparse/v2/stack"
)

var sizes = []struct {
	name string
	n    int
}{{"1k", 1000}, {"10k", 10_000}, {"100k", 100_000}}

// dumps caches Dump(n): the 100k dump takes a while to make.
var dumps sync.Map

func dump(n int) []byte {
	if b, ok := dumps.Load(n); ok {
		return b.([]byte)
	}
	b := Dump(n)
	dumps.Store(n, b)
	return b
}

// parser reads a whole dump and returns what it kept and how many
// goroutines it found.
type parser struct {
	name  string
	parse func(in []byte) (kept any, n int, err error)
}

var parsers = []parser{
	{"hangdoc", func(in []byte) (any, int, error) {
		ds, err := goroutines.Parse(bytes.NewReader(in))
		n := 0
		for _, d := range ds {
			n += len(d.Goroutines)
		}
		if len(ds) != 1 {
			err = fmt.Errorf("%d dumps, want 1 (%v)", len(ds), err)
		}
		return ds, n, err
	}},
	// hangdoc-stream keeps nothing: what a caller that reduces each
	// goroutine as it comes (counts, a classification) pays.
	{"hangdoc-stream", func(in []byte) (any, int, error) {
		n := 0
		ds, err := goroutines.ParseFunc(bytes.NewReader(in), func(int, goroutines.Goroutine) { n++ })
		if len(ds) != 1 {
			err = fmt.Errorf("%d dumps, want 1 (%v)", len(ds), err)
		}
		return nil, n, err
	}},
	{"gostackparse", func(in []byte) (any, int, error) {
		gs, errs := gostackparse.Parse(bytes.NewReader(in))
		var err error
		if len(errs) > 0 {
			err = fmt.Errorf("%d errors, first %v", len(errs), errs[0])
		}
		return gs, len(gs), err
	}},
	// panicparse with every option off: no source reading, no path
	// guessing, no argument naming (which is O(n²)).
	{"panicparse", func(in []byte) (any, int, error) {
		s, _, err := stack.ScanSnapshot(bytes.NewReader(in), io.Discard, &stack.Opts{})
		if err == io.EOF {
			err = nil
		}
		if s == nil {
			return nil, 0, fmt.Errorf("no snapshot (%v)", err)
		}
		return s, len(s.Goroutines), err
	}},
}

// TestDumps checks that every parser reads every generated dump whole.
func TestDumps(t *testing.T) {
	for _, size := range sizes {
		if testing.Short() && size.n > 10_000 {
			continue
		}
		in := dump(size.n)
		if !bytes.Equal(in, Dump(size.n)) {
			t.Fatalf("Dump(%d) is not deterministic", size.n)
		}
		for _, p := range parsers {
			_, n, err := p.parse(in)
			if err != nil || n != size.n {
				t.Errorf("%s/%s: %d goroutines, %v; want %d", p.name, size.name, n, err, size.n)
			}
		}
	}
}

// TestExtracts checks that hangdoc gets what the dump says of a goroutine
// and its frames, beyond the counts.
func TestExtracts(t *testing.T) {
	ds, err := goroutines.Parse(bytes.NewReader(dump(1000)))
	if err != nil {
		t.Fatal(err)
	}
	gs := ds[0].Goroutines
	if ds[0].Producer != goroutines.ProducerStack || ds[0].Truncated {
		t.Errorf("dump: producer %q, truncated %v", ds[0].Producer, ds[0].Truncated)
	}
	var minutes, locked, inlined, offsets, args, created int
	for _, g := range gs[1:] {
		if g.WaitMinutes > 0 {
			minutes++
		}
		if g.LockedToThread {
			locked++
		}
		if g.CreatedBy != nil && g.CreatorID > 0 && g.CreatedBy.Offset != "" {
			created++
		}
		for _, f := range g.Frames {
			if f.Func == "" || f.File == "" || f.Line == 0 {
				t.Fatalf("goroutine %d: frame %+v", g.ID, f)
			}
			if f.Inlined {
				inlined++
			} else if f.Offset != "" {
				offsets++
			}
			if len(f.Args) > 2 && f.Args != "(...)" {
				args++
			}
		}
	}
	if minutes == 0 || locked == 0 || inlined == 0 || offsets == 0 || args == 0 || created != len(gs)-1 {
		t.Errorf("minutes %d, locked %d, inlined %d, offsets %d, args %d, created %d of %d",
			minutes, locked, inlined, offsets, args, created, len(gs)-1)
	}
}

func BenchmarkParse(b *testing.B) {
	for _, p := range parsers {
		b.Run(p.name, func(b *testing.B) {
			for _, size := range sizes {
				b.Run(size.name, func(b *testing.B) {
					in := dump(size.n)
					retained, peak := memory(b, p, in)
					b.SetBytes(int64(len(in)))
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						if _, n, err := p.parse(in); err != nil || n != size.n {
							b.Fatalf("%d goroutines, %v; want %d", n, err, size.n)
						}
					}
					b.ReportMetric(retained, "kept/in")
					b.ReportMetric(peak, "peak/in")
				})
			}
		})
	}
}

// memory parses in once, untimed, and returns the heap it holds after
// parsing (what the result keeps) and the most heap it used while
// parsing, both above what was live before and relative to len(in). The
// peak is sampled every 100µs, so it can miss a short spike; it counts
// garbage the GC has not yet freed, as a process's heap would.
func memory(b *testing.B, p parser, in []byte) (retained, peak float64) {
	b.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := heap()
	done, most := make(chan struct{}), make(chan uint64)
	go func() {
		var m uint64
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			m = max(m, heap())
			select {
			case <-done:
				most <- m
				return
			case <-t.C:
			}
		}
	}()
	kept, _, err := p.parse(in)
	close(done)
	hi := <-most
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	after := heap()
	runtime.KeepAlive(kept)
	hi = max(hi, after)
	over := func(x uint64) float64 {
		if x < base {
			return 0
		}
		return float64(x-base) / float64(len(in))
	}
	return over(after), over(hi)
}
