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
