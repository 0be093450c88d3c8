// Package dstate finds a process's threads in uninterruptible sleep (state
// D) before a source stops the process: a thread in D takes no signal and
// no ptrace stop until it wakes, so a stop asked of it would only take
// effect when it wakes (and, with PTRACE_ATTACH, stop the whole process
// then), which on a hung filesystem may be never.
package dstate

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrUninterruptible is what an *Error is, for errors.Is.
var ErrUninterruptible = errors.New("a thread is in uninterruptible sleep")

// Error names the thread found in D.
type Error struct {
	PID, TID int
	// Wchan is the kernel function it sleeps in ("" when unreadable).
	Wchan string
}

func (e *Error) Error() string {
	where := ""
	if e.Wchan != "" && e.Wchan != "0" {
		where = ", in " + e.Wchan
	}
	return fmt.Sprintf("thread %d of pid %d is in uninterruptible sleep (state D%s)", e.TID, e.PID, where)
}

func (e *Error) Is(target error) bool { return target == ErrUninterruptible }

// Rechecks and recheckEvery: a thread must be seen in D this many more
// times, this far apart, before it counts: a read from a slow disk puts a
// thread in D for milliseconds, and that should not cost the stacks.
const (
	Rechecks     = 2
	recheckEvery = 5 * time.Millisecond
)

// Check returns nil, or an *Error for a thread of pid that stays in D over
// Rechecks rechecks. A thread or process that vanishes is not in D.
func Check(pid int) error {
	tids, err := Tasks(pid)
	if err != nil {
		return nil // gone, or unreadable: the source that follows says which
	}
	var inD []int
	for _, tid := range tids {
		if s, _ := State(pid, tid); s == 'D' {
			inD = append(inD, tid)
		}
	}
	for range Rechecks {
		if len(inD) == 0 {
			return nil
		}
		time.Sleep(recheckEvery)
		still := inD[:0]
		for _, tid := range inD {
			if s, _ := State(pid, tid); s == 'D' {
				still = append(still, tid)
			}
		}
		inD = still
	}
	if len(inD) == 0 {
		return nil
	}
	_, wchan := State(pid, inD[0])
	return &Error{PID: pid, TID: inD[0], Wchan: wchan}
}

// State is a thread's state letter from /proc/PID/task/TID/stat (0 when
// unreadable) and, for a thread in D, its wchan. Neither file takes the
// process's memory-map lock, so neither blocks on a hung thread.
func State(pid, tid int) (state byte, wchan string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return 0, ""
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, ""
	}
	state = b[i+2]
	if state == 'D' {
		w, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/wchan")
		wchan = strings.TrimSpace(string(w))
	}
	return state, wchan
}

// Tasks lists the thread ids of pid, from /proc/PID/task.
func Tasks(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
