package classify

import (
	"github.com/hangdoc/hangdoc/model"
)

// A record lock held while the waiter retries (SQLite's busy handler: a
// non-blocking fcntl(F_SETLK), then a short sleep). The attempt itself is
// never seen; the evidence is the back-off and another process's lock on a
// file the sleeper has open. The holder is therefore probable, not proven.

// RetryLock is a record lock a process retries while another holds it.
type RetryLock struct {
	Path string
	FD   int
	// Holder is the process /proc/locks names for Lock, its lock on the
	// file (a WRITE lock when it holds one).
	Holder int
	Lock   model.FileLockEntry
	// SleepNS is the back-off the thread asked for in its last sleep.
	SleepNS int64
	// SQLite: the file is an SQLite database (its header).
	SQLite bool
	// Samples is how many samples showed the holder's lock on it.
	Samples int
}

// minRetrySleepNS and maxRetrySleepNS bound a sleep read as a retry's
// back-off, as the sampler does.
const (
	minRetrySleepNS = int64(20e6)
	maxRetrySleepNS = int64(1e9)
	// maxRetryCPU bounds the CPU of a thread whose readings caught it
	// between tries: a retry loop naps, it does not work.
	maxRetryCPU = 5.0
)

// lastNap is the last reading that caught the thread in a retry-length
// sleep.
func lastNap(readings []model.Thread) (model.Thread, bool) {
	passing := passingStops(readings)
	for i := len(readings) - 1; i >= 0; i-- {
		if ns := readings[i].SleepNS; !passing[i] && ns >= minRetrySleepNS && ns <= maxRetrySleepNS {
			return readings[i], true
		}
	}
	return model.Thread{}, false
}

// retryLock finds the record lock a process retries: every live thread is
// idle, or caught between tries (its waits move from a brief nap to other
// calls, with next to no CPU), the ones asleep sleep briefly, and the last sample that looked (a
// sample looks when a thread naps: one that caught the thread on its way
// back to a CPU does not) shows another process's lock on a file the
// process has open. Those threads become blocked behind the holder.
func (p *proc) retryLock() {
	if p.runtime == model.RuntimeGo {
		return // its threads' sleeps are the scheduler's; its goroutines sleep unseen
	}
	var last *model.Sample
	for i := len(p.samples) - 1; i >= 0 && last == nil; i-- {
		if len(p.samples[i].LockedFiles) > 0 {
			last = &p.samples[i]
		}
	}
	if last == nil {
		return
	}
	var sleepers []*Actor
	for i := range p.threads {
		t := &p.threads[i]
		switch {
		case t.Class == ClassExited:
			continue
		case t.Class == ClassWorking && t.CPU.Known && t.CPU.Percent < maxRetryCPU:
			// Caught between tries as well as napping: its waits move
			// from the nap to the database file's calls and back, with
			// next to no CPU. Its wait is the nap.
			if nap, ok := p.naps[t.Ref.TID]; ok {
				p.waiting[t.Ref.TID] = nap
				t.State, t.Wchan, t.Syscall, t.FD = nap.State, nap.Wchan, nap.Syscall, nap.FD
				sleepers = append(sleepers, t)
				continue
			}
			return
		case t.Class != ClassIdle:
			return
		}
		if ns := p.waiting[t.Ref.TID].SleepNS; t.Wait == model.WaitSleep && ns >= minRetrySleepNS && ns <= maxRetrySleepNS {
			sleepers = append(sleepers, t)
		}
	}
	if len(sleepers) == 0 {
		return
	}
	r := pickRetry(last.LockedFiles)
	if r == nil {
		return
	}
	for _, s := range p.samples {
		for _, lf := range s.LockedFiles {
			if lf.Path != r.Path {
				continue
			}
			for _, e := range lf.Held {
				if e.PID == r.Holder {
					r.Samples++
					break
				}
			}
		}
	}
	p.retry = r
	for _, t := range sleepers {
		r.SleepNS = max(r.SleepNS, p.waiting[t.Ref.TID].SleepNS)
		t.Class, t.Wait, t.Resource = ClassBlocked, model.WaitLockRetry, "file:"+r.Path
		t.Why = Why{Rule: WhyBlocked, Kind: model.WaitLockRetry, N: t.Seen}
	}
}

// pickRetry chooses the lock retried: on an SQLite database first, then
// the first file; the holder's WRITE lock before its READ ones.
func pickRetry(files []model.LockedFile) *RetryLock {
	var best *RetryLock
	for _, lf := range files {
		var lock *model.FileLockEntry
		for i := range lf.Held {
			e := &lf.Held[i]
			if e.PID > 0 && (lock == nil || lock.Type != "WRITE" && e.Type == "WRITE") {
				lock = e
			}
		}
		if lock == nil {
			continue
		}
		if best == nil || lf.SQLite && !best.SQLite {
			best = &RetryLock{Path: lf.Path, FD: lf.FD, Holder: lock.PID, Lock: *lock, SQLite: lf.SQLite}
		}
	}
	return best
}
