// rwmutex: a reader holds r.mu.RLock() in snapshot() and waits on a channel;
// a writer queues in r.mu.Lock() in put(); two later readers queue in
// r.mu.RLock() in lookup() behind the writer (a queued writer blocks new
// readers).
package main

import (
	"flag"
	"sync"

	"corpusvictims/internal/hang"
)

type Registry struct {
	mu      sync.RWMutex
	entries map[string]string
}

func (r *Registry) snapshot(export chan<- map[string]string, gids chan<- int64) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	gids <- hang.GID()
	export <- r.entries // the exporter never reads: the reader holds the read lock
}

func (r *Registry) put(k, v string, gids chan<- int64) {
	gids <- hang.GID()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[k] = v
}

func (r *Registry) lookup(k string, gids chan<- int64) string {
	gids <- hang.GID()
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.entries[k]
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)

	r := &Registry{entries: map[string]string{}}
	export := make(chan map[string]string)
	gids := make(chan int64)

	go r.snapshot(export, gids)
	reader := <-gids
	hang.Await("reader in snapshot", func(d string) bool { return hang.Parked(d, reader, "main.(*Registry).snapshot") })

	go r.put("k", "v", gids)
	writer := <-gids
	hang.Await("writer in put", func(d string) bool { return hang.Parked(d, writer, "sync.(*RWMutex).Lock") })

	var readers []int64
	for _, k := range []string{"a", "b"} {
		go r.lookup(k, gids)
		readers = append(readers, <-gids)
	}
	hang.Await("readers in lookup", func(d string) bool { return hang.AllParked(d, readers, "sync.(*RWMutex).RLock") })

	hang.Ready("holder="+hang.IDs([]int64{reader}), "writer="+hang.IDs([]int64{writer}), "waiters="+hang.IDs(readers), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
