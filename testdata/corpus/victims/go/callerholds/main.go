// callerholds: the lock is held by a caller frame across a call, and by
// another type than its waiters'. (*Loader).Reload locks l.cache.mu and calls
// l.fetch(), which waits on a channel nobody sends to; (*Cache).Get waits for
// c.mu. The holder's innermost frame of the program is fetch, not the frame
// that took the lock.
package main

import (
	"flag"
	"sync"

	"corpusvictims/internal/hang"
)

type Cache struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *Cache) Get(key string, gids chan<- int64) int {
	gids <- hang.GID()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

type Loader struct {
	cache *Cache
	src   chan map[string]int
}

func (l *Loader) Reload(gids chan<- int64) {
	l.cache.mu.Lock()
	defer l.cache.mu.Unlock()
	gids <- hang.GID()
	l.cache.m = l.fetch()
}

func (l *Loader) fetch() map[string]int {
	return <-l.src // nobody ever sends
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)

	c := &Cache{m: map[string]int{}}
	l := &Loader{cache: c, src: make(chan map[string]int)}
	gids := make(chan int64)
	go l.Reload(gids)
	holder := <-gids
	hang.Await("holder in fetch", func(d string) bool { return hang.Parked(d, holder, "main.(*Loader).fetch") })

	var waiters []int64
	for _, k := range []string{"x", "y"} {
		go c.Get(k, gids)
		waiters = append(waiters, <-gids)
	}
	hang.Await("waiters in Get", func(d string) bool { return hang.AllParked(d, waiters, "main.(*Cache).Get") })

	hang.Ready("holder="+hang.IDs([]int64{holder}), "waiters="+hang.IDs(waiters), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
