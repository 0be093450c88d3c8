// Command parkedholder is a program recorded for TestBlockedMinority: a
// mutex held by main, which then parks for good in select {}; N goroutines
// queue on the mutex, 2N others wait to receive work that does not come.
// The holder parked for ever keeps its waiters blocked: the verdict must
// be blocked, led by the mutex and main, not idle.
//
// A goroutine polls runtime.Stack until the shape is in place, writes that
// dump to the file named by the argument and exits the program:
//
//	go run ./cmd/hangdoc/testdata/minority/parkedholder -n 200 DUMPFILE
//
// The directory is under testdata, so `go build ./...` skips it; the dump
// is committed beside it (dump.txt) and the test reads only the dump.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

var mu sync.Mutex

type job struct{ n int }

// worker waits for jobs.
//
//go:noinline
func worker(jobs <-chan job) {
	for j := range jobs {
		_ = j.n
	}
}

// update changes shared state under mu: it queues behind main.
//
//go:noinline
func update(counter *int) {
	mu.Lock()
	defer mu.Unlock()
	*counter++
}

func main() {
	n := flag.Int("n", 200, "goroutines queued on the mutex (twice as many workers wait for jobs)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: parkedholder [-n N] DUMPFILE")
		os.Exit(2)
	}
	jobs := make(chan job)
	for i := 0; i < 2**n; i++ {
		go worker(jobs)
	}
	mu.Lock()
	var counter int
	for i := 0; i < *n; i++ {
		go update(&counter)
	}
	go dump(flag.Arg(0), *n)
	select {}
}

// dump writes the dump once the shape is in place, and ends the program.
func dump(file string, n int) {
	deadline := time.Now().Add(30 * time.Second)
	for !(inPlace(2*n, "main.worker") && inPlace(n, "main.update") && inPlace(1, "main.main")) {
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "parkedholder: the shape was not reached within 30s")
			os.Exit(1)
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile(file, stacks(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// stacks is runtime.Stack of every goroutine, the buffer grown until the
// dump fits whole.
func stacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// inPlace reports at least want goroutines parked (not running) with fn
// on their stacks.
func inPlace(want int, fn string) bool {
	got := 0
	for _, rec := range bytes.Split(stacks(), []byte("\n\n")) {
		if bytes.Contains(rec, []byte(fn+"(")) && !bytes.Contains(rec, []byte("[running")) && !bytes.Contains(rec, []byte("[runnable")) {
			got++
		}
	}
	return got >= want
}
