// Command inflight is an HTTP server recorded for TestHarnessAndRequests:
// its handler waits on a channel nobody sends on, so every request stays
// in flight. It serves on 127.0.0.1:0, sends itself N requests over raw
// TCP connections (no client goroutine reads them), polls its own
// runtime.Stack until the N handlers are parked, writes that dump to the
// file named by its argument and exits:
//
//	go run ./cmd/hangdoc/testdata/harness/inflight -n 40 DUMPFILE
//
// The directory is under testdata, so `go build ./...` skips it; the dump
// is committed beside it (dump.txt) and the test reads only the dump.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"
)

type api struct {
	results chan []byte // nobody ever sends
}

// lookup waits for a result that never comes.
//
//go:noinline
func (a *api) lookup(w http.ResponseWriter, r *http.Request) {
	w.Write(<-a.results)
}

func main() {
	n := flag.Int("n", 40, "requests in flight")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: inflight [-n N] DUMPFILE")
		os.Exit(2)
	}
	a := &api{results: make(chan []byte)}
	mux := http.NewServeMux()
	mux.HandleFunc("/lookup", a.lookup)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go http.Serve(ln, mux)
	var conns []net.Conn // kept open: each holds its request in flight
	for i := 0; i < *n; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(c, "GET /lookup?id=%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
		conns = append(conns, c)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !inPlace(*n, "main.(*api).lookup") {
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "inflight: the handlers were not all parked within 30s")
			os.Exit(1)
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile(flag.Arg(0), stacks(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = conns
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
