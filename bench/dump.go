// Package bench measures hangdoc's goroutine-dump parser against the
// parsers a user would otherwise pick (DataDog/gostackparse,
// maruel/panicparse). It is a module of its own so that their code stays
// out of hangdoc's.
package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Dump returns a goroutine dump of n goroutines as runtime.Stack(buf, true)
// or /debug/pprof/goroutine?debug=2 prints it in Go 1.26: the caller first
// and [running], then the others in id order with their wait reasons,
// "N minutes", argument words, "+0x" offsets, inlined "(...)" frames and
// "created by … in goroutine N". The same n always gives the same bytes.
//
// The goroutines come from a fixed set of call sites (a server's accept
// loop, connection readers, workers on a mutex or a channel, sleepers…),
// some much more common than others, as in the dump of a real server with
// many goroutines: the functions and files repeat, the argument words do
// not. No stack is deeper than 100 frames, so none is elided and every
// parser here can read all of it.
func Dump(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 0x9e3779b97f4a7c15))
	ss := sites(rand.New(rand.NewPCG(1, 2)))
	var b bytes.Buffer
	b.Grow(n * 1200)
	w := &writer{b: &b, r: r}

	// The caller of runtime.Stack.
	b.WriteString("goroutine 1 [running]:\n")
	w.frame(frame{"main.dumpGoroutines", "/src/shop/cmd/shopd/debug.go", 41, 0x65, 1}, false)
	w.frame(frame{"main.main", "/src/shop/cmd/shopd/main.go", 88, 0x3be, 0}, false)

	id := int64(1)
	for i := 1; i < n; i++ {
		id += 1 + int64(r.IntN(3))
		s := ss[pick(r, len(ss))]
		b.WriteString("\ngoroutine ")
		b.WriteString(strconv.FormatInt(id, 10))
		b.WriteString(" [")
		b.WriteString(s.state)
		if s.state != "runnable" && s.state != "syscall" && r.IntN(2) == 0 {
			fmt.Fprintf(&b, ", %d minutes", 1+r.IntN(9000))
		}
		if r.IntN(100) == 0 {
			b.WriteString(", locked to thread")
		}
		b.WriteString("]:\n")
		for _, f := range s.frames {
			w.frame(f, false)
		}
		creator := int64(1)
		if id > 2 && r.IntN(4) != 0 {
			creator = 1 + r.Int64N(id-1)
		}
		b.WriteString("created by ")
		b.WriteString(s.creator.fn)
		b.WriteString(" in goroutine ")
		b.WriteString(strconv.FormatInt(creator, 10))
		b.WriteByte('\n')
		w.frame(s.creator, true)
	}
	return b.Bytes()
}

// pick returns an index in [0, n): index i about twice as likely as i+4,
// so a handful of sites make most goroutines and every site appears.
func pick(r *rand.Rand, n int) int {
	for {
		if i := int(r.ExpFloat64() * 6); i < n {
			return i
		}
	}
}

// frame is one frame of a call site. args is how many argument words
// the function line prints; -1 prints "(...)", an inlined frame, whose
// location line has no offset.
type frame struct {
	fn   string
	file string
	line int
	off  int
	args int
}

// site is a place where goroutines of a program wait: the same state,
// the same frames (but for their argument words), the same creator.
type site struct {
	state   string
	frames  []frame
	creator frame
}

const (
	goroot = "/usr/local/go/src/"
	app    = "/src/shop/"
	mods   = "/root/go/pkg/mod/"
)

// Where each state blocks, below the program's own frames: the library
// frames Go 1.26 prints for it at traceback level 1 (no runtime.* frames).
var waits = []struct {
	state  string
	frames []frame
}{
	{"chan receive", nil},
	{"select", nil},
	{"sync.Mutex.Lock", []frame{
		{"internal/sync.runtime_SemacquireMutex", goroot + "runtime/sema.go", 95, 0x25, 3},
		{"internal/sync.(*Mutex).lockSlow", goroot + "internal/sync/mutex.go", 149, 0x15d, 1},
		{"internal/sync.(*Mutex).Lock", goroot + "internal/sync/mutex.go", 70, 0, -1},
		{"sync.(*Mutex).Lock", goroot + "sync/mutex.go", 46, 0, -1},
	}},
	{"IO wait", []frame{
		{"internal/poll.runtime_pollWait", goroot + "runtime/netpoll.go", 351, 0x85, 2},
		{"internal/poll.(*pollDesc).wait", goroot + "internal/poll/fd_poll_runtime.go", 84, 0x27, 3},
		{"internal/poll.(*pollDesc).waitRead", goroot + "internal/poll/fd_poll_runtime.go", 89, 0, -1},
		{"internal/poll.(*FD).Read", goroot + "internal/poll/fd_unix.go", 165, 0x279, 2},
		{"net.(*netFD).Read", goroot + "net/fd_posix.go", 68, 0x25, 2},
		{"net.(*conn).Read", goroot + "net/net.go", 196, 0x45, 2},
		{"bufio.(*Reader).fill", goroot + "bufio/bufio.go", 113, 0x103, 1},
		{"bufio.(*Reader).Peek", goroot + "bufio/bufio.go", 152, 0x53, 2},
	}},
	{"IO wait", []frame{
		{"internal/poll.runtime_pollWait", goroot + "runtime/netpoll.go", 351, 0x85, 2},
		{"internal/poll.(*pollDesc).wait", goroot + "internal/poll/fd_poll_runtime.go", 84, 0x27, 3},
		{"internal/poll.(*pollDesc).waitRead", goroot + "internal/poll/fd_poll_runtime.go", 89, 0, -1},
		{"internal/poll.(*FD).Accept", goroot + "internal/poll/fd_unix.go", 613, 0x28a, 1},
		{"net.(*netFD).accept", goroot + "net/fd_unix.go", 161, 0x29, 1},
		{"net.(*TCPListener).accept", goroot + "net/tcpsock_posix.go", 159, 0x1b, 1},
		{"net.(*TCPListener).Accept", goroot + "net/tcpsock.go", 380, 0x30, 1},
	}},
	{"sleep", []frame{
		{"time.Sleep", goroot + "runtime/time.go", 363, 0x165, 1},
	}},
	{"sync.WaitGroup.Wait", []frame{
		{"sync.runtime_SemacquireWaitGroup", goroot + "runtime/sema.go", 114, 0x2e, 2},
		{"sync.(*WaitGroup).Wait", goroot + "sync/waitgroup.go", 206, 0x85, 1},
	}},
	{"sync.Cond.Wait", []frame{
		{"sync.runtime_notifyListWait", goroot + "runtime/sema.go", 606, 0x15d, 2},
		{"sync.(*Cond).Wait", goroot + "sync/cond.go", 71, 0x85, 1},
	}},
	{"sync.RWMutex.RLock", []frame{
		{"sync.runtime_SemacquireRWMutexR", goroot + "runtime/sema.go", 100, 0x25, 3},
		{"sync.(*RWMutex).RLock", goroot + "sync/rwmutex.go", 74, 0, -1},
	}},
	{"semacquire", []frame{
		{"sync.runtime_Semacquire", goroot + "runtime/sema.go", 76, 0x25, 1},
		{"golang.org/x/sync/semaphore.(*Weighted).Acquire", mods + "golang.org/x/sync@v0.10.0/semaphore/semaphore.go", 74, 0x2f1, 3},
	}},
	{"chan send", nil},
	{"select (no cases)", nil},
	{"runnable", nil},
	{"syscall", []frame{
		{"syscall.Syscall", goroot + "syscall/syscall_linux.go", 73, 0x25, 4},
		{"syscall.read", goroot + "syscall/zsyscall_linux_amd64.go", 736, 0x4a, 3},
		{"syscall.Read", goroot + "syscall/syscall_unix.go", 183, 0, -1},
		{"internal/poll.ignoringEINTRIO", goroot + "internal/poll/fd_unix.go", 745, 0, -1},
		{"internal/poll.(*FD).Read", goroot + "internal/poll/fd_unix.go", 161, 0x21f, 2},
		{"os.(*File).read", goroot + "os/file_posix.go", 29, 0, -1},
		{"os.(*File).Read", goroot + "os/file.go", 144, 0x52, 2},
	}},
}

// The program's own code and its dependencies: packages, with the file
// each function of it is in.
var pkgs = []struct{ path, dir string }{
	{"github.com/acme/shop/internal/orders", app + "internal/orders/"},
	{"github.com/acme/shop/internal/payments", app + "internal/payments/"},
	{"github.com/acme/shop/internal/inventory", app + "internal/inventory/"},
	{"github.com/acme/shop/internal/db", app + "internal/db/"},
	{"github.com/acme/shop/pkg/cache", app + "pkg/cache/"},
	{"github.com/acme/shop/pkg/queue", app + "pkg/queue/"},
	{"google.golang.org/grpc", mods + "google.golang.org/grpc@v1.64.0/"},
	{"google.golang.org/grpc/internal/transport", mods + "google.golang.org/grpc@v1.64.0/internal/transport/"},
	{"github.com/jackc/pgx/v5/pgconn", mods + "github.com/jackc/pgx/v5@v5.6.0/pgconn/"},
	{"net/http", goroot + "net/http/"},
}

var (
	types = []string{"(*Server)", "(*Client)", "(*Service)", "(*Pool)", "(*conn)", "(*worker)", "(*Store)", "Handler", "(*Queue[...])"}
	verbs = []string{"Serve", "handle", "run", "loop", "Get", "Put", "Process", "dispatch", "readLoop", "writeLoop", "wait", "Acquire", "commit", "flush", "refresh"}
	files = []string{"server.go", "client.go", "service.go", "pool.go", "conn.go", "worker.go", "store.go", "handler.go", "queue.go"}
)

// sites builds the call sites of the program, deterministically.
func sites(r *rand.Rand) []site {
	fn := func() frame {
		p := pkgs[r.IntN(len(pkgs))]
		name := p.path + "."
		if r.IntN(4) != 0 {
			name += types[r.IntN(len(types))] + "."
		}
		name += verbs[r.IntN(len(verbs))]
		switch r.IntN(6) {
		case 0:
			name += ".func" + strconv.Itoa(1+r.IntN(4))
		case 1:
			name += ".gowrap" + strconv.Itoa(1+r.IntN(3))
		}
		args := r.IntN(6)
		if r.IntN(8) == 0 {
			args = -1
		}
		off := 0x10 + r.IntN(0x800)
		if args < 0 {
			off = 0
		}
		return frame{name, p.dir + files[r.IntN(len(files))], 20 + r.IntN(2000), off, args}
	}
	ss := make([]site, 48)
	for i := range ss {
		w := waits[r.IntN(len(waits))]
		s := site{state: w.state, frames: append([]frame(nil), w.frames...)}
		for range 2 + r.IntN(10) {
			s.frames = append(s.frames, fn())
		}
		// The goroutine's own function is the bottom frame: never inlined.
		if last := &s.frames[len(s.frames)-1]; last.args < 0 {
			last.args, last.off = 1, 0x3f
		}
		s.creator = fn()
		s.creator.args = 0
		if s.creator.off == 0 {
			s.creator.off = 0x7d
		}
		ss[i] = s
	}
	return ss
}

type writer struct {
	b *bytes.Buffer
	r *rand.Rand
}

// frame writes f's function line (unless created, which has none of its
// own: the caller wrote "created by …") and its location line.
func (w *writer) frame(f frame, created bool) {
	b := w.b
	if !created {
		b.WriteString(f.fn)
		switch {
		case f.args < 0:
			b.WriteString("(...)")
		default:
			b.WriteByte('(')
			for i := range f.args {
				if i > 0 {
					b.WriteString(", ")
				}
				w.arg()
			}
			b.WriteByte(')')
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\t')
	b.WriteString(f.file)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(f.line))
	if f.off != 0 {
		b.WriteString(" +0x")
		b.WriteString(strconv.FormatInt(int64(f.off), 16))
	}
	b.WriteByte('\n')
}

// arg writes one argument as the runtime prints it: a heap pointer, a
// small word, a string or slice header, or a word it cannot vouch for.
func (w *writer) arg() {
	b, r := w.b, w.r
	switch r.IntN(6) {
	case 0:
		b.WriteString("0x0?")
	case 1:
		b.WriteString("0x")
		b.WriteString(strconv.FormatInt(int64(r.IntN(0x100)), 16))
	case 2:
		fmt.Fprintf(b, "{0x%x, 0x%x}", 0x26ea72400000+r.IntN(1<<22), r.IntN(64))
	case 3:
		fmt.Fprintf(b, "{0x%x?, 0x%x?, 0x%x?}", 0x26ea72400000+r.IntN(1<<22), r.IntN(4096), r.IntN(4096))
	default:
		fmt.Fprintf(b, "0x%x", 0x26ea72400000+r.IntN(1<<22))
	}
}
