package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// pathWords introduces the path or address a call was given.
func pathWords(call string) string {
	switch call {
	case "connect":
		return " to "
	case "bind":
		return " for "
	case "execve", "execveat":
		return " of "
	}
	return " on "
}

// fifoEnd is the end of a FIFO an open waits for.
func fifoEnd(f *model.FIFOWait) string {
	if f.Write {
		return "reader"
	}
	return "writer"
}

// fifoOpeners are the processes with the FIFO open, each once.
func fifoOpeners(f *model.FIFOWait) []int {
	out := []int{}
	for _, h := range f.Holders {
		if !slices.Contains(out, h.PID) {
			out = append(out, h.PID)
		}
	}
	return out
}

// fifoText words an open that waits for the other end of a FIFO: "waits
// for a reader of FIFO /run/app/ctl in openat(…); nobody has it open".
func (w *words) fifoText(wt *classify.Wait) string {
	f := wt.FIFO
	s := fmt.Sprintf("waits for a %s of FIFO %s", fifoEnd(f), f.Path)
	if c := callText(wt.Syscall); c != "" {
		s += " in " + c
	}
	if f.Err != "" {
		return s + "; who has it open is unknown: " + f.Err
	}
	var names []string
	for _, pid := range fifoOpeners(f) {
		var fds []string
		for _, h := range f.Holders {
			if h.PID == pid {
				fds = append(fds, fmt.Sprintf("%d%s", h.FD, modeWords(h.Mode)))
			}
		}
		names = append(names, w.procName(pid)+" on fd "+strings.Join(fds, ", "))
	}
	switch {
	case len(names) > 0:
		return s + "; it is open in " + strings.Join(names, "; ")
	case f.Complete:
		return s + "; nobody has it open"
	}
	return s + "; no process was found with it open (the search ran out of time)"
}

// modeWords says how a descriptor was opened: " (write)".
func modeWords(mode string) string {
	switch mode {
	case "r":
		return " (read)"
	case "w":
		return " (write)"
	case "rw":
		return " (read-write)"
	}
	return ""
}

// unixText words a Unix socket and its other end: "a Unix stream socket
// connecting to the listener socket:[N] at /run/app.sock, whose accept
// queue is full (1 waiting, backlog 0): it does not accept".
func (w *words) unixText(res model.Resource) string {
	u := res.Unix
	s := "a Unix " + u.Type + " socket"
	if u.Type == "" {
		s = "a Unix socket"
	}
	p := w.rec.Resources[res.Peer].Unix
	switch {
	case p == nil:
		if u.Connecting != "" {
			return s + "; no listener was found at " + strings.TrimPrefix(u.Connecting, "unix:")
		}
		return s + " with no peer found"
	case p.Listening:
		s += " connecting to the listener " + res.Peer
		if p.Path != "" {
			s += " at " + p.Path
		}
		if p.Queued != nil && p.Backlog != nil {
			if *p.Queued > *p.Backlog {
				s += fmt.Sprintf(", whose accept queue is full (%d waiting, backlog %d): it does not accept", *p.Queued, *p.Backlog)
			} else {
				s += fmt.Sprintf(" (%d waiting to be accepted, backlog %d)", *p.Queued, *p.Backlog)
			}
		}
		return s
	}
	s += " connected to " + res.Peer
	if p.Path != "" {
		s += " (bound to " + p.Path + ")"
	}
	return s
}

// retryText words a record lock retried: "retries a lock on FILE held by
// pid N (COMM), asleep ~100 ms between tries; probable holder: …".
func (w *words) retryText(wt *classify.Wait) string {
	r := wt.Retry
	what := "a lock on " + r.Path
	if r.SQLite {
		what = "a lock on the SQLite database " + r.Path
	}
	s := fmt.Sprintf("retries %s held by %s, asleep %s between tries", what, w.procName(r.Holder), backoffText(r.SleepNS))
	if c := callText(wt.Syscall); c != "" {
		s += " in " + c
	}
	s += fmt.Sprintf("; probable holder: /proc/locks shows its %s %s lock on bytes %s of the file in %s, and this process has the file open on fd %d (its attempts, non-blocking, are not seen)",
		r.Lock.Class, r.Lock.Type, r.Lock.Range, plural(r.Samples, "sample", "samples"), r.FD)
	if r.SQLite {
		s += fmt.Sprintf("; SQLite database %s is locked by %s, which holds a write transaction or is committing one", r.Path, w.procName(r.Holder))
	}
	return s
}

// backoffText words a sleep: "~100 ms".
func backoffText(ns int64) string {
	if ns >= 1e9 {
		return fmt.Sprintf("~%.1f s", float64(ns)/1e9)
	}
	return fmt.Sprintf("~%d ms", (ns+5e5)/1e6)
}
