// Package govictim is what the Go victims share: the listener that keeps
// each alive, the reading of its own goroutines with which each checks its
// hang is reached before it says ready, and the relay (-fork) that makes a
// victim nobody's child but its own.
//
// It is under testdata, so `go build ./...` and `go vet ./...` skip it, as
// they skip the victims that import it.
package govictim

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
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

// Fork starts this program again without -fork, forwards its ready line
// as "ready pid=SELF target=CHILD ..." and stays until the child's stdout
// closes, never wait(2)ing for it: the victim is then not the child of
// the test that started this relay, whose own wait would take the victim's
// ptrace stops. The child dies with the relay (PR_SET_PDEATHSIG).
func Fork() {
	var args []string
	for _, a := range os.Args[1:] {
		if a != "-fork" && a != "--fork" {
			args = append(args, a)
		}
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		Fatal(fmt.Errorf("child: %v", err))
	}
	rest, ok := strings.CutPrefix(line, fmt.Sprintf("ready pid=%d ", cmd.Process.Pid))
	if !ok {
		Fatal(fmt.Errorf("child printed %q", line))
	}
	fmt.Printf("ready pid=%d target=%d %s", os.Getpid(), cmd.Process.Pid, rest)
	// Blocks while the child lives: it writes nothing more.
	io.Copy(io.Discard, out)
	os.Exit(0)
}
