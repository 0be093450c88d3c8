// Command victim hangs in the two ways package delve's tests look for:
// -waiters goroutines wait on one sync.Mutex whose holder blocks writing
// to a full pipe, and two goroutines (ping, pong) each send on the channel
// the other will receive from. A TCP accept loop keeps the process alive,
// and -idle adds goroutines parked on a channel nobody closes.
//
// Once every goroutine is blocked it prints
//
//	ready pid=P holder=G ping=G pong=G mutex=0x… a=0x… b=0x…
//
// where mutex is the mutex's address and a, b are the channels (ping sends
// on a, pong on b), and then stays hung until killed. One more goroutine
// (sys=G on thread systid=TID) is locked to its thread and blocked in a
// raw read(2).
//
// With -fork it starts itself as a child and forwards the child's ready
// line with the child's pid as target=PID. A tracer in the test process
// must not be the victim's parent: the parent's wait(2) would take the
// ptrace stops meant for the tracer.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/testdata/victims/govictim"
)

func main() {
	waiters := flag.Int("waiters", 3, "goroutines waiting for the mutex")
	idle := flag.Int("idle", 0, "extra goroutines parked on a channel")
	fork := flag.Bool("fork", false, "run the victim as a child, report it as target=PID")
	flag.Parse()
	if *fork {
		govictim.Fork()
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	go accept(ln)

	// The read end stays open and unread, so the holder's write blocks
	// once the pipe buffer is full.
	r, w, err := os.Pipe()
	if err != nil {
		fatal(err)
	}
	defer r.Close()

	var mu sync.Mutex
	holder := make(chan int64)
	go hold(&mu, w, holder)
	holderID := <-holder
	for range *waiters {
		go wait(&mu)
	}

	a, b := make(chan int), make(chan int)
	ping, pong := make(chan int64), make(chan int64)
	go cycle(a, b, ping)
	// pong holds its channels as closure captures rather than arguments.
	go func() {
		pong <- goid()
		b <- 1
		<-a
	}()
	pingID, pongID := <-ping, <-pong

	sys := make(chan [2]int64)
	go readRaw(sys)
	sysIDs := <-sys

	never := make(chan struct{})
	for range *idle {
		go park(never)
	}

	want := map[string]int{"[sync.Mutex.Lock": *waiters, "[chan send": 2, "[IO wait": 2, "[syscall": 1}
	for !settled(want) {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("ready pid=%d holder=%d ping=%d pong=%d mutex=%p a=%p b=%p sys=%d systid=%d\n",
		os.Getpid(), holderID, pingID, pongID, &mu, a, b, sysIDs[0], sysIDs[1])
	select {}
}

func accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			fatal(err)
		}
		c.Close()
	}
}

// hold takes the mutex and never lets go: its write outgrows the pipe.
func hold(mu *sync.Mutex, w *os.File, id chan<- int64) {
	mu.Lock()
	id <- goid()
	buf := make([]byte, 1<<20)
	w.Write(buf)
	mu.Unlock()
}

func wait(mu *sync.Mutex) {
	mu.Lock()
	mu.Unlock()
}

// cycle sends on out before receiving from in; two of them crossed
// deadlock, each holding the channel the other waits on in its locals.
func cycle(out, in chan int, id chan<- int64) {
	id <- goid()
	out <- 1
	<-in
}

// readRaw blocks in read(2) on a blocking pipe, outside the netpoller,
// locked to its thread.
func readRaw(ids chan<- [2]int64) {
	runtime.LockOSThread()
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		fatal(err)
	}
	ids <- [2]int64{goid(), int64(syscall.Gettid())}
	buf := make([]byte, 1)
	syscall.Read(fds[0], buf)
}

func park(never chan struct{}) {
	<-never
}

// settled reports whether the goroutine dump shows at least want[state]
// goroutines in each state (the IO wait pair: the accept loop and the
// holder's write).
func settled(want map[string]int) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for state, n := range want {
		if bytes.Count(buf, []byte(state)) < n {
			return false
		}
	}
	return true
}

// goid parses the caller's goroutine id from its traceback header.
func goid() int64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	if i := bytes.IndexByte(buf, ' '); i > 0 {
		buf = buf[:i]
	}
	id, err := strconv.ParseInt(string(buf), 10, 64)
	if err != nil {
		fatal(fmt.Errorf("parsing goroutine id: %v", err))
	}
	return id
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "victim:", err)
	os.Exit(1)
}
