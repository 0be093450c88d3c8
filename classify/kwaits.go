package classify

import (
	"strconv"

	"github.com/hangdoc/hangdoc/model"
)

// anonKinds are the waits a read or a one-descriptor poll of an
// anonymous-inode descriptor is, by what fdinfo says it is.
var anonKinds = map[string]model.WaitKind{
	"eventfd":  model.WaitEventfd,
	"signalfd": model.WaitSignalfd,
	"timerfd":  model.WaitTimerfd,
	"inotify":  model.WaitInotify,
	"pidfd":    model.WaitPidfd,
}

// anonWait is the wait of a thread that reads or polls an eventfd, a
// signalfd, a timerfd, an inotify instance or a pidfd, and what it waits
// on: the descriptor, or for a pidfd the process.
func anonWait(t model.Thread) (model.WaitKind, string, bool) {
	a := t.Anon
	if a == nil {
		return 0, "", false
	}
	k, ok := anonKinds[a.Kind]
	if !ok {
		return 0, "", false
	}
	return k, a.Kind + ":" + strconv.Itoa(a.FD), true
}

// epollWait says whether a call is an epoll_wait, whose watch list the
// sampler resolves into Polled when it is a few pipes and sockets.
func epollWait(sc model.Syscall) bool {
	switch sc.Name {
	case "epoll_wait", "epoll_pwait", "epoll_pwait2":
		return sc.InCall()
	}
	return false
}
