package sampler

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SocketInodes returns the N of every "socket:[N]" among pid's
// descriptors: matched against TCPConn.Inode, they tell a process's own
// sockets from the rest of its network namespace's. A descriptor closed
// between the listing and its readlink is skipped.
func SocketInodes(fs FS, pid int) (map[uint64]bool, error) {
	dir := fs.pidPath(pid, "fd")
	f, err := os.Open(dir)
	if err != nil {
		return nil, classifyErr("listing", dir, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, classifyErr("listing", dir, err)
	}
	inodes := make(map[uint64]bool)
	for _, name := range names {
		link, err := os.Readlink(fs.pidPath(pid, "fd", name))
		if err != nil {
			continue
		}
		rest, ok := strings.CutPrefix(link, "socket:[")
		if !ok || !strings.HasSuffix(rest, "]") {
			continue
		}
		if n, err := strconv.ParseUint(rest[:len(rest)-1], 10, 64); err == nil {
			inodes[n] = true
		}
	}
	return inodes, nil
}

// SameNetNS reports whether pid is in the network namespace of the process
// that reads fs (fs's "self"): only then do the addresses in its
// /proc/PID/net/tcp reach it.
func SameNetNS(fs FS, pid int) (bool, error) {
	mine, err := os.Readlink(fs.Path("self", "ns", "net"))
	if err != nil {
		return false, fmt.Errorf("reading hangdoc's network namespace: %w", err)
	}
	path := fs.pidPath(pid, "ns", "net")
	theirs, err := os.Readlink(path)
	if err != nil {
		return false, classifyErr("reading", path, err)
	}
	return mine == theirs, nil
}
