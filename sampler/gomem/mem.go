package gomem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/sampler"
)

// request is one piece of target memory to read: Buf is filled from
// Addr; OK says the whole of it was read.
type request struct {
	Addr uint64
	Buf  []byte
	OK   bool
}

// memory is the target's memory. read fills every request it can and
// marks it OK; one that faults is left not OK. Its error means nothing
// more can be read: the process is gone (errExited) or may not be read.
// Tests put fakes behind it.
type memory interface {
	read(reqs []request) error
}

// errExited: the target is gone, so reads fail for good.
var errExited = errors.New("process exited")

// iovMax is the kernel's limit on iovecs per process_vm_readv (UIO_MAXIOV).
const iovMax = 1024

// liveMemory reads a live process with process_vm_readv, which copies
// from the target's pages without stopping or tracing it (it needs the
// same permission as ptrace, PTRACE_MODE_ATTACH_REALCREDS, but attaches
// nothing), many pieces a call. Where the call is refused (seccomp
// policies in some containers) it falls back to pread of /proc/PID/mem.
type liveMemory struct {
	pid   int      // as fsys numbers it
	vmPID int      // as hangdoc's own PID namespace does, for process_vm_readv
	mem   *os.File // /proc/PID/mem, opened on the first fallback
	path  string
	vmOff bool // process_vm_readv unavailable
	local []unix.Iovec
	remot []unix.RemoteIovec
	calls int // system calls made, for the benchmarks
}

func newLiveMemory(fsys sampler.FS, pid int) *liveMemory {
	m := &liveMemory{pid: pid, path: fsys.Path(strconv.Itoa(pid), "mem")}
	// process_vm_readv takes the pid as hangdoc's own PID namespace
	// numbers it, which --proc's may not: where that namespace has none
	// for the target (one beside it), /proc/PID/mem still reads.
	local, err := sampler.LocalPID(fsys, pid)
	m.vmPID, m.vmOff = local, err != nil || local <= 0
	return m
}

func (m *liveMemory) close() error {
	if m.mem != nil {
		return m.mem.Close()
	}
	return nil
}

func (m *liveMemory) read(reqs []request) error {
	for len(reqs) > 0 {
		if m.vmOff {
			return m.pread(reqs)
		}
		n := min(len(reqs), iovMax)
		done, err := m.readv(reqs[:n])
		switch {
		case err == nil:
		case errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EPERM) && done == 0:
			// EPERM from process_vm_readv with /proc/PID/mem readable is
			// a seccomp or LSM policy on the call, not on the target.
			m.vmOff = true
			continue
		default:
			return err
		}
		reqs = reqs[done:]
	}
	return nil
}

// readv reads up to iovMax requests in one call and returns how many it
// settled: those it read, and the first that faulted, which is skipped.
func (m *liveMemory) readv(reqs []request) (int, error) {
	m.local, m.remot = m.local[:0], m.remot[:0]
	for i := range reqs {
		r := &reqs[i]
		r.OK = false
		if len(r.Buf) == 0 {
			r.OK = true
		}
		var l unix.Iovec
		if len(r.Buf) > 0 {
			l.Base = &r.Buf[0]
		}
		l.SetLen(len(r.Buf))
		m.local = append(m.local, l)
		m.remot = append(m.remot, unix.RemoteIovec{Base: uintptr(r.Addr), Len: len(r.Buf)})
	}
	m.calls++
	n, err := unix.ProcessVMReadv(m.vmPID, m.local, m.remot, 0)
	if err != nil {
		switch {
		case errors.Is(err, syscall.EFAULT):
			// The first piece faulted before anything was copied.
			n = 0
		case errors.Is(err, syscall.ESRCH):
			return 0, fmt.Errorf("reading the memory of pid %d: %w", m.pid, errExited)
		case errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EPERM):
			return 0, err
		default:
			return 0, fmt.Errorf("reading the memory of pid %d: %w", m.pid, err)
		}
	}
	// Pieces are copied in order; the call stops at the first that
	// faults, which is then partly copied or not at all.
	for i := range reqs {
		l := len(reqs[i].Buf)
		if n < l {
			return i + 1, nil
		}
		n -= l
		reqs[i].OK = true
	}
	return len(reqs), nil
}

func (m *liveMemory) pread(reqs []request) error {
	if m.mem == nil {
		f, err := os.Open(m.path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("opening %s: %w", m.path, errExited)
			}
			if errors.Is(err, fs.ErrPermission) {
				return fmt.Errorf("opening %s: %w: %s", m.path, sampler.ErrPermission, sampler.PermissionHint)
			}
			return fmt.Errorf("opening %s: %w", m.path, err)
		}
		m.mem = f
	}
	for i := range reqs {
		r := &reqs[i]
		m.calls++
		k, err := m.mem.ReadAt(r.Buf, int64(r.Addr))
		r.OK = k == len(r.Buf)
		if err != nil && !r.OK {
			if errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("reading %s: %w", m.path, errExited)
			}
		}
	}
	// A process that exited reads as nothing at all.
	if len(reqs) > 0 && !slices.ContainsFunc(reqs, func(r request) bool { return r.OK }) {
		if _, err := os.Stat(m.path); err != nil {
			return fmt.Errorf("reading %s: %w", m.path, errExited)
		}
	}
	return nil
}

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end uint64
	read       bool
	offset     uint64
	dev        string
	inode      uint64
	path       string
}

// mappings is a process's address space, sorted by address. hint is the
// mapping the last lookup found: most lookups of a read fall in the same
// heap arena.
type mappings struct {
	list []mapping
	hint int
}

// readMaps reads /proc/PID/maps.
func readMaps(path string) (*mappings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading %s: %w", path, sampler.ErrNoProcess)
		}
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("reading %s: %w: %s", path, sampler.ErrPermission, sampler.PermissionHint)
		}
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return parseMaps(b), nil
}

// parseMaps parses the lines "start-end perms offset dev inode path".
func parseMaps(b []byte) *mappings {
	var ms []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		off, err3 := strconv.ParseUint(string(f[2]), 16, 64)
		ino, err4 := strconv.ParseUint(string(f[4]), 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || end <= start {
			continue
		}
		m := mapping{start: start, end: end, read: len(f[1]) > 0 && f[1][0] == 'r', offset: off, dev: string(f[3]), inode: ino}
		if len(f) > 5 {
			m.path = string(bytes.Join(f[5:], []byte(" ")))
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b mapping) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	return &mappings{list: ms}
}

// readable reports whether [addr, addr+n) lies in readable mappings.
func (m *mappings) readable(addr, n uint64) bool {
	if n == 0 {
		n = 1
	}
	end := addr + n
	if end < addr {
		return false
	}
	ms := m.list
	i := m.hint
	if i >= len(ms) || addr < ms[i].start || addr >= ms[i].end {
		i, _ = slices.BinarySearchFunc(ms, addr, func(m mapping, a uint64) int {
			switch {
			case m.end <= a:
				return -1
			case m.start > a:
				return 1
			}
			return 0
		})
		if i < len(ms) {
			m.hint = i
		}
	}
	for ; i < len(ms) && addr < end; i++ {
		if ms[i].start > addr || !ms[i].read {
			return false
		}
		addr = ms[i].end
	}
	return addr >= end
}

// spanReader reads many small pieces of the same size (gs, sudogs) a few
// large reads at a time: process_vm_readv costs about as much per piece
// as it does per 7 KiB copied (0.4 µs a piece here, whatever its size),
// and the pieces sit side by side in heap spans, so 100,000 gs read as
// 6,000 pieces of up to 64 KiB take 17 ms instead of 40. Only pieces
// within one readable stretch of the target's mappings are merged; a
// merged read that faults is read again piece by piece. The pieces are
// slices of an arena that the next read reuses.
type spanReader struct {
	order  []int
	reqs   []request
	runs   []span
	arena  []byte
	views  [][]byte
	retry  []request
	retryI []int
}

// span is one read: order[from:to] are its pieces.
type span struct{ from, to int }

// Merging limits: pieces less than spanGap bytes apart share a read of at
// most maxSpan bytes.
const (
	spanGap = 512
	maxSpan = 64 << 10
)

// read reads a piece of size bytes at each of addrs and returns them,
// nil for those that could not be read. The pieces stay valid until the
// next read.
func (s *spanReader) read(mem memory, ms *mappings, addrs []uint64, size int) ([][]byte, error) {
	s.order = s.order[:0]
	for i := range addrs {
		s.order = append(s.order, i)
	}
	slices.SortFunc(s.order, func(a, b int) int {
		switch x, y := addrs[a], addrs[b]; {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	sz := uint64(size)
	s.reqs, s.runs = s.reqs[:0], s.runs[:0]
	var lens []uint64
	total := uint64(0)
	for i := 0; i < len(s.order); {
		start := addrs[s.order[i]]
		end := start + sz
		j := i + 1
		for ; j < len(s.order); j++ {
			a := addrs[s.order[j]]
			e := max(end, a+sz)
			if a > end+spanGap || e-start > maxSpan || !ms.readable(start, e-start) {
				break
			}
			end = e
		}
		s.reqs = append(s.reqs, request{Addr: start})
		s.runs = append(s.runs, span{i, j})
		lens = append(lens, end-start)
		total += end - start
		i = j
	}
	if uint64(cap(s.arena)) < total+sz*uint64(len(addrs)) {
		// Room for the reads and for a fallback piece by piece.
		s.arena = make([]byte, total+sz*uint64(len(addrs)))
	}
	buf := s.arena[:cap(s.arena)]
	for k := range s.reqs {
		s.reqs[k].Buf, buf = buf[:lens[k]:lens[k]], buf[lens[k]:]
	}
	if err := mem.read(s.reqs); err != nil {
		return nil, err
	}
	s.views = slices.Grow(s.views[:0], len(addrs))[:len(addrs)]
	s.retry, s.retryI = s.retry[:0], s.retryI[:0]
	for k, q := range s.reqs {
		rn := s.runs[k]
		for _, i := range s.order[rn.from:rn.to] {
			switch {
			case q.OK:
				off := addrs[i] - q.Addr
				s.views[i] = q.Buf[off : off+sz : off+sz]
			case rn.to-rn.from > 1:
				s.views[i] = nil
				s.retry = append(s.retry, request{Addr: addrs[i], Buf: buf[:sz:sz]})
				s.retryI = append(s.retryI, i)
				buf = buf[sz:]
			default:
				s.views[i] = nil
			}
		}
	}
	if len(s.retry) > 0 {
		if err := mem.read(s.retry); err != nil {
			return nil, err
		}
		for k, q := range s.retry {
			if q.OK {
				s.views[s.retryI[k]] = q.Buf
			}
		}
	}
	return s.views, nil
}
