package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// Anon is what fdinfo says of an eventfd, a signalfd, a timerfd, an
// inotify instance or a pidfd a wait is on. Only the fields of its kind
// are set.
type Anon struct {
	Kind string `json:"kind"`
	FD   int    `json:"fd"`
	// An eventfd: its counter, and the processes found with it open (who
	// could write it), the waiter's own among them; Complete is false when
	// the search ran out of time first.
	Count    *uint64 `json:"count,omitempty"`
	OpenBy   []int   `json:"open_by,omitempty"`
	Complete *bool   `json:"complete,omitempty"`
	// A signalfd: the signals it waits for.
	Signals []string `json:"signals,omitempty"`
	// A timerfd: time to its next expiry and its interval, in ms; Armed
	// false when it is disarmed (it never expires).
	ValueMS    *float64 `json:"value_ms,omitempty"`
	IntervalMS *float64 `json:"interval_ms,omitempty"`
	Armed      *bool    `json:"armed,omitempty"`
	// An inotify instance: the inodes it watches (at most 64) and how
	// many in all.
	Watches    []model.InotifyWatch `json:"watches,omitempty"`
	WatchCount *int                 `json:"watch_count,omitempty"`
	// A pidfd: the process it waits for.
	PID int `json:"pid,omitempty"`
	// An io_uring: submissions not consumed, completions not reaped, and
	// how many completions the call waits for.
	SQEs        *uint64 `json:"sqes,omitempty"`
	CQEs        *uint64 `json:"cqes,omitempty"`
	MinComplete *uint64 `json:"min_complete,omitempty"`
}

func anonJSON(a *model.AnonFD) *Anon {
	if a == nil {
		return nil
	}
	x := &Anon{Kind: a.Kind, FD: a.FD}
	switch a.Kind {
	case "eventfd":
		x.Count = a.Count
		if a.ID != nil {
			x.OpenBy, x.Complete = fdPIDs(a.Holders), &a.Complete
		}
	case "signalfd":
		x.Signals = append([]string{}, a.Signals...)
	case "timerfd":
		v, i := float64(a.ValueNS)/1e6, float64(a.IntervalNS)/1e6
		x.ValueMS, x.IntervalMS, x.Armed = &v, &i, &a.Armed
	case "inotify":
		x.Watches, x.WatchCount = append([]model.InotifyWatch{}, a.Watches...), &a.WatchCount
	case "pidfd":
		x.PID = a.PID
	case "io_uring":
		x.SQEs, x.CQEs, x.MinComplete = a.SQEs, a.CQEs, &a.MinComplete
	}
	return x
}

// fdPIDs are the processes of refs, each once, in order.
func fdPIDs(refs []model.FDRef) []int {
	out := []int{}
	for _, r := range refs {
		if len(out) == 0 || out[len(out)-1] != r.PID {
			out = append(out, r.PID)
		}
	}
	return out
}

// anonText words a wait on an anonymous-inode descriptor from its fdinfo:
// "waits for a write to eventfd fd 3 in read(3, …); pid 812 has it open
// too (who could write it)".
func anonText(wt *classify.Wait) string {
	a := wt.Anon
	call := ""
	if c := callText(wt.Syscall); c != "" {
		call = " in " + c
	}
	switch a.Kind {
	case "eventfd":
		s := fmt.Sprintf("waits for a write to eventfd fd %d%s", a.FD, call)
		if a.ID == nil {
			return s + "; who else has it open is unknown (this kernel gives eventfds no id)"
		}
		var others []string
		for _, p := range fdPIDs(a.Holders) {
			if p != wt.From.PID {
				others = append(others, fmt.Sprintf("pid %d", p))
			}
		}
		switch {
		case len(others) > 0:
			s += "; " + strings.Join(others, ", ") + " also " + hasHave(len(others)) + " it open (who could write it, besides its own threads)"
		case a.Complete:
			s += "; no other process has it open: only its own threads could write it"
		default:
			s += "; no other process was found with it open (the search ran out of time)"
		}
		return s
	case "signalfd":
		if len(a.Signals) == 0 {
			return "waits for a signal on a signalfd that accepts none" + call
		}
		return "waits for a signal (" + strings.Join(a.Signals, ", ") + ") on signalfd fd " + fmt.Sprint(a.FD) + call
	case "timerfd":
		if !a.Armed {
			return fmt.Sprintf("waits on timerfd fd %d%s, which is disarmed: it never expires", a.FD, call)
		}
		s := fmt.Sprintf("sleeps on timerfd fd %d%s: it expires in %s", a.FD, call, roughly(a.ValueNS))
		if a.IntervalNS > 0 {
			s += ", every " + roughly(a.IntervalNS)
		}
		return s
	case "inotify":
		var ws []string
		for _, w := range a.Watches[:min(4, len(a.Watches))] {
			ws = append(ws, fmt.Sprintf("inode %d on %s", w.Inode, w.Dev))
		}
		s := fmt.Sprintf("waits for a change to a watched file (inotify fd %d%s), watching %d", a.FD, call, a.WatchCount)
		if len(ws) > 0 {
			s += ": " + strings.Join(ws, ", ")
			if a.WatchCount > len(ws) {
				s += ", …"
			}
		}
		return s
	case "pidfd":
		if a.PID > 0 {
			return fmt.Sprintf("waits for pid %d to exit (a poll of its pidfd, fd %d)%s", a.PID, a.FD, call)
		}
		return fmt.Sprintf("waits on pidfd fd %d%s, whose process has exited or is outside this pid namespace", a.FD, call)
	case "io_uring":
		s := fmt.Sprintf("waits for %s on io_uring fd %d%s", plural(int(min(a.MinComplete, 1<<20)), "completion", "completions"), a.FD, call)
		if a.SQEs != nil && a.CQEs != nil {
			s += fmt.Sprintf(": %d submissions not yet taken by the kernel, %d completions not yet reaped", *a.SQEs, *a.CQEs)
		}
		return s
	}
	return kindWords(wt.Kind) + call
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// roughly words a duration to the millisecond, or to the second past a
// minute.
func roughly(ns int64) string {
	d := time.Duration(ns)
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

// sysvText words a wait on a SysV semaphore set or message queue: "waits
// in semop(…) on SysV semaphore set 3 (key 0x00000000, 1 semaphore): to
// take 1 from semaphore 0, which is 0; the last to operate on it was pid
// 812". The last operator is who touched it last, not who will next.
func sysvText(wt *classify.Wait) string {
	v := wt.SysV
	call := ""
	if c := callText(wt.Syscall); c != "" {
		call = " in " + c
	}
	if !v.Sem {
		what := fmt.Sprintf("waits%s on SysV message queue %d", call, v.ID)
		if v.Key != "" {
			what += " (key " + v.Key + ")"
		}
		if v.Err != "" {
			return what + "; " + v.Err
		}
		if v.Send {
			return what + fmt.Sprintf(" for room: %d messages queued; the last to receive was pid %d", v.QNum, v.LRPID)
		}
		last := fmt.Sprintf("the last to send was pid %d", v.LSPID)
		if v.LSPID == 0 {
			last = "nobody has sent one yet"
		}
		if v.QNum == 0 {
			return what + " for a message: none queued; " + last
		}
		return what + fmt.Sprintf(" for a message of type %d: %d queued, none of a type it takes; %s", v.MsgTyp, v.QNum, last)
	}
	what := fmt.Sprintf("waits%s on SysV semaphore set %d", call, v.ID)
	if v.Key != "" {
		what += fmt.Sprintf(" (key %s, %s)", v.Key, plural(v.NSems, "semaphore", "semaphores"))
	}
	if v.Err != "" {
		return what + "; " + v.Err
	}
	var parts []string
	for _, op := range v.Ops {
		verb := fmt.Sprintf("to take %d from", -op.Op)
		switch {
		case op.Op == 0:
			verb = "for zero on"
		case op.Op > 0:
			verb = fmt.Sprintf("to add %d to", op.Op)
		}
		p := fmt.Sprintf("%s semaphore %d", verb, op.Num)
		for _, st := range v.Sems {
			if st.Num == op.Num && st.Val >= 0 {
				p += fmt.Sprintf(", which is %d; the last to operate on it was pid %d", st.Val, st.PID)
			}
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return what
	}
	return what + ": " + strings.Join(parts, "; ")
}
