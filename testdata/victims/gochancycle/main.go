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
// If the hang is not reached within 15 s it writes the reason to stderr
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
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ping sends on a, then waits on b.
func ping(a, b chan int, id chan<- int64) {
	id <- goid()
	a <- 1
	<-b
	fatal(errors.New("ping got through"))
}

// pong sends on b, then waits on a.
func pong(a, b chan int, id chan<- int64) {
	id <- goid()
	b <- 1
	<-a
	fatal(errors.New("pong got through"))
}

func main() {
	pprof := flag.Bool("pprof", false, "serve net/http/pprof on the listener")
	flag.Parse()
	addr := listen("gochancycle", *pprof)

	a, b := make(chan int), make(chan int)
	pingID, pongID := make(chan int64, 1), make(chan int64, 1)
	go ping(a, b, pingID)
	go pong(a, b, pongID)
	pi, po := <-pingID, <-pongID

	deadline := time.Now().Add(15 * time.Second)
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
	fatal(fmt.Errorf("hang not reached within 15s: %s", reason))
}

// check verifies the hang from the goroutines' own stacks.
func check(pi, po int64) error {
	found := map[int64]bool{}
	for _, g := range goroutines() {
		switch {
		case g.id == pi && g.state == "chan send" && strings.Contains(g.stack, "main.ping("):
			found[pi] = true
		case g.id == po && g.state == "chan send" && strings.Contains(g.stack, "main.pong("):
			found[po] = true
		}
	}
	if !found[pi] || !found[po] {
		return fmt.Errorf("ping (goroutine %d) and pong (goroutine %d) not both in [chan send]", pi, po)
	}
	return nil
}

// ---- shared by the Go victims (each is its own main package) ----

// listen keeps the process alive with a listener on 127.0.0.1:0 and
// returns its address. It serves pprof only when asked.
func listen(name string, pprof bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	var h http.Handler = http.DefaultServeMux
	if !pprof {
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "%s: no pprof here\n", name)
		})
		h = mux
	}
	go func() { fatal(http.Serve(ln, h)) }()
	return ln.Addr().String()
}

// goid is the calling goroutine's id, from runtime.Stack's first line
// "goroutine 18 [running]:".
func goid() int64 {
	var b [64]byte
	s := string(b[:runtime.Stack(b[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	id, err := strconv.ParseInt(s[:strings.IndexByte(s, ' ')], 10, 64)
	if err != nil {
		fatal(fmt.Errorf("goroutine id of %q: %v", s, err))
	}
	return id
}

type gor struct {
	id    int64
	state string // the bracket's first part: "IO wait", "sync.Mutex.Lock"
	stack string
}

// goroutines lists every goroutine with its state, from runtime.Stack.
func goroutines() []gor {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []gor
	for rec := range strings.SplitSeq(string(buf), "\n\n") {
		head, stack, _ := strings.Cut(rec, "\n")
		rest, ok := strings.CutPrefix(head, "goroutine ")
		if !ok {
			continue
		}
		idText, body, _ := strings.Cut(rest, " [")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			continue
		}
		body = strings.TrimSuffix(body, "]:")
		state, _, _ := strings.Cut(body, ", ")
		gs = append(gs, gor{id: id, state: state, stack: stack})
	}
	return gs
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "error: %v\n", err)
	os.Exit(1)
}
