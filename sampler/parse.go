package sampler

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hangdoc/hangdoc/internal/procstatus"
	"github.com/hangdoc/hangdoc/model"
)

// ticksPerSecond is USER_HZ, the unit of /proc/PID/stat times. The kernel
// reports 100 on every architecture whatever its internal HZ.
const ticksPerSecond = 100

// maxTicks is the most CPU time a Duration holds, in ticks: about 292 years.
const maxTicks = uint64(1<<63-1) / uint64(time.Second/ticksPerSecond)

// stat is the part of /proc/PID/stat (or /proc/PID/task/TID/stat) hangdoc uses.
type stat struct {
	PID        int
	Comm       string
	State      model.ThreadState
	PPID       int
	PGRP       int
	Session    int
	TTY        int // tty_nr: the controlling terminal's device number; 0 for none
	TPGID      int // the foreground process group of the controlling terminal; -1 for none
	Flags      uint64
	CPUTime    time.Duration // utime + stime
	NumThreads int
	StartTicks uint64
	RSSPages   int64
}

// pfKthread is PF_KTHREAD in stat's flags: a kernel thread.
const pfKthread = 0x00200000

var errShort = errors.New("too few fields")

// parseStat parses /proc/PID/stat. The command name may hold spaces and
// parentheses, so the fields are split at the last ')'.
func parseStat(b []byte) (stat, error) {
	var s stat
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return s, fmt.Errorf("parsing stat: no (comm): %q", trim(b))
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return s, fmt.Errorf("parsing stat: pid: %w", err)
	}
	s.PID = pid
	s.Comm = string(b[open+1 : end])

	// rest[i] is field i+3 in proc(5)'s numbering.
	var rest [22][]byte
	n := 0
	for f := range bytes.FieldsSeq(b[end+1:]) {
		if n == len(rest) {
			break
		}
		rest[n] = f
		n++
	}
	if n < len(rest) {
		return s, fmt.Errorf("parsing stat: %w (%d after comm)", errShort, n)
	}
	s.State = model.ParseThreadState(string(rest[0]))
	var u [9]uint64
	for i, idx := range []int{1, 2, 3, 6, 11, 12, 17, 19, 21} {
		// All of these are counts or ids the kernel prints unsigned; bit
		// size 62 keeps every conversion below from overflowing.
		v, err := strconv.ParseUint(string(rest[idx]), 10, 62)
		if err != nil {
			return s, fmt.Errorf("parsing stat field %d: %w", idx+3, err)
		}
		u[i] = v
	}
	if u[4]+u[5] > maxTicks {
		return s, fmt.Errorf("parsing stat: CPU time of %d ticks is implausible", u[4]+u[5])
	}
	s.PPID, s.PGRP, s.Session = int(u[0]), int(u[1]), int(u[2])
	// tty_nr and tpgid are signed (tpgid is -1 without a terminal); a
	// value that does not parse leaves them unknown, not the sample lost.
	if v, err := strconv.ParseInt(string(rest[4]), 10, 32); err == nil {
		s.TTY = int(v)
	}
	s.TPGID = -1
	if v, err := strconv.ParseInt(string(rest[5]), 10, 32); err == nil {
		s.TPGID = int(v)
	}
	s.Flags = u[3]
	s.CPUTime = time.Duration(u[4]+u[5]) * (time.Second / ticksPerSecond)
	s.NumThreads = int(u[6])
	s.StartTicks = u[7]
	s.RSSPages = int64(u[8])
	return s, nil
}

// parseCtxtSwitches reads the two context-switch counters of /proc/PID/status.
func parseCtxtSwitches(b []byte) (voluntary, involuntary uint64, err error) {
	s, _ := procstatus.Parse(b)
	switch {
	case s.Has&procstatus.HasVoluntary == 0:
		return 0, 0, errors.New("parsing status: no voluntary_ctxt_switches")
	case s.Has&procstatus.HasNonvoluntary == 0:
		return 0, 0, errors.New("parsing status: no nonvoluntary_ctxt_switches")
	}
	return s.Voluntary, s.Nonvoluntary, nil
}

// parseNSpid reads NSpid of /proc/PID/status: the pid in each PID
// namespace the process is in, from the namespace of the /proc mount read
// down to its own. One number when the two are the same; nil on a kernel
// before 4.1, which has no NSpid.
func parseNSpid(b []byte) []int {
	s, _ := procstatus.Parse(b)
	return s.NSpid
}

// innerPID is the last of nspid, the pid as the process's own namespace
// numbers it, when that differs from pid; 0 when it is the same or unknown.
func innerPID(nspid []int, pid int) int {
	if len(nspid) < 2 || nspid[len(nspid)-1] == pid {
		return 0
	}
	return nspid[len(nspid)-1]
}

// parseSyscall parses /proc/TID/syscall: "running"; "-1 SP PC" when blocked
// outside a syscall; or "NR ARG1 … ARG6 SP PC" with the arguments in hex.
func parseSyscall(b []byte) (model.Syscall, error) {
	b = bytes.TrimSpace(b)
	if string(b) == "running" {
		return model.Syscall{Running: true, Nr: -1}, nil
	}
	var f [9][]byte
	n := 0
	for w := range bytes.FieldsSeq(b) {
		if n == len(f) {
			return model.Syscall{}, fmt.Errorf("parsing syscall: too many fields: %q", trim(b))
		}
		f[n] = w
		n++
	}
	if n == 0 {
		return model.Syscall{}, fmt.Errorf("parsing syscall: empty")
	}
	nr, err := strconv.Atoi(string(f[0]))
	if err != nil || nr < -1 {
		return model.Syscall{}, fmt.Errorf("parsing syscall number %q", trim(f[0]))
	}
	if nr == -1 {
		if n != 3 {
			return model.Syscall{}, fmt.Errorf("parsing syscall: %d fields after -1", n-1)
		}
		sp, pc := hexWord(f[1]), hexWord(f[2])
		return model.Syscall{Nr: -1, SP: sp, PC: pc}, nil
	}
	if n != 9 {
		return model.Syscall{}, fmt.Errorf("parsing syscall: %w (%d)", errShort, n)
	}
	s := model.Syscall{Nr: nr}
	for i := range s.Args {
		a := f[i+1]
		if len(a) < 3 || a[0] != '0' || a[1] != 'x' {
			return model.Syscall{}, fmt.Errorf("parsing syscall argument %q", trim(a))
		}
		v, err := strconv.ParseUint(string(a[2:]), 16, 64)
		if err != nil {
			return model.Syscall{}, fmt.Errorf("parsing syscall argument %q", trim(a))
		}
		s.Args[i] = v
	}
	s.SP, s.PC = hexWord(f[7]), hexWord(f[8])
	return s, nil
}

// hexWord reads "0x7ffd…" as a number; 0 when it is not one.
func hexWord(b []byte) uint64 {
	if len(b) < 3 || b[0] != '0' || b[1] != 'x' {
		return 0
	}
	v, err := strconv.ParseUint(string(b[2:]), 16, 64)
	if err != nil {
		return 0
	}
	return v
}

// parseWchan returns the kernel function a thread sleeps in, "" for none.
func parseWchan(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "0" {
		return ""
	}
	return string(b)
}

// trim keeps error messages about garbled files to one short line.
func trim(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// TimesScheduled is how many times thread tid of pid has been scheduled in
// (its schedstat's third field): a count that moves only when the thread
// runs. ok is false when it cannot be read, or schedstat is off ("0 0 0":
// no CONFIG_SCHED_INFO), which says nothing.
func TimesScheduled(fs FS, pid, tid int) (n uint64, ok bool) {
	b, err := os.ReadFile(fs.Path(strconv.Itoa(pid), "task", strconv.Itoa(tid), "schedstat"))
	if err != nil || bytes.HasPrefix(b, []byte("0 0 0")) {
		return 0, false
	}
	if _, _, err := parseSchedstat(b); err != nil {
		return 0, false
	}
	n, err = strconv.ParseUint(string(bytes.Fields(b)[2]), 10, 64)
	return n, err == nil
}

// parseSchedstat parses /proc/TID/schedstat: nanoseconds on a CPU,
// nanoseconds waiting on a run queue, and the number of times it ran.
func parseSchedstat(b []byte) (run, wait time.Duration, err error) {
	var f [3][]byte
	n := 0
	for w := range bytes.FieldsSeq(b) {
		if n == len(f) {
			return 0, 0, fmt.Errorf("parsing schedstat: too many fields: %q", trim(b))
		}
		f[n] = w
		n++
	}
	if n != len(f) {
		return 0, 0, fmt.Errorf("parsing schedstat: %w (%d)", errShort, n)
	}
	r, err1 := strconv.ParseUint(string(f[0]), 10, 63)
	w, err2 := strconv.ParseUint(string(f[1]), 10, 63)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("parsing schedstat %q", trim(b))
	}
	return time.Duration(r), time.Duration(w), nil
}
