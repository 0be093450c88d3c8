// rlockwriter: a recursive read lock with a writer queued. Stats takes
// c.mu.RLock() and, still holding it, calls Len, which takes c.mu.RLock()
// again; in between, Put queued in c.mu.Lock(). A queued writer blocks new
// readers, so Len waits for Put, which waits for Stats's read lock: a
// deadlock between the reader and the writer.
package main

import (
	"flag"
	"sync"

	"corpusvictims/internal/hang"
)

type Cache struct {
	mu sync.RWMutex
	m  map[string]int
}

func (c *Cache) Len() int {
	c.mu.RLock() // a writer is queued: new readers wait
	defer c.mu.RUnlock()
	return len(c.m)
}

func (c *Cache) Stats(gids chan<- int64, proceed <-chan struct{}) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	gids <- hang.GID()
	<-proceed
	return c.Len()
}

func (c *Cache) Put(k string, v int, gids chan<- int64) {
	gids <- hang.GID()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = v
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)

	c := &Cache{m: map[string]int{}}
	gids := make(chan int64)
	proceed := make(chan struct{})
	go c.Stats(gids, proceed)
	reader := <-gids
	hang.Await("reader holds its read lock", func(d string) bool { return hang.Parked(d, reader, "main.(*Cache).Stats") })

	go c.Put("k", 1, gids)
	writer := <-gids
	hang.Await("writer queued", func(d string) bool { return hang.Parked(d, writer, "sync.(*RWMutex).Lock") })

	close(proceed)
	hang.Await("reader back in RLock", func(d string) bool { return hang.Parked(d, reader, "main.(*Cache).Len") })

	hang.Ready("reader="+hang.IDs([]int64{reader}), "writer="+hang.IDs([]int64{writer}), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
