package sampler

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// Paths and socket addresses read from a blocked thread's memory: the file
// an open waits on, the address a connect waits for. Like the pollfd
// arrays, the arguments are the target's own and are not trusted: a
// pointer must lie in a readable mapping, a path is at most PATH_MAX bytes
// and a sockaddr at most its family's size. A target that exits mid-read
// leaves the reason in PathErr. Nothing here stops, signals or writes to
// any process.

// pathMax is PATH_MAX, the longest path the kernel takes, with its NUL.
const pathMax = 4096

// atFDCWD is AT_FDCWD as the kernel receives it in a 32-bit int argument.
const atFDCWD = -100

// pathCall says where a call keeps its path or address: the argument with
// the pointer, the one with the directory descriptor (-1: none, relative to
// the working directory), the one with open flags (-1: none); sockaddr
// calls keep the address's length in the argument after the pointer.
type pathCall struct {
	ptr, dirfd, flags int
	sockaddr          bool
	how               bool // flags is a pointer to struct open_how (openat2)
}

var pathCalls = map[string]pathCall{
	"open":       {ptr: 0, dirfd: -1, flags: 1},
	"creat":      {ptr: 0, dirfd: -1, flags: -1},
	"openat":     {ptr: 1, dirfd: 0, flags: 2},
	"openat2":    {ptr: 1, dirfd: 0, flags: 2, how: true},
	"mknod":      {ptr: 0, dirfd: -1, flags: -1},
	"mknodat":    {ptr: 1, dirfd: 0, flags: -1},
	"stat":       {ptr: 0, dirfd: -1, flags: -1},
	"lstat":      {ptr: 0, dirfd: -1, flags: -1},
	"newfstatat": {ptr: 1, dirfd: 0, flags: -1},
	"fstatat":    {ptr: 1, dirfd: 0, flags: -1},
	"statx":      {ptr: 1, dirfd: 0, flags: -1},
	"execve":     {ptr: 0, dirfd: -1, flags: -1},
	"execveat":   {ptr: 1, dirfd: 0, flags: -1},
	"connect":    {ptr: 1, dirfd: -1, flags: -1, sockaddr: true},
	"bind":       {ptr: 1, dirfd: -1, flags: -1, sockaddr: true},
}

// fifoWchan is where an open of a FIFO sleeps until the other end opens.
const fifoWchan = "wait_for_partner"

// readPaths reads, for each thread blocked in a call that takes a path or
// a socket address, that argument from the target's memory; for an open
// that waits for the other end of a FIFO, it names the FIFO and who has it
// open.
func (s *Sampler) readPaths(sample *model.Sample) {
	for i := range sample.Threads {
		th := &sample.Threads[i]
		pc, ok := pathCalls[th.Syscall.Name]
		if !ok || th.Exited || !th.Syscall.InCall() {
			continue
		}
		if s.mem < 0 {
			th.PathErr = s.memErr.Error()
			continue
		}
		maps := s.readMaps()
		args := th.Syscall.Args
		if pc.sockaddr {
			th.Path, th.PathErr = s.readSockaddr(maps, args[pc.ptr], args[pc.ptr+1])
			continue
		}
		p, err := s.readCString(maps, args[pc.ptr])
		if err != nil {
			th.PathErr = err.Error()
			continue
		}
		dirfd := atFDCWD
		if pc.dirfd >= 0 {
			dirfd = int(int32(args[pc.dirfd]))
		}
		th.Path = s.absPath(p, dirfd)
		if th.Wchan != fifoWchan || pc.flags < 0 {
			continue
		}
		flags := args[pc.flags]
		if pc.how {
			b, err := s.readMem(maps, flags, 8)
			if err != nil {
				th.PathErr = err.Error()
				continue
			}
			flags = binary.LittleEndian.Uint64(b)
		}
		th.FIFO = s.fifoWait(th.Path, flags)
	}
}

// readCString reads a NUL-terminated string of at most pathMax bytes at
// addr, reading no further than the readable mapping it starts in.
func (s *Sampler) readCString(maps []mapping, addr uint64) (string, error) {
	if addr == 0 {
		return "", fmt.Errorf("reading a path at 0x0: a null pointer")
	}
	n := uint64(0)
	for i, m := range maps {
		if addr < m.start || addr >= m.end {
			continue
		}
		hi := m.end
		for j := i + 1; j < len(maps) && maps[j].start == hi && hi-addr < pathMax; j++ {
			hi = maps[j].end
		}
		n = min(hi-addr, pathMax)
		break
	}
	if n == 0 {
		return "", fmt.Errorf("reading a path at 0x%x: not in a readable mapping of pid %d", addr, s.pid)
	}
	b, err := s.readMem(maps, addr, n)
	if err != nil {
		return "", err
	}
	end := bytes.IndexByte(b, 0)
	if end < 0 {
		return "", fmt.Errorf("reading a path at 0x%x: no end within %d bytes", addr, n)
	}
	return string(b[:end]), nil
}

// absPath makes a path the target gave relative to dirfd (or its working
// directory) absolute as the target sees it; a directory it cannot read
// leaves the path as given.
func (s *Sampler) absPath(p string, dirfd int) string {
	if p == "" || strings.HasPrefix(p, "/") {
		return p
	}
	var dir string
	var err error
	if dirfd == atFDCWD {
		dir, err = os.Readlink(s.fs.pidPath(s.pid, "cwd"))
	} else {
		dir, err = os.Readlink(s.fs.pidPath(s.pid, "fd", strconv.Itoa(dirfd)))
	}
	if err != nil || !strings.HasPrefix(dir, "/") {
		return p
	}
	return path.Join(dir, p)
}

// Address families and the size of each one's sockaddr.
const (
	sizeofSockaddrUn  = 110
	sizeofSockaddrIn  = 16
	sizeofSockaddrIn6 = 28
)

// readSockaddr reads a connect's or bind's address: at most n bytes, and
// no more than its family's sockaddr holds.
func (s *Sampler) readSockaddr(maps []mapping, addr, n uint64) (string, string) {
	if n < 2 {
		return "", fmt.Sprintf("reading a socket address of %d bytes: too short", n)
	}
	n = min(n, sizeofSockaddrUn)
	b, err := s.readMem(maps, addr, n)
	if err != nil {
		return "", err.Error()
	}
	a, err := formatSockaddr(b)
	if err != nil {
		return "", err.Error()
	}
	return a, ""
}

// formatSockaddr words a sockaddr: "unix:/run/app.sock", "unix:@name" for
// an abstract one, "127.0.0.1:80", "[::1]:80".
func formatSockaddr(b []byte) (string, error) {
	if len(b) < 2 {
		return "", fmt.Errorf("a socket address of %d bytes", len(b))
	}
	switch fam := binary.LittleEndian.Uint16(b); fam {
	case unix.AF_UNIX:
		p := b[2:]
		if len(p) == 0 {
			return "unix:(unnamed)", nil
		}
		if p[0] == 0 {
			// Abstract: every byte counts, NULs included.
			return "unix:@" + strings.ReplaceAll(string(p[1:]), "\x00", "@"), nil
		}
		if i := bytes.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		return "unix:" + string(p), nil
	case unix.AF_INET:
		if len(b) < sizeofSockaddrIn-8 {
			return "", fmt.Errorf("an AF_INET address of %d bytes", len(b))
		}
		ip := netip.AddrFrom4([4]byte(b[4:8]))
		return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[2:4])).String(), nil
	case unix.AF_INET6:
		if len(b) < 24 {
			return "", fmt.Errorf("an AF_INET6 address of %d bytes", len(b))
		}
		ip := netip.AddrFrom16([16]byte(b[8:24]))
		return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[2:4])).String(), nil
	default:
		return fmt.Sprintf("family %d", fam), nil
	}
}

// fifoBudget bounds the search for a FIFO's holders: every descriptor of
// every process may have to be looked at.
const fifoBudget = 2 * time.Second

// fifoWait names the FIFO an open waits on and the processes that have it
// open. The file is looked up through the target's root, so a FIFO in
// another mount namespace is the one the target opens. The search runs
// once per FIFO for the sampler's life: a hang does not change who has it.
func (s *Sampler) fifoWait(p string, flags uint64) *model.FIFOWait {
	fw := &model.FIFOWait{Path: p, Write: flags&unix.O_ACCMODE == unix.O_WRONLY, Holders: []model.FDRef{}}
	if !strings.HasPrefix(p, "/") {
		fw.Err = "a relative path whose directory could not be read"
		return fw
	}
	var st unix.Stat_t
	if err := unix.Stat(s.fs.pidPath(s.pid, "root")+p, &st); err != nil {
		fw.Err = fmt.Sprintf("looking up %s: %v", p, err)
		return fw
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		fw.Err = p + " is no FIFO"
		return fw
	}
	key := [2]uint64{st.Dev, st.Ino}
	if s.fifos == nil {
		s.fifos = map[[2]uint64]fifoHolders{}
	}
	h, ok := s.fifos[key]
	if !ok {
		h.refs, h.complete = findInode(s.fs, st.Dev, st.Ino, fifoBudget)
		s.fifos[key] = h
	}
	fw.Holders = append(fw.Holders, h.refs...)
	fw.Complete = h.complete
	return fw
}

type fifoHolders struct {
	refs     []model.FDRef
	complete bool
}

// findInode finds every descriptor of every process open on the file
// dev:ino, within budget: a descriptor whose link is a path is stat'ed
// through its /proc link, which follows it to the file whatever mount
// namespace the process is in.
func findInode(fs FS, dev, ino uint64, budget time.Duration) (refs []model.FDRef, complete bool) {
	complete = eachFD(fs, budget, func(pid, fd, dir int, name, link []byte) bool {
		if link[0] != '/' {
			return true // a pipe, a socket, an anon inode: no FIFO
		}
		var st unix.Stat_t
		if unix.Fstatat(dir, string(name), &st, 0) != nil || st.Dev != dev || st.Ino != ino {
			return true
		}
		ref := model.FDRef{PID: pid, FD: fd}
		if info, err := ReadFDInfo(fs, pid, fd); err == nil {
			ref.Mode = accessMode(info.Flags)
		}
		refs = append(refs, ref)
		return true
	})
	return refs, complete
}
