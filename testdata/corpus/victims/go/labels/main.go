// labels: goroutines under pprof.Do with pprof labels. request=r1 holds mu
// and waits on a channel; r2 and r3 wait for mu; r4 (two labels, one value
// with a comma, a space and brackets) waits on a channel with no sender; one
// unlabeled goroutine waits for mu too. Which Go versions print the labels in
// the goroutine header, and how, is the point of this victim. The same source
// is built in a module that declares go 1.27 (../../go127/labels).
package main

import (
	"context"
	"flag"
	"runtime/pprof"
	"sync"

	"corpusvictims/internal/hang"
)

var (
	mu    sync.Mutex
	never = make(chan struct{})
	gids  = make(chan int64)
)

func holdLock(ctx context.Context) {
	mu.Lock()
	defer mu.Unlock()
	gids <- hang.GID()
	<-never
}

func waitLock(ctx context.Context) {
	gids <- hang.GID()
	mu.Lock()
	defer mu.Unlock()
}

func waitChan(ctx context.Context) {
	gids <- hang.GID()
	<-never
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)
	ctx := context.Background()

	go pprof.Do(ctx, pprof.Labels("request", "r1"), holdLock)
	holder := <-gids
	hang.Await("holder r1", func(d string) bool { return hang.Parked(d, holder, "main.holdLock") })

	var waiters []int64
	for _, r := range []string{"r2", "r3"} {
		go pprof.Do(ctx, pprof.Labels("request", r), waitLock)
		waiters = append(waiters, <-gids)
	}
	go waitLock(ctx)
	unlabeled := <-gids
	waiters = append(waiters, unlabeled)
	hang.Await("lock waiters", func(d string) bool { return hang.AllParked(d, waiters, "sync.(*Mutex).Lock") })

	go pprof.Do(ctx, pprof.Labels("request", "r4", "tenant", "acme, inc. [eu]"), waitChan)
	r4 := <-gids
	hang.Await("r4", func(d string) bool { return hang.Parked(d, r4, "main.waitChan") })

	hang.Ready("holder="+hang.IDs([]int64{holder}), "waiters="+hang.IDs(waiters), "unlabeled="+hang.IDs([]int64{unlabeled}),
		"chan="+hang.IDs([]int64{r4}), "addr="+ln.Addr().String())
	hang.Serve(ln, *httpAddr != "")
}
