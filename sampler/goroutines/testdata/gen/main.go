// Command gen writes the generated dumps in ../ with the Go toolchain at
// hand. It is run by hand when the test data is refreshed, never by tests:
//
//	cd sampler/goroutines && go run ./testdata/gen
package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		victim(os.Args[1])
		return
	}
	self, err := os.Executable()
	check(err)
	out := "testdata"
	write := func(name string, b []byte) {
		check(os.WriteFile(filepath.Join(out, name), b, 0o644))
		fmt.Println("wrote", name, len(b), "bytes")
	}
	// panic with GOTRACEBACK=all: all user goroutines.
	write("gen-panic.txt", run(self, []string{"GOTRACEBACK=all"}, "panic", false))
	// runtime.Stack(buf, true) and pprof debug=1/2, written by the victim to stdout.
	write("gen-stack.txt", run(self, nil, "stack", false))
	write("gen-pprof-debug2.txt", run(self, nil, "debug2", false))
	write("gen-pprof-debug1.txt", run(self, nil, "debug1", false))
	// SIGQUIT with GOTRACEBACK=all and header labels on.
	write("gen-sigquit.txt", run(self, []string{"GOTRACEBACK=all", "GODEBUG=tracebacklabels=1"}, "hang", true))
	// The deadlock detector: nothing left that could wake anyone.
	write("gen-deadlock.txt", run(self, []string{"GOTRACEBACK=all"}, "deadlock", false))
	// go test -timeout expiry.
	write("gen-test-timeout.txt", testTimeout())
}

// run starts the victim in mode and returns its stdout+stderr. quit: wait
// for "ready" and send SIGQUIT.
func run(self string, env []string, mode string, quit bool) []byte {
	cmd := exec.Command(self, mode)
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stderr = &buf
	stdout, err := cmd.StdoutPipe()
	check(err)
	check(cmd.Start())
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20)
	var outb bytes.Buffer
	for sc.Scan() {
		if sc.Text() == "ready" && quit {
			time.Sleep(200 * time.Millisecond)
			check(cmd.Process.Signal(syscall.SIGQUIT))
			continue
		}
		outb.Write(sc.Bytes())
		outb.WriteByte('\n')
	}
	_ = cmd.Wait()
	return append(outb.Bytes(), buf.Bytes()...)
}

func testTimeout() []byte {
	dir, err := os.MkdirTemp("", "hangdoc-gen")
	check(err)
	defer os.RemoveAll(dir)
	check(os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hang\n\ngo 1.26\n"), 0o644))
	check(os.WriteFile(filepath.Join(dir, "hang_test.go"), []byte(`package hang

import (
	"sync"
	"testing"
)

func TestHang(t *testing.T) {
	var mu sync.Mutex
	mu.Lock()
	mu.Lock()
}
`), 0o644))
	cmd := exec.Command("go", "test", "-timeout", "2s", ".")
	cmd.Dir = dir
	b, _ := cmd.CombinedOutput()
	return b
}

var mu sync.Mutex

func recurse(n int, ch chan int) {
	if n == 0 {
		<-ch
		return
	}
	recurse(n-1, ch)
}

// victim starts goroutines blocked in named ways, then does what mode says.
func victim(mode string) {
	mu.Lock()
	ch := make(chan int)
	go func() { mu.Lock() }()
	go func() { ch <- 1 }()
	go func() { runtime.LockOSThread(); <-ch }()
	go recurse(120, ch)
	go pprof.Do(context.Background(), pprof.Labels("request_id", "a]b, c: d"), func(context.Context) { select {} })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { wg.Wait() }()
	time.Sleep(100 * time.Millisecond)
	switch mode {
	case "panic":
		var m map[string]int
		m["x"]++ // nil map write: panic
	case "stack":
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		os.Stdout.Write(buf[:n])
	case "debug1":
		check(pprof.Lookup("goroutine").WriteTo(os.Stdout, 1))
	case "debug2":
		check(pprof.Lookup("goroutine").WriteTo(os.Stdout, 2))
	case "hang":
		// A sleeper keeps the deadlock detector quiet.
		go func() {
			for {
				time.Sleep(time.Hour)
			}
		}()
		fmt.Println("ready")
		select {}
	case "deadlock":
		select {}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
