package java

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// HotSpot's attach mechanism, spoken as jattach speaks it
// (github.com/apangin/jattach, src/posix/jattach_hotspot.c), so that a
// live JVM's threads can be dumped on a machine without a JDK: the JVM
// listens on a Unix socket, tmp/.java_pid<PID>, once its attach listener
// has started; a client that finds no socket creates .attach_pid<PID> in
// the JVM's working directory and sends it SIGQUIT, which starts the
// listener instead of printing a dump. The request is "1\0CMD\0A1\0A2\0A3\0";
// the reply is a result code on its own line, then the command's output.
//
// Written here rather than run through jcmd: jcmd needs a JDK of the same
// user beside the target, and sends its SIGQUIT without asking whether the
// JVM catches it (one run with -Xrs dies of it).

// AttachTarget is a live JVM as the attach client needs it.
type AttachTarget struct {
	// Root is the JVM's root directory as hangdoc reaches it
	// (/proc/PID/root), Cwd its working directory (/proc/PID/cwd).
	Root, Cwd string
	// NSPID is its pid in its own PID namespace: the number in the
	// socket's and attach file's names.
	NSPID int
	// CatchesQuit: its status's SigCgt has SIGQUIT. A JVM that does not
	// catch it (-Xrs) would die of the signal that starts the listener.
	CatchesQuit bool
	// AttachDisabled: -XX:+DisableAttachMechanism is on its command line
	// or in its JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS or _JAVA_OPTIONS.
	AttachDisabled bool
	// Quit sends the JVM SIGQUIT (through the pidfd hangdoc holds).
	Quit func() error
	// UID and GID are the JVM's effective ids, when OwnerKnown. JDK 8
	// answers only a client and an attach file of its own effective uid
	// and gid (JDK 9 and later accept root too): the attach file is
	// given to them, and a connection the JVM ends unanswered is made
	// again with them.
	UID, GID   int
	OwnerKnown bool
}

// Reply is what a thread dump through the attach socket brought.
type Reply struct {
	Dump []byte
	// Started: this call's SIGQUIT started the attach listener.
	Started bool
	// AsOwner: the JVM answered only a connection made with its own uid
	// and gid (JDK 8).
	AsOwner bool
}

// ErrAttachRefused says hangdoc would not attach: its message says why.
var ErrAttachRefused = errors.New("attach refused")

// MaxDump bounds the reply read from the attach socket.
const MaxDump = 64 << 20

// listenerWait bounds the wait for a JVM's attach listener to start after
// the SIGQUIT that asks for it.
const listenerWait = 5 * time.Second

func (a AttachTarget) socket() string {
	return filepath.Join(a.Root, "tmp", ".java_pid"+strconv.Itoa(a.NSPID))
}

// ThreadDump asks the JVM for a thread dump with owners of ownable
// synchronizers (jcmd Thread.print -l). started says the attach listener
// was started by this call's SIGQUIT. The dump is a safepoint: the JVM's
// threads stop while it is taken, for about the time the call takes.
func ThreadDump(ctx context.Context, a AttachTarget) (Reply, error) {
	var r Reply
	sock := a.socket()
	if _, err := os.Stat(sock); err != nil {
		if r.Started, err = startListener(ctx, a, sock, false); err != nil {
			return r, err
		}
	}
	var err error
	r.Dump, r.AsOwner, err = request(ctx, a, "jcmd", "Thread.print -l")
	if errors.Is(err, unix.ECONNREFUSED) && !r.Started {
		// Nobody listens on the socket: a JVM that had this pid before
		// (killed, it left its socket behind). HotSpot renames its socket
		// into place only once it listens, so a refusal is never a
		// listener starting.
		if r.Started, err = startListener(ctx, a, sock, true); err != nil {
			return r, err
		}
		r.Dump, r.AsOwner, err = request(ctx, a, "jcmd", "Thread.print -l")
	}
	return r, err
}

// Listening reports whether the JVM's attach listener has its socket: a
// client may then connect without signalling the JVM.
func (a AttachTarget) Listening() bool {
	_, err := os.Stat(a.socket())
	return err == nil
}

// VirtualThreadDump asks a JDK 21+ JVM for its JSON thread dump, the one
// that has its virtual threads (jcmd Thread.dump_to_file -format=json):
// the JVM writes it to a file in its own /tmp, read here through its root
// and removed. An older JVM refuses the command (ErrNoVirtualDump).
func VirtualThreadDump(ctx context.Context, a AttachTarget) ([]byte, error) {
	name := fmt.Sprintf("/tmp/hangdoc-threads-%d-%d.json", os.Getpid(), a.NSPID)
	reply, _, err := request(ctx, a, "jcmd", "Thread.dump_to_file -format=json -overwrite "+name)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(a.Root, name)
	defer os.Remove(path)
	if bytes.Contains(reply, []byte("Unknown diagnostic command")) || bytes.Contains(reply, []byte("not available")) {
		return nil, fmt.Errorf("%w: %s", ErrNoVirtualDump, firstLine(reply))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: the JVM wrote no dump file (%s): %v", ErrNoVirtualDump, firstLine(reply), err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxDump+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxDump {
		return nil, fmt.Errorf("the JVM's JSON thread dump is over %d MiB", MaxDump>>20)
	}
	return b, nil
}

// ErrNoVirtualDump: the JVM has no JSON thread dump (before JDK 21).
var ErrNoVirtualDump = errors.New("no JSON thread dump")

// startListener starts a JVM's attach listener: attach file, SIGQUIT, wait
// for the socket. It refuses where the signal could harm the JVM. stale: a
// socket nobody listens on is in the way, removed once the JVM may be
// signalled.
func startListener(ctx context.Context, a AttachTarget, sock string, stale bool) (bool, error) {
	switch {
	case a.AttachDisabled:
		if a.CatchesQuit {
			return false, fmt.Errorf("%w: the JVM runs with -XX:+DisableAttachMechanism (with --sigquit, it prints its thread dump on its standard output instead, which hangdoc reads back; it catches SIGQUIT, so the signal does not end it)", ErrAttachRefused)
		}
		return false, fmt.Errorf("%w: the JVM runs with -XX:+DisableAttachMechanism", ErrAttachRefused)
	case !a.CatchesQuit:
		return false, fmt.Errorf("%w: the JVM does not catch SIGQUIT (it runs with -Xrs, or has not started its signal handling): the signal that starts its attach listener would kill it", ErrAttachRefused)
	case a.Quit == nil:
		return false, fmt.Errorf("%w: hangdoc cannot signal the JVM from its PID namespace", ErrAttachRefused)
	}
	if stale {
		if err := os.Remove(sock); err != nil {
			return false, fmt.Errorf("removing a stale attach socket nobody listens on: %w", err)
		}
	}
	name := ".attach_pid" + strconv.Itoa(a.NSPID)
	file := filepath.Join(a.Cwd, name)
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		file = filepath.Join(a.Root, "tmp", name)
		if f, err = os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			return false, fmt.Errorf("creating the JVM's attach file: %w", err)
		}
	}
	f.Close()
	defer os.Remove(file)
	if a.OwnerKnown && os.Geteuid() == 0 {
		// JDK 8 ignores an attach file that is not its user's.
		_ = os.Chown(file, a.UID, a.GID)
	}
	if err := a.Quit(); err != nil {
		return false, fmt.Errorf("asking the JVM to start its attach listener: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, listenerWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(sock); err == nil {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return true, fmt.Errorf("the JVM's attach listener did not start within %s of SIGQUIT", listenerWait)
		case <-tick.C:
		}
	}
}

// request sends one attach command and reads its reply, bounded by ctx
// and MaxDump. asOwner says the JVM answered only a connection made with
// its own uid and gid.
func request(ctx context.Context, a AttachTarget, cmd string, args ...string) (reply []byte, asOwner bool, err error) {
	sock := a.socket()
	c, err := dial(ctx, sock)
	if err == nil {
		reply, err = exchange(ctx, c, cmd, args)
	}
	other := a.OwnerKnown && (a.UID != os.Geteuid() || a.GID != os.Getegid())
	if other && (errors.Is(err, errUnanswered) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) {
		asOwner = true
		if c, err = dialAs(sock, a.UID, a.GID); err == nil {
			reply, err = exchange(ctx, c, cmd, args)
		}
	}
	if err != nil {
		return nil, asOwner, err
	}
	return reply, asOwner, nil
}

// errUnanswered: the JVM closed the connection without a word, as JDK 8
// does to a client that is not of its uid and gid.
var errUnanswered = errors.New("the JVM closed the attach connection unanswered")

func dial(ctx context.Context, sock string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("connecting to the JVM's attach socket: %w", err)
	}
	return c, nil
}

// dialAs connects to sock with the effective uid and gid given, which the
// listener reads from the socket (SO_PEERCRED is taken at connect). Only
// the thread that connects takes them, through the raw system calls (the
// syscall package's would change every thread of hangdoc), and gives them
// back before any other goroutine may run on it. Should giving them back
// fail, its goroutine ends locked to it: Go then ends the thread (or, the
// main thread, never runs anything on it again).
func dialAs(sock string, uid, gid int) (net.Conn, error) {
	type result struct {
		fd  int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := connectAs(sock, uid, gid)
		done <- result{fd, err}
	}()
	r := <-done
	if r.err != nil {
		return nil, fmt.Errorf("connecting to the JVM's attach socket as uid %d, gid %d: %w", uid, gid, r.err)
	}
	f := os.NewFile(uintptr(r.fd), sock)
	defer f.Close()
	return net.FileConn(f)
}

// connectAs connects a Unix stream socket to sock with this thread's
// effective gid and uid set to those given, then sets them back and
// unlocks the thread. A full backlog fails the connect at once (the
// socket is nonblocking).
func connectAs(sock string, uid, gid int) (int, error) {
	euid, egid := os.Geteuid(), os.Getegid()
	keep := ^uintptr(0) // -1: leave that id as it is
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, keep, uintptr(gid), keep); e != 0 {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("setting the gid: %w", e)
	}
	fd, err := -1, error(nil)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
		err = fmt.Errorf("setting the uid: %w", e)
	} else {
		fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err == nil {
			if err = unix.Connect(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
				unix.Close(fd)
				fd = -1
			}
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(euid), keep); e != 0 {
			return fd, err // the thread stays locked, and ends with its goroutine
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, keep, uintptr(egid), keep); e != 0 {
		return fd, err
	}
	runtime.UnlockOSThread()
	return fd, err
}

// exchange writes one request on c, reads the reply and closes c.
func exchange(ctx context.Context, c net.Conn, cmd string, args []string) ([]byte, error) {
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	msg := []byte("1\x00" + cmd + "\x00")
	for i := range 3 {
		if i < len(args) {
			msg = append(msg, args[i]...)
		}
		msg = append(msg, 0)
	}
	if _, err := c.Write(msg); err != nil {
		if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) {
			return nil, errUnanswered
		}
		return nil, fmt.Errorf("writing to the JVM's attach socket: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(c, MaxDump+1))
	if err != nil {
		if errors.Is(err, unix.ECONNRESET) {
			return nil, errUnanswered
		}
		return nil, fmt.Errorf("reading the JVM's reply: %w", err)
	}
	if len(b) == 0 {
		return nil, errUnanswered
	}
	if len(b) > MaxDump {
		return nil, fmt.Errorf("the JVM's reply is over %d MiB", MaxDump>>20)
	}
	code, rest, _ := bytes.Cut(b, []byte("\n"))
	if string(code) != "0" {
		return nil, fmt.Errorf("the JVM refused %s: code %q: %s", cmd, code, firstLine(rest))
	}
	// jcmd's reply carries a second result line before the output on
	// some JDKs ("0\n" then the text); a dump starts with a timestamp or
	// "Full thread dump" either way.
	if c2, r2, ok := bytes.Cut(rest, []byte("\n")); ok && string(c2) == "0" {
		rest = r2
	}
	return rest, nil
}

func firstLine(b []byte) string {
	l, _, _ := bytes.Cut(b, []byte("\n"))
	if len(l) > 200 {
		l = l[:200]
	}
	return string(l)
}

// AttachDisabledIn reports -XX:+DisableAttachMechanism in a command line
// (NUL-separated) or in an environment's JVM option variables.
func AttachDisabledIn(cmdline, environ []byte) bool {
	const flag = "-XX:+DisableAttachMechanism"
	for _, a := range bytes.Split(cmdline, []byte{0}) {
		if string(a) == flag {
			return true
		}
	}
	for _, kv := range bytes.Split(environ, []byte{0}) {
		k, v, ok := bytes.Cut(kv, []byte("="))
		if !ok {
			continue
		}
		switch string(k) {
		case "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS":
			for _, f := range bytes.Fields(v) {
				if string(f) == flag {
					return true
				}
			}
		}
	}
	return false
}
