// Package hang is what the corpus victims share: finding their own goroutine
// ids, waiting until their hang is in place by reading their own traceback,
// printing the one ready line the generators wait for, and staying alive in an
// idle accept loop (serving net/http/pprof when asked) so that the runtime's
// deadlock detector never ends a hang the corpus wants to keep.
package hang

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // the -http victims serve /debug/pprof/goroutine?debug=2
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// GID is the calling goroutine's id, read from its own traceback header
// ("goroutine 7 [running]:"): the runtime offers no other way.
func GID() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hang: reading own goroutine id: %v\n", err)
		os.Exit(3)
	}
	return id
}

// Dump is runtime.Stack of every goroutine, with a buffer grown until it fits.
func Dump() string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Record returns the header status and the body of goroutine gid in dump.
func Record(dump string, gid int64) (status, body string, ok bool) {
	head := "goroutine " + strconv.FormatInt(gid, 10) + " "
	i := strings.Index(dump, head)
	for i > 0 && dump[i-1] != '\n' {
		j := strings.Index(dump[i+1:], head)
		if j < 0 {
			return "", "", false
		}
		i += 1 + j
	}
	if i < 0 {
		return "", "", false
	}
	rec := dump[i:]
	if j := strings.Index(rec, "\n\n"); j >= 0 {
		rec = rec[:j]
	}
	line, rest, _ := strings.Cut(rec, "\n")
	if a, b := strings.IndexByte(line, '['), strings.LastIndexByte(line, ']'); a >= 0 && b > a {
		status = line[a+1 : b]
	}
	return status, rest, true
}

// Parked reports whether goroutine gid is waiting (not running, runnable or in
// a syscall) with fn somewhere in its stack.
func Parked(dump string, gid int64, fn string) bool {
	status, body, ok := Record(dump, gid)
	if !ok {
		return false
	}
	switch strings.SplitN(status, ",", 2)[0] {
	case "running", "runnable", "syscall":
		return false
	}
	return strings.Contains(body, fn)
}

// AllParked reports whether every goroutine in gids is Parked in fn.
func AllParked(dump string, gids []int64, fn string) bool {
	for _, g := range gids {
		if !Parked(dump, g, fn) {
			return false
		}
	}
	return true
}

// Await polls the program's own traceback until cond holds; a victim that
// cannot reach its hang in a minute exits 3 rather than print a false ready.
func Await(what string, cond func(dump string) bool) {
	deadline := time.Now().Add(time.Minute)
	for !cond(Dump()) {
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "hang: %s not in place after a minute\n", what)
			os.Exit(3)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// IDs formats goroutine ids as "7,8,9" for the ready line.
func IDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}

// Ready prints "ready pid=P k=v …": the generators take the dump after it.
func Ready(kv ...string) {
	fmt.Printf("ready pid=%d %s\n", os.Getpid(), strings.Join(kv, " "))
}

// Listen opens the victim's listener: addr for -http, else any local port.
func Listen(addr string) net.Listener {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hang: listening on %s: %v\n", addr, err)
		os.Exit(3)
	}
	return ln
}

// Serve keeps the process alive in an idle accept loop: net/http's Serve of
// the default mux (pprof) when serveHTTP, else a bare one that closes what it
// accepts. An open listener keeps the runtime from declaring a deadlock.
func Serve(ln net.Listener, serveHTTP bool) {
	if serveHTTP {
		err := http.Serve(ln, nil)
		fmt.Fprintf(os.Stderr, "hang: serving http: %v\n", err)
		os.Exit(3)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintf(os.Stderr, "hang: accepting: %v\n", err)
			os.Exit(3)
		}
		c.Close()
	}
}
