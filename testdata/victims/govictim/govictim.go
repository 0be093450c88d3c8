// Package govictim is what the Go victims of testdata/victims share: the
// listener that keeps each alive, and the reading of its own goroutines
// with which each checks its hang is reached before it says ready.
//
// It is under testdata, so `go build ./...` and `go vet ./...` skip it, as
// they skip the victims that import it.
package govictim

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Listen keeps the process alive with a listener on 127.0.0.1:0 (the
// runtime never declares "all goroutines are asleep" while a goroutine
// waits in the network poller) and returns its address. It serves
// net/http/pprof only when asked; otherwise a mux with only "/", so pprof
// discovery finds no endpoint there.
func Listen(name string, pprof bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		Fatal(err)
	}
	var h http.Handler = http.DefaultServeMux
	if !pprof {
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "%s: no pprof here\n", name)
		})
		h = mux
	}
	go func() { Fatal(http.Serve(ln, h)) }()
	return ln.Addr().String()
}

// Goid is the calling goroutine's id, from runtime.Stack's first line
// "goroutine 18 [running]:".
func Goid() int64 {
	var b [64]byte
	s := string(b[:runtime.Stack(b[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	id, err := strconv.ParseInt(s[:strings.IndexByte(s, ' ')], 10, 64)
	if err != nil {
		Fatal(fmt.Errorf("goroutine id of %q: %v", s, err))
	}
	return id
}

// Goroutine is one goroutine of the process, as runtime.Stack prints it.
type Goroutine struct {
	ID    int64
	State string // the bracket's first part: "IO wait", "sync.Mutex.Lock"
	Stack string
}

// Goroutines lists every goroutine with its state, from runtime.Stack.
func Goroutines() []Goroutine {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []Goroutine
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
		gs = append(gs, Goroutine{ID: id, State: state, Stack: stack})
	}
	return gs
}

// Fatal writes err to stderr and exits 1: a victim that cannot reach its
// hang says why and goes.
func Fatal(err error) {
	fmt.Fprintf(os.Stderr, "error: %v\n", err)
	os.Exit(1)
}
