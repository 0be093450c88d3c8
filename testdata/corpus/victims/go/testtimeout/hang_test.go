// Package testtimeout is a test that hangs until go test -timeout panics:
// a helper goroutine took store.mu and waits for a reply that never comes,
// and the test goroutine waits for store.mu in Put.
package testtimeout

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"corpusvictims/internal/hang"
)

type store struct {
	mu   sync.Mutex
	data map[string]string
}

func (s *store) sync(replies <-chan map[string]string, gids chan<- int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gids <- hang.GID()
	s.data = <-replies // never answered
}

func (s *store) Put(k, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[k] = v
}

func TestHang(t *testing.T) {
	s := &store{data: map[string]string{}}
	gids := make(chan int64)
	go s.sync(make(chan map[string]string), gids)
	holder := <-gids
	hang.Await("holder in sync", func(d string) bool { return hang.Parked(d, holder, "(*store).sync") })
	if f := os.Getenv("CORPUS_READY"); f != "" {
		line := fmt.Sprintf("ready pid=%d holder=%d waiter=%d\n", os.Getpid(), holder, hang.GID())
		if err := os.WriteFile(f, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.Put("k", "v")
}
