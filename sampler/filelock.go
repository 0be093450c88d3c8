package sampler

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// fileLockCall reports a call that waits to take a file lock: flock()
// without LOCK_NB, fcntl(F_SETLKW) or fcntl(F_OFD_SETLKW).
func fileLockCall(sc model.Syscall) bool {
	if !sc.InCall() {
		return false
	}
	switch sc.Name {
	case "flock":
		return sc.Args[1]&unix.LOCK_NB == 0
	case "fcntl":
		return sc.Args[1] == unix.F_SETLKW || sc.Args[1] == unix.F_OFD_SETLKW
	}
	return false
}

// readFileLocks names, for each thread waiting to take a file lock, the
// file and the locks held on it. /proc/locks is read once per sample, and
// streamed: a host may hold many thousands of locks, and only the lines of
// the files waited on are kept.
func (s *Sampler) readFileLocks(sample *model.Sample) {
	want := map[string][]*model.FileLock{} // by "dev:inode"
	for i := range sample.Threads {
		th := &sample.Threads[i]
		if th.Exited || !fileLockCall(th.Syscall) {
			continue
		}
		fl := &model.FileLock{Path: th.FD, Held: []model.FileLockEntry{}, Blocked: []model.FileLockEntry{}}
		th.FileLock = fl
		var st unix.Stat_t
		fd := int(int32(th.Syscall.Args[0]))
		if err := unix.Stat(s.fs.pidPath(s.pid, "fd", strconv.Itoa(fd)), &st); err != nil {
			fl.Err = fmt.Sprintf("reading the file of fd %d: %v", fd, err)
			continue
		}
		fl.Dev, fl.Inode = fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev)), st.Ino
		key := fmt.Sprintf("%s:%d", fl.Dev, fl.Inode)
		want[key] = append(want[key], fl)
	}
	if len(want) == 0 {
		return
	}
	path := s.fs.Path("locks")
	err := eachLock(path, func(key string, e model.FileLockEntry, blocked bool) {
		for _, fl := range want[key] {
			if blocked {
				fl.Blocked = append(fl.Blocked, e)
			} else {
				fl.Held = append(fl.Held, e)
			}
		}
	})
	if err != nil {
		for _, fls := range want {
			for _, fl := range fls {
				fl.Err = fmt.Sprintf("reading %s: %v", path, err)
			}
		}
		return
	}
}

// parseLockLine parses one line of /proc/locks:
//
//	1: POSIX  ADVISORY  WRITE 1234 08:01:131090 0 EOF
//	1: -> FLOCK  ADVISORY  WRITE 5678 00:2a:55 0 EOF
//
// into the file's "dev:inode" key and the lock; blocked is a "->" line, a
// wait for the lock of the line before.
func parseLockLine(line string) (key string, e model.FileLockEntry, blocked, ok bool) {
	f := strings.Fields(line)
	if len(f) > 1 && f[1] == "->" {
		blocked = true
		f = append(f[:1], f[2:]...)
	}
	// id class mode type pid dev:inode start end
	if len(f) < 8 {
		return "", e, false, false
	}
	pid, err := strconv.Atoi(f[4])
	if err != nil {
		return "", e, false, false
	}
	i := strings.LastIndexByte(f[5], ':')
	if i < 0 {
		return "", e, false, false
	}
	ino, err := strconv.ParseUint(f[5][i+1:], 10, 64)
	if err != nil {
		return "", e, false, false
	}
	e = model.FileLockEntry{Class: f[1], Type: f[3], PID: pid, Range: f[6] + " " + f[7]}
	return fmt.Sprintf("%s:%d", f[5][:i], ino), e, blocked, true
}

// eachLock calls f with each line of /proc/locks (at path) that parses: the
// "dev:inode" key it names the file by, the lock, and whether the line is a
// waiter's ("->") rather than a holder's.
func eachLock(path string, f func(key string, e model.FileLockEntry, blocked bool)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		if key, e, blocked, ok := parseLockLine(sc.Text()); ok {
			f(key, e, blocked)
		}
	}
	return nil
}
