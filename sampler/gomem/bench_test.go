package gomem

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/model"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/delve"
	"github.com/hangdoc/hangdoc/sampler/golive"
)

// BenchmarkSources reads the goroutines of the same victim (a stripped
// build with N idle goroutines on top of its usual ones, its pprof
// endpoint served) three ways in one run: from memory (this package), a
// pprof debug=2 fetch, and Delve's Dump (with the unstripped build, which
// Delve needs). Each reports hangdoc's CPU per read (cpu-ms/op), the
// memory it allocated (MiB/op), and the victim's heartbeat: the longest
// gap between two of its 10 ms ticks while it was read (maxgap-ms), which
// a stop of the victim lengthens. Delve also reports how long it stopped
// the victim (frozen-ms/op). result-MiB is what the last read's goroutines
// keep alive.
//
//	go test -run XXX -bench Sources -benchtime 3x -timeout 60m ./sampler/gomem
func BenchmarkSources(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for _, src := range []string{"idle", "gomem", "gomem-unstripped", "pprof", "delve"} {
				b.Run(src, func(b *testing.B) {
					build := testvictim.ModuleBuild{LDFlags: strip}
					if src == "delve" || src == "gomem-unstripped" {
						build = testvictim.ModuleBuild{}
					}
					// -fork: Delve refuses to attach to its caller's child.
					cmd := exec.Command(testvictim.BuildModule(b, victimModule, build), "-fork", "-pprof", "-n", strconv.Itoa(n))
					v := testvictim.StartCmd(b, cmd)
					pid := v.Int("target")
					base := "http://" + v.Info["pprof"]
					heartbeat(b, base) // resets the gap
					var r *Reader
					if strings.HasPrefix(src, "gomem") {
						var err error
						if r, err = Open(sampler.NewFS(""), pid); err != nil {
							b.Fatal(err)
						}
						defer r.Close()
					}
					var frozen time.Duration
					var got int
					var last []model.Goroutine
					runtime.GC()
					cpu0 := cpuTime()
					var ms0 runtime.MemStats
					runtime.ReadMemStats(&ms0)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						var gs []model.Goroutine
						var err error
						switch src {
						case "idle":
							// No read: the heartbeat's gaps on this machine
							// as it is, to read the others' against.
							time.Sleep(100 * time.Millisecond)
							gs = make([]model.Goroutine, n)
						case "gomem", "gomem-unstripped":
							gs, _, err = r.Goroutines(context.Background())
						case "pprof":
							gs, err = golive.Fetch(context.Background(), base, time.Minute)
						case "delve":
							var f time.Duration
							gs, f, err = delve.Dump(context.Background(), pid)
							frozen += f
						}
						if err != nil {
							b.Fatal(err)
						}
						got, last = len(gs), gs
					}
					b.StopTimer()
					var ms1 runtime.MemStats
					runtime.ReadMemStats(&ms1)
					cpu := cpuTime() - cpu0
					// What the last read's result keeps alive.
					runtime.GC()
					var ms2 runtime.MemStats
					runtime.ReadMemStats(&ms2)
					b.ReportMetric(float64(int64(ms2.HeapAlloc)-int64(ms0.HeapAlloc))/(1<<20), "result-MiB")
					runtime.KeepAlive(last)
					b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
					b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/(1<<20)/float64(b.N), "MiB/op")
					b.ReportMetric(float64(heartbeat(b, base).Microseconds())/1000, "maxgap-ms")
					if src == "delve" {
						b.ReportMetric(float64(frozen.Microseconds())/1000/float64(b.N), "frozen-ms/op")
					}
					if got < n {
						b.Fatalf("%d goroutines read, want at least %d", got, n)
					}
				})
			}
		})
	}
}

// BenchmarkGoroutines is the memory reader alone, for profiling:
//
//	go test -run XXX -bench Goroutines -benchtime 20x -cpuprofile cpu.out ./sampler/gomem
func BenchmarkGoroutines(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			v := startVictim(b, testvictim.ModuleBuild{LDFlags: strip}, "-n", strconv.Itoa(n))
			r := openReader(b, v.PID)
			runtime.GC()
			cpu0 := cpuTime()
			var peak uint64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				gs, _, err := r.Goroutines(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				if len(gs) < n {
					b.Fatalf("%d goroutines", len(gs))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(peak)/(1<<20), "heap-MiB")
		})
	}
}

// BenchmarkLockIdentity is lock identity's cost on server-shaped input:
// 5,000 connections, each with its own mutex that one goroutine holds
// while parked and another waits for (10,000 goroutines and more), beside
// the same read without it: the read alone, then the last read's scan
// (channels alone, then channels and locks).
func BenchmarkLockIdentity(b *testing.B) {
	v := startVictim(b, testvictim.ModuleBuild{LDFlags: strip}, "-locks", "5000")
	for _, tc := range []struct {
		name        string
		locks, scan bool
	}{{"read-alone", false, false}, {"read-with-locks", true, false}, {"scan-alone", false, true}, {"scan-with-locks", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			r := openReader(b, v.PID)
			r.noLocks = !tc.locks
			r.ScanChannels(tc.scan)
			runtime.GC()
			cpu0 := cpuTime()
			held, waiting := 0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				gs, _, err := r.Goroutines(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				held, waiting = 0, 0
				for _, g := range gs {
					if len(g.HeldLocks) > 0 && g.WaitLock == "" {
						held++ // a holder: a waiter's stack refers to its own lock too
					}
					if g.WaitLock != "" {
						waiting++
					}
				}
			}
			b.StopTimer()
			if tc.locks && waiting < 5000 || tc.locks && tc.scan && held < 5000 {
				b.Fatalf("%d goroutines wait for a known lock, %d hold one: want 5000 each", waiting, held)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkOpen is the cost of Open: reading the executable, finding the
// runtime's variables.
func BenchmarkOpen(b *testing.B) {
	for _, lb := range []build{{"stripped", testvictim.ModuleBuild{LDFlags: strip}}, {"unstripped", testvictim.ModuleBuild{}}} {
		b.Run(lb.name, func(b *testing.B) {
			v := startVictim(b, lb.b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := Open(sampler.NewFS(""), v.PID)
				if err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
	}
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heartbeat reads the victim's longest gap between ticks since the last
// call.
func heartbeat(b *testing.B, base string) time.Duration {
	resp, err := http.Get(base + "/heartbeat")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, f := range strings.Fields(string(body)) {
		if v, ok := strings.CutPrefix(f, "maxgap_us="); ok {
			us, _ := strconv.Atoi(v)
			return time.Duration(us) * time.Microsecond
		}
	}
	b.Fatalf("heartbeat said %q", body)
	return 0
}
