// httpblock: an HTTP server whose handlers block. One /slow handler took mu
// (which guards the single backend connection) and waits for the backend's
// reply on a channel nobody sends to; two /query handlers wait for mu; one
// /events handler waits on a channel with no sender. Goroutine 1 is the idle
// accept loop in net/http.(*Server).Serve; every handler goroutine was created
// by it. The requests come from raw connections the victim opens to itself
// and keeps open, so no client goroutines remain.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"

	"corpusvictims/internal/hang"
)

var (
	mu      sync.Mutex
	backend = make(chan string)
	events  = make(chan string)
	gids    = make(chan int64, 16)
	conns   []net.Conn // kept open so the handlers' requests stay in flight
)

func handleSlow(w http.ResponseWriter, r *http.Request) {
	mu.Lock()
	defer mu.Unlock()
	gids <- hang.GID()
	reply := <-backend // the backend never answers
	fmt.Fprintln(w, reply)
}

func handleQuery(w http.ResponseWriter, r *http.Request) {
	gids <- hang.GID()
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintln(w, "ok")
}

func handleEvents(w http.ResponseWriter, r *http.Request) {
	gids <- hang.GID()
	fmt.Fprintln(w, <-events)
}

func request(addr, path string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "httpblock: dialing %s: %v\n", addr, err)
		os.Exit(3)
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: corpus\r\n\r\n", path)
	conns = append(conns, c)
}

func setup(addr string) {
	request(addr, "/slow")
	holder := <-gids
	hang.Await("holder in handleSlow", func(d string) bool { return hang.Parked(d, holder, "main.handleSlow") })
	var waiters []int64
	for i := 0; i < 2; i++ {
		request(addr, "/query")
		waiters = append(waiters, <-gids)
	}
	hang.Await("waiters in handleQuery", func(d string) bool { return hang.AllParked(d, waiters, "sync.(*Mutex).Lock") })
	request(addr, "/events")
	ev := <-gids
	hang.Await("events handler", func(d string) bool { return hang.Parked(d, ev, "main.handleEvents") })
	hang.Ready("holder="+hang.IDs([]int64{holder}), "waiters="+hang.IDs(waiters), "chan="+hang.IDs([]int64{ev}), "addr="+addr)
}

func main() {
	ln := hang.Listen("")
	http.HandleFunc("/slow", handleSlow)
	http.HandleFunc("/query", handleQuery)
	http.HandleFunc("/events", handleEvents)
	go setup(ln.Addr().String())
	hang.Serve(ln, true)
}
