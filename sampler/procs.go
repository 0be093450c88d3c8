package sampler

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"golang.org/x/sys/unix"
)

// ScanProcs lists every process in fs, sorted by PID. A process that exits
// between the listing and the read of its stat is left out; a stat that
// cannot be parsed is an error.
func ScanProcs(fs FS) ([]model.Proc, error) {
	root := fs.Path()
	d, err := os.Open(root)
	if err != nil {
		return nil, classifyErr("listing", root, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, classifyErr("listing", root, err)
	}
	procs := make([]model.Proc, 0, len(names))
	buf := make([]byte, 0, 1024)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		path := fs.pidPath(pid, "stat")
		b, err := readFile(path, buf)
		if err != nil {
			if vanished(err) {
				continue
			}
			return nil, classifyErr("reading", path, err)
		}
		if cap(b) > cap(buf) {
			buf = b[:0]
		}
		st, err := parseStat(b)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		procs = append(procs, model.Proc{
			PID: st.PID, PPID: st.PPID, PGRP: st.PGRP, Session: st.Session,
			Comm: st.Comm, State: st.State,
			StartTicks: st.StartTicks, CPUTime: st.CPUTime,
		})
	}
	slices.SortFunc(procs, func(a, b model.Proc) int { return a.PID - b.PID })
	return procs, nil
}

// vanished reports whether err says the file's process is gone.
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// FindHolders finds the descriptors that point at targets, texts as
// readlink gives them for /proc/PID/fd/N ("pipe:[32921]", "socket:[123]").
// It reads the descriptor tables of the processes in order, which the
// caller sorts most likely first, and stops at the end of order or when
// budget is spent; budget <= 0 means no limit. It does not stop when every
// target has a holder: a pipe may have several readers and writers.
//
// found holds, for each target with holders, every descriptor found, in
// the order of order and then of descriptor numbers. scanned is how many
// processes had their whole table read; complete is false when the budget
// ran out first. A process that cannot be read (it exited, or hangdoc
// lacks permission) is skipped and not counted; a repeated pid is read
// once.
func FindHolders(fs FS, targets map[string]bool, order []int, budget time.Duration) (found map[string][]model.FDRef, scanned int, complete bool) {
	found = make(map[string][]model.FDRef)
	if len(targets) == 0 {
		return found, 0, true
	}
	longest := 0
	for t := range targets {
		longest = max(longest, len(t))
	}
	h := holderScan{
		fs:      fs,
		targets: targets,
		found:   found,
		dirents: make([]byte, 8192),
		link:    make([]byte, longest+1), // a link that fills it is no target
		info:    make([]byte, 0, 512),
		start:   time.Now(),
		budget:  budget,
	}
	seen := make(map[int]bool, len(order))
	for _, pid := range order {
		if seen[pid] || pid <= 0 {
			continue
		}
		if len(seen) > 0 && h.spent() {
			return found, scanned, false
		}
		seen[pid] = true
		read, done := h.process(pid)
		if !done {
			return found, scanned, false
		}
		if read {
			scanned++
		}
	}
	return found, scanned, true
}

// holderScan is the state of one FindHolders call. Every buffer is reused
// from process to process: a scan may read tens of thousands of links, and
// a link is read into link and looked up in targets without a string.
type holderScan struct {
	fs      FS
	targets map[string]bool
	found   map[string][]model.FDRef
	dirents []byte // getdents64 buffer
	link    []byte // readlinkat buffer
	info    []byte // fdinfo buffer
	start   time.Time
	budget  time.Duration
	pending []heldFD // found in the process being read
}

type heldFD struct {
	target string
	ref    model.FDRef
}

func (h *holderScan) spent() bool {
	return h.budget > 0 && time.Since(h.start) >= h.budget
}

// checkEvery is how many descriptors are read between looks at the clock,
// so that one process with a huge table cannot overrun the budget by much.
const checkEvery = 256

// process reads one process's descriptor table. read is false when the
// table could not be read at all; done is false when the budget ran out
// before its end.
func (h *holderScan) process(pid int) (read, done bool) {
	path := h.fs.pidPath(pid, "fd")
	dir, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, true
	}
	defer unix.Close(dir)
	defer h.flush()
	n := 0
	for {
		size, err := unix.Getdents(dir, h.dirents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// The process exited while its table was being read: what was
			// found stands, but its table was not read to the end.
			return false, true
		}
		if size == 0 {
			return true, true
		}
		for b := h.dirents[:size]; len(b) >= 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return false, true
			}
			name := b[19:reclen]
			b = b[reclen:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			fd, ok := atoiBytes(name)
			if !ok {
				continue // "." and ".."
			}
			h.fd(pid, dir, fd)
			if n++; n%checkEvery == 0 && h.spent() {
				return false, false
			}
		}
	}
}

// fd records descriptor fd of pid if it points at a target.
func (h *holderScan) fd(pid, dir, fd int) {
	var n int
	var err error
	for {
		// Relative to the open fd directory: one name to look up, not four.
		n, err = unix.Readlinkat(dir, strconv.Itoa(fd), h.link)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil || n == len(h.link) {
		return // closed since the listing, or longer than every target
	}
	link := h.link[:n]
	if !h.targets[string(link)] {
		return
	}
	key := string(link)
	ref := model.FDRef{PID: pid, FD: fd}
	path := h.fs.pidPath(pid, "fdinfo", strconv.Itoa(fd))
	b, err := readFile(path, h.info)
	if err == nil {
		if cap(b) > cap(h.info) {
			h.info = b[:0]
		}
		info, perr := parseFDInfo(b)
		if perr == nil {
			if ino, ok := linkInode(link); ok && info.Ino != 0 && info.Ino != ino {
				// The descriptor was closed and its number reused between
				// the readlink and the read of fdinfo.
				return
			}
			ref.Mode = accessMode(info.Flags)
			ref.Locks = info.Locks
		}
	} else if vanished(err) && !h.stillLinked(dir, fd, key) {
		return // closed since the readlink
	}
	h.pending = append(h.pending, heldFD{key, ref})
}

// flush records what process found, in descriptor order whatever order
// the directory listed them in.
func (h *holderScan) flush() {
	slices.SortStableFunc(h.pending, func(a, b heldFD) int { return a.ref.FD - b.ref.FD })
	for _, p := range h.pending {
		h.found[p.target] = append(h.found[p.target], p.ref)
	}
	h.pending = h.pending[:0]
}

// stillLinked reports whether descriptor fd still points at target. A
// captured tree may have fd links without fdinfo; a live one loses both
// when the descriptor closes.
func (h *holderScan) stillLinked(dir, fd int, target string) bool {
	n, err := unix.Readlinkat(dir, strconv.Itoa(fd), h.link)
	return err == nil && string(h.link[:n]) == target
}

// accessMode names the O_ACCMODE bits of open flags.
func accessMode(flags uint64) string {
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		return "r"
	case unix.O_WRONLY:
		return "w"
	case unix.O_RDWR:
		return "rw"
	}
	return ""
}

// linkInode is N in a link text "type:[N]".
func linkInode(link []byte) (uint64, bool) {
	i := bytes.IndexByte(link, '[')
	if i < 0 || link[len(link)-1] != ']' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(link[i+1:len(link)-1]), 10, 64)
	return n, err == nil
}

// atoiBytes parses a descriptor number without making a string of it.
func atoiBytes(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
