// Command goworking is a victim that is not hung: four workers doing real
// CPU work in varied functions, so their stacks move between samples.
//
// Each worker loops over three kinds of task, each in its own function
// (main.hashChunk: SHA-256 over a buffer; main.sortChunk: sorting a
// shuffled slice; main.compressChunk: flate over a buffer), each some
// milliseconds of CPU, with a short sleep between tasks, so a goroutine
// dump finds most workers [running]/[runnable] in a task, in another task
// in the next dump, and now and then one [sleep] in main.pause. It is the
// control: a diagnosis must not call it hung.
//
// Like every Go victim, it keeps itself alive with a TCP listener on
// 127.0.0.1:0. With -pprof the listener serves net/http/pprof
// (http.DefaultServeMux); without it, a mux with only "/".
//
// Once every worker has done 20 tasks and all four are seen in
// main.worker, it prints
//
//	ready pid=P addr=127.0.0.1:PORT workers=4 goids=G1,G2,G3,G4
//
// If that takes over 15 s it writes the reason to stderr and exits 1.
//
// This directory is under testdata, so `go build ./...` and `go vet ./...`
// skip it; the tests build it with
//
//	go build -o DIR/goworking ./testdata/victims/goworking
package main

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hangdoc/hangdoc/testdata/victims/govictim"
)

const workers = 4

var (
	idsMu sync.Mutex
	ids   []int64
	tasks [workers]atomic.Int64
	sink  atomic.Uint64
)

// worker runs tasks for ever.
func worker(n int) {
	idsMu.Lock()
	ids = append(ids, govictim.Goid())
	idsMu.Unlock()
	r := rand.New(rand.NewPCG(uint64(n), 1))
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(r.IntN(16))
	}
	for i := 0; ; i++ {
		switch (i + n) % 3 {
		case 0:
			hashChunk(buf)
		case 1:
			sortChunk(r)
		case 2:
			compressChunk(buf)
		}
		tasks[n].Add(1)
		pause(r)
	}
}

func hashChunk(buf []byte) {
	sum := sha256.Sum256(buf)
	for range 40 {
		sum = sha256.Sum256(append(buf[:len(buf)-32:len(buf)-32], sum[:]...))
	}
	sink.Store(uint64(sum[0]))
}

func sortChunk(r *rand.Rand) {
	s := make([]int, 100000)
	for i := range s {
		s[i] = r.Int()
	}
	slices.Sort(s)
	sink.Store(uint64(s[0]))
}

func compressChunk(buf []byte) {
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.DefaultCompression)
	for range 8 {
		w.Write(buf)
	}
	w.Close()
	sink.Store(uint64(out.Len()))
}

// pause gives the scheduler and the other goroutines a breath.
func pause(r *rand.Rand) {
	time.Sleep(time.Duration(1+r.IntN(2)) * time.Millisecond)
}

func main() {
	pprof := flag.Bool("pprof", false, "serve net/http/pprof on the listener")
	flag.Parse()
	addr := govictim.Listen("goworking", *pprof)

	for n := range workers {
		go worker(n)
	}

	deadline := time.Now().Add(60 * time.Second)
	reason := "not checked"
	for time.Now().Before(deadline) {
		err := check()
		if err == nil {
			idsMu.Lock()
			s := make([]string, len(ids))
			for i, id := range ids {
				s[i] = strconv.FormatInt(id, 10)
			}
			idsMu.Unlock()
			fmt.Printf("ready pid=%d addr=%s workers=%d goids=%s\n", os.Getpid(), addr, workers, strings.Join(s, ","))
			select {}
		}
		reason = err.Error()
		time.Sleep(10 * time.Millisecond)
	}
	govictim.Fatal(fmt.Errorf("not working within 60s: %s", reason))
}

// check verifies every worker is working.
func check() error {
	for n := range tasks {
		if t := tasks[n].Load(); t < 20 {
			return fmt.Errorf("worker %d has done %d tasks, want 20", n, t)
		}
	}
	seen := 0
	for _, g := range govictim.Goroutines() {
		if strings.Contains(g.Stack, "main.worker(") {
			seen++
		}
	}
	if seen != workers {
		return fmt.Errorf("%d goroutines in main.worker, want %d", seen, workers)
	}
	return nil
}
