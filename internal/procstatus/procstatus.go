// Package procstatus reads /proc/PID/status and /proc/PID/task/TID/status:
// the one parser of that file for the sampler, its stack sources and the
// JVM attach, which all need a few of its lines. It is a leaf, so that
// packages the sampler imports can use it too.
package procstatus

import (
	"bytes"
	"fmt"
	"strconv"
)

// Status is what hangdoc reads of a status file. A line the kernel did not
// print (NSpid before 4.1, a kernel thread's Vm lines) leaves its field
// zero; Has says which were read.
type Status struct {
	Name      string
	State     byte // R, S, D, T, t, Z, X, I
	Tgid      int
	PPid      int
	TracerPid int
	// Uid and Gid are real, effective, saved and filesystem ids.
	Uid, Gid [4]int
	// NSpid and NStgid are the ids in each PID namespace the process is
	// in, from that of the /proc read down to its own.
	NSpid, NStgid []int
	Threads       int
	// The signal masks, bit sig-1 for signal sig.
	SigPnd, ShdPnd, SigBlk, SigIgn, SigCgt uint64
	VmRSSKiB                               uint64
	Voluntary, Nonvoluntary                uint64
	// Kthread: a kernel thread (the line is there since Linux 6.0).
	Kthread bool
	// Has marks the lines read, by Line.
	Has Line
}

// Line is a set of status lines.
type Line uint32

const (
	HasName Line = 1 << iota
	HasState
	HasTgid
	HasPPid
	HasTracerPid
	HasUid
	HasGid
	HasNSpid
	HasNStgid
	HasThreads
	HasSigPnd
	HasShdPnd
	HasSigBlk
	HasSigIgn
	HasSigCgt
	HasVmRSS
	HasVoluntary
	HasNonvoluntary
	HasKthread
)

// Parse reads a status file. A line that does not parse leaves its field
// unread (Has says so), as does a line the kernel did not print; of a
// line printed twice, the first counts, read or not. Lines hangdoc does not read are
// skipped unparsed. Its error is for a file with no line read at all.
func Parse(b []byte) (Status, error) {
	var s Status
	var seen Line
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		l, ok := lineOf[string(k)]
		if !ok || seen&l != 0 {
			continue
		}
		seen |= l
		var err error
		switch string(k) {
		case "Name":
			s.Name, s.Has = string(v), s.Has|HasName
		case "State":
			if len(v) > 0 {
				s.State, s.Has = v[0], s.Has|HasState
			}
		case "Tgid":
			s.Tgid, err = dec(v, &s.Has, HasTgid)
		case "PPid":
			s.PPid, err = dec(v, &s.Has, HasPPid)
		case "TracerPid":
			s.TracerPid, err = dec(v, &s.Has, HasTracerPid)
		case "Uid":
			err = ids(v, &s.Uid, &s.Has, HasUid)
		case "Gid":
			err = ids(v, &s.Gid, &s.Has, HasGid)
		case "NSpid":
			s.NSpid, err = list(v, &s.Has, HasNSpid)
		case "NStgid":
			s.NStgid, err = list(v, &s.Has, HasNStgid)
		case "Threads":
			s.Threads, err = dec(v, &s.Has, HasThreads)
		case "SigPnd":
			s.SigPnd, err = mask(v, &s.Has, HasSigPnd)
		case "ShdPnd":
			s.ShdPnd, err = mask(v, &s.Has, HasShdPnd)
		case "SigBlk":
			s.SigBlk, err = mask(v, &s.Has, HasSigBlk)
		case "SigIgn":
			s.SigIgn, err = mask(v, &s.Has, HasSigIgn)
		case "SigCgt":
			s.SigCgt, err = mask(v, &s.Has, HasSigCgt)
		case "VmRSS":
			f := bytes.Fields(v) // "1234 kB"
			if len(f) > 0 {
				s.VmRSSKiB, err = udec(f[0], &s.Has, HasVmRSS)
			}
		case "voluntary_ctxt_switches":
			s.Voluntary, err = udec(v, &s.Has, HasVoluntary)
		case "nonvoluntary_ctxt_switches":
			s.Nonvoluntary, err = udec(v, &s.Has, HasNonvoluntary)
		case "Kthread":
			var n int
			n, err = dec(v, &s.Has, HasKthread)
			s.Kthread = n == 1
		}
		_ = err // the field stays unread: Has says so
	}
	if s.Has == 0 {
		return Status{}, fmt.Errorf("parsing status: no line of a status file")
	}
	return s, nil
}

// lineOf is the line each key is.
var lineOf = map[string]Line{
	"Name": HasName, "State": HasState, "Tgid": HasTgid, "PPid": HasPPid, "TracerPid": HasTracerPid,
	"Uid": HasUid, "Gid": HasGid, "NSpid": HasNSpid, "NStgid": HasNStgid, "Threads": HasThreads,
	"SigPnd": HasSigPnd, "ShdPnd": HasShdPnd, "SigBlk": HasSigBlk, "SigIgn": HasSigIgn, "SigCgt": HasSigCgt,
	"VmRSS": HasVmRSS, "voluntary_ctxt_switches": HasVoluntary, "nonvoluntary_ctxt_switches": HasNonvoluntary,
	"Kthread": HasKthread,
}

// Catches reports a signal the process has a handler for (SigCgt): a
// JVM catches SIGQUIT to print its threads unless run with -Xrs.
func (s Status) Catches(sig int) bool {
	return sig >= 1 && sig <= 64 && s.SigCgt&(1<<(sig-1)) != 0
}

func dec(v []byte, has *Line, l Line) (int, error) {
	n, err := strconv.Atoi(string(v))
	if err == nil {
		*has |= l
	}
	return n, err
}

func udec(v []byte, has *Line, l Line) (uint64, error) {
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err == nil {
		*has |= l
	}
	return n, err
}

func mask(v []byte, has *Line, l Line) (uint64, error) {
	n, err := strconv.ParseUint(string(v), 16, 64)
	if err == nil {
		*has |= l
	}
	return n, err
}

func ids(v []byte, out *[4]int, has *Line, l Line) error {
	f := bytes.Fields(v)
	if len(f) != 4 {
		return fmt.Errorf("%d ids, want 4", len(f))
	}
	for i := range out {
		n, err := strconv.Atoi(string(f[i]))
		if err != nil {
			return err
		}
		out[i] = n
	}
	*has |= l
	return nil
}

func list(v []byte, has *Line, l Line) ([]int, error) {
	var out []int
	for f := range bytes.FieldsSeq(v) {
		n, err := strconv.Atoi(string(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("pid %q", f)
		}
		out = append(out, n)
	}
	*has |= l
	return out, nil
}
