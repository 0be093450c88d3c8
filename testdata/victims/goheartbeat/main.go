// Command goheartbeat is a victim for the harm tests: a Go program whose
// progress can be seen from outside. Every 10 ms its main goroutine writes
// a counter to the file given by -beat (20 digits and a newline, rewritten
// in place), so a test that stops or damages it sees the counter freeze.
// Nine goroutines hang in the usual way (a mutex held across a write to a
// pipe nobody reads, eight waiters), -idle adds goroutines parked on a
// channel, and with -stat PATH one more goroutine, locked to its thread,
// stats PATH: on a FUSE mount that never answers, that thread sleeps in D.
// With -sigfile PATH it writes there how many SIGUSR1s it has received.
//
// Once the hang is in place it prints
//
//	ready pid=P beat=PATH holder=GOID addr=HOST:PORT [stattid=TID]
//
// where addr is its listener, which serves net/http/pprof with -pprof.
//
// With -fork it runs itself as a child and forwards the child's ready line
// with target=PID added: a tracer in the test process must not be the
// victim's parent (the parent's wait would take the ptrace stops).
//
// It is under testdata, so `go build ./...` skips it; tests build it with
// go build -o DIR/goheartbeat ./testdata/victims/goheartbeat.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/testdata/victims/govictim"
)

func main() {
	beat := flag.String("beat", "", "file the heartbeat counter is written to")
	idle := flag.Int("idle", 0, "extra goroutines parked on a channel")
	stat := flag.String("stat", "", "path a goroutine locked to its thread stats (a hung mount: D)")
	fork := flag.Bool("fork", false, "run as a child, report it as target=PID")
	pprof := flag.Bool("pprof", false, "serve net/http/pprof on the listener")
	sigfile := flag.String("sigfile", "", "file the count of SIGUSR1s received is written to")
	flag.Parse()
	if *beat == "" {
		govictim.Fatal(fmt.Errorf("-beat PATH is required"))
	}
	if *fork {
		govictim.Fork()
	}
	f, err := os.OpenFile(*beat, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		govictim.Fatal(err)
	}
	addr := govictim.Listen("goheartbeat", *pprof)
	if *sigfile != "" {
		usr1 := make(chan os.Signal, 16)
		signal.Notify(usr1, syscall.SIGUSR1)
		go func() {
			for n := 1; ; n++ {
				<-usr1
				os.WriteFile(*sigfile, []byte(fmt.Sprintf("%d\n", n)), 0o644)
			}
		}()
	}

	r, w, err := os.Pipe()
	if err != nil {
		govictim.Fatal(err)
	}
	defer r.Close()
	var mu sync.Mutex
	holder := make(chan int64)
	go func() {
		mu.Lock()
		holder <- govictim.Goid()
		w.Write(make([]byte, 1<<20)) // blocks: nobody reads r
		mu.Unlock()
	}()
	holderID := <-holder
	for range 8 {
		go func() {
			mu.Lock()
			mu.Unlock()
		}()
	}
	never := make(chan struct{})
	for range *idle {
		go func() { <-never }()
	}

	extra := ""
	if *stat != "" {
		tid := make(chan int)
		go func() {
			runtime.LockOSThread()
			tid <- syscall.Gettid()
			os.Stat(*stat)
		}()
		extra = fmt.Sprintf(" stattid=%d", <-tid)
	}

	// The heartbeat starts before the ready line, so a test can wait for
	// it to advance from the first value it reads.
	go func() {
		for n := uint64(1); ; n++ {
			f.WriteAt([]byte(fmt.Sprintf("%020d\n", n)), 0)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	for {
		waiting := 0
		for _, g := range govictim.Goroutines() {
			if g.State == "sync.Mutex.Lock" {
				waiting++
			}
		}
		if waiting == 8 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Printf("ready pid=%d beat=%s holder=%d addr=%s%s\n", os.Getpid(), *beat, holderID, addr, extra)
	select {}
}
