package sampler

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// Unix sockets followed to their other end: a connected socket's peer from
// the kernel's sock_diag netlink interface (UNIX_DIAG_PEER), and the
// listener a connect waits on from the address it was given, found in
// /proc/PID/net/unix by path and confirmed by the bound file's inode
// (UNIX_DIAG_VFS). sock_diag answers for hangdoc's own network namespace
// only: for a target in another one, only /proc/PID/net/unix is read.

// sock_diag for AF_UNIX (linux/unix_diag.h): what a request asks to be
// shown, and the attributes of a reply.
const (
	udiagShowName  = 0x01
	udiagShowVFS   = 0x02
	udiagShowPeer  = 0x04
	udiagShowRQLen = 0x10

	unixDiagName  = 0
	unixDiagVFS   = 1
	unixDiagPeer  = 2
	unixDiagRQLen = 4

	sizeofUnixDiagReq = 24
	sizeofUnixDiagMsg = 16
	// diagReplyMax bounds the one reply an exact request gets.
	diagReplyMax = 8192
)

// unixDiag is one socket as sock_diag describes it.
type unixDiag struct {
	Ino            uint32
	Type, State    uint8
	Name           string
	HasName        bool
	VFSIno, VFSDev uint32
	HasVFS         bool
	Peer           uint32
	RQueue, WQueue uint32
	HasRQLen       bool
}

// tcpListen is TCP_LISTEN, the state sock_diag gives a listening socket.
const tcpListen = 10

// parseUnixDiag parses the payload of one SOCK_DIAG_BY_FAMILY reply: a
// unix_diag_msg and its attributes.
func parseUnixDiag(b []byte) (unixDiag, error) {
	if len(b) < sizeofUnixDiagMsg {
		return unixDiag{}, fmt.Errorf("a unix_diag_msg of %d bytes", len(b))
	}
	d := unixDiag{Type: b[1], State: b[2], Ino: binary.NativeEndian.Uint32(b[4:])}
	for a := b[sizeofUnixDiagMsg:]; len(a) >= 4; {
		alen := int(binary.NativeEndian.Uint16(a))
		typ := binary.NativeEndian.Uint16(a[2:])
		if alen < 4 || alen > len(a) {
			return unixDiag{}, fmt.Errorf("an attribute of %d bytes in %d", alen, len(a))
		}
		v := a[4:alen]
		switch typ {
		case unixDiagName:
			d.Name, d.HasName = unixName(v), true
		case unixDiagVFS:
			if len(v) >= 8 {
				d.VFSIno, d.VFSDev, d.HasVFS = binary.NativeEndian.Uint32(v), binary.NativeEndian.Uint32(v[4:]), true
			}
		case unixDiagPeer:
			if len(v) >= 4 {
				d.Peer = binary.NativeEndian.Uint32(v)
			}
		case unixDiagRQLen:
			if len(v) >= 8 {
				d.RQueue, d.WQueue, d.HasRQLen = binary.NativeEndian.Uint32(v), binary.NativeEndian.Uint32(v[4:]), true
			}
		}
		a = a[min(len(a), (alen+3)&^3):]
	}
	return d, nil
}

// unixName words a bound name as /proc/net/unix does: a path, or "@" and
// the bytes of an abstract one.
func unixName(b []byte) string {
	if len(b) > 0 && b[0] == 0 {
		return "@" + string(b[1:])
	}
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// errNoDiag says sock_diag does not know the socket (it is closed, or in
// another network namespace).
var errNoDiag = errors.New("no such socket")

// diagExact asks sock_diag about one Unix socket of hangdoc's network
// namespace, by inode.
func diagExact(ino uint64, show uint32) (unixDiag, error) {
	if ino > 1<<32-1 {
		return unixDiag{}, fmt.Errorf("socket inode %d: more than 32 bits", ino)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return unixDiag{}, fmt.Errorf("opening a sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 2}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	req := make([]byte, unix.SizeofNlMsghdr+sizeofUnixDiagReq)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // sequence
	r := req[unix.SizeofNlMsghdr:]
	r[0] = unix.AF_UNIX
	ne.PutUint32(r[4:], 0xffffffff) // every state
	ne.PutUint32(r[8:], uint32(ino))
	ne.PutUint32(r[12:], show)
	ne.PutUint32(r[16:], 0xffffffff) // no cookie to check
	ne.PutUint32(r[20:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return unixDiag{}, fmt.Errorf("asking sock_diag about socket:[%d]: %w", ino, err)
	}
	buf := make([]byte, diagReplyMax)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return unixDiag{}, fmt.Errorf("reading sock_diag's answer about socket:[%d]: %w", ino, err)
		}
		return parseDiagReply(buf[:n], ino)
	}
}

// parseDiagReply parses sock_diag's answer to an exact request: one
// message, or an error.
func parseDiagReply(b []byte, ino uint64) (unixDiag, error) {
	if len(b) < unix.SizeofNlMsghdr {
		return unixDiag{}, fmt.Errorf("sock_diag's answer about socket:[%d]: %d bytes", ino, len(b))
	}
	ne := binary.NativeEndian
	mlen := int(ne.Uint32(b))
	if mlen < unix.SizeofNlMsghdr || mlen > len(b) {
		return unixDiag{}, fmt.Errorf("sock_diag's answer about socket:[%d]: a message of %d bytes in %d", ino, mlen, len(b))
	}
	payload := b[unix.SizeofNlMsghdr:mlen]
	switch ne.Uint16(b[4:]) {
	case unix.NLMSG_ERROR:
		if len(payload) >= 4 {
			if errno := -int32(ne.Uint32(payload)); errno > 0 {
				if syscall.Errno(errno) == unix.ENOENT {
					return unixDiag{}, fmt.Errorf("socket:[%d]: %w", ino, errNoDiag)
				}
				return unixDiag{}, fmt.Errorf("asking sock_diag about socket:[%d]: %w", ino, syscall.Errno(errno))
			}
		}
		return unixDiag{}, fmt.Errorf("sock_diag's answer about socket:[%d]: no socket", ino)
	case unix.SOCK_DIAG_BY_FAMILY:
		d, err := parseUnixDiag(payload)
		if err != nil {
			return unixDiag{}, fmt.Errorf("sock_diag's answer about socket:[%d]: %w", ino, err)
		}
		return d, nil
	}
	return unixDiag{}, fmt.Errorf("sock_diag's answer about socket:[%d]: message type %d", ino, ne.Uint16(b[4:]))
}

// netUnix is one line of /proc/PID/net/unix.
type netUnix struct {
	Inode     uint64
	Type      uint16
	Listening bool
	Path      string
}

// soAcceptCon is __SO_ACCEPTCON, the flag /proc/net/unix shows on a
// listening socket.
const soAcceptCon = 1 << 16

// parseNetUnix parses one line of /proc/net/unix:
//
//	Num       RefCount Protocol Flags    Type St Inode Path
//	0000000000000000: 00000002 00000000 00010000 0001 01 31234 /run/app.sock
func parseNetUnix(line string) (netUnix, bool) {
	f := strings.Fields(line)
	if len(f) < 7 || !strings.HasSuffix(f[0], ":") {
		return netUnix{}, false
	}
	flags, err1 := strconv.ParseUint(f[3], 16, 32)
	typ, err2 := strconv.ParseUint(f[4], 16, 16)
	ino, err3 := strconv.ParseUint(f[6], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return netUnix{}, false
	}
	u := netUnix{Inode: ino, Type: uint16(typ), Listening: flags&soAcceptCon != 0}
	if len(f) > 7 {
		u.Path = strings.Join(f[7:], " ")
	}
	return u, true
}

// maxNetUnixLines bounds how much of /proc/PID/net/unix is read: a host
// may have many thousands of Unix sockets.
const maxNetUnixLines = 1 << 20

// readNetUnix reads the lines of /proc/PID/net/unix for the inode ino and
// the listeners bound to path ("" for none).
func readNetUnix(fs FS, pid int, ino uint64, path string) (self *netUnix, listeners []netUnix, err error) {
	p := fs.pidPath(pid, "net", "unix")
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, classifyErr("reading", p, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	for n := 0; sc.Scan() && n < maxNetUnixLines; n++ {
		u, ok := parseNetUnix(sc.Text())
		if !ok {
			continue
		}
		if u.Inode == ino {
			c := u
			self = &c
		}
		if path != "" && u.Listening && u.Path == path {
			listeners = append(listeners, u)
		}
	}
	return self, listeners, nil
}

var unixTypes = map[uint16]string{unix.SOCK_STREAM: "stream", unix.SOCK_DGRAM: "dgram", unix.SOCK_SEQPACKET: "seqpacket"}

// sameNetns reports whether pid is in hangdoc's own network namespace,
// where sock_diag answers.
func sameNetns(fs FS, pid int) bool {
	mine, err1 := os.Readlink(fs.Path("self", "ns", "net"))
	its, err2 := os.Readlink(fs.pidPath(pid, "ns", "net"))
	return err1 == nil && err2 == nil && mine == its
}

// ReadUnix describes the Unix socket socket:[ino] that pid holds, and its
// other end: the peer of a connected socket, or, when connecting names the
// address a connect() on it waits for ("unix:/run/app.sock"), the listener
// bound there. ok is false when ino is no Unix socket of pid's network
// namespace.
func ReadUnix(fs FS, pid int, ino uint64, connecting string) (self model.UnixSock, peer *model.UnixSock, ok bool) {
	path := ""
	if a, found := strings.CutPrefix(connecting, "unix:"); found && a != "" && a != "(unnamed)" {
		path = a
	}
	line, listeners, err := readNetUnix(fs, pid, ino, path)
	if err != nil || line == nil {
		return model.UnixSock{}, nil, false
	}
	self = model.UnixSock{Inode: ino, Type: unixTypes[line.Type], Path: line.Path, Listening: line.Listening, Connecting: connecting}
	diag := sameNetns(fs, pid)
	if diag {
		if d, err := diagExact(ino, udiagShowPeer); err == nil && d.Peer != 0 {
			p := model.UnixSock{Inode: uint64(d.Peer), Type: self.Type}
			if pd, err := diagExact(uint64(d.Peer), udiagShowName); err == nil && pd.HasName {
				p.Path = pd.Name
			}
			return self, &p, true
		}
	}
	if path == "" || len(listeners) == 0 {
		return self, nil, true
	}
	// Several listeners may show the same path: one bound after another
	// unlinked the file. The one a connect reaches is bound to the file
	// the path names now.
	var want unix.Stat_t
	haveFile := !strings.HasPrefix(path, "@") && unix.Stat(fs.pidPath(pid, "root")+path, &want) == nil
	for _, l := range listeners {
		lp := &model.UnixSock{Inode: l.Inode, Type: unixTypes[l.Type], Path: l.Path, Listening: true}
		if !diag {
			if len(listeners) == 1 {
				return self, lp, true
			}
			continue
		}
		d, err := diagExact(l.Inode, udiagShowVFS|udiagShowRQLen)
		if err != nil {
			continue
		}
		if haveFile && (!d.HasVFS || uint64(d.VFSIno) != want.Ino) {
			continue
		}
		if d.HasRQLen {
			q, b := int(d.RQueue), int(d.WQueue)
			lp.Queued, lp.Backlog = &q, &b
		}
		return self, lp, true
	}
	return self, nil, true
}

// UnixDiagWorks reports whether sock_diag answers about Unix sockets here
// (a kernel without CONFIG_UNIX_DIAG does not): it asks about a socket
// pair of its own.
func UnixDiagWorks() bool {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	var st unix.Stat_t
	if unix.Fstat(fds[0], &st) != nil {
		return false
	}
	d, err := diagExact(st.Ino, udiagShowPeer)
	return err == nil && d.Peer != 0
}
