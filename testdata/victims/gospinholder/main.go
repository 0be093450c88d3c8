// Command gospinholder is a victim: a mutex held by a goroutine that spins
// forever, so its waiters never get it.
//
//	func (c *Cache) Refresh() {
//		c.mu.Lock()
//		defer c.mu.Unlock()
//		for x != 0 { x = step(x) } // never ends
//	}
//
// Nine goroutines call Refresh on one Cache. The first takes c.mu and loops
// on a small non-inlined function, keeping a CPU busy ([running] or
// [runnable] in a dump, with main.(*Cache).Refresh past its Lock call and
// maybe main.step on its stack); the other eight park in c.mu.Lock
// ([sync.Mutex.Lock], at Refresh's Lock call).
//
// Like every Go victim, it keeps itself alive with a TCP listener on
// 127.0.0.1:0. With -pprof the listener serves net/http/pprof
// (http.DefaultServeMux); without it, a mux with only "/".
//
// A goroutine polls runtime.Stack until the holder is in main.spin and
// eight goroutines wait in [sync.Mutex.Lock] in main.wait, twice 100 ms
// apart, then prints
//
//	ready pid=P addr=127.0.0.1:PORT holder=GOID waiters=8
//
// If the hang is not reached within 60 s it writes the reason to stderr
// and exits 1.
//
// This directory is under testdata, so `go build ./...` and `go vet ./...`
// skip it; the tests build it with
//
//	go build -o DIR/gospinholder ./testdata/victims/gospinholder
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hangdoc/hangdoc/testdata/victims/govictim"
)

const waiters = 8

var (
	holder atomic.Int64
	sink   atomic.Uint64 // keeps the loop's result alive
)

// Cache is refreshed under its mutex.
type Cache struct {
	mu sync.Mutex
	x  uint64
}

// Refresh recomputes the cache under its lock until the value reaches 0,
// which an xorshift generator never does: the first caller spins holding
// c.mu, and every later caller waits for it.
func (c *Cache) Refresh() {
	c.mu.Lock()
	defer c.mu.Unlock()
	holder.CompareAndSwap(0, govictim.Goid())
	c.x = 1
	for i := 0; c.x != 0; i++ {
		c.x = step(c.x)
		if i%(1<<20) == 0 {
			sink.Store(c.x)
		}
	}
}

// step is one round of an xorshift generator.
//
//go:noinline
func step(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

func main() {
	pprof := flag.Bool("pprof", false, "serve net/http/pprof on the listener")
	flag.Parse()
	addr := govictim.Listen("gospinholder", *pprof)

	c := &Cache{}
	go c.Refresh()
	for holder.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for range waiters {
		go c.Refresh()
	}

	deadline := time.Now().Add(60 * time.Second)
	reason := "not checked"
	for time.Now().Before(deadline) {
		err := check()
		if err == nil {
			time.Sleep(100 * time.Millisecond)
			err = check()
		}
		if err == nil {
			fmt.Printf("ready pid=%d addr=%s holder=%d waiters=%d\n", os.Getpid(), addr, holder.Load(), waiters)
			select {}
		}
		reason = err.Error()
		time.Sleep(10 * time.Millisecond)
	}
	govictim.Fatal(fmt.Errorf("hang not reached within 60s: %s", reason))
}

// check verifies the hang from the goroutines' own stacks.
func check() error {
	spinning, waiting := false, 0
	for _, g := range govictim.Goroutines() {
		switch {
		case g.ID == holder.Load() && strings.Contains(g.Stack, "main.(*Cache).Refresh("):
			spinning = true
		case g.State == "sync.Mutex.Lock" && strings.Contains(g.Stack, "main.(*Cache).Refresh("):
			waiting++
		}
	}
	if !spinning {
		return fmt.Errorf("holder goroutine %d is not in main.(*Cache).Refresh", holder.Load())
	}
	if waiting != waiters {
		return fmt.Errorf("%d goroutines wait for c.mu in main.(*Cache).Refresh, want %d", waiting, waiters)
	}
	return nil
}
