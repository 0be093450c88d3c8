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
	"io_uring": model.WaitIOUring,
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

// sharedWord notes, for a futex wait whose word lies in shared memory and
// has no owner named in another process, the mapping and the other
// processes that map it: any of them could wake it, so "nobody left" is
// never said of it.
func (p *proc) sharedWord(w *Wait, sc model.Syscall) {
	addr, ok := model.FutexWait(sc)
	if !ok || len(p.samples) == 0 {
		return
	}
	f := p.samples[len(p.samples)-1].Futexes[model.FutexKey(addr)]
	if f.Shared == nil || f.OwnerPID != 0 {
		return
	}
	w.Shared, w.MappedBy, w.MappedComplete = f.Shared, f.MappedBy, f.MappedComplete
}

// sysvWait is the wait of a thread in semop, semtimedop, msgrcv or msgsnd,
// and the set or queue it waits on: "sysv-sem:ID", "sysv-msg:ID".
func sysvWait(t model.Thread) (model.WaitKind, string, bool) {
	w := t.SysV
	switch {
	case w == nil:
		return 0, "", false
	case w.Sem:
		return model.WaitSysVSem, "sysv-sem:" + strconv.Itoa(w.ID), true
	}
	return model.WaitSysVMsg, "sysv-msg:" + strconv.Itoa(w.ID), true
}
