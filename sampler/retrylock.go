package sampler

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/model"
)

// A record lock held while the waiter retries: SQLite's busy handler tries
// fcntl(F_SETLK) without blocking, then sleeps, and tries again. The
// attempt is over before anyone can look; what stays is the sleep between
// tries and the other process's lock in /proc/locks on a file the waiter
// has open. These are the facts; classify decides what they mean.

// minRetrySleep and maxRetrySleep bound a sleep read as a retry loop's
// back-off (SQLite's busy handler settles at 100 ms a try, 1 s without
// usleep). Shorter naps are a runtime's own (Go's sysmon sleeps 20 µs to
// 10 ms), and looking at every open file for them would cost every
// sample of an idle Go server.
const (
	minRetrySleep = 20 * time.Millisecond
	maxRetrySleep = time.Second
)

// maxLockedFDs bounds how many of a process's descriptors are looked at.
const maxLockedFDs = 1024

// sqliteHeader begins every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// readSleeps reads how long each thread in nanosleep or clock_nanosleep
// asked to sleep, from the timespec in its memory.
func (s *Sampler) readSleeps(sample *model.Sample) {
	for i := range sample.Threads {
		th := &sample.Threads[i]
		sc := th.Syscall
		if th.Exited || !sc.InCall() || s.mem < 0 {
			continue
		}
		var addr uint64
		switch sc.Name {
		case "nanosleep":
			addr = sc.Args[0]
		case "clock_nanosleep":
			if sc.Args[1]&unix.TIMER_ABSTIME != 0 {
				continue // until a time, not for one
			}
			addr = sc.Args[2]
		default:
			continue
		}
		maps := s.readMaps()
		b, err := s.readMem(maps, addr, 16)
		if err != nil {
			continue
		}
		sec, nsec := int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
		if sec < 0 || nsec < 0 || nsec >= 1e9 || sec > 1<<32 {
			continue
		}
		th.SleepNS = sec*1e9 + nsec
	}
}

// readLockedFiles fills sample.LockedFiles when a thread sleeps briefly
// and none waits in a lock call: the files the process has open on which
// another process holds a record lock.
func (s *Sampler) readLockedFiles(sample *model.Sample) {
	napping := false
	for _, th := range sample.Threads {
		if th.Exited {
			continue
		}
		if fileLockCall(th.Syscall) {
			return // a lock waited for in the open: readFileLocks names it
		}
		if th.SleepNS >= int64(minRetrySleep) && th.SleepNS <= int64(maxRetrySleep) {
			napping = true
		}
	}
	if !napping {
		return
	}
	files := s.openFiles()
	if len(files) == 0 {
		return
	}
	err := eachLock(s.fs.Path("locks"), func(key string, e model.FileLockEntry, blocked bool) {
		lf := files[key]
		if blocked || lf == nil || e.Class == "FLOCK" {
			return
		}
		if e.PID == s.pid {
			lf.Own = append(lf.Own, e)
		} else {
			lf.Held = append(lf.Held, e)
		}
	})
	if err != nil {
		return
	}
	for _, fd := range sortedFDs(files) {
		lf := files[fd]
		if !heldByOther(lf.Held) {
			continue
		}
		lf.SQLite = s.isSQLite(lf.FD)
		sample.LockedFiles = append(sample.LockedFiles, *lf)
	}
}

func heldByOther(held []model.FileLockEntry) bool {
	for _, e := range held {
		if e.PID > 0 {
			return true
		}
	}
	return false
}

// openFiles lists the regular files the process has open, by the
// "dev:inode" /proc/locks names them with, at most maxLockedFDs.
func (s *Sampler) openFiles() map[string]*model.LockedFile {
	dir := s.fs.pidPath(s.pid, "fd")
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	names, err := d.Readdirnames(maxLockedFDs)
	d.Close()
	if err != nil {
		return nil
	}
	out := map[string]*model.LockedFile{}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		link, err := os.Readlink(dir + "/" + n)
		if err != nil || len(link) == 0 || link[0] != '/' {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(dir+"/"+n, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		dev := fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev))
		key := fmt.Sprintf("%s:%d", dev, st.Ino)
		if o := out[key]; o != nil && o.FD < fd {
			continue
		}
		out[key] = &model.LockedFile{Path: link, FD: fd, Dev: dev, Inode: st.Ino, Held: []model.FileLockEntry{}, Own: []model.FileLockEntry{}}
	}
	return out
}

// sortedFDs orders the files by descriptor, so samples list them alike.
func sortedFDs(files map[string]*model.LockedFile) []string {
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return files[a].FD - files[b].FD })
	return keys
}

// isSQLite reads the first bytes of the file behind the process's fd.
// The open is hangdoc's own: reading takes no lock, and closing it
// releases none of the target's. A file on a mount that does not answer
// (a hung network filesystem) is given up after a second: no sample waits
// on it.
func (s *Sampler) isSQLite(fd int) bool {
	ok, err := deadline.Within(context.Background(), time.Second, "reading the header of a locked file", func() (bool, error) {
		f, err := os.OpenFile(s.fs.pidPath(s.pid, "fd", strconv.Itoa(fd)), os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != nil {
			return false, err
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return false, err
		}
		b := make([]byte, len(sqliteHeader))
		n, _ := f.ReadAt(b, 0)
		return bytes.Equal(b[:n], sqliteHeader), nil
	})
	return err == nil && ok
}
