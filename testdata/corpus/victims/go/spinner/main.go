// spinner: -spinners goroutines spin in a compare-and-swap loop waiting for a
// state nobody sets (a tight loop with no call in it: each is [running] or
// preempted in every dump). Goroutine 1 is an idle accept loop.
package main

import (
	"flag"
	"strings"
	"sync/atomic"

	"corpusvictims/internal/hang"
)

var state atomic.Int32

func spinUntilReady() {
	for !state.CompareAndSwap(1, 2) {
	}
}

func spin(gids chan<- int64) {
	gids <- hang.GID()
	spinUntilReady()
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	n := flag.Int("spinners", 1, "spinning goroutines")
	flag.Parse()
	ln := hang.Listen(*httpAddr)
	gids := make(chan int64)
	var spinners []int64
	for i := 0; i < *n; i++ {
		go spin(gids)
		spinners = append(spinners, <-gids)
	}
	hang.Await("spinners in their loop", func(d string) bool {
		for _, g := range spinners {
			if _, body, ok := hang.Record(d, g); !ok || !strings.Contains(body, "main.spinUntilReady") {
				return false
			}
		}
		return true
	})
	hang.Ready("spinners="+hang.IDs(spinners), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
