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
	"strconv"
	"time"

	"github.com/hangdoc/hangdoc/internal/procstatus"
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
func ThreadDump(ctx context.Context, a AttachTarget) (dump []byte, started bool, err error) {
	sock := a.socket()
	if _, err := os.Stat(sock); err != nil {
		if started, err = startListener(ctx, a, sock); err != nil {
			return nil, false, err
		}
	}
	dump, err = request(ctx, sock, "jcmd", "Thread.print -l")
	return dump, started, err
}

// VirtualThreadDump asks a JDK 21+ JVM for its JSON thread dump, the one
// that has its virtual threads (jcmd Thread.dump_to_file -format=json):
// the JVM writes it to a file in its own /tmp, read here through its root
// and removed. An older JVM refuses the command (ErrNoVirtualDump).
func VirtualThreadDump(ctx context.Context, a AttachTarget) ([]byte, error) {
	sock := a.socket()
	name := fmt.Sprintf("/tmp/hangdoc-threads-%d-%d.json", os.Getpid(), a.NSPID)
	reply, err := request(ctx, sock, "jcmd", "Thread.dump_to_file -format=json -overwrite "+name)
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
// for the socket. It refuses where the signal could harm the JVM.
func startListener(ctx context.Context, a AttachTarget, sock string) (bool, error) {
	switch {
	case a.AttachDisabled:
		return false, fmt.Errorf("%w: the JVM runs with -XX:+DisableAttachMechanism", ErrAttachRefused)
	case !a.CatchesQuit:
		return false, fmt.Errorf("%w: the JVM does not catch SIGQUIT (it runs with -Xrs, or has not started its signal handling): the signal that starts its attach listener would kill it", ErrAttachRefused)
	case a.Quit == nil:
		return false, fmt.Errorf("%w: hangdoc cannot signal the JVM from its PID namespace", ErrAttachRefused)
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
// and MaxDump.
func request(ctx context.Context, sock, cmd string, args ...string) ([]byte, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("connecting to the JVM's attach socket: %w", err)
	}
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
		return nil, fmt.Errorf("writing to the JVM's attach socket: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(c, MaxDump+1))
	if err != nil {
		return nil, fmt.Errorf("reading the JVM's reply: %w", err)
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

// CatchesSignal reports whether a status file's SigCgt mask has sig.
func CatchesSignal(status []byte, sig int) bool {
	st, _ := procstatus.Parse(status)
	return st.Catches(sig)
}
