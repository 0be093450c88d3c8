// copylock: a value receiver copies a locked mutex. Counter.Hold takes
// c.mu and waits on a channel; Counter.Get has a value receiver, so each
// call copies the Counter, its mutex locked at the time, and waits for
// its own copy to unlock: nobody can (go vet: copylocks).
package main

import (
	"flag"
	"sync"

	"corpusvictims/internal/hang"
)

type Counter struct {
	mu sync.Mutex
	n  int
}

func (c *Counter) Hold(never <-chan struct{}, gids chan<- int64) {
	c.mu.Lock()
	gids <- hang.GID()
	<-never
	c.mu.Unlock()
}

//go:noinline
func (c Counter) Get(gids chan<- int64) int {
	gids <- hang.GID()
	c.mu.Lock() // the copy's mutex: locked when it was copied
	defer c.mu.Unlock()
	return c.n
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)

	c := &Counter{}
	never := make(chan struct{})
	gids := make(chan int64)
	go c.Hold(never, gids)
	holder := <-gids
	hang.Await("holder parked", func(d string) bool { return hang.Parked(d, holder, "main.(*Counter).Hold") })

	go c.Get(gids)
	copier := <-gids
	hang.Await("copier in Lock", func(d string) bool { return hang.Parked(d, copier, "sync.(*Mutex).Lock") })

	hang.Ready("holder="+hang.IDs([]int64{holder}), "copier="+hang.IDs([]int64{copier}), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
