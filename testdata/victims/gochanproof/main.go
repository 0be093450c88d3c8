// Command gochanproof is the victim of the channel scan (sampler/gomem's
// search for the goroutines that refer to a channel others wait on). By
// its first argument:
//
//	ctx     three workers wait on <-ctx.Done(); main holds the context's
//	        cancel (deferred) and waits in wg.Wait() for the workers;
//	orphan  three workers wait on a channel whose creator, a goroutine
//	        that started them, has returned: no goroutine but the workers
//	        refers to it; main waits in select {}.
//
// It keeps itself alive with a TCP listener (the runtime never declares a
// deadlock while a goroutine waits in the network poller), checks with
// runtime.Stack that the hang is in place, twice, and prints
//
//	ready pid=P mode=M main=G workers=G,G,G
//
// It is a module of its own (go 1.22) so that the tests can build it with
// Go 1.22 as well as with the repository's Go.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	mode := "ctx"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	go accept(ln)
	go report(mode, goid())
	switch mode {
	case "ctx":
		withCancel()
	case "orphan":
		go spawn()
		select {}
	default:
		fatal(errors.New("usage: gochanproof ctx|orphan"))
	}
	fatal(errors.New("the hang ended"))
}

// withCancel: main would cancel after the wait, and waits first.
func withCancel() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ctx.Done()
		}()
	}
	wg.Wait()
}

// spawn starts the workers on a channel only they keep, and returns.
func spawn() {
	ch := make(chan int)
	for range 3 {
		go worker(ch)
	}
}

//go:noinline
func worker(ch chan int) { <-ch }

func accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			fatal(err)
		}
		c.Close()
	}
}

// report waits until main and the workers are parked, twice 100 ms apart,
// and prints the ready line.
func report(mode string, mainID int64) {
	deadline := time.Now().Add(60 * time.Second)
	reason := ""
	for time.Now().Before(deadline) {
		var workers []int64
		workers, reason = check(mode, mainID)
		if reason == "" {
			time.Sleep(100 * time.Millisecond)
			workers, reason = check(mode, mainID)
		}
		if reason == "" {
			ids := make([]string, len(workers))
			for i, w := range workers {
				ids[i] = strconv.FormatInt(w, 10)
			}
			fmt.Printf("ready pid=%d mode=%s main=%d workers=%s\n", os.Getpid(), mode, mainID, strings.Join(ids, ","))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fatal(fmt.Errorf("hang not reached within 60s: %s", reason))
}

// check finds the workers parked in a channel receive and main in its
// wait; reason says what is not in place yet.
func check(mode string, mainID int64) ([]int64, string) {
	buf := make([]byte, 1<<20)
	s := string(buf[:runtime.Stack(buf, true)])
	var workers []int64
	mainState := ""
	for _, rec := range strings.Split(s, "\n\n") {
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
		state, _, _ := strings.Cut(strings.TrimSuffix(body, "]:"), ",")
		if id == mainID {
			mainState = state
		}
		if state == "chan receive" && (strings.Contains(stack, "main.withCancel.func1") || strings.Contains(stack, "main.worker")) {
			workers = append(workers, id)
		}
		if strings.Contains(stack, "main.spawn") && !strings.Contains(stack, "created by main.spawn") {
			return nil, "spawn has not returned"
		}
	}
	if len(workers) != 3 {
		return nil, fmt.Sprintf("%d of 3 workers parked", len(workers))
	}
	want := "sync.WaitGroup.Wait"
	if mode == "orphan" {
		want = "select (no cases)"
	}
	if mainState != want && !(mode == "ctx" && mainState == "semacquire") {
		return nil, fmt.Sprintf("main is [%s], want [%s]", mainState, want)
	}
	return workers, ""
}

func goid() int64 {
	var b [64]byte
	s := strings.TrimPrefix(string(b[:runtime.Stack(b[:], false)]), "goroutine ")
	id, err := strconv.ParseInt(s[:strings.IndexByte(s, ' ')], 10, 64)
	if err != nil {
		fatal(err)
	}
	return id
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "error: %v\n", err)
	os.Exit(1)
}
