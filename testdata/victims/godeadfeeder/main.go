// Command godeadfeeder is a victim: a worker pool whose feeder died
// without closing the jobs channel.
//
//	for job := range jobs { process(job) } // each of 6 workers
//
// The feeder goroutine sends three jobs, then hits a bad record, panics,
// recovers and returns, without close(jobs). The workers finish the three
// jobs and park in the range's receive ([chan receive], in main.worker)
// for ever; main parks in wg.Wait ([sync.WaitGroup.Wait]). No goroutine
// will ever send on jobs: the one that would is gone.
//
// Like every Go victim, it keeps itself alive with a TCP listener on
// 127.0.0.1:0. With -pprof the listener serves net/http/pprof
// (http.DefaultServeMux); without it, a mux with only "/".
//
// A goroutine polls runtime.Stack until the three jobs are done, the
// feeder is gone, the six workers are in [chan receive] in main.worker and
// main is in [sync.WaitGroup.Wait], twice 100 ms apart, then prints
//
//	ready pid=P addr=127.0.0.1:PORT workers=6 jobs=3 goids=G1,G2,...
//
// (goids: the workers' goroutine ids). If the hang is not reached within
// 60 s it writes the reason to stderr and exits 1.
//
// This directory is under testdata, so `go build ./...` and `go vet ./...`
// skip it; the tests build it with
//
//	go build -o DIR/godeadfeeder ./testdata/victims/godeadfeeder
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hangdoc/hangdoc/testdata/victims/govictim"
)

const (
	workers = 6
	sent    = 3 // jobs the feeder sends before it dies
)

var (
	done   atomic.Int64
	feeder atomic.Int64 // the feeder's goroutine id
	idsMu  sync.Mutex
	ids    []int64 // the workers' goroutine ids
)

// feed sends jobs until a bad record makes it panic; the recover keeps the
// program alive and the early return skips close(jobs).
func feed(jobs chan<- int, records []string) {
	feeder.Store(govictim.Goid())
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "feeder: %v (recovered; jobs left open)\n", r)
		}
	}()
	for _, rec := range records {
		n, err := strconv.Atoi(rec)
		if err != nil {
			panic(fmt.Sprintf("bad record %q", rec))
		}
		jobs <- n
	}
	close(jobs) // never reached
}

// worker processes jobs until the channel closes.
func worker(jobs <-chan int, wg *sync.WaitGroup) {
	defer wg.Done()
	idsMu.Lock()
	ids = append(ids, govictim.Goid())
	idsMu.Unlock()
	for job := range jobs {
		process(job)
	}
}

// process stands in for real work.
func process(job int) {
	time.Sleep(time.Duration(job) * time.Millisecond)
	done.Add(1)
}

func main() {
	pprof := flag.Bool("pprof", false, "serve net/http/pprof on the listener")
	flag.Parse()
	addr := govictim.Listen("godeadfeeder", *pprof)

	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go worker(jobs, &wg)
	}
	go feed(jobs, []string{"5", "10", "15", "x20", "25"})
	go report(addr)
	wg.Wait()
	govictim.Fatal(errors.New("the workers returned"))
}

// report polls check and prints the ready line.
func report(addr string) {
	deadline := time.Now().Add(60 * time.Second)
	reason := "not checked"
	for time.Now().Before(deadline) {
		err := check()
		if err == nil {
			time.Sleep(100 * time.Millisecond)
			err = check()
		}
		if err == nil {
			idsMu.Lock()
			s := make([]string, len(ids))
			for i, id := range ids {
				s[i] = strconv.FormatInt(id, 10)
			}
			idsMu.Unlock()
			fmt.Printf("ready pid=%d addr=%s workers=%d jobs=%d goids=%s\n",
				os.Getpid(), addr, workers, sent, strings.Join(s, ","))
			return
		}
		reason = err.Error()
		time.Sleep(10 * time.Millisecond)
	}
	govictim.Fatal(fmt.Errorf("hang not reached within 60s: %s", reason))
}

// check verifies the hang from the goroutines' own stacks.
func check() error {
	if n := done.Load(); n != sent {
		return fmt.Errorf("%d jobs done, want %d", n, sent)
	}
	f := feeder.Load()
	if f == 0 {
		return errors.New("the feeder has not started")
	}
	idsMu.Lock()
	want := slices.Clone(ids)
	idsMu.Unlock()
	if len(want) != workers {
		return fmt.Errorf("%d workers started, want %d", len(want), workers)
	}
	receiving, waiting := 0, false
	for _, g := range govictim.Goroutines() {
		switch {
		case g.ID == f:
			return fmt.Errorf("the feeder (goroutine %d) is still alive", f)
		case slices.Contains(want, g.ID) && g.State == "chan receive" && strings.Contains(g.Stack, "main.worker("):
			receiving++
		case g.ID == 1 && g.State == "sync.WaitGroup.Wait":
			waiting = true
		}
	}
	if receiving != workers {
		return fmt.Errorf("%d workers in [chan receive], want %d", receiving, workers)
	}
	if !waiting {
		return errors.New("main is not in [sync.WaitGroup.Wait]")
	}
	return nil
}
