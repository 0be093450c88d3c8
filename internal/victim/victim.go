// Package victim holds the programs `hangdoc demo` diagnoses: each
// reproduces a classic hang inside a re-executed hangdoc, then prints one
// line, "ready pid=P key=value …", and stays hung until it is killed.
package victim

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Scenario is one hang the demo can show.
type Scenario struct {
	Name string
	// About is one line for `hangdoc demo --list`.
	About string
	// Expect is the verdict hangdoc must give.
	Expect string
	// Env is added to the victim's environment.
	Env []string
	run func(w io.Writer) error
}

// Scenarios lists the hangs in the order `demo --list` shows them; the
// first is the default.
var Scenarios = []Scenario{
	{
		Name:   "pipe-holder",
		About:  "8 workers share a mutex; its holder blocks writing to a full pipe that a slow reader drains",
		Expect: "blocked",
		run:    pipeHolder,
	},
	{
		Name:   "deadlock",
		About:  "two threads take two mutexes in opposite orders (ABBA)",
		Expect: "deadlock",
		run:    deadlock,
	},
	{
		Name:   "spin-holder",
		About:  "8 renderers share a mutex; its holder spins in a pagination loop that never exits",
		Expect: "spinning",
		// The spinning loop makes no calls: without asynchronous preemption
		// the Go scheduler never moves it, as a C loop would not be moved.
		Env: []string{"GODEBUG=asyncpreemptoff=1"},
		run: spinHolder,
	},
}

// Find returns the scenario with that name.
func Find(name string) (Scenario, bool) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// Run reproduces the scenario and never returns unless it fails.
func (s Scenario) Run(w io.Writer) error {
	// Keep the main goroutine on the main thread, so no worker renames it:
	// the main thread's name is the process's name in ps and top.
	runtime.LockOSThread()
	return s.run(w)
}

// worker starts fn on a goroutine locked to a new OS thread named name and
// returns that thread's TID.
func worker(name string, fn func()) int {
	tid := make(chan int)
	go func() {
		runtime.LockOSThread()
		setThreadName(name)
		tid <- unix.Gettid()
		fn()
	}()
	return <-tid
}

func setThreadName(name string) {
	b := append([]byte(name), 0)
	unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0, 0, 0)
}

// waitFor polls until every listed thread is in the named syscall, as
// /proc/self/task/TID/syscall shows it, and returns those in it per name.
func waitFor(tids []int, want func(map[int]string) bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		calls := map[int]string{}
		for _, tid := range tids {
			b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
			if err != nil {
				return err
			}
			calls[tid] = strings.Fields(string(b) + " ?")[0]
		}
		if want(calls) {
			time.Sleep(200 * time.Millisecond) // let the counters settle
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the hang did not set in within 10s")
}

var (
	sysWrite = strconv.Itoa(unix.SYS_WRITE)
	sysFutex = strconv.Itoa(unix.SYS_FUTEX)
)

func ready(w io.Writer, kv ...string) {
	fmt.Fprintf(w, "ready pid=%d %s\n", os.Getpid(), strings.Join(kv, " "))
}

func join(tids []int) string {
	sort.Ints(tids)
	s := make([]string, len(tids))
	for i, t := range tids {
		s[i] = strconv.Itoa(t)
	}
	return strings.Join(s, ",")
}

func forever() { select {} }

// Shared state lives in package variables: the futex words must stay put,
// and Go's collector does not move what it keeps.
var (
	outMu     pthreadMutex
	m1, m2    pthreadMutex
	renderMu  pthreadMutex
	pagesDone uint64
)

// SlowReader is the hidden helper the pipe-holder victim starts as its
// reader: it drains its standard input one byte a second.
const SlowReader = "slow-reader"

// ReadSlowly reads one byte of standard input a second, sleeping in
// nanosleep(2) in between, and never returns.
func ReadSlowly() error {
	runtime.LockOSThread()
	var b [1]byte
	for {
		unix.Nanosleep(&unix.Timespec{Sec: 1}, nil)
		if n, err := unix.Read(0, b[:]); n == 0 || err != nil && err != unix.EINTR {
			return fmt.Errorf("slow reader: standard input closed (%v)", err)
		}
	}
}

func pipeHolder(w io.Writer) error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	// The slow reader is a process of its own, so the chain of waits
	// crosses to it: hangdoc itself again, reading one byte a second.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	reader := exec.Command(self, "__victim", SlowReader)
	reader.Stdin = os.NewFile(uintptr(p[0]), "pipe")
	reader.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := reader.Start(); err != nil {
		return fmt.Errorf("starting the slow reader: %w", err)
	}
	unix.Close(p[0])
	line := []byte(strings.Repeat("x", 511) + "\n")
	var tids []int
	for i := range 8 {
		tids = append(tids, worker(fmt.Sprintf("worker-%d", i), func() {
			for {
				outMu.Lock()
				unix.Write(p[1], line)
				outMu.Unlock()
			}
		}))
	}
	holder := 0
	err = waitFor(tids, func(calls map[int]string) bool {
		holder = 0
		waiting := 0
		for tid, c := range calls {
			switch c {
			case sysWrite:
				holder = tid
			case sysFutex:
				waiting++
			}
		}
		return holder != 0 && waiting == len(tids)-1
	})
	if err != nil {
		return err
	}
	var waiters []int
	for _, t := range tids {
		if t != holder {
			waiters = append(waiters, t)
		}
	}
	ready(w, fmt.Sprintf("holder=%d waiters=%s lock=%p pipefd=%d reader=%d", holder, join(waiters), &outMu.lock, p[1], reader.Process.Pid))
	forever()
	return nil
}

func deadlock(w io.Writer) error {
	both := make(chan bool)
	release := make(chan bool)
	take := func(first, second *pthreadMutex) func() {
		return func() {
			first.Lock()
			both <- true
			<-release
			second.Lock()
			forever()
		}
	}
	left := worker("left", take(&m1, &m2))
	right := worker("right", take(&m2, &m1))
	<-both
	<-both
	close(release)
	err := waitFor([]int{left, right}, func(calls map[int]string) bool {
		return calls[left] == sysFutex && calls[right] == sysFutex
	})
	if err != nil {
		return err
	}
	ready(w, fmt.Sprintf("left=%d right=%d m1=%p m2=%p", left, right, &m1.lock, &m2.lock))
	forever()
	return nil
}

func spinHolder(w io.Writer) error {
	// A collection would have to stop the spinning thread, which never
	// yields: keep the collector off so the rest of the victim runs.
	debug.SetGCPercent(-1)
	held := make(chan bool)
	holder := worker("renderer-0", func() {
		renderMu.Lock()
		held <- true
		paginate()
	})
	<-held
	var waiters []int
	for i := 1; i < 8; i++ {
		waiters = append(waiters, worker(fmt.Sprintf("renderer-%d", i), func() {
			renderMu.Lock()
			renderMu.Unlock()
		}))
	}
	err := waitFor(waiters, func(calls map[int]string) bool {
		for _, c := range calls {
			if c != sysFutex {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	ready(w, fmt.Sprintf("holder=%d waiters=%s lock=%p", holder, join(waiters), &renderMu.lock))
	forever()
	return nil
}

// paginate is the loop that never exits: the next page never comes.
//
//go:noinline
func paginate() {
	page, next := uint64(0), uint64(1)
	for page != next {
		pagesDone++
		page = (page + 1) % 1024
		next = (page + 1) % 1024
	}
}
