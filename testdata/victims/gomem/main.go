// Command gomem is the victim of sampler/gomem, the reader of goroutines
// from a live Go process's memory. It parks goroutines in the ways the
// reader must tell apart and keeps some moving:
//
//   - a mutex holder (parked in a channel receive with mu held) and three
//     waiters in sync.Mutex.Lock;
//   - a channel sender, a receiver, a select, a receive on a nil channel;
//   - a sleeper, a sync.Cond waiter, a sync.WaitGroup waiter;
//   - a goroutine parked 40 calls deep, one parked through an inlined
//     call, one in a generic function, one locked to its thread, one with
//     pprof labels;
//   - a goroutine in a blocking read(2) of a pipe (status syscall);
//   - a spinner locked to its thread (status running);
//   - a heartbeat that ticks every 10 ms and keeps the longest gap between
//     two ticks: a stop of the process shows there;
//   - with -n N, N more goroutines parked three calls deep in a channel
//     receive (for benchmarks);
//   - with -churn K, K pairs of goroutines handing a token back and forth
//     for ever and a spawner of short-lived goroutines (gs that move,
//     die and are reused while they are read);
//   - with -locks N, N connections, each with its own mutex, which one
//     goroutine holds parked in a channel receive and another waits for
//     (server-shaped input for the lock identity's benchmark);
//   - with -rawsleep D, a goroutine locked to its thread that loops in
//     raw nanosleep(D) calls: status running, its thread in a syscall.
//
// With -fork it runs itself as a child and relays the child's ready line
// as "ready pid=SELF target=CHILD ...": Delve refuses to attach to its
// caller's own child.
//
// With -pprof it serves net/http/pprof on 127.0.0.1:0 and /heartbeat,
// which says "ticks=N maxgap_us=M" and starts a new gap measurement.
// Once every goroutine is where it should be (checked with runtime.Stack)
// it prints
//
//	ready pid=P pprof=ADDR mu=0x… holder=G waiters=G,G,G sender=G ... spinner_tid=T syscall_tid=T
//
// where each G is a goroutine id; then it stays until killed.
//
// It is a module of its own (go 1.22) so that tests can build it with
// every toolchain from Go 1.22 on (GOTOOLCHAIN=go1.22.0 refuses the
// repository's go 1.26 module).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	never   = make(chan int) // nobody ever sends or closes
	mu      sync.Mutex
	spins   atomic.Uint64
	pipeRd  int
	ids     = map[string][]int64{} // role → goroutine ids
	idsMu   sync.Mutex
	tids    = map[string]int{} // role → thread id
	started sync.WaitGroup     // each role has noted its id
)

// note records the calling goroutine's id under role.
func note(role string) {
	idsMu.Lock()
	ids[role] = append(ids[role], goid())
	idsMu.Unlock()
	started.Done()
}

func noteTID(role string) {
	idsMu.Lock()
	tids[role] = syscall.Gettid()
	idsMu.Unlock()
}

func main() {
	n := flag.Int("n", 0, "extra goroutines parked in a channel receive")
	servePprof := flag.Bool("pprof", false, "serve net/http/pprof and /heartbeat on 127.0.0.1:0")
	rawSleep := flag.Duration("rawsleep", 0, "run a goroutine looping in raw nanosleep calls of this length")
	churn := flag.Int("churn", 0, "pairs of goroutines that ping-pong on channels for ever, and a spawner of short-lived goroutines")
	locks := flag.Int("locks", 0, "connections whose own mutex one goroutine holds while parked and another waits for (for benchmarks)")
	fork := flag.Bool("fork", false, "run the victim as a child and relay its ready line with target=PID (Delve refuses a test's own child)")
	flag.Parse()
	if *fork {
		relay()
	}

	addr := listen(*servePprof)

	start("holder", 1, holder)
	start("waiter", 3, waiter)
	start("sender", 1, func() { make(chan int) <- 1 })
	start("receiver", 1, func() { <-never })
	start("selector", 1, selector)
	start("nilrecv", 1, func() {
		var c chan int
		<-c
	})
	start("sleeper", 1, func() { time.Sleep(time.Hour) })
	start("cond", 1, condWait)
	start("wg", 1, wgWait)
	start("deep", 1, func() { deep(40) })
	start("inlined", 1, func() { _ = recvOne(never) })
	start("generic", 1, func() { park[string](nil) })
	start("locked", 1, func() {
		runtime.LockOSThread()
		<-never
	})
	start("labelled", 1, func() {
		pprof.Do(context.Background(), pprof.Labels("victim", "labelled", "k2", "v2"), func(context.Context) { <-never })
	})
	started.Add(1)
	go inSyscall()
	started.Add(1)
	go spinner()
	started.Add(1)
	go heartbeat()
	started.Add(*n)
	for i := 0; i < *n; i++ {
		go idle1(i)
	}
	started.Wait()

	for i := 0; i < *churn; i++ {
		a, b := make(chan int), make(chan int)
		go pinger(a, b)
		go ponger(a, b)
	}
	if *churn > 0 {
		go spawner()
	}

	lockPairs(*locks)

	var extra []string
	if *rawSleep > 0 {
		started.Add(1)
		go rawSleeper(*rawSleep)
		started.Wait()
		extra = append(extra, "rawsleep")
	}
	wait(*n, extra)

	idsMu.Lock()
	line := fmt.Sprintf("ready pid=%d pprof=%s mu=%p", os.Getpid(), addr, &mu)
	roles := make([]string, 0, len(ids))
	for r := range ids {
		if r != "idle" {
			roles = append(roles, r)
		}
	}
	sort.Strings(roles)
	for _, r := range roles {
		line += " " + r + "=" + join(ids[r])
	}
	for _, r := range []string{"spinner", "syscall", "rawsleep"} {
		if t, ok := tids[r]; ok {
			line += fmt.Sprintf(" %s_tid=%d", r, t)
		}
	}
	line += fmt.Sprintf(" n=%d", *n)
	idsMu.Unlock()
	fmt.Println(line)
	select {}
}

// relay runs this program again without -fork, prints the child's ready
// line as "ready pid=SELF target=CHILD ..." and waits for ever. It is
// govictim.Fork written again, as is the goroutine listing below
// govictim.Goroutines: this victim is a module of its own, built with
// every toolchain from Go 1.22, and govictim is the main module's (Go 1.26).
func relay() {
	var args []string
	for _, a := range os.Args[1:] {
		if a != "-fork" && a != "--fork" {
			args = append(args, a)
		}
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fatal(err)
	}
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		fatal(fmt.Errorf("the child printed no ready line: %v", err))
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), fmt.Sprintf("ready pid=%d", cmd.Process.Pid))
	if !ok {
		fatal(fmt.Errorf("the child's ready line is %q", line))
	}
	fmt.Printf("ready pid=%d target=%d%s\n", os.Getpid(), cmd.Process.Pid, rest)
	fatal(fmt.Errorf("the child exited: %v", cmd.Wait()))
}

func join(gs []int64) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = strconv.FormatInt(g, 10)
	}
	return strings.Join(s, ",")
}

// start runs k goroutines of role, each noting its id and then running f.
func start(role string, k int, f func()) {
	started.Add(k)
	for i := 0; i < k; i++ {
		go func() {
			note(role)
			f()
		}()
	}
}

var holding = make(chan struct{})

func holder() {
	mu.Lock()
	close(holding)
	<-never
	mu.Unlock()
}

func waiter() {
	<-holding
	mu.Lock()
	mu.Unlock()
}

func selector() {
	c2 := make(chan string)
	select {
	case <-never:
	case c2 <- "x":
	}
}

func condWait() {
	var m sync.Mutex
	c := sync.NewCond(&m)
	m.Lock()
	c.Wait()
	m.Unlock()
}

func wgWait() {
	var wg sync.WaitGroup
	wg.Add(1)
	wg.Wait()
}

//go:noinline
func deep(n int) int {
	if n == 0 {
		return <-never
	}
	return deep(n-1) + 1
}

// recvOne is small enough to be inlined into its caller: the traceback
// shows it as an inlined frame.
func recvOne(c chan int) int { return <-c }

//go:noinline
func park[T any](c chan T) T { return <-c }

// inSyscall blocks in read(2) on a pipe nobody writes: the runtime's
// syscall path (entersyscall), status syscall.
func inSyscall() {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		fatal(err)
	}
	pipeRd = p[0]
	runtime.LockOSThread()
	noteTID("syscall")
	note("syscall")
	var b [1]byte
	_, err := syscall.Read(p[0], b[:])
	fatal(fmt.Errorf("read returned: %v", err))
}

// spinner keeps a thread busy for ever.
func spinner() {
	runtime.LockOSThread()
	noteTID("spinner")
	note("spinner")
	x := uint64(1)
	for {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if x&0xfffff == 0 {
			spins.Add(1)
		}
	}
}

// rawSleeper sleeps in nanosleep(2) without telling the scheduler
// (RawSyscall): the goroutine stays running, its thread in the call.
func rawSleeper(d time.Duration) {
	runtime.LockOSThread()
	noteTID("rawsleep")
	note("rawsleep")
	ts := syscall.NsecToTimespec(int64(d))
	for {
		rawNanosleep(&ts)
	}
}

//go:noinline
func rawNanosleep(ts *syscall.Timespec) {
	syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafePointer(ts)), 0, 0)
}

var (
	beatMu   sync.Mutex
	ticks    uint64
	maxGap   time.Duration
	lastBeat time.Time
)

// heartbeat ticks every 10 ms and keeps the longest gap between ticks.
func heartbeat() {
	note("heartbeat")
	t := time.NewTicker(10 * time.Millisecond)
	lastBeat = time.Now()
	for now := range t.C {
		beatMu.Lock()
		ticks++
		if gap := now.Sub(lastBeat); gap > maxGap {
			maxGap = gap
		}
		lastBeat = now
		beatMu.Unlock()
	}
}

// pinger and ponger hand a token back and forth for ever: goroutines that
// are parked one instant and running the next.
func pinger(a, b chan int) {
	for n := 0; ; n++ {
		a <- n
		<-b
	}
}

func ponger(a, b chan int) {
	for {
		n := <-a
		b <- n
	}
}

// spawner starts short-lived goroutines for ever, so that gs die and are
// reused while the reader reads them.
func spawner() {
	for {
		go func() { time.Sleep(time.Millisecond) }()
		time.Sleep(200 * time.Microsecond)
	}
}

func idle1(i int) { idle2(i) }

//go:noinline
func idle2(i int) { idle3(i) }

//go:noinline
func idle3(i int) {
	note("idle")
	<-never
}

func listen(servePprof bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	var h http.Handler = http.DefaultServeMux
	if servePprof {
		http.HandleFunc("/heartbeat", func(w http.ResponseWriter, _ *http.Request) {
			beatMu.Lock()
			fmt.Fprintf(w, "ticks=%d maxgap_us=%d\n", ticks, maxGap.Microseconds())
			maxGap = 0
			beatMu.Unlock()
		})
	} else {
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "no pprof here") })
		h = mux
	}
	go func() { fatal(http.Serve(ln, h)) }()
	return ln.Addr().String()
}

// wait polls runtime.Stack until each role's goroutines are in their
// states, then returns; after 20 s it gives up.
func wait(n int, extra []string) {
	want := map[string]string{
		"holder": "chan receive", "waiter": "sync.Mutex.Lock", "sender": "chan send",
		"receiver": "chan receive", "selector": "select", "nilrecv": "chan receive (nil chan)",
		"sleeper": "sleep", "deep": "chan receive", "inlined": "chan receive",
		"generic": "chan receive", "locked": "chan receive", "labelled": "chan receive",
		"syscall": "syscall", "cond": "sync.Cond.Wait",
	}
	deadline := time.Now().Add(60 * time.Second)
	reason := ""
	for time.Now().Before(deadline) {
		states := goroutineStates()
		reason = ""
		idsMu.Lock()
		for role, st := range want {
			for _, id := range ids[role] {
				if got := states[id]; !strings.HasPrefix(got, st) {
					reason = fmt.Sprintf("%s goroutine %d is [%s], want [%s]", role, id, got, st)
				}
			}
		}
		for _, id := range ids["wg"] {
			if got := states[id]; got != "semacquire" && got != "sync.WaitGroup.Wait" {
				reason = fmt.Sprintf("wg goroutine %d is [%s]", id, got)
			}
		}
		parked := 0
		for _, id := range ids["idle"] {
			if strings.HasPrefix(states[id], "chan receive") {
				parked++
			}
		}
		if parked != n {
			reason = fmt.Sprintf("%d of %d idle goroutines parked", parked, n)
		}
		for _, role := range extra {
			if t := tids[role]; !inNanosleep(t) {
				reason = fmt.Sprintf("%s thread %d not in nanosleep", role, t)
			}
		}
		idsMu.Unlock()
		if reason == "" && n < 1000 {
			// The dump must stay as it is: once more, a little later.
			time.Sleep(50 * time.Millisecond)
			reason = recheck(states)
		}
		if reason == "" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	fatal(fmt.Errorf("hang not reached within 60s: %s", reason))
}

func recheck(before map[int64]string) string {
	after := goroutineStates()
	idsMu.Lock()
	defer idsMu.Unlock()
	for role, gs := range ids {
		if role == "spinner" || role == "heartbeat" || role == "rawsleep" {
			continue
		}
		for _, id := range gs {
			if before[id] != after[id] {
				return fmt.Sprintf("%s goroutine %d moved from [%s] to [%s]", role, id, before[id], after[id])
			}
		}
	}
	return ""
}

func inNanosleep(tid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 0 && f[0] == strconv.Itoa(syscall.SYS_NANOSLEEP)
}

// goroutineStates maps each goroutine id to its state, from
// runtime.Stack.
func goroutineStates() map[int64]string {
	buf := make([]byte, 1<<20)
	for {
		k := runtime.Stack(buf, true)
		if k < len(buf) {
			buf = buf[:k]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[int64]string{}
	for _, rec := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(rec, "\n")
		rest, ok := strings.CutPrefix(head, "goroutine ")
		if !ok {
			continue
		}
		idText, body, _ := strings.Cut(rest, " [")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			continue
		}
		state, _, _ := strings.Cut(strings.TrimSuffix(body, "]:"), ", ")
		out[id] = state
	}
	return out
}

func goid() int64 {
	var b [64]byte
	s := string(b[:runtime.Stack(b[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
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

// conn is a connection of -locks: its own mutex and objects.
type conn struct {
	id  int
	buf []byte
	mu  sync.Mutex
}

// lockPairs starts n holders and n waiters, each pair on its own conn,
// and returns once every waiter is parked in Lock.
func lockPairs(n int) {
	if n == 0 {
		return
	}
	for i := 0; i < n; i++ {
		c := &conn{id: i, buf: make([]byte, 64+i%512)}
		held := make(chan struct{})
		go func() {
			c.mu.Lock()
			close(held)
			<-never
			c.mu.Unlock()
		}()
		<-held
		go func() {
			c.mu.Lock()
			c.buf[0]++
			c.mu.Unlock()
		}()
	}
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		k := 0
		for _, st := range goroutineStates() {
			if st == "sync.Mutex.Lock" {
				k++
			}
		}
		if k >= n+3 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	fatal(fmt.Errorf("the -locks waiters did not all park in Lock"))
}
