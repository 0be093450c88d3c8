// Command goserver is a victim shaped like a busy chat server, for the
// live benchmark (bench/live.sh): -n goroutines, each working on objects
// of its own (a connection, a session), so the argument words of their
// frames differ and no two goroutines read alike, as in a real server:
//
//   - a connection's read loop parked in select on its own channels;
//   - its writer parked receiving from its own queue;
//   - a session's handler parked receiving its own reply;
//   - pairs on a connection's own write mutex: one holds it and waits
//     for an acknowledgement that never comes, one is queued behind it;
//   - handlers queued on the registry's one sync.Mutex, whose holder
//     waits sending on a channel nobody reads.
//
// The functions that park are not inlined, so that a traceback prints
// their argument words (an inlined frame prints "(...)", which would
// make twins of them).
//
// Like every Go victim, it keeps itself alive with a TCP listener on
// 127.0.0.1:0 (with -pprof it serves net/http/pprof there). Once every
// goroutine it started is parked, and the registry's waiters are queued
// on its mutex, it prints
//
//	ready pid=P addr=127.0.0.1:PORT goroutines=N
//
// With -dump FILE it first writes runtime.Stack of every goroutine to
// FILE. If that takes over 120 s it writes the reason to stderr and exits 1.
//
// This directory is under testdata, so `go build ./...` and `go vet ./...`
// skip it; build it with
//
//	go build -o DIR/goserver ./testdata/victims/goserver
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hangdoc/hangdoc/testdata/victims/govictim"
)

// Conn is one client's connection.
type Conn struct {
	id   int
	in   chan []byte
	out  chan []byte
	quit chan struct{}
	wmu  sync.Mutex
	ack  chan struct{}
}

// Session is one client's session: its requests' replies.
type Session struct {
	conn  *Conn
	reply chan []byte
}

// Registry is the server's table of connections, under one mutex.
type Registry struct {
	mu     sync.Mutex
	conns  map[int]*Conn
	notify chan int
}

var parked atomic.Int64

//go:noinline
func (c *Conn) readLoop(s *Session) {
	parked.Add(1)
	select {
	case b := <-c.in:
		s.reply <- b
	case <-c.quit:
	}
}

//go:noinline
func (c *Conn) writeLoop() {
	parked.Add(1)
	for b := range c.out {
		_ = b
	}
}

//go:noinline
func (s *Session) await(id int) []byte {
	parked.Add(1)
	b := <-s.reply
	_ = id
	return b
}

// Send writes b under the connection's write mutex, and waits for the
// peer's acknowledgement holding it.
//
//go:noinline
func (c *Conn) Send(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	parked.Add(1)
	<-c.ack
	_ = b
}

// Register adds c to the table, and tells the broadcaster.
//
//go:noinline
func (r *Registry) Register(c *Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	parked.Add(1)
	r.conns[c.id] = c
	r.notify <- c.id
}

func main() {
	n := flag.Int("n", 10000, "goroutines to start")
	pprof := flag.Bool("pprof", false, "serve net/http/pprof on the listener")
	dump := flag.String("dump", "", "once ready, write runtime.Stack of every goroutine to this file (for a parser to compare with)")
	flag.Parse()
	addr := govictim.Listen("goserver", *pprof)

	reg := &Registry{conns: map[int]*Conn{}, notify: make(chan int)}
	// The registry's holder first, so that the others queue behind it.
	holder := &Conn{id: 0}
	go reg.Register(holder)
	for parked.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	started, lockWaiters, sendWaiters := 1, 0, 0
	for id := 1; started < *n; id++ {
		c := &Conn{id: id, in: make(chan []byte), out: make(chan []byte), quit: make(chan struct{}), ack: make(chan struct{})}
		s := &Session{conn: c, reply: make(chan []byte)}
		switch k := id % 100; {
		case k < 40:
			go c.readLoop(s)
			started++
		case k < 70:
			go c.writeLoop()
			started++
		case k < 90:
			go s.await(id)
			started++
		case k < 96 && started+2 <= *n:
			// The holder of c.wmu, and once it holds it, one queued
			// behind it.
			go c.Send(make([]byte, 64))
			for c.wmu.TryLock() {
				c.wmu.Unlock()
				runtime.Gosched()
			}
			go c.Send(nil)
			started += 2
			sendWaiters++
		case k >= 96:
			go reg.Register(c)
			started++
			lockWaiters++
		}
	}
	// Every goroutine says it parked but those queued on a mutex.
	want := int64(started - lockWaiters - sendWaiters)
	deadline := time.Now().Add(120 * time.Second)
	reason := "not checked"
	for time.Now().Before(deadline) {
		err := check(want, lockWaiters, sendWaiters)
		if err == nil {
			if *dump != "" {
				writeDump(*dump)
			}
			fmt.Printf("ready pid=%d addr=%s goroutines=%d\n", os.Getpid(), addr, *n)
			select {}
		}
		reason = err.Error()
		time.Sleep(50 * time.Millisecond)
	}
	govictim.Fatal(fmt.Errorf("hang not reached within 120s: %s", reason))
}

// writeDump writes runtime.Stack(buf, true) to path.
func writeDump(path string) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		govictim.Fatal(err)
	}
}

// check verifies that the goroutines are parked where they should be.
func check(want int64, lockWaiters, sendWaiters int) error {
	if p := parked.Load(); p < want {
		return fmt.Errorf("%d goroutines parked, want %d", p, want)
	}
	registry, send := 0, 0
	for _, g := range govictim.Goroutines() {
		if g.State != "sync.Mutex.Lock" {
			continue
		}
		switch {
		case strings.Contains(g.Stack, "main.(*Registry).Register("):
			registry++
		case strings.Contains(g.Stack, "main.(*Conn).Send("):
			send++
		}
	}
	if registry != lockWaiters || send != sendWaiters {
		return fmt.Errorf("%d goroutines queued on the registry's mutex (want %d), %d on a connection's (want %d)", registry, lockWaiters, send, sendWaiters)
	}
	return nil
}
