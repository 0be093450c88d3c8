package java

import (
	"os"
	"testing"
)

// Counters files copied from JVMs thrashing in a 32 MiB heap: JDK 17 with
// the serial collector (generations split the heap), JDK 25 with G1 (each
// generation's maximum is the whole heap).
func TestParseHsperf(t *testing.T) {
	for _, tc := range []struct {
		file              string
		heapMax           int64
		minGCs            int64
		minHeapUsedPerMax float64
	}{
		{"testdata/hsperf-jdk17-serial.bin", 11141120 + 22413312, 4000, 0.6},
		{"testdata/hsperf-jdk25-g1.bin", 33554432, 3000, 0.6},
	} {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseHsperf(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if c.TickHz != 1e9 || c.HeapMax != tc.heapMax || c.GCCount < tc.minGCs || c.GCTicks <= 0 || c.Safepoints <= 0 || c.Threads <= 0 {
			t.Errorf("%s: %+v, want 1e9 Hz, heap max %d, ≥ %d collections, safepoints and threads", tc.file, c, tc.heapMax, tc.minGCs)
		}
		if float64(c.HeapUsed) < tc.minHeapUsedPerMax*float64(c.HeapMax) || c.HeapUsed > c.HeapMax {
			t.Errorf("%s: heap used %d of %d, want nearly full", tc.file, c.HeapUsed, c.HeapMax)
		}
	}
}

func TestParseHsperfRefuses(t *testing.T) {
	good, err := os.ReadFile("testdata/hsperf-jdk17-serial.bin")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"no magic":  append([]byte("not a counters file"), make([]byte, 40)...),
		"truncated": good[:100],
		"version 1": append(append([]byte{}, good[:5]...), append([]byte{1}, good[6:]...)...),
	} {
		if c, err := ParseHsperf(b); err == nil {
			t.Errorf("%s: %+v, want an error", name, c)
		}
	}
}

func FuzzParseHsperf(f *testing.F) {
	for _, name := range []string{"testdata/hsperf-jdk17-serial.bin", "testdata/hsperf-jdk25-g1.bin"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:200])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseHsperf(b)
		if err == nil && c.TickHz <= 0 {
			t.Fatalf("parsed with no tick frequency: %+v", c)
		}
	})
}
