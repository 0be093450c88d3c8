package classify

import (
	"fmt"
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

// BenchmarkClassify checks that classifying stays linear in threads: a
// holder blocked in write() and every other thread waiting on its mutex,
// three samples.
func BenchmarkClassify(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		threads := []th{{tid: 1, name: "holder", state: "S", call: call("write", 3, 0x10, 512), fd: "pipe:[1]"}}
		for i := 2; i <= n; i++ {
			threads = append(threads, th{tid: i, name: fmt.Sprintf("worker-%d", i), state: "S", call: futexWait(0x5000, 2)})
		}
		samples := steady(3, map[string]model.Futex{"0x5000": mutex(1)}, threads...)
		b.Run(fmt.Sprintf("threads=%d", n), func(b *testing.B) {
			for b.Loop() {
				d := Classify(samples, World{}, DefaultOptions())
				if d.Verdict != Blocked {
					b.Fatalf("verdict %s", d.Verdict)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/thread")
		})
	}
}

// BenchmarkClassifyGoroutines checks that classifying goroutines stays
// linear: one holder blocked writing, every other goroutine waiting for
// its mutex or parked on one of 100 other mutexes' call sites, three
// samples.
func BenchmarkClassifyGoroutines(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		samples := goSamples(3, nil, func(int) []model.Goroutine {
			gs := []model.Goroutine{gr(1, "IO wait", writeStack)}
			for i := 2; i <= n; i++ {
				g := gr(int64(i), "sync.Mutex.Lock", lockStack)
				if i%2 == 0 {
					// Waiters of 100 other mutexes, each at its own call site.
					st := append([]model.Frame{}, lockStack...)
					st[1].Args = fmt.Sprintf("(0xc0%04x)", i%100)
					st[4] = model.Frame{Func: fmt.Sprintf("main.get%d", i%100), File: "/src/main.go", Line: 7}
					g.Stack = st
				}
				gs = append(gs, g)
			}
			return gs
		})
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			for b.Loop() {
				d := Classify(samples, World{}, DefaultOptions())
				if d.Verdict != Blocked || len(d.Goroutines) != n {
					b.Fatalf("verdict %s, %d goroutines", d.Verdict, len(d.Goroutines))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/goroutine")
		})
	}
}
