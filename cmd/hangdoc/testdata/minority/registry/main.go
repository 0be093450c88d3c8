// Command registry is a server-shaped program recorded for
// TestBlockedMinority: a blocked minority behind an idle majority.
//
// 2N goroutines pump connections, each parked in a select for traffic
// (main.(*conn).pump): idle, waiting for work. One goroutine, the flusher,
// takes the registry's mutex and waits on a channel for an ack that never
// comes; N goroutines queue on that mutex in (*registry).register. The
// verdict must be blocked, led by the mutex and its holder, however many
// connections stand idle around it.
//
// It polls its own runtime.Stack until the shape is in place, writes that
// dump to the file named by its argument and exits:
//
//	go run ./cmd/hangdoc/testdata/minority/registry -n 200 DUMPFILE
//
// The directory is under testdata, so `go build ./...` skips it; the dump
// is committed beside it (dump.txt) and the test reads only the dump.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

type conn struct {
	id   int
	in   chan []byte
	quit chan struct{}
}

// pump moves a connection's traffic: parked in select until some comes.
//
//go:noinline
func (c *conn) pump() {
	for {
		select {
		case b := <-c.in:
			_ = b
		case <-c.quit:
			return
		}
	}
}

type registry struct {
	mu    sync.Mutex
	conns map[int]*conn
}

// flush takes the registry's lock and, under it, waits for an ack the
// peer never sends.
//
//go:noinline
func (r *registry) flush(ack <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	<-ack
}

// register adds a connection: it queues on the registry's lock.
//
//go:noinline
func (r *registry) register(c *conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns[c.id] = c
}

func main() {
	n := flag.Int("n", 200, "goroutines queued on the registry's mutex (twice as many connections pump)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: registry [-n N] DUMPFILE")
		os.Exit(2)
	}
	r := &registry{conns: map[int]*conn{}}
	for i := 0; i < 2**n; i++ {
		c := &conn{id: i, in: make(chan []byte), quit: make(chan struct{})}
		go c.pump()
	}
	go r.flush(make(chan struct{}))
	for !inPlace(1, "main.(*registry).flush") {
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < *n; i++ {
		go r.register(&conn{id: 2**n + i})
	}
	deadline := time.Now().Add(30 * time.Second)
	for !(inPlace(2**n, "main.(*conn).pump") && inPlace(*n, "main.(*registry).register")) {
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "registry: the shape was not reached within 30s")
			os.Exit(1)
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile(flag.Arg(0), stacks(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// stacks is runtime.Stack of every goroutine, the buffer grown until the
// dump fits whole.
func stacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// inPlace reports at least want goroutines parked (not running) with fn
// on their stacks.
func inPlace(want int, fn string) bool {
	got := 0
	for _, rec := range bytes.Split(stacks(), []byte("\n\n")) {
		if bytes.Contains(rec, []byte(fn+"(")) && !bytes.Contains(rec, []byte("[running")) && !bytes.Contains(rec, []byte("[runnable")) {
			got++
		}
	}
	return got >= want
}
