package sampler

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// A futex word in a MAP_SHARED mapping is the same lock in every process
// that maps the same object at the same offset: a process-shared pthread
// mutex's __owner may then be a thread of another process. These readers
// place each waited-for word in its mapping and, when the word's owner is
// no thread of the target, find the process it belongs to and check that
// it maps the same word. They only read /proc.

// shmMapping is one line of /proc/PID/maps, with what places a shared word.
type shmMapping struct {
	start, end, off uint64
	shared          bool
	dev             string
	inode           uint64
	path            string
}

// maxMapsLines bounds how much of a maps file is read: a process with more
// mappings than this has its words past them left unplaced.
const maxMapsLines = 1 << 16

// readShmMaps reads /proc/PID/maps with each line's object; nil when it
// cannot be read (the process exited: data, not an error).
func readShmMaps(fs FS, pid int) []shmMapping {
	b, err := readMapsFile(fs, pid)
	if err != nil {
		return nil
	}
	return parseMaps(b, parseShmMapping)
}

// readShmMapsOfTarget is readShmMaps of the target, from the sample's one
// read of its maps.
func (s *Sampler) readShmMapsOfTarget() []shmMapping {
	m := &s.maps
	if !m.sharedDone {
		m.shared, m.sharedDone = parseMaps(s.mapsText(), parseShmMapping), true
	}
	return m.shared
}

// parseShmMapping parses a line of maps:
// "7f0c1a2b3000-7f0c1a2b4000 rw-s 00000000 00:1a 1234  /dev/shm/app".
func parseShmMapping(line string) (shmMapping, bool) {
	var f [5]string
	rest := line
	for i := range f {
		rest = strings.TrimLeft(rest, " ")
		var ok bool
		f[i], rest, ok = strings.Cut(rest, " ")
		if !ok && i < len(f)-1 {
			return shmMapping{}, false
		}
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok || len(f[1]) != 4 {
		return shmMapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	off, err3 := strconv.ParseUint(f[2], 16, 64)
	ino, err4 := strconv.ParseUint(f[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || end <= start || !strings.Contains(f[3], ":") {
		return shmMapping{}, false
	}
	return shmMapping{start: start, end: end, off: off, shared: f[1][3] == 's', dev: f[3], inode: ino, path: strings.TrimSpace(rest)}, true
}

// sharedWordAt places addr in the shared mapping that holds it.
func sharedWordAt(maps []shmMapping, addr uint64) (*model.SharedWord, bool) {
	for _, m := range maps {
		if addr >= m.start && addr < m.end && m.end-addr >= 4 {
			if !m.shared || m.inode == 0 {
				return nil, false
			}
			return &model.SharedWord{Path: m.path, Offset: m.off + (addr - m.start), Dev: m.dev, Inode: m.inode}, true
		}
	}
	return nil, false
}

// mapsWord says whether a process's maps hold the same shared word.
func mapsWord(maps []shmMapping, w *model.SharedWord) bool {
	for _, m := range maps {
		if m.shared && m.dev == w.Dev && m.inode == w.Inode && w.Offset >= m.off && w.Offset-m.off < m.end-m.start && m.end-m.start-(w.Offset-m.off) >= 4 {
			return true
		}
	}
	return false
}

// futexOwnerTID is the thread a futex word records as its owner: glibc's
// __owner, or the word's low 30 bits for a robust or priority-inheritance
// mutex, whose word is the owner's TID.
func futexOwnerTID(f model.Futex) int {
	const robustOrPI = 16 | 32
	if f.Kind >= 0 && f.Kind&robustOrPI != 0 {
		if tid := int(f.Word & 0x3fffffff); tid > 0 {
			return tid
		}
	}
	return int(f.Owner)
}

// readSharedFutexes places each futex word of the sample in its shared
// mapping, and names the process of an owner that is no thread of the
// target when that process maps the same word.
func (s *Sampler) readSharedFutexes(sample *model.Sample) {
	if len(sample.Futexes) == 0 {
		return
	}
	var threads map[int]bool
	for key, f := range sample.Futexes {
		if f.Err != "" {
			continue
		}
		addr, err := strconv.ParseUint(strings.TrimPrefix(key, "0x"), 16, 64)
		if err != nil {
			continue
		}
		maps := s.readShmMapsOfTarget()
		w, ok := sharedWordAt(maps, addr)
		if !ok {
			continue
		}
		f.Shared = w
		if threads == nil {
			threads = make(map[int]bool, len(sample.Threads))
			for _, t := range sample.Threads {
				threads[t.TID] = true
			}
		}
		if owner := futexOwnerTID(f); owner > 0 && !threads[owner] {
			f.OwnerPID = sharedOwner(s.fs, owner, w)
		}
		if f.OwnerPID == 0 {
			f.MappedBy, f.MappedComplete = s.sharedMappers(w)
		}
		sample.Futexes[key] = f
	}
}

// sharedOwner is the process whose thread tid is, when it maps the same
// shared word; 0 when the thread is gone or its process does not map it
// (a stale __owner, or a thread of another pid namespace that happens to
// carry the same number).
func sharedOwner(fs FS, tid int, w *model.SharedWord) int {
	pid, err := ThreadGroup(fs, tid)
	if err != nil || pid <= 0 {
		return 0
	}
	if _, err := os.Stat(fs.pidPath(pid, "task", strconv.Itoa(tid))); err != nil {
		return 0
	}
	if !mapsWord(readShmMaps(fs, pid), w) {
		return 0
	}
	return pid
}

// sharedMappers are the other processes that map the object of w over its
// offset, searched once per object within fifoBudget.
func (s *Sampler) sharedMappers(w *model.SharedWord) ([]int, bool) {
	key := w.Dev + " " + strconv.FormatUint(w.Inode, 10) + " " + strconv.FormatUint(w.Offset, 10)
	h, ok := s.mappers[key]
	if !ok {
		h.complete = true
		start := time.Now()
		pids, err := listPIDs(s.fs)
		if err != nil {
			h.complete = false
		}
		for _, pid := range pids {
			if time.Since(start) > fifoBudget {
				h.complete = false
				break
			}
			if pid != s.pid && mapsWord(readShmMaps(s.fs, pid), w) {
				h.refs = append(h.refs, model.FDRef{PID: pid})
			}
		}
		if s.mappers == nil {
			s.mappers = map[string]fifoHolders{}
		}
		s.mappers[key] = h
	}
	out := []int{}
	for _, r := range h.refs {
		out = append(out, r.PID)
	}
	return out, h.complete
}

// listPIDs lists the processes of a /proc tree.
func listPIDs(fs FS) ([]int, error) {
	d, err := os.Open(fs.Path())
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	var out []int
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out, err
}
