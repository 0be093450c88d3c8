package sampler_test

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler"
)

// psArgs is what the sampler is measured against: the ps command someone
// would type to see every thread's state and wait channel.
var psArgs = []string{"-L", "-o", "tid,stat,wchan:32,time", "-p"}

// BenchmarkSample measures one sample of a process with many parked threads
// (testdata/victims/manythreads.c), side by side with ps on the same process:
//
//	first  New + Sample + Close: the cold cost, every descriptor opened
//	next   Sample on a sampler that has already taken one: descriptors reused
//	ps     ps -L -o tid,stat,wchan:32,time -p PID, all its output read
//
// One victim is started per thread count and shared by its three kinds; it
// is killed when the count's sub-benchmark ends. BENCHMARKS.md has the
// command, the machine and the results.
func BenchmarkSample(b *testing.B) {
	ps, err := exec.LookPath("ps")
	if err != nil {
		b.Fatalf("ps not found: install it (apt-get install procps): %v", err)
	}
	bin := testvictim.Build(b, "manythreads")
	raiseNoFile()
	for _, n := range []int{100, 1000, 10000} {
		b.Run("threads="+strconv.Itoa(n), func(b *testing.B) {
			v := testvictim.Start(b, bin, strconv.Itoa(n))
			if got := v.Int("threads"); got != n {
				b.Fatalf("victim parked %d threads, want %d", got, n)
			}
			// The main thread is sampled too.
			tasks := n + 1
			pid := v.PID
			b.Run("first", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s, err := sampler.New(sampler.NewFS(""), pid)
					if err != nil {
						b.Fatal(err)
					}
					checkSample(b, s, tasks)
					s.Close()
				}
				reportPerThread(b, tasks)
			})
			b.Run("next", func(b *testing.B) {
				s, err := sampler.New(sampler.NewFS(""), pid)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				checkSample(b, s, tasks)
				b.ReportAllocs()
				for b.Loop() {
					checkSample(b, s, tasks)
				}
				reportPerThread(b, tasks)
			})
			b.Run("ps", func(b *testing.B) {
				args := append(psArgs[:len(psArgs):len(psArgs)], strconv.Itoa(pid))
				for b.Loop() {
					out, err := exec.Command(ps, args...).Output()
					if err != nil {
						b.Fatalf("%s %v: %v", ps, args, err)
					}
					// A header line, then one line per thread.
					if lines := bytes.Count(out, []byte("\n")); lines != tasks+1 {
						b.Fatalf("ps printed %d lines, want %d", lines, tasks+1)
					}
				}
				reportPerThread(b, tasks)
			})
		})
	}
}

// checkSample takes a sample and fails unless it saw every thread, so a
// benchmark cannot get fast by reading less.
func checkSample(b *testing.B, s *sampler.Sampler, tasks int) {
	b.Helper()
	smp, err := s.Sample()
	if err != nil {
		b.Fatal(err)
	}
	if len(smp.Threads) != tasks {
		b.Fatalf("sampled %d threads, want %d", len(smp.Threads), tasks)
	}
	for i := range smp.Threads {
		if th := &smp.Threads[i]; th.Exited || th.Syscall.Unknown {
			b.Fatalf("thread %d not read: %+v", th.TID, *th)
		}
	}
}

func reportPerThread(b *testing.B, tasks int) {
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tasks), "ns/thread")
	}
}

// BenchmarkProcFile breaks a sample down into what the kernel charges for
// it, per thread of a manythreads victim: listing /proc/PID/task, one pread
// of each per-thread file through a descriptor already open (what a sample
// after the first does), and one open+close of it by path (what the first
// sample, ps, and reads over the sampler's descriptor budget add).
func BenchmarkProcFile(b *testing.B) {
	bin := testvictim.Build(b, "manythreads")
	for _, n := range []int{1000, 10000} {
		b.Run("threads="+strconv.Itoa(n), func(b *testing.B) {
			v := testvictim.Start(b, bin, strconv.Itoa(n))
			dir := "/proc/" + strconv.Itoa(v.PID) + "/task/"
			tids := taskNames(b, dir)
			if len(tids) != n+1 {
				b.Fatalf("%s lists %d threads, want %d", dir, len(tids), n+1)
			}
			b.Run("readdir", func(b *testing.B) {
				for b.Loop() {
					taskNames(b, dir)
				}
				reportPerThread(b, len(tids))
			})
			for _, name := range []string{"stat", "status", "wchan", "syscall", "schedstat"} {
				paths := make([]string, len(tids))
				for i, tid := range tids {
					paths[i] = dir + tid + "/" + name
				}
				buf := make([]byte, 4096)
				b.Run(name+"/pread", func(b *testing.B) {
					fds := make([]int, 0, len(paths))
					defer func() {
						for _, fd := range fds {
							unix.Close(fd)
						}
					}()
					for _, p := range paths {
						fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
						if err != nil {
							b.Fatalf("opening %s: %v (with %d open; ulimit -n?)", p, err, len(fds))
						}
						fds = append(fds, fd)
					}
					for b.Loop() {
						for _, fd := range fds {
							if _, err := unix.Pread(fd, buf, 0); err != nil {
								b.Fatal(err)
							}
						}
					}
					reportPerThread(b, len(tids))
				})
				b.Run(name+"/open", func(b *testing.B) {
					for b.Loop() {
						for _, p := range paths {
							fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
							if err != nil {
								b.Fatalf("opening %s: %v", p, err)
							}
							unix.Close(fd)
						}
					}
					reportPerThread(b, len(tids))
				})
			}
		})
	}
}

func taskNames(b *testing.B, dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		b.Fatalf("listing %s: %v", dir, err)
	}
	return names
}

// raiseNoFile lifts the soft descriptor limit to the hard one, as hangdoc's
// main does once for the whole process.
func raiseNoFile() {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) == nil && r.Cur < r.Max {
		unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: r.Max, Max: r.Max})
	}
}
