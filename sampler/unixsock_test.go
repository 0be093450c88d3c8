package sampler

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseNetUnix(t *testing.T) {
	tests := []struct {
		line string
		want netUnix
		ok   bool
	}{
		{"0000000000000000: 00000002 00000000 00010000 0001 01 31234 /run/app.sock", netUnix{Inode: 31234, Type: 1, Listening: true, Path: "/run/app.sock"}, true},
		{"0000000000000000: 00000003 00000000 00000000 0001 03 5120", netUnix{Inode: 5120, Type: 1}, true},
		{"0000000000000000: 00000002 00000000 00000000 0002 01 77 @abstract name", netUnix{Inode: 77, Type: 2, Path: "@abstract name"}, true},
		{"Num       RefCount Protocol Flags    Type St Inode Path", netUnix{}, false},
		{"0000: 1 2 zz 0001 01 5", netUnix{}, false},
	}
	for _, tt := range tests {
		got, ok := parseNetUnix(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseNetUnix(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// diagMsg builds a unix_diag_msg for inode ino with the given attributes.
func diagMsg(ino uint32, attrs ...[]byte) []byte {
	b := make([]byte, sizeofUnixDiagMsg)
	b[0], b[1], b[2] = unix.AF_UNIX, unix.SOCK_STREAM, tcpListen
	binary.NativeEndian.PutUint32(b[4:], ino)
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

func attr(typ uint16, v ...uint32) []byte {
	b := make([]byte, 4+4*len(v))
	binary.NativeEndian.PutUint16(b, uint16(len(b)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	for i, x := range v {
		binary.NativeEndian.PutUint32(b[4+4*i:], x)
	}
	return b
}

func TestParseUnixDiag(t *testing.T) {
	name := []byte{6, 0, unixDiagName, 0, '/', 'a', 0, 0} // 4+2 bytes, padded to 8
	b := diagMsg(42, name, attr(unixDiagVFS, 7, 8), attr(unixDiagPeer, 43), attr(unixDiagRQLen, 1, 0))
	d, err := parseUnixDiag(b)
	if err != nil {
		t.Fatal(err)
	}
	want := unixDiag{Ino: 42, Type: unix.SOCK_STREAM, State: tcpListen, Name: "/a", HasName: true, VFSIno: 7, VFSDev: 8, HasVFS: true,
		Peer: 43, RQueue: 1, WQueue: 0, HasRQLen: true}
	if d != want {
		t.Errorf("parseUnixDiag = %+v, want %+v", d, want)
	}
	for _, bad := range [][]byte{b[:10], append(diagMsg(1), 200, 0, 1, 0)} {
		if d, err := parseUnixDiag(bad); err == nil {
			t.Errorf("parseUnixDiag(%v) = %+v, want an error", bad, d)
		}
	}
}

func FuzzParseUnixDiag(f *testing.F) {
	f.Add(diagMsg(42, attr(unixDiagPeer, 43), attr(unixDiagRQLen, 1, 0)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		parseUnixDiag(b)
		parseDiagReply(b, 1)
	})
}

// TestReadUnix reads this process's own sockets: a socketpair's peer, and
// a listener found from the address a connect would be given.
func TestReadUnix(t *testing.T) {
	if !UnixDiagWorks() {
		t.Skip("sock_diag does not answer about Unix sockets on this kernel")
	}
	fs := NewFS("")
	ino := func(fd int) uint64 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	self, peer, ok := ReadUnix(fs, os.Getpid(), ino(fds[0]), "")
	if !ok || self.Type != "stream" || peer == nil || peer.Inode != ino(fds[1]) {
		t.Errorf("ReadUnix(socketpair) = %+v, %+v, %v; want the peer %d", self, peer, ok, ino(fds[1]))
	}

	path := filepath.Join(t.TempDir(), "l.sock")
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Skipf("binding %s: %v", path, err)
	}
	if err := unix.Listen(l, 3); err != nil {
		t.Fatal(err)
	}
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(c)
	self, peer, ok = ReadUnix(fs, os.Getpid(), ino(c), "unix:"+path)
	if !ok || peer == nil || !peer.Listening || peer.Inode != ino(l) || peer.Path != path ||
		peer.Queued == nil || *peer.Queued != 0 || peer.Backlog == nil || *peer.Backlog != 3 {
		t.Errorf("ReadUnix(client) = %+v, %+v, %v; want the listener %d at %s, 0 queued of 3", self, peer, ok, ino(l), path)
	}
}

func FuzzParseNetUnix(f *testing.F) {
	f.Add("0000000000000000: 00000002 00000000 00010000 0001 01 31234 /run/app.sock")
	f.Fuzz(func(t *testing.T, line string) {
		parseNetUnix(line)
	})
}
