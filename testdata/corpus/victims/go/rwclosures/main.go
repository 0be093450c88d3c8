// rwclosures: one sync.RWMutex, mu, captured by three closures. A reader
// takes mu.RLock() and waits on a channel on the same line; a writer
// queues in mu.Lock(); two later readers queue in mu.RLock() behind it,
// from a third closure. One lock, whatever the call site; its holder is
// the first reader.
package main

import (
	"flag"
	"sync"

	"corpusvictims/internal/hang"
)

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)

	var mu sync.RWMutex
	never := make(chan struct{})
	gids := make(chan int64)
	state := map[string]int{}

	go func() { gids <- hang.GID(); mu.RLock(); <-never }() // the reader holds it while it waits
	reader := <-gids
	hang.Await("reader parked", func(d string) bool { return hang.Parked(d, reader, "main.main.func1") })

	go func() {
		gids <- hang.GID()
		mu.Lock()
		state["w"]++
		mu.Unlock()
	}()
	writer := <-gids
	hang.Await("writer in Lock", func(d string) bool { return hang.Parked(d, writer, "sync.(*RWMutex).Lock") })

	read := func() {
		gids <- hang.GID()
		mu.RLock()
		_ = state["w"]
		mu.RUnlock()
	}
	var readers []int64
	for range 2 {
		go read()
		readers = append(readers, <-gids)
	}
	hang.Await("readers in RLock", func(d string) bool { return hang.AllParked(d, readers, "sync.(*RWMutex).RLock") })

	hang.Ready("holder="+hang.IDs([]int64{reader}), "writer="+hang.IDs([]int64{writer}), "waiters="+hang.IDs(readers), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
