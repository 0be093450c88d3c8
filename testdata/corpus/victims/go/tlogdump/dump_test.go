// Package tlogdump is a test that logs a goroutine dump with t.Log while its
// workers are stuck (a holder of pool.mu waiting on a channel, two waiters),
// as tests do when a condition never comes; go test -v indents it.
package tlogdump

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"corpusvictims/internal/hang"
)

type pool struct {
	mu   sync.Mutex
	free []int
}

func (p *pool) drain(never <-chan struct{}, gids chan<- int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	gids <- hang.GID()
	<-never
}

func (p *pool) take(gids chan<- int64) int {
	gids <- hang.GID()
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

func TestWorkersStuck(t *testing.T) {
	p := &pool{}
	gids := make(chan int64)
	go p.drain(make(chan struct{}), gids)
	holder := <-gids
	hang.Await("holder in drain", func(d string) bool { return hang.Parked(d, holder, "(*pool).drain") })
	var waiters []int64
	for i := 0; i < 2; i++ {
		go p.take(gids)
		waiters = append(waiters, <-gids)
	}
	hang.Await("waiters in take", func(d string) bool { return hang.AllParked(d, waiters, "(*pool).take") })
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Logf("workers did not finish; goroutines:\n%s", buf)
	if f := os.Getenv("CORPUS_READY"); f != "" {
		line := fmt.Sprintf("ready pid=%d holder=%d waiters=%s logger=%d\n", os.Getpid(), holder, hang.IDs(waiters), hang.GID())
		if err := os.WriteFile(f, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
