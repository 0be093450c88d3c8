package sampler

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// anonKinds are the anonymous-inode descriptors whose fdinfo says what a
// wait on them is for, by their /proc/PID/fd link.
var anonKinds = map[string]string{
	"anon_inode:[eventfd]":  "eventfd",
	"anon_inode:[signalfd]": "signalfd",
	"anon_inode:[timerfd]":  "timerfd",
	"anon_inode:inotify":    "inotify",
	"anon_inode:[pidfd]":    "pidfd",
	"anon_inode:[io_uring]": "io_uring",
}

// ioringEnterGetEvents is io_uring_enter's flag to wait for completions.
const ioringEnterGetEvents = 1

// anonReads are the calls that wait on a descriptor's input.
var anonReads = map[string]bool{"read": true, "readv": true, "pread64": true, "preadv": true, "preadv2": true}

// anonFD is the anonymous-inode descriptor a blocked call waits on: the
// descriptor it reads, or the one descriptor it polls for input.
func anonFD(t *model.Thread) (int, string, bool) {
	if fd, ok := model.FDArg(t.Syscall); ok && t.Syscall.Name == "io_uring_enter" && t.Syscall.Args[3]&ioringEnterGetEvents != 0 {
		if t.FD == "anon_inode:[io_uring]" {
			return fd, "io_uring", true
		}
	} else if ok && anonReads[t.Syscall.Name] {
		if k, ok := anonKinds[t.FD]; ok {
			return fd, k, true
		}
	} else if len(t.Polled) == 1 && t.Polled[0].Read {
		if k, ok := anonKinds[t.Polled[0].Target]; ok {
			return t.Polled[0].FD, k, true
		}
	}
	return 0, "", false
}

// readAnonWaits reads the fdinfo of each eventfd, signalfd, timerfd,
// inotify instance or pidfd a blocked thread reads or polls alone.
func (s *Sampler) readAnonWaits(sample *model.Sample) {
	for i := range sample.Threads {
		t := &sample.Threads[i]
		if !t.Syscall.InCall() {
			continue
		}
		fd, kind, ok := anonFD(t)
		if !ok {
			continue
		}
		b, err := readFile(s.fs.pidPath(s.pid, "fdinfo", strconv.Itoa(fd)), nil)
		if err != nil {
			continue // closed, or the process exited: nothing to say
		}
		a := parseAnonInfo(kind, b)
		a.FD = fd
		if kind == "io_uring" {
			a.MinComplete = t.Syscall.Args[2]
		}
		if a.Kind == "eventfd" && a.ID != nil {
			h, ok := s.eventfds[*a.ID]
			if !ok {
				h.refs, h.complete = findEventfd(s.fs, *a.ID, fifoBudget)
				if s.eventfds == nil {
					s.eventfds = map[uint64]fifoHolders{}
				}
				s.eventfds[*a.ID] = h
			}
			a.Holders = append([]model.FDRef{}, h.refs...)
			a.Complete = h.complete
		}
		t.Anon = &a
	}
}

// parseAnonInfo reads what fdinfo says of an anonymous-inode descriptor of
// kind. Lines it does not know, and values that do not parse, are skipped:
// the kernel adds lines over time.
func parseAnonInfo(kind string, b []byte) model.AnonFD {
	a := model.AnonFD{Kind: kind}
	for line := range bytes.Lines(b) {
		line = bytes.TrimSpace(line)
		if kind == "inotify" {
			if w, ok := parseInotifyWatch(line); ok {
				if len(a.Watches) < model.MaxInotifyWatches {
					a.Watches = append(a.Watches, w)
				}
				a.WatchCount++
			}
			continue
		}
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v := string(bytes.TrimSpace(val))
		switch string(key) {
		case "eventfd-count":
			if n, err := strconv.ParseUint(v, 16, 64); err == nil {
				a.Count = &n
			}
		case "eventfd-id":
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				a.ID = &n
			}
		case "sigmask":
			if m, err := strconv.ParseUint(v, 16, 64); err == nil {
				a.Signals = signalNames(m)
			}
		case "it_value":
			if ns, ok := parseTimespec(v); ok {
				a.ValueNS, a.Armed = ns, ns > 0
			}
		case "it_interval":
			if ns, ok := parseTimespec(v); ok {
				a.IntervalNS = ns
			}
		case "SQEs", "CQEs":
			if n, err := strconv.ParseUint(v, 10, 32); err == nil {
				if string(key) == "SQEs" {
					a.SQEs = &n
				} else {
					a.CQEs = &n
				}
			}
		case "Pid":
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				a.PID = int(n)
			}
		}
	}
	return a
}

// signalNames names the signals of a sigmask: bit N-1 is signal N.
func signalNames(m uint64) []string {
	var out []string
	for sig := 1; sig <= 64; sig++ {
		if m&(1<<(sig-1)) == 0 {
			continue
		}
		if name := unix.SignalName(unix.Signal(sig)); name != "" {
			out = append(out, name)
		} else if sig >= 34 {
			out = append(out, fmt.Sprintf("SIGRTMIN+%d", sig-34))
		} else {
			out = append(out, strconv.Itoa(sig))
		}
	}
	return out
}

// parseTimespec parses timerfd's "(SEC, NSEC)".
func parseTimespec(v string) (int64, bool) {
	v, ok := strings.CutPrefix(v, "(")
	if !ok {
		return 0, false
	}
	v, ok = strings.CutSuffix(v, ")")
	if !ok {
		return 0, false
	}
	sec, nsec, ok := strings.Cut(v, ",")
	if !ok {
		return 0, false
	}
	s, err1 := strconv.ParseInt(strings.TrimSpace(sec), 10, 64)
	n, err2 := strconv.ParseInt(strings.TrimSpace(nsec), 10, 64)
	if err1 != nil || err2 != nil || s < 0 || n < 0 || n >= 1e9 || s > (1<<62)/1_000_000_000 {
		return 0, false
	}
	return s*1e9 + n, true
}

// parseInotifyWatch parses an inotify instance's fdinfo line:
// "inotify wd:1 ino:2a sdev:800001 mask:800afce ignored_mask:0 …"; sdev
// is the kernel's dev_t (major<<20 | minor), ino and mask in hex.
func parseInotifyWatch(line []byte) (model.InotifyWatch, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("inotify "))
	if !ok {
		return model.InotifyWatch{}, false
	}
	var w model.InotifyWatch
	var haveIno, haveDev bool
	for f := range bytes.FieldsSeq(rest) {
		k, v, ok := bytes.Cut(f, []byte(":"))
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(string(v), 16, 64)
		if err != nil {
			continue
		}
		switch string(k) {
		case "ino":
			w.Inode, haveIno = n, true
		case "sdev":
			w.Dev, haveDev = fmt.Sprintf("%02x:%02x", n>>20, n&0xfffff), true
		case "mask":
			w.Mask = uint32(n)
		}
	}
	return w, haveIno && haveDev
}

// findEventfd finds every descriptor of every process open on the eventfd
// with eventfd-id id, within budget.
func findEventfd(fs FS, id uint64, budget time.Duration) (refs []model.FDRef, complete bool) {
	info := make([]byte, 0, 512)
	complete = eachFD(fs, budget, func(pid, fd, _ int, _, link []byte) bool {
		if string(link) != "anon_inode:[eventfd]" {
			return true
		}
		b, err := readFile(fs.pidPath(pid, "fdinfo", strconv.Itoa(fd)), info)
		if err != nil {
			return true
		}
		if a := parseAnonInfo("eventfd", b); a.ID != nil && *a.ID == id {
			ref := model.FDRef{PID: pid, FD: fd}
			if fi, err := parseFDInfo(b); err == nil {
				ref.Mode = accessMode(fi.Flags)
			}
			refs = append(refs, ref)
		}
		return true
	})
	return refs, complete
}

// maxEpollPolled bounds the epoll instances whose watch list is resolved
// like a poll's descriptors: one with more watches is a server's loop,
// and stays a wait for events.
const maxEpollPolled = 64

// epoll's event bits.
const (
	epollIn    = 0x001
	epollPri   = 0x002
	epollOut   = 0x004
	epollRDHup = 0x2000
)

// readEpollPolled resolves the watch list of an epoll_wait whose epoll
// instance watches at most maxEpollPolled descriptors, all of them pipes
// or sockets, into Polled: a wait on each as a poll of them would be. An
// instance that also watches an eventfd, a timerfd, a signalfd (a
// runtime's or an event loop's own wake-up) is left a wait for events.
func (s *Sampler) readEpollPolled(sample *model.Sample) {
	for i := range sample.Threads {
		th := &sample.Threads[i]
		switch th.Syscall.Name {
		case "epoll_wait", "epoll_pwait", "epoll_pwait2":
		default:
			continue
		}
		fd, ok := model.FDArg(th.Syscall)
		if !ok || !th.Syscall.InCall() || th.Exited || th.FD != "anon_inode:[eventpoll]" || len(th.Polled) > 0 {
			continue
		}
		info, err := ReadFDInfo(s.fs, s.pid, fd)
		if err != nil || len(info.EpollTargets) == 0 || len(info.EpollTargets) > maxEpollPolled {
			continue
		}
		fds := make([]model.PolledFD, 0, len(info.EpollTargets))
		for _, t := range info.EpollTargets {
			link := s.readlinkFD(t.FD)
			if !strings.HasPrefix(link, "pipe:") && !strings.HasPrefix(link, "socket:") {
				fds = nil
				break
			}
			fds = append(fds, model.PolledFD{FD: t.FD, Read: t.Events&(epollIn|epollPri|epollRDHup) != 0, Write: t.Events&epollOut != 0, Target: link})
		}
		if len(fds) > 0 {
			th.Polled = fds
		}
	}
}

// maxWaitv is the most futex words one futex_waitv may wait on
// (FUTEX_WAITV_MAX).
const maxWaitv = 128

// readWaitv reads, for each thread blocked in futex_waitv, the futex words
// it waits on: its array of struct futex_waitv {u64 val; u64 uaddr; u32
// flags; u32 reserved}, bounded by maxWaitv.
func (s *Sampler) readWaitv(sample *model.Sample) {
	for i := range sample.Threads {
		th := &sample.Threads[i]
		sc := th.Syscall
		if th.Exited || !sc.InCall() || sc.Name != "futex_waitv" || s.mem < 0 {
			continue
		}
		n := sc.Args[1]
		if n == 0 || n > maxWaitv {
			continue
		}
		b, err := s.readMem(s.readMaps(), sc.Args[0], n*24)
		if err != nil {
			continue
		}
		for j := range int(n) {
			th.Waitv = append(th.Waitv, binary.LittleEndian.Uint64(b[j*24+8:]))
		}
	}
}
