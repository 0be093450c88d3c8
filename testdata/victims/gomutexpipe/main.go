// Command gomutexpipe is a victim: a mutex held across a blocking write.
//
//	func (s *Store) Put(b []byte) {
//		s.mu.Lock()
//		defer s.mu.Unlock()
//		s.w.Write(b) // the reader never reads: blocks forever
//	}
//
// The pipe's reader is a child, `sleep 3600`, whose stdin is the pipe's
// read end and which never reads it. Nine goroutines call Put: the first
// to take mu fills the 64 KiB pipe and parks in the write ([IO wait]: os
// pipes are non-blocking and wait in the netpoller), the other eight park
// in mu.Lock ([sync.Mutex.Lock]).
//
// Like every Go victim, it keeps itself alive with a TCP listener on
// 127.0.0.1:0, so the runtime never declares "all goroutines are asleep".
// With -pprof the listener serves net/http/pprof (http.DefaultServeMux);
// without it, a mux with only "/", so pprof discovery finds nothing there.
//
// A goroutine polls runtime.Stack until the holder is in [IO wait] inside
// Store.Put and eight goroutines wait in [sync.Mutex.Lock] inside
// Store.Put, twice 100 ms apart, then prints
//
//	ready pid=P addr=127.0.0.1:PORT holder=GOID reader=CHILDPID waiters=8
//
// If the hang is not reached within 60 s it writes the reason to stderr
// and exits 1 (the child dies with it: PR_SET_PDEATHSIG).
//
// This directory is under testdata, so `go build ./...` and `go vet ./...`
// skip it; the tests build it with
//
//	go build -o DIR/gomutexpipe ./testdata/victims/gomutexpipe
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/testdata/victims/govictim"
)

const waiters = 8

// Store writes records to a pipe under a lock.
type Store struct {
	mu     sync.Mutex
	w      *os.File
	holder atomic.Int64 // goroutine id of the last Put to take mu
}

// Put writes b while holding mu.
func (s *Store) Put(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holder.Store(govictim.Goid())
	if _, err := s.w.Write(b); err != nil {
		govictim.Fatal(fmt.Errorf("write: %v", err))
	}
}

func main() {
	pprof := flag.Bool("pprof", false, "serve net/http/pprof on the listener")
	flag.Parse()
	addr := govictim.Listen("gomutexpipe", *pprof)

	r, w, err := os.Pipe()
	if err != nil {
		govictim.Fatal(err)
	}
	child := exec.Command("sleep", "3600")
	child.Stdin = r
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := child.Start(); err != nil {
		govictim.Fatal(err)
	}
	r.Close()

	s := &Store{w: w}
	buf := bytes.Repeat([]byte("record\n"), 1<<18) // 1.75 MiB: far more than a pipe holds
	for range waiters + 1 {
		go s.Put(buf)
	}

	deadline := time.Now().Add(60 * time.Second)
	reason := "not checked"
	for time.Now().Before(deadline) {
		err := check(s)
		if err == nil {
			time.Sleep(100 * time.Millisecond)
			err = check(s)
		}
		if err == nil {
			fmt.Printf("ready pid=%d addr=%s holder=%d reader=%d waiters=%d\n",
				os.Getpid(), addr, s.holder.Load(), child.Process.Pid, waiters)
			select {}
		}
		reason = err.Error()
		time.Sleep(10 * time.Millisecond)
	}
	govictim.Fatal(fmt.Errorf("hang not reached within 60s: %s", reason))
}

// check verifies the hang from the goroutines' own stacks.
func check(s *Store) error {
	holder := s.holder.Load()
	if holder == 0 {
		return errors.New("no Put holds mu yet")
	}
	held, waiting := false, 0
	for _, g := range govictim.Goroutines() {
		if !strings.Contains(g.Stack, "main.(*Store).Put(") {
			continue
		}
		switch {
		case g.ID == holder && g.State == "IO wait":
			held = true
		case g.ID != holder && g.State == "sync.Mutex.Lock":
			waiting++
		}
	}
	if !held {
		return fmt.Errorf("holder goroutine %d is not in [IO wait] in Store.Put", holder)
	}
	if waiting != waiters {
		return fmt.Errorf("%d goroutines wait for mu in Store.Put, want %d", waiting, waiters)
	}
	return nil
}
