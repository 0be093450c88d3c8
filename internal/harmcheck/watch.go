package harmcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Watcher reads the target's threads' states and its TracerPid over and
// over while the reader runs, and records any sign of a stop: a thread in
// state t or T, or a tracer.
type Watcher struct {
	pid   int
	scans atomic.Int64
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	seen  []string
}

// Watch starts a Watcher of pid; it has made a whole scan when Watch
// returns.
func Watch(pid int) *Watcher {
	w := &Watcher{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			w.scan()
			w.scans.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	w.sync()
	return w
}

func (w *Watcher) scan() {
	bad := func(s string) {
		w.mu.Lock()
		w.seen = append(w.seen, s)
		w.mu.Unlock()
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "TracerPid:"); ok && strings.TrimSpace(v) != "0" {
				bad("TracerPid " + strings.TrimSpace(v))
			}
		}
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", w.pid))
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", w.pid, task.Name()))
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			if st := s[i+2]; st == 't' || st == 'T' {
				bad(fmt.Sprintf("thread %s in state %c", task.Name(), st))
			}
		}
	}
}

// sync returns once the watcher has made a whole scan after the call.
func (w *Watcher) sync() {
	n := w.scans.Load()
	for w.scans.Load() < n+2 {
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// Finish stops the watcher after one more whole scan and fails the test
// if it saw a stop.
func (w *Watcher) Finish(t testing.TB) {
	t.Helper()
	w.sync()
	close(w.stop)
	<-w.done
	if len(w.seen) > 0 {
		t.Errorf("pid %d was stopped or traced while read: %v", w.pid, w.seen)
	}
}
