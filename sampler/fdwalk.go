package sampler

import (
	"bytes"
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// eachFD calls fn for every open descriptor of every process under fs,
// with the descriptor's directory (an fd of /proc/PID/fd, for the *at
// calls), its name and its link target (valid only during the call),
// until fn returns false or budget runs out. complete is false when the
// walk stopped early or /proc could not be listed.
//
// Descriptors are listed with getdents on an open directory fd rather
// than os.ReadDir: a server process has tens of thousands of them, and
// ReadDir's DirEntry per name is most of the walk's cost.
func eachFD(fs FS, budget time.Duration, fn func(pid, fd, dir int, name, link []byte) bool) (complete bool) {
	start := time.Now()
	pids, err := listPIDs(fs)
	if err != nil {
		return false
	}
	buf := make([]byte, 8192)
	link := make([]byte, pathMax)
	n := 0
	for _, pid := range pids {
		if time.Since(start) > budget {
			return false
		}
		dir, err := unix.Open(fs.pidPath(pid, "fd"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone, or not ours to read
		}
		for {
			size, err := unix.Getdents(dir, buf)
			if err != nil || size == 0 {
				break
			}
			for b := buf[:size]; len(b) >= 19; {
				reclen := int(binary.NativeEndian.Uint16(b[16:18]))
				if reclen < 19 || reclen > len(b) {
					break
				}
				nm := b[19:reclen]
				b = b[reclen:]
				if i := bytes.IndexByte(nm, 0); i >= 0 {
					nm = nm[:i]
				}
				fd, ok := atoiBytes(nm)
				if !ok {
					continue
				}
				if n++; n%checkEvery == 0 && time.Since(start) > budget {
					unix.Close(dir)
					return false
				}
				l, err := unix.Readlinkat(dir, string(nm), link)
				if err != nil || l == 0 {
					continue
				}
				if !fn(pid, fd, dir, nm, link[:l]) {
					unix.Close(dir)
					return false
				}
			}
		}
		unix.Close(dir)
	}
	return true
}
