package sampler

import (
	"bytes"
	"fmt"
	iofs "io/fs"
	"os"
	"strconv"

	"github.com/hangdoc/hangdoc/model"
)

// FDInfo is /proc/PID/fdinfo/FD: what the kernel says about one open file,
// with the lines that epoll instances, pidfds and eventfds add.
type FDInfo struct {
	Pos   int64  // file offset
	Flags uint64 // open(2) flags, with O_CLOEXEC set when the descriptor has it
	MntID int    // mount id, as in /proc/PID/mountinfo
	Ino   uint64 // inode number: the N of "pipe:[N]" and "socket:[N]"; 0 if not shown

	// EpollTargets are the descriptors an epoll instance watches.
	EpollTargets []EpollTarget
	// PidfdPID is the process a pidfd refers to, numbered in the pid
	// namespace of the /proc that was read: -1 once it has exited and been
	// reaped, 0 when it is outside that namespace or the file is no pidfd.
	PidfdPID int
	// EventfdCount is an eventfd's counter; nil for any other file.
	EventfdCount *uint64
	// Locks are the file locks held through this descriptor ("lock:"
	// lines): its process's POSIX locks on the file, and the flock and
	// OFD locks of its open file, which /proc/locks does not tie to it.
	Locks []model.FileLockEntry
}

// EpollTarget is one descriptor an epoll instance watches.
type EpollTarget struct {
	FD     int    // the descriptor number in the process that added it
	Events uint32 // the event mask, with EPOLLERR and EPOLLHUP, which the kernel always adds
	Data   uint64 // the caller's epoll_data, all 64 bits whatever part it set
}

// parseFDInfo parses /proc/PID/fdinfo/FD. The kernel prints flags in octal
// and, on tfd and eventfd-count lines, events, data and the count in hex
// without a 0x. Lines it does not know (inotify and timerfd state, NSpid)
// are skipped.
func parseFDInfo(b []byte) (FDInfo, error) {
	var fi FDInfo
	var havePos, haveFlags bool
	for line := range bytes.Lines(b) {
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		val = bytes.TrimSpace(val)
		var err error
		switch string(key) {
		case "pos":
			fi.Pos, err = strconv.ParseInt(string(val), 10, 64)
			havePos = true
		case "flags":
			fi.Flags, err = strconv.ParseUint(string(val), 8, 64)
			haveFlags = true
		case "mnt_id":
			fi.MntID, err = strconv.Atoi(string(val))
		case "ino":
			fi.Ino, err = strconv.ParseUint(string(val), 10, 64)
		case "tfd":
			var t EpollTarget
			t, err = parseEpollTarget(val)
			fi.EpollTargets = append(fi.EpollTargets, t)
		case "Pid":
			var pid int64
			pid, err = strconv.ParseInt(string(val), 10, 32)
			fi.PidfdPID = int(pid)
		case "eventfd-count":
			var n uint64
			n, err = strconv.ParseUint(string(val), 16, 64)
			fi.EventfdCount = &n
		case "lock":
			// The lines of /proc/locks, for this descriptor's file; a
			// waiter's "->" line is never one of them.
			if _, e, blocked, ok := parseLockLine(string(val)); ok && !blocked {
				fi.Locks = append(fi.Locks, e)
			}
		}
		if err != nil {
			return FDInfo{}, fmt.Errorf("parsing fdinfo: %s %q", key, trim(val))
		}
	}
	if !havePos || !haveFlags {
		return FDInfo{}, fmt.Errorf("parsing fdinfo: no pos or flags: %q", trim(b))
	}
	return fi, nil
}

// parseEpollTarget parses what follows "tfd:" on an epoll instance's line:
// "17 events: 19 data: 11  pos:0 ino:7f0db4 sdev:f".
func parseEpollTarget(b []byte) (EpollTarget, error) {
	var f [5][]byte
	n := 0
	for w := range bytes.FieldsSeq(b) {
		if n == len(f) {
			break
		}
		f[n] = w
		n++
	}
	if n < len(f) || string(f[1]) != "events:" || string(f[3]) != "data:" {
		return EpollTarget{}, errShort
	}
	fd, err1 := strconv.ParseUint(string(f[0]), 10, 31)
	ev, err2 := strconv.ParseUint(string(f[2]), 16, 32)
	data, err3 := strconv.ParseUint(string(f[4]), 16, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return EpollTarget{}, errShort
	}
	return EpollTarget{FD: int(fd), Events: uint32(ev), Data: data}, nil
}

// ReadFDInfo reads /proc/PID/fdinfo/FD.
func ReadFDInfo(fs FS, pid, fd int) (FDInfo, error) {
	path := fs.pidPath(pid, "fdinfo", strconv.Itoa(fd))
	b, err := readFile(path, nil)
	if err != nil {
		return FDInfo{}, fdErr(fs, pid, "reading", path, err)
	}
	fi, err := parseFDInfo(b)
	if err != nil {
		return FDInfo{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return fi, nil
}

// fdErr is classifyErr for a file about one descriptor: when the file is
// missing but the process is not, the descriptor was closed, and the error
// wraps fs.ErrNotExist rather than ErrNoProcess.
func fdErr(fs FS, pid int, op, path string, err error) error {
	if vanished(err) {
		if _, serr := os.Stat(fs.pidPath(pid)); serr == nil {
			return fmt.Errorf("%s %s: no such descriptor: %w", op, path, iofs.ErrNotExist)
		}
	}
	return classifyErr(op, path, err)
}
