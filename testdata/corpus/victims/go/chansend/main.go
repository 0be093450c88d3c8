// chansend: three producers send their results on an unbuffered channel
// whose only consumer returned early on an error without reading it. The
// senders wait forever; the idle accept loop keeps the runtime from calling
// it a deadlock.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"corpusvictims/internal/hang"
)

func produce(results chan<- int, i int, gids chan<- int64) {
	gids <- hang.GID()
	results <- i * i // nobody receives
}

func consume(results <-chan int, done chan<- error) {
	done <- errors.New("consumer: sink not configured") // returns before reading results
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)

	results := make(chan int)
	done := make(chan error)
	go consume(results, done)
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	gids := make(chan int64)
	var senders []int64
	for i := 0; i < 3; i++ {
		go produce(results, i, gids)
		senders = append(senders, <-gids)
	}
	hang.Await("senders", func(d string) bool { return hang.AllParked(d, senders, "main.produce") })
	hang.Ready("senders="+hang.IDs(senders), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
