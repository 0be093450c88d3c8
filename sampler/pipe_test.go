package sampler

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hangdoc/hangdoc/model"
	"golang.org/x/sys/unix"
)

func TestReadPipeFill(t *testing.T) {
	t.Parallel()
	pipe := func(t *testing.T) (r, w int) {
		t.Helper()
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
		return p[0], p[1]
	}
	write := func(t *testing.T, fd, n int) {
		t.Helper()
		if got, err := unix.Write(fd, make([]byte, n)); got != n || err != nil {
			t.Fatalf("write(%d bytes) = %d, %v", n, got, err)
		}
	}
	self := os.Getpid()
	// The default: 16 pages.
	def := 16 * os.Getpagesize()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (pid, fd int)
		want  model.PipeFill
		errIs error
	}{{
		name:  "empty",
		setup: func(t *testing.T) (int, int) { r, _ := pipe(t); return self, r },
		want:  model.PipeFill{Queued: 0, Capacity: def},
	}, {
		name: "ten bytes, asked through the write end",
		setup: func(t *testing.T) (int, int) {
			_, w := pipe(t)
			write(t, w, 10)
			return self, w
		},
		want: model.PipeFill{Queued: 10, Capacity: def},
	}, {
		name: "resized to a megabyte",
		setup: func(t *testing.T) (int, int) {
			r, w := pipe(t)
			if _, err := unix.FcntlInt(uintptr(w), unix.F_SETPIPE_SZ, 1<<20); err != nil {
				t.Skipf("F_SETPIPE_SZ: %v", err)
			}
			write(t, w, 100000)
			return self, r
		},
		want: model.PipeFill{Queued: 100000, Capacity: 1 << 20},
	}, {
		name: "a regular file is not opened",
		setup: func(t *testing.T) (int, int) {
			f, err := os.Create(filepath.Join(t.TempDir(), "f"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return self, int(f.Fd())
		},
		errIs: ErrNotPipe,
	}, {
		name: "a named FIFO is not opened",
		setup: func(t *testing.T) (int, int) {
			path := filepath.Join(t.TempDir(), "fifo")
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(fd) })
			return self, fd
		},
		errIs: ErrNotPipe,
	}, {
		name: "a socket is not opened",
		setup: func(t *testing.T) (int, int) {
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			return self, sockFD(t, ln.(*net.TCPListener))
		},
		errIs: ErrNotPipe,
	}, {
		name: "a closed descriptor",
		setup: func(t *testing.T) (int, int) {
			// Descriptors are allocated lowest first: nothing has this one.
			return self, 999999
		},
		errIs: fs.ErrNotExist,
	}, {
		name:  "no such process",
		setup: func(t *testing.T) (int, int) { return 1 << 30, 0 },
		errIs: ErrNoProcess,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pid, fd := tc.setup(t)
			got, err := ReadPipeFill(NewFS(""), pid, fd)
			if tc.errIs != nil {
				if !errors.Is(err, tc.errIs) {
					t.Fatalf("ReadPipeFill(%d, %d) = %+v, %v; want an error wrapping %v", pid, fd, got, err, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadPipeFill(%d, %d): %v", pid, fd, err)
			}
			if got != tc.want {
				t.Errorf("ReadPipeFill(%d, %d) = %+v, want %+v", pid, fd, got, tc.want)
			}
		})
	}
}

// TestReadPipeFillFixture: a captured tree has the link's text, not a pipe.
func TestReadPipeFillFixture(t *testing.T) {
	r := fixtureReadyLine(t)
	got, err := ReadPipeFill(NewFS(fixtureRoot), fixturePID, r.pipeFD)
	if err == nil || errors.Is(err, ErrNoProcess) {
		t.Errorf("ReadPipeFill(%s, %d, %d) = %+v, %v; want an error, not ErrNoProcess", fixtureRoot, fixturePID, r.pipeFD, got, err)
	}
}

// sockFD is the descriptor under a listener or connection; it stays open
// as long as c does.
func sockFD(t *testing.T, c syscall.Conn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	if err := rc.Control(func(s uintptr) { fd = int(s) }); err != nil {
		t.Fatal(err)
	}
	return fd
}
