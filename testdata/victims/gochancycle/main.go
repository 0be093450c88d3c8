// Command gochancycle is a victim: two goroutines each send on a channel
// the other would receive from only after its own send.
//
//	func ping(a, b chan int) { a <- 1; <-b }
//	func pong(a, b chan int) { b <- 1; <-a }
//
// With unbuffered channels both park in their first send ([chan send]) for
// ever: a two-goroutine channel cycle that the runtime cannot call a
// deadlock while anything else (the listener) is alive.
//
// Like every Go victim, it keeps itself alive with a TCP listener on
// 127.0.0.1:0. With -pprof the listener serves net/http/pprof
// (http.DefaultServeMux); without it, a mux with only "/".
//
// A goroutine polls runtime.Stack until ping and pong are both in
// [chan send] in main.ping and main.pong, twice 100 ms apart, then prints
//
//	ready pid=P addr=127.0.0.1:PORT ping=GOID pong=GOID
//
// If the hang is not reached within 60 s it writes the reason to stderr
// and exits 1.
//
// This directory is under testdata, so `go build ./...` and `go vet ./...`
// skip it; the tests build it with
//
//	go build -o DIR/gochancycle ./testdata/victims/gochancycle
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/testdata/victims/govictim"
)

// ping sends on a, then waits on b.
func ping(a, b chan int, id chan<- int64) {
	id <- govictim.Goid()
	a <- 1
	<-b
	govictim.Fatal(errors.New("ping got through"))
}

// pong sends on b, then waits on a.
func pong(a, b chan int, id chan<- int64) {
	id <- govictim.Goid()
	b <- 1
	<-a
	govictim.Fatal(errors.New("pong got through"))
}

func main() {
	pprof := flag.Bool("pprof", false, "serve net/http/pprof on the listener")
	flag.Parse()
	addr := govictim.Listen("gochancycle", *pprof)

	a, b := make(chan int), make(chan int)
	pingID, pongID := make(chan int64, 1), make(chan int64, 1)
	go ping(a, b, pingID)
	go pong(a, b, pongID)
	pi, po := <-pingID, <-pongID

	deadline := time.Now().Add(60 * time.Second)
	reason := "not checked"
	for time.Now().Before(deadline) {
		err := check(pi, po)
		if err == nil {
			time.Sleep(100 * time.Millisecond)
			err = check(pi, po)
		}
		if err == nil {
			fmt.Printf("ready pid=%d addr=%s ping=%d pong=%d\n", os.Getpid(), addr, pi, po)
			select {}
		}
		reason = err.Error()
		time.Sleep(10 * time.Millisecond)
	}
	govictim.Fatal(fmt.Errorf("hang not reached within 60s: %s", reason))
}

// check verifies the hang from the goroutines' own stacks.
func check(pi, po int64) error {
	found := map[int64]bool{}
	for _, g := range govictim.Goroutines() {
		switch {
		case g.ID == pi && g.State == "chan send" && strings.Contains(g.Stack, "main.ping("):
			found[pi] = true
		case g.ID == po && g.State == "chan send" && strings.Contains(g.Stack, "main.pong("):
			found[po] = true
		}
	}
	if !found[pi] || !found[po] {
		return fmt.Errorf("ping (goroutine %d) and pong (goroutine %d) not both in [chan send]", pi, po)
	}
	return nil
}
