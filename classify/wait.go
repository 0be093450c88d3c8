package classify

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

var kindText = map[string]string{
	"lock":            "waiting for a lock",
	"futex":           "waiting on a futex (a condition, a semaphore, or a lock with no recorded owner)",
	"pipe-write":      "writing to a full pipe",
	"pipe-read":       "reading an empty pipe",
	"socket-write":    "writing to a socket whose send buffer is full",
	"socket-read":     "reading a socket that sends nothing",
	"socket-connect":  "connecting a socket",
	"accept":          "waiting for a connection",
	"stdin":           "reading its standard input",
	"tty-read":        "reading a terminal",
	"tty-write":       "writing to a terminal",
	"file-read":       "reading a file",
	"file-write":      "writing a file",
	"file-lock":       "waiting for a file lock",
	"child-exit":      "waiting for a child process to exit",
	"sleep":           "sleeping",
	"poll":            "waiting for events (epoll, poll, select)",
	"signal":          "waiting for a signal",
	"uninterruptible": "in uninterruptible sleep (D)",
	"stopped":         "stopped (SIGSTOP or a tracer)",
	"thread-exit":     "waiting for another thread to exit (join)",
	"queue":           "waiting in queue.get() for work",
	"condition":       "waiting on a condition (Condition.wait, Event.wait)",
	"python-lock":     "waiting to acquire a lock",
	"python":          "in Python code",
	"running":         "running",
	"syscall":         "in a syscall",
	"unknown":         "waiting in the kernel",
}

// idleKinds are waits for work: a thread parked in one is idle, not blocked.
var idleKinds = map[string]bool{"futex": true, "thread-exit": true, "queue": true, "condition": true, "poll": true, "sleep": true, "signal": true, "accept": true}

// wchanKind names a wait from the kernel function alone, for threads whose
// syscall file cannot be read. Names change between kernels (pipe_write
// became anon_pipe_write, futex_wait_queue_me futex_do_wait): wchanKindOf
// also matches on the part that stays.
var wchanKind = map[string]string{
	"do_wait":           "child-exit",
	"hrtimer_nanosleep": "sleep", "do_nanosleep": "sleep",
	"ep_poll": "poll", "do_sys_poll": "poll", "do_select": "poll", "core_sys_select": "poll",
	"sk_wait_data": "socket-read", "unix_stream_read_generic": "socket-read",
	"inet_csk_accept": "accept", "n_tty_read": "tty-read", "wait_woken": "socket-read",
	"sigsuspend": "signal", "do_sigtimedwait": "signal",
}

// scene is what every rule about one thread may consult: the samples, the
// lock each thread waits on, and the threads alive at the end.
type scene struct {
	pid     int
	samples []model.Sample
	lockOf  map[int]*Lock
	live    map[int]bool
	// waiting is each thread's last wait, from lastWaiting.
	waiting map[int]model.Thread
}

// kind names what a thread waits for at the last sample that saw it.
func (s *scene) kind(tid int) (kind, resource string) {
	return s.waitKind(s.lastReading(tid))
}

// lastReading is the thread's last wait (see lastWaiting).
func (s *scene) lastReading(tid int) model.Thread {
	if t, ok := s.waiting[tid]; ok {
		return t
	}
	return model.Thread{TID: tid}
}

// waitKind names what a thread waits for, from its call, its descriptor and
// its wchan, and the resource (a descriptor's target or a futex address).
func (s *scene) waitKind(t model.Thread) (kind, resource string) {
	lock := s.lockOf[t.TID]
	sc := t.Syscall
	if t.State == "" && len(t.Stack) > 0 {
		// A stack from a file, with no kernel evidence: the stack alone
		// says what the thread waits in.
		return stackKind(t.Stack), ""
	}
	switch {
	case t.State == "T" || t.State == "t":
		return "stopped", ""
	case t.State == "D":
		return "uninterruptible", t.FD
	case sc.Running:
		return "running", ""
	case !sc.InCall():
		return wchanKindOf(t.Wchan), ""
	}
	if addr, ok := model.FutexWait(sc); ok {
		if lock != nil {
			return "lock", lock.ID
		}
		if joined := s.joined(sc, addr); joined > 0 {
			return "thread-exit", ""
		}
		return "futex", "futex:" + model.FutexKey(addr)
	}
	switch sc.Name {
	case "wait4", "waitid":
		return "child-exit", ""
	case "nanosleep", "clock_nanosleep":
		return "sleep", ""
	case "epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6":
		return "poll", ""
	case "pause", "rt_sigsuspend", "rt_sigtimedwait":
		return "signal", ""
	case "accept", "accept4":
		return "accept", t.FD
	case "connect":
		return "socket-connect", t.FD
	case "flock":
		return "file-lock", t.FD
	case "fcntl":
		if sc.Args[1] == 7 || sc.Args[1] == 38 { // F_SETLKW, F_OFD_SETLKW
			return "file-lock", t.FD
		}
	}
	fd, isFD := model.FDArg(sc)
	if !isFD {
		return "syscall", ""
	}
	dir := ""
	switch sc.Name {
	case "read", "readv", "pread64", "preadv", "preadv2", "recvfrom", "recvmsg", "recvmmsg":
		dir = "read"
	case "write", "writev", "pwrite64", "pwritev", "pwritev2", "sendto", "sendmsg", "sendmmsg", "sendfile", "splice", "tee":
		dir = "write"
	default:
		return "syscall", t.FD
	}
	switch {
	case dir == "read" && fd == 0 && (isPipe(t.FD) || isTTY(t.FD)):
		return "stdin", t.FD
	case isPipe(t.FD):
		return "pipe-" + dir, t.FD
	case strings.HasPrefix(t.FD, "socket:"):
		return "socket-" + dir, t.FD
	case isTTY(t.FD):
		return "tty-" + dir, t.FD
	}
	return "file-" + dir, t.FD
}

func wchanKindOf(wchan string) string {
	switch {
	case strings.HasSuffix(wchan, "pipe_write"):
		return "pipe-write"
	case strings.HasSuffix(wchan, "pipe_read"):
		return "pipe-read"
	case strings.HasPrefix(wchan, "futex_"):
		return "futex"
	}
	if k, ok := wchanKind[wchan]; ok {
		return k
	}
	return "unknown"
}

func isPipe(fd string) bool { return strings.HasPrefix(fd, "pipe:") }

func isTTY(fd string) bool {
	return strings.HasPrefix(fd, "/dev/pts/") || strings.HasPrefix(fd, "/dev/tty") || fd == "/dev/console"
}

// joined returns the thread a pthread_join waits for: glibc sleeps on the
// joined thread's TID word, expecting the TID itself, until the kernel clears
// it at exit. 0 when the wait is not a join.
func (s *scene) joined(sc model.Syscall, addr uint64) int {
	cmd, val := sc.Args[1]&0x7f, int(int32(sc.Args[2]))
	if sc.Name != "futex" || (cmd != 0 && cmd != 9) || val <= 0 || !s.live[val] {
		return 0
	}
	f := s.samples[len(s.samples)-1].Futexes[model.FutexKey(addr)]
	if f.Err != "" || int(f.Word) != val {
		return 0
	}
	return val
}

// wait describes what a blocked or parked thread waits for.
func (s *scene) wait(t *Thread) (Wait, bool) {
	if t.Class != ClassBlocked && t.Class != ClassIdle {
		return Wait{}, false
	}
	last := s.lastReading(t.TID)
	lock := s.lockOf[t.TID]
	kind, resource := s.waitKind(last)
	w := Wait{From: Ref{PID: s.pid, TID: t.TID}, Kind: kind, Resource: resource, Detail: kindText[kind]}
	call := ""
	if t.Syscall != nil {
		call = " in " + t.Syscall.Text
	}
	switch {
	case kind == "lock" && lock.Holder != nil:
		w.To = lock.Holder
		w.Detail = fmt.Sprintf("waits for %s %s held by tid %d", lock.Kind, lock.Address, lock.Holder.TID)
	case kind == "lock":
		w.Detail = fmt.Sprintf("waits on futex %s with %d other threads; holder unknown", lock.Address, len(lock.Waiters)-1)
	case kind == "thread-exit":
		joined := s.joined(last.Syscall, last.Syscall.Args[0])
		w.To = &Ref{PID: s.pid, TID: joined}
		w.Detail = fmt.Sprintf("waits for thread %d to exit (pthread_join)", joined)
	case kind == "child-exit":
		if child := model.WaitedChild(last); child > 0 {
			w.To = &Ref{PID: child}
			w.Detail = fmt.Sprintf("waits for child pid %d to exit", child)
		} else {
			w.Detail = "waits for any child to exit" + call
		}
	case kind == "poll" && len(last.Watches) > 0:
		w.Detail = kindText[kind] + call + ", watching " + strings.Join(last.Watches, ", ")
	case kind == "uninterruptible" && len(last.KernelStack) > 0:
		w.Detail = kindText[kind] + call + ", in the kernel at " + strings.Join(last.KernelStack[:min(4, len(last.KernelStack))], " ← ")
	case resource != "" && !strings.HasPrefix(resource, "futex:"):
		w.Detail = kindText[kind] + call + " on " + resource
	default:
		w.Detail = kindText[kind] + call
	}
	return w, true
}
