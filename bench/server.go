package bench

import (
	"bytes"
	"math/rand/v2"
	"strconv"
)

// ServerDump returns a goroutine dump of n goroutines shaped like a chat
// server's, as runtime.Stack(buf, true) prints it in Go 1.26: every
// goroutine owns its objects (a connection, a session, a request), so its
// argument words are its own and no two goroutines read alike, as in a
// real server. Dump's goroutines come from 48 call sites with random
// words; these come from a few shapes, each with many goroutines:
//
//   - a connection's read loop parked in select on its own channels;
//   - its writer parked receiving from its own queue;
//   - a request handler in IO wait reading its own socket;
//   - handlers queued on the registry's one sync.Mutex, whose holder
//     waits sending on a full channel past its Lock line;
//   - pairs on a connection's own write mutex: one writing to a slow
//     peer past its Lock line, one queued behind it;
//   - a few timers asleep, the accept loop, the caller of runtime.Stack.
//
// The same n always gives the same bytes.
func ServerDump(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 0x5eed5eed))
	var b bytes.Buffer
	b.Grow(n * 800)
	w := &writer{b: &b, r: r}
	const (
		srv = "/src/chat/internal/chat/"
		reg = "0xc0000a4000" // the registry: one lock for all
	)
	// Each goroutine's own objects: a word past every other goroutine's.
	obj := func(id int64, k int) string {
		return "0xc" + strconv.FormatInt(0x100000000+id*0x400+int64(k)*0x80, 16)
	}
	line := func(fn, args, file string, ln, off int) {
		b.WriteString(fn)
		b.WriteString(args)
		b.WriteString("\n\t")
		b.WriteString(file)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(ln))
		if off != 0 {
			b.WriteString(" +0x")
			b.WriteString(strconv.FormatInt(int64(off), 16))
		}
		b.WriteByte('\n')
	}
	created := func(fn, file string, ln, off int, by int64) {
		b.WriteString("created by ")
		b.WriteString(fn)
		b.WriteString(" in goroutine ")
		b.WriteString(strconv.FormatInt(by, 10))
		b.WriteByte('\n')
		w.frame(frame{fn, file, ln, off, 0}, true)
	}
	head := func(id int64, state string) {
		b.WriteString("\ngoroutine ")
		b.WriteString(strconv.FormatInt(id, 10))
		b.WriteString(" [")
		b.WriteString(state)
		if state != "running" && r.IntN(3) == 0 {
			b.WriteString(", ")
			b.WriteString(strconv.Itoa(1 + r.IntN(600)))
			b.WriteString(" minutes")
		}
		b.WriteString("]:\n")
	}
	ioWait := func(id int64) {
		line("internal/poll.runtime_pollWait", "(0x7f"+strconv.FormatInt(0x41246300000+id*0x100, 16)+", 0x72)", goroot+"runtime/netpoll.go", 351, 0x85)
		line("internal/poll.(*pollDesc).wait", "("+obj(id, 1)+"?, "+obj(id, 2)+"?, 0x0)", goroot+"internal/poll/fd_poll_runtime.go", 84, 0x27)
		line("internal/poll.(*pollDesc).waitRead", "(...)", goroot+"internal/poll/fd_poll_runtime.go", 89, 0)
		line("internal/poll.(*FD).Read", "("+obj(id, 1)+", {"+obj(id, 2)+", 0x1000, 0x1000})", goroot+"internal/poll/fd_unix.go", 165, 0x279)
		line("net.(*netFD).Read", "("+obj(id, 1)+", {"+obj(id, 2)+"?, 0x0?, 0x0?})", goroot+"net/fd_posix.go", 68, 0x25)
		line("net.(*conn).Read", "("+obj(id, 3)+", {"+obj(id, 2)+"?, 0x0?, 0x0?})", goroot+"net/net.go", 196, 0x45)
	}

	b.WriteString("goroutine 1 [running]:\n")
	line("main.dumpGoroutines", "()", "/src/chat/cmd/chatd/debug.go", 41, 0x65)
	line("main.main", "()", "/src/chat/cmd/chatd/main.go", 88, 0x3be)
	id := int64(1)
	next := func() int64 { id += 1 + int64(r.IntN(2)); return id }

	// The accept loop and the registry's holder.
	accept := next()
	head(accept, "IO wait")
	line("internal/poll.runtime_pollWait", "(0x7f4124640000, 0x72)", goroot+"runtime/netpoll.go", 351, 0x85)
	line("internal/poll.(*pollDesc).wait", "(0xc000180080?, 0x0?, 0x0)", goroot+"internal/poll/fd_poll_runtime.go", 84, 0x27)
	line("internal/poll.(*pollDesc).waitRead", "(...)", goroot+"internal/poll/fd_poll_runtime.go", 89, 0)
	line("internal/poll.(*FD).Accept", "(0xc000180080)", goroot+"internal/poll/fd_unix.go", 613, 0x28c)
	line("net.(*netFD).accept", "(0xc000180080)", goroot+"net/fd_unix.go", 150, 0x29)
	line("net.(*TCPListener).accept", "(0xc0001a0000)", goroot+"net/tcpsock_posix.go", 159, 0x1b)
	line("net.(*TCPListener).Accept", "(0xc0001a0000)", goroot+"net/tcpsock.go", 387, 0x30)
	line("github.com/acme/chat/internal/chat.(*Server).Serve", "(0xc0000a2000, {0x7a1f60, 0xc0001a0000})", srv+"server.go", 61, 0x8e)
	created("main.main", "/src/chat/cmd/chatd/main.go", 80, 0x2f1, 1)
	holder := next()
	head(holder, "chan send")
	line("github.com/acme/chat/internal/chat.(*Registry).broadcast", "("+reg+", {0xc000b00000, 0x1c})", srv+"registry.go", 88, 0x6a)
	line("github.com/acme/chat/internal/chat.(*Registry).Register", "("+reg+", "+obj(holder, 0)+")", srv+"registry.go", 47, 0x10f)
	line("github.com/acme/chat/internal/chat.(*Conn).serve", "("+obj(holder, 0)+")", srv+"conn.go", 52, 0x75)
	created("github.com/acme/chat/internal/chat.(*Server).Serve", srv+"server.go", 70, 0x1c5, accept)

	for i := 3; i < n; i++ {
		g := next()
		switch k := r.IntN(100); {
		case k < 40: // a connection's read loop
			head(g, "select")
			line("github.com/acme/chat/internal/chat.(*Conn).readLoop", "("+obj(g, 0)+", {0x7a2080, "+obj(g, 4)+"})", srv+"conn.go", 118, 0x1d3)
			line("github.com/acme/chat/internal/chat.(*Conn).serve.gowrap1", "()", srv+"conn.go", 49, 0x25)
			created("github.com/acme/chat/internal/chat.(*Conn).serve", srv+"conn.go", 49, 0x6f, g-1)
		case k < 70: // its writer
			head(g, "chan receive")
			line("github.com/acme/chat/internal/chat.(*Conn).writeLoop", "("+obj(g, 0)+")", srv+"conn.go", 141, 0x5c)
			line("github.com/acme/chat/internal/chat.(*Conn).serve.gowrap2", "()", srv+"conn.go", 50, 0x25)
			created("github.com/acme/chat/internal/chat.(*Conn).serve", srv+"conn.go", 50, 0xab, g-2)
		case k < 90: // a request handler reading its socket
			head(g, "IO wait")
			ioWait(g)
			line("bufio.(*Reader).Read", "("+obj(g, 5)+", {"+obj(g, 6)+", 0x200, 0x200})", goroot+"bufio/bufio.go", 245, 0x197)
			line("github.com/acme/chat/internal/proto.ReadFrame", "({0x7a2100, "+obj(g, 5)+"}, "+obj(g, 6)+")", "/src/chat/internal/proto/frame.go", 33, 0x4b)
			line("github.com/acme/chat/internal/chat.(*Session).handle", "("+obj(g, 7)+", {0x7a3c40, "+obj(g, 8)+"})", srv+"session.go", 77, 0xe8)
			line("github.com/acme/chat/internal/chat.(*Conn).serve", "("+obj(g, 0)+")", srv+"conn.go", 58, 0x1b4)
			created("github.com/acme/chat/internal/chat.(*Server).Serve", srv+"server.go", 70, 0x1c5, accept)
		case k < 94: // a connection's writer, holding its write mutex, and a sender queued on it
			c := obj(g, 0)
			head(g, "IO wait")
			line("internal/poll.runtime_pollWait", "(0x7f"+strconv.FormatInt(0x41246300000+g*0x100, 16)+", 0x77)", goroot+"runtime/netpoll.go", 351, 0x85)
			line("internal/poll.(*pollDesc).wait", "("+obj(g, 1)+"?, 0x0?, 0x0)", goroot+"internal/poll/fd_poll_runtime.go", 84, 0x27)
			line("internal/poll.(*pollDesc).waitWrite", "(...)", goroot+"internal/poll/fd_poll_runtime.go", 94, 0)
			line("internal/poll.(*FD).Write", "("+obj(g, 1)+", {"+obj(g, 2)+", 0x8000, 0x8000})", goroot+"internal/poll/fd_unix.go", 393, 0x2b8)
			line("net.(*netFD).Write", "("+obj(g, 1)+", {"+obj(g, 2)+"?, 0x0?, 0x0?})", goroot+"net/fd_posix.go", 96, 0x25)
			line("net.(*conn).Write", "("+obj(g, 3)+", {"+obj(g, 2)+"?, 0x0?, 0x0?})", goroot+"net/net.go", 208, 0x45)
			line("github.com/acme/chat/internal/chat.(*Conn).Send", "("+c+", {"+obj(g, 2)+", 0x8000, 0x8000})", srv+"conn.go", 170, 0x9c)
			line("github.com/acme/chat/internal/chat.(*Session).flush", "("+obj(g, 7)+")", srv+"session.go", 101, 0x51)
			created("github.com/acme/chat/internal/chat.(*Session).start", srv+"session.go", 41, 0xd5, g-1)
			g = next()
			head(g, "sync.Mutex.Lock")
			line("internal/sync.runtime_SemacquireMutex", "(0x0?, 0x0?, 0x0?)", goroot+"runtime/sema.go", 95, 0x25)
			line("internal/sync.(*Mutex).lockSlow", "("+c[:len(c)-2]+"40)", goroot+"internal/sync/mutex.go", 149, 0x15d)
			line("internal/sync.(*Mutex).Lock", "(...)", goroot+"internal/sync/mutex.go", 70, 0)
			line("sync.(*Mutex).Lock", "(...)", goroot+"sync/mutex.go", 46, 0)
			line("github.com/acme/chat/internal/chat.(*Conn).Send", "("+c+", {"+obj(g, 2)+", 0x40, 0x40})", srv+"conn.go", 166, 0x4a)
			line("github.com/acme/chat/internal/chat.(*Session).ping", "("+obj(g, 7)+")", srv+"session.go", 120, 0x3a)
			created("github.com/acme/chat/internal/chat.(*Session).start", srv+"session.go", 42, 0xf1, g-2)
			i++
		case k < 97: // queued on the registry's mutex
			head(g, "sync.Mutex.Lock")
			line("internal/sync.runtime_SemacquireMutex", "(0x0?, 0x0?, 0x0?)", goroot+"runtime/sema.go", 95, 0x25)
			line("internal/sync.(*Mutex).lockSlow", "("+reg+")", goroot+"internal/sync/mutex.go", 149, 0x15d)
			line("internal/sync.(*Mutex).Lock", "(...)", goroot+"internal/sync/mutex.go", 70, 0)
			line("sync.(*Mutex).Lock", "(...)", goroot+"sync/mutex.go", 46, 0)
			line("github.com/acme/chat/internal/chat.(*Registry).Register", "("+reg+", "+obj(g, 0)+")", srv+"registry.go", 41, 0x4d)
			line("github.com/acme/chat/internal/chat.(*Conn).serve", "("+obj(g, 0)+")", srv+"conn.go", 52, 0x75)
			created("github.com/acme/chat/internal/chat.(*Server).Serve", srv+"server.go", 70, 0x1c5, accept)
		default: // a session's idle timer
			head(g, "sleep")
			line("time.Sleep", "(0x"+strconv.FormatInt(int64(1+r.IntN(60))*1e9, 16)+")", goroot+"runtime/time.go", 363, 0x165)
			line("github.com/acme/chat/internal/chat.(*Session).expire", "("+obj(g, 7)+")", srv+"session.go", 130, 0x3e)
			line("github.com/acme/chat/internal/chat.(*Session).start.gowrap1", "()", srv+"session.go", 40, 0x25)
			created("github.com/acme/chat/internal/chat.(*Session).start", srv+"session.go", 40, 0x97, g-1)
		}
	}
	return b.Bytes()
}
