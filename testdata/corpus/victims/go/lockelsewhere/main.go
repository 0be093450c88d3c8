// lockelsewhere: the lock holder took s.mu in refresh() and waits there on a
// channel that is never sent to; three request goroutines wait for s.mu in
// get(), another function. Holder and waiters share the receiver type and the
// expression s.mu, nothing more.
package main

import (
	"flag"
	"sync"

	"corpusvictims/internal/hang"
)

type Service struct {
	mu       sync.Mutex
	cache    map[string]string
	upstream chan map[string]string
}

func (s *Service) refresh(gids chan<- int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gids <- hang.GID()
	s.cache = <-s.upstream // nobody ever sends: the holder waits here, s.mu held
}

func (s *Service) get(key string, gids chan<- int64) string {
	gids <- hang.GID()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache[key]
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)

	s := &Service{cache: map[string]string{}, upstream: make(chan map[string]string)}
	gids := make(chan int64)
	go s.refresh(gids)
	holder := <-gids
	hang.Await("holder in refresh", func(d string) bool { return hang.Parked(d, holder, "main.(*Service).refresh") })

	var waiters []int64
	for _, k := range []string{"a", "b", "c"} {
		go s.get(k, gids)
		waiters = append(waiters, <-gids)
	}
	hang.Await("waiters in get", func(d string) bool { return hang.AllParked(d, waiters, "main.(*Service).get") })

	hang.Ready("holder="+hang.IDs([]int64{holder}), "waiters="+hang.IDs(waiters), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
