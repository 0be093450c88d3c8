// Package fusehang mounts a FUSE filesystem that hangs on purpose, for
// tests of what hangdoc does when the process it diagnoses (or hangdoc
// itself) meets a hung filesystem: a lookup of any name that starts with
// "hang" is never answered, and after HangOpens no open is either. A
// thread that asks sleeps in the kernel, in uninterruptible sleep (state
// D), until Close aborts the connection.
//
// It speaks the kernel's FUSE protocol on /dev/fuse itself rather than
// through a library (libfuse, go-fuse, bazil.org/fuse): the tests need a
// daemon that misbehaves in one precise way, and a few hundred lines of
// protocol are easier to make misbehave than a library built to behave.
// It needs root (mount(2)) and /dev/fuse (modprobe fuse).
package fusehang

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Opcodes and sizes of the kernel's FUSE protocol (include/uapi/linux/fuse.h).
const (
	opLookup      = 1
	opForget      = 2
	opGetattr     = 3
	opOpen        = 14
	opRead        = 15
	opStatfs      = 17
	opRelease     = 18
	opGetxattr    = 22
	opFlush       = 25
	opInit        = 26
	opOpendir     = 27
	opReaddir     = 28
	opReleasedir  = 29
	opAccess      = 34
	opInterrupt   = 36
	opDestroy     = 38
	opBatchForget = 42

	inHeaderSize = 40
	attrSize     = 88
	rootID       = 1
	// readBuffer is what one read of /dev/fuse may need: a request
	// header, its arguments and up to max_write bytes of data.
	readBuffer = 1 << 17
	maxWrite   = 1 << 16
)

// warmup is the name Mount looks up to teach the kernel that this daemon
// does not handle interrupts: from then on a waiting thread sleeps in D
// (killable) rather than S (a FUSE request first waits interruptibly).
const warmup = ".fusehang-warmup"

// FS is a mounted hanging filesystem.
type FS struct {
	// Dir is the mount point.
	Dir string

	dev   int    // /dev/fuse, non-blocking
	conn  uint32 // the connection's number in /sys/fs/fuse/connections
	files []file // node id i+2

	mu        sync.Mutex
	held      map[uint64]string // unique → what, for requests never answered
	hangOpens bool
	changed   chan struct{} // closed and replaced when held grows
	warm      chan struct{} // closed once the kernel knows no interrupts
	warmTID   int
	closed    bool
	done      chan struct{} // closed when the serving loop ends
	serveErr  error
}

type file struct {
	name string
	data []byte
}

// Mount mounts a new FS on dir (which must exist) with the given regular
// files at its root (mode 0755, so a binary there can be run), and
// returns once a stat of a name starting with "hang" would sleep in D.
func Mount(dir string, files map[string][]byte) (*FS, error) {
	// A raw non-blocking descriptor polled by hand: Go's poller takes
	// /dev/fuse for pollable before the mount gives it a connection, and
	// then fails its reads.
	dev, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/fuse: %w (load the module: modprobe fuse)", err)
	}
	fs := &FS{Dir: dir, dev: dev, held: map[uint64]string{}, changed: make(chan struct{}), warm: make(chan struct{}), done: make(chan struct{})}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fs.files = append(fs.files, file{n, files[n]})
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", dev)
	if err := unix.Mount("fusehang", dir, "fuse", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(dev)
		return nil, fmt.Errorf("mounting FUSE on %s: %w (needs root)", dir, err)
	}
	fs.conn = connOf(dir)
	go fs.serve()
	if err := fs.warmUp(); err != nil {
		fs.Close()
		return nil, err
	}
	return fs, nil
}

// warmUp looks up the warmup name from a thread of its own and signals
// that thread until the kernel sends FUSE_INTERRUPT, which serve answers
// ENOSYS: the kernel then never again waits interruptibly on this mount.
func (fs *FS) warmUp() error {
	tid := make(chan int, 1)
	statDone := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		_, err := os.Stat(fs.Dir + "/" + warmup)
		statDone <- err
	}()
	t := <-tid
	fs.mu.Lock()
	fs.warmTID = t
	fs.mu.Unlock()
	end := time.Now().Add(30 * time.Second) // bounds a failure only
	for {
		select {
		case <-fs.warm:
			select {
			case <-statDone:
				return nil
			case <-time.After(30 * time.Second):
				return errors.New("fusehang: the warmup lookup did not finish")
			}
		case <-fs.done:
			return fmt.Errorf("fusehang: serving ended during warmup: %v", fs.serveErr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(end) {
			return errors.New("fusehang: the kernel sent no FUSE_INTERRUPT for the warmup lookup")
		}
		fs.mu.Lock()
		held := false
		for _, w := range fs.held {
			if w == "lookup "+warmup {
				held = true
			}
		}
		fs.mu.Unlock()
		if held {
			// Any signal interrupts the first, interruptible wait; Go
			// ignores SIGURG (it is its preemption signal).
			_ = unix.Tgkill(os.Getpid(), t, unix.SIGURG)
		}
	}
}

// HangOpens makes every later open of a file never answered: a program
// whose executable is on this FS then blocks in D on an open of
// /proc/PID/exe.
func (fs *FS) HangOpens() {
	fs.mu.Lock()
	fs.hangOpens = true
	fs.mu.Unlock()
}

// Held is how many requests are being held (never answered) now.
func (fs *FS) Held() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, w := range fs.held {
		if w != "lookup "+warmup {
			n++
		}
	}
	return n
}

// WaitHeld waits until at least n requests are held. guard bounds a
// failure only.
func (fs *FS) WaitHeld(n int, guard time.Duration) error {
	end := time.After(guard)
	for {
		fs.mu.Lock()
		ch := fs.changed
		fs.mu.Unlock()
		if fs.Held() >= n {
			return nil
		}
		select {
		case <-ch:
		case <-end:
			return fmt.Errorf("fusehang: %d requests held after %v, want %d", fs.Held(), guard, n)
		case <-fs.done:
			return fmt.Errorf("fusehang: serving ended: %v", fs.serveErr)
		}
	}
}

// Close aborts the connection (every held request fails, the threads
// waiting on them wake) and unmounts the filesystem.
func (fs *FS) Close() error {
	fs.mu.Lock()
	if fs.closed {
		fs.mu.Unlock()
		return nil
	}
	fs.closed = true
	fs.mu.Unlock()
	// Abort through the fuse control filesystem: closing /dev/fuse
	// aborts only if no other process holds a copy of the descriptor,
	// and a child caught in an exec from this mount holds one (its
	// close-on-exec descriptors close only once the exec succeeds), so
	// that alone could leave it and the mount hung for good.
	err := fs.abort()
	// The serving loop notices closed within a poll.
	<-fs.done
	if cerr := unix.Close(fs.dev); err == nil {
		err = cerr
	}
	if uerr := unix.Unmount(fs.Dir, unix.MNT_DETACH); uerr != nil && err == nil {
		err = fmt.Errorf("unmounting %s: %w", fs.Dir, uerr)
	}
	return err
}

const connections = "/sys/fs/fuse/connections"

// connOf finds the connection number of the FUSE mount on dir: the minor
// of its device (major 0, an anonymous device), from /proc/self/mountinfo,
// which asks the filesystem nothing (a stat would wait for the daemon).
func connOf(dir string) uint32 {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return 0
	}
	var conn uint32
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != dir {
			continue
		}
		var major, minor uint32
		if _, err := fmt.Sscanf(f[2], "%d:%d", &major, &minor); err == nil && major == 0 {
			conn = minor // the last mount on dir is this one
		}
	}
	return conn
}

// abort writes to the connection's abort file, mounting the fuse control
// filesystem first if it is not.
func (fs *FS) abort() error {
	if fs.conn == 0 {
		return errors.New("fusehang: the connection's number is unknown: aborted by closing /dev/fuse only")
	}
	path := fmt.Sprintf("%s/%d/abort", connections, fs.conn)
	if _, err := os.Stat(path); err != nil {
		if merr := unix.Mount("fusectl", connections, "fusectl", 0, ""); merr != nil && merr != unix.EBUSY {
			return fmt.Errorf("fusehang: mounting fusectl on %s to abort the connection: %w", connections, merr)
		}
	}
	if err := os.WriteFile(path, []byte("1"), 0); err != nil {
		return fmt.Errorf("fusehang: aborting the connection: %w", err)
	}
	return nil
}

// pollEvery bounds how long the serving loop takes to notice Close.
const pollEvery = 20 * time.Millisecond

func (fs *FS) serve() {
	defer close(fs.done)
	buf := make([]byte, readBuffer)
	for {
		fs.mu.Lock()
		closed := fs.closed
		fs.mu.Unlock()
		if closed {
			return
		}
		pfd := []unix.PollFd{{Fd: int32(fs.dev), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, int(pollEvery/time.Millisecond)); err != nil && err != unix.EINTR {
			fs.serveErr = fmt.Errorf("polling /dev/fuse: %w", err)
			return
		}
		n, err := unix.Read(fs.dev, buf)
		switch {
		case err == unix.EAGAIN, err == unix.EINTR, err == unix.ENOENT:
			// Nothing yet; ENOENT: a request interrupted before it
			// was read.
			continue
		case err == unix.ENODEV:
			return // aborted, or unmounted
		case err != nil:
			fs.serveErr = fmt.Errorf("reading /dev/fuse: %w", err)
			return
		}
		if n < inHeaderSize {
			continue
		}
		if err := fs.handle(buf[:n]); err != nil && !errors.Is(err, syscall.ENOENT) {
			fs.serveErr = err
		}
	}
}

func (fs *FS) handle(req []byte) error {
	if os.Getenv("FUSEHANG_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "fusehang: op %d unique %#x node %d len %d\n", binary.LittleEndian.Uint32(req[4:]), binary.LittleEndian.Uint64(req[8:]), binary.LittleEndian.Uint64(req[16:]), len(req))
	}
	le := binary.LittleEndian
	opcode := le.Uint32(req[4:])
	unique := le.Uint64(req[8:])
	node := le.Uint64(req[16:])
	arg := req[inHeaderSize:]
	switch opcode {
	case opInit:
		out := make([]byte, 64)
		le.PutUint32(out[0:], 7)              // major
		le.PutUint32(out[4:], 31)             // minor
		le.PutUint32(out[8:], 1<<16)          // max_readahead
		le.PutUint16(out[16:], 16)            // max_background
		le.PutUint16(out[18:], 12)            // congestion_threshold
		le.PutUint32(out[20:], maxWrite)      // max_write
		le.PutUint32(out[24:], 1)             // time_gran
		le.PutUint16(out[28:], maxWrite/4096) // max_pages
		return fs.reply(unique, 0, out)
	case opLookup:
		name := string(bytes.TrimRight(arg, "\x00"))
		if node == rootID {
			if i := fs.lookup(name); i >= 0 {
				return fs.reply(unique, 0, fs.entry(uint64(i+2)))
			}
			if name == warmup || bytes.HasPrefix([]byte(name), []byte("hang")) {
				fs.hold(unique, "lookup "+name)
				return nil
			}
		}
		return fs.reply(unique, -int32(syscall.ENOENT), nil)
	case opGetattr:
		out := make([]byte, 16+attrSize)
		le.PutUint64(out[0:], 1) // attr_valid: 1 s
		fs.attr(out[16:], node)
		return fs.reply(unique, 0, out)
	case opOpen, opOpendir:
		fs.mu.Lock()
		hang := fs.hangOpens && opcode == opOpen
		fs.mu.Unlock()
		if hang {
			fs.hold(unique, fmt.Sprintf("open node %d", node))
			return nil
		}
		out := make([]byte, 16)
		le.PutUint64(out[0:], node) // fh
		return fs.reply(unique, 0, out)
	case opRead:
		off := le.Uint64(arg[8:])
		size := uint64(le.Uint32(arg[16:]))
		var data []byte
		if i := int(node) - 2; i >= 0 && i < len(fs.files) {
			d := fs.files[i].data
			if off < uint64(len(d)) {
				data = d[off:min(off+size, uint64(len(d)))]
			}
		}
		return fs.reply(unique, 0, data)
	case opReaddir:
		return fs.reply(unique, 0, nil) // an empty directory listing
	case opStatfs:
		out := make([]byte, 80)
		le.PutUint32(out[40:], 4096) // bsize
		le.PutUint32(out[44:], 255)  // namelen
		le.PutUint32(out[48:], 4096) // frsize
		return fs.reply(unique, 0, out)
	case opRelease, opReleasedir, opFlush, opAccess, opDestroy:
		return fs.reply(unique, 0, nil)
	case opForget, opBatchForget:
		return nil // never answered, by the protocol
	case opInterrupt:
		// ENOSYS tells the kernel this daemon takes no interrupts: every
		// later request then waits killably (D). The interrupted
		// request, the warmup lookup, is answered too.
		target := le.Uint64(arg[0:])
		err := fs.reply(unique, -int32(syscall.ENOSYS), nil)
		fs.mu.Lock()
		what, ok := fs.held[target]
		if ok && what == "lookup "+warmup {
			delete(fs.held, target)
		}
		fs.mu.Unlock()
		if ok && what == "lookup "+warmup {
			select {
			case <-fs.warm:
			default:
				close(fs.warm)
			}
			return fs.reply(target, -int32(syscall.ENOENT), nil)
		}
		return err
	}
	return fs.reply(unique, -int32(syscall.ENOSYS), nil)
}

func (fs *FS) lookup(name string) int {
	for i, f := range fs.files {
		if f.name == name {
			return i
		}
	}
	return -1
}

func (fs *FS) hold(unique uint64, what string) {
	fs.mu.Lock()
	fs.held[unique] = what
	close(fs.changed)
	fs.changed = make(chan struct{})
	fs.mu.Unlock()
}

// entry is a fuse_entry_out for node.
func (fs *FS) entry(node uint64) []byte {
	out := make([]byte, 40+attrSize)
	le := binary.LittleEndian
	le.PutUint64(out[0:], node)
	le.PutUint64(out[16:], 1) // entry_valid: 1 s
	le.PutUint64(out[24:], 1) // attr_valid: 1 s
	fs.attr(out[40:], node)
	return out
}

// attr fills a fuse_attr for node.
func (fs *FS) attr(b []byte, node uint64) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], node) // ino
	mode, nlink, size := uint32(syscall.S_IFDIR|0o755), uint32(2), uint64(0)
	if i := int(node) - 2; i >= 0 && i < len(fs.files) {
		mode, nlink, size = syscall.S_IFREG|0o755, 1, uint64(len(fs.files[i].data))
	}
	le.PutUint64(b[8:], size)
	le.PutUint64(b[16:], (size+511)/512)
	le.PutUint32(b[60:], mode)
	le.PutUint32(b[64:], nlink)
	le.PutUint32(b[80:], 4096) // blksize
}

func (fs *FS) reply(unique uint64, errno int32, payload []byte) error {
	out := make([]byte, 16+len(payload))
	le := binary.LittleEndian
	le.PutUint32(out[0:], uint32(len(out)))
	le.PutUint32(out[4:], uint32(errno))
	le.PutUint64(out[8:], unique)
	copy(out[16:], payload)
	_, err := unix.Write(fs.dev, out)
	if os.Getenv("FUSEHANG_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "fusehang: reply %#x errno %d len %d: %v\n", unique, errno, len(out), err)
	}
	return err
}
