// poolnofeeder: a worker pool whose feeder is gone. The feeder sent two jobs
// and returned on an error without close(jobs); the three workers wait in
// `for j := range jobs`, and goroutine 1 waits in wg.Wait for workers that
// will never finish. A listener goroutine keeps the process alive.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"

	"corpusvictims/internal/hang"
)

type job struct{ id int }

func worker(jobs <-chan job, wg *sync.WaitGroup, gids chan<- int64) {
	defer wg.Done()
	gids <- hang.GID()
	for j := range jobs {
		_ = j.id * 2
	}
}

func feed(jobs chan<- job, gids chan<- int64) error {
	gids <- hang.GID()
	for i := 0; i < 5; i++ {
		if i == 2 {
			return errors.New("feeder: reading input: unexpected EOF") // forgot close(jobs)
		}
		jobs <- job{i}
	}
	close(jobs)
	return nil
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)
	go hang.Serve(ln, *httpAddr != "")

	jobs := make(chan job)
	gids := make(chan int64)
	var wg sync.WaitGroup
	var workers []int64
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go worker(jobs, &wg, gids)
		workers = append(workers, <-gids)
	}
	go func() {
		if err := feed(jobs, gids); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	feeder := <-gids
	go func() {
		hang.Await("pool stuck", func(d string) bool {
			_, _, feederAlive := hang.Record(d, feeder)
			return !feederAlive && hang.AllParked(d, workers, "main.worker") &&
				hang.Parked(d, 1, "main.main") && strings.Contains(d, "sync.(*WaitGroup).Wait")
		})
		hang.Ready("main=1", "workers="+hang.IDs(workers), "addr="+ln.Addr().String())
	}()
	wg.Wait()
}
