package classify

import (
	"fmt"
	"testing"

	"github.com/hangdoc/hangdoc/sampler"
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
		samples := steady(3, map[string]sampler.Futex{"0x5000": mutex(1)}, threads...)
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
