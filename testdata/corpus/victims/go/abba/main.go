// abba: alice(a, b) locks a then b, bob(a, b) locks b then a — the classic
// lock-order deadlock. A barrier makes each take its first lock before either
// tries its second, so both are always stuck. Built with and without
// -gcflags=all=-N -l (unoptimized, the mutex addresses stay visible as frame
// arguments).
package main

import (
	"flag"
	"sync"

	"corpusvictims/internal/hang"
)

var (
	firstLocks sync.WaitGroup
	gids       = make(chan int64, 2)
)

func alice(a, b *sync.Mutex) {
	a.Lock()
	defer a.Unlock()
	gids <- hang.GID()
	firstLocks.Done()
	firstLocks.Wait()
	b.Lock() // bob holds b
	defer b.Unlock()
}

func bob(a, b *sync.Mutex) {
	b.Lock()
	defer b.Unlock()
	gids <- hang.GID()
	firstLocks.Done()
	firstLocks.Wait()
	a.Lock() // alice holds a
	defer a.Unlock()
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)

	var a, b sync.Mutex
	firstLocks.Add(2)
	go alice(&a, &b)
	ga := <-gids
	go bob(&a, &b)
	gb := <-gids
	hang.Await("alice and bob on their second lock", func(d string) bool {
		return hang.Parked(d, ga, "main.alice") && hang.Parked(d, gb, "main.bob") &&
			hang.Parked(d, ga, "sync.(*Mutex).Lock") && hang.Parked(d, gb, "sync.(*Mutex).Lock")
	})
	hang.Ready("alice="+hang.IDs([]int64{ga}), "bob="+hang.IDs([]int64{gb}), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
