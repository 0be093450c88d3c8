// selfdump: a program that writes its own dump. Goroutine 1 starts n
// goroutines in mixed states — one holder of mu waiting on a channel, mutex
// waiters behind it, channel receivers, WaitGroup waiters, sleepers, selects
// and one accept loop — waits until every one is parked, then writes
// runtime.Stack(buf, true) to -out and exits. -buf cuts the dump the way a
// too-small buffer does (mid-goroutine).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"corpusvictims/internal/hang"
)

var mu sync.Mutex

func holdAndWait(never <-chan struct{}, gids chan<- int64) {
	mu.Lock()
	defer mu.Unlock()
	gids <- hang.GID()
	<-never
}

func lockWaiter() {
	mu.Lock()
	defer mu.Unlock()
}

func chanWaiter(c <-chan int) { <-c }

func wgWaiter(wg *sync.WaitGroup) { wg.Wait() }

func sleeper() {
	for {
		time.Sleep(time.Hour)
	}
}

func selector(a, b <-chan int) {
	select {
	case <-a:
	case <-b:
	}
}

func acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// parked counts the goroutines other than the caller's that are neither
// running nor runnable.
func parked(dump string) (all, still int) {
	for _, line := range strings.Split(dump, "\n") {
		if !strings.HasPrefix(line, "goroutine ") || !strings.HasSuffix(line, "]:") {
			continue
		}
		all++
		if strings.Contains(line, "[running]") || strings.Contains(line, "[runnable") {
			continue
		}
		still++
	}
	return all, still
}

func main() {
	n := flag.Int("n", 12, "goroutines to start besides goroutine 1 (at least 2)")
	out := flag.String("out", "", "write the dump to this file")
	bufSize := flag.Int("buf", 0, "runtime.Stack buffer size (0: large enough)")
	flag.Parse()
	if *n < 2 || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: selfdump -n N -out FILE [-buf BYTES]")
		os.Exit(2)
	}

	never := make(chan struct{})
	gids := make(chan int64)
	go holdAndWait(never, gids)
	holder := <-gids
	hang.Await("holder", func(d string) bool { return hang.Parked(d, holder, "main.holdAndWait") })

	ln := hang.Listen("")
	go acceptLoop(ln)

	var wg sync.WaitGroup
	wg.Add(1) // never Done
	recv := make(chan int)
	a, b := make(chan int), make(chan int)
	counts := map[string]int{}
	for i := 0; i < *n-2; i++ {
		switch i % 10 {
		case 0, 1, 2:
			go lockWaiter()
			counts["mutex"]++
		case 3, 4:
			go chanWaiter(recv)
			counts["chan"]++
		case 5:
			go wgWaiter(&wg)
			counts["wg"]++
		case 6, 7:
			go sleeper()
			counts["sleep"]++
		default:
			go selector(a, b)
			counts["select"]++
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		all, still := parked(hang.Dump())
		if all == *n+1 && still == *n {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "selfdump: %d of %d goroutines parked after 5 minutes\n", still, *n)
			os.Exit(3)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var buf []byte
	if *bufSize > 0 {
		buf = make([]byte, *bufSize)
		buf = buf[:runtime.Stack(buf, true)]
	} else {
		buf = []byte(hang.Dump())
	}
	if err := os.WriteFile(*out, buf, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "selfdump: writing %s: %v\n", *out, err)
		os.Exit(3)
	}
	hang.Ready(fmt.Sprintf("holder=%d mutex=%d chan=%d wg=%d sleep=%d select=%d accept=1 goroutines=%d",
		holder, counts["mutex"], counts["chan"], counts["wg"], counts["sleep"], counts["select"], *n+1))
}
