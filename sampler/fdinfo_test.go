package sampler

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/model"
	"golang.org/x/sys/unix"
)

// fdinfoRoot holds fdinfo files captured by testdata/net/capture.py.
const fdinfoRoot = "testdata/fdinfo"

func readTestdata(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func uint64Ptr(n uint64) *uint64 { return &n }

func TestParseFDInfo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string // under fdinfoRoot, or "" for in
		in      string
		want    FDInfo
		wantErr string
	}{{
		name: "pipe read end, close-on-exec",
		file: "pipe-read",
		want: FDInfo{Flags: 02000000, MntID: 16, Ino: 8327976},
	}, {
		name: "pipe write end",
		file: "pipe-write",
		want: FDInfo{Flags: 02000001, MntID: 16, Ino: 8327976},
	}, {
		name: "regular file at an offset, O_LARGEFILE",
		file: "file",
		want: FDInfo{Pos: 7, Flags: 02100000, MntID: 27, Ino: 5309093},
	}, {
		name: "socket",
		file: "socket",
		want: FDInfo{Flags: 02000002, MntID: 10, Ino: 8327960},
	}, {
		// The count is printed in hex: 26 is 1a.
		name: "eventfd, whose count is hex",
		file: "eventfd",
		want: FDInfo{Flags: 04002, MntID: 17, Ino: 1038, EventfdCount: uint64Ptr(26)},
	}, {
		// Events and data are hex too; data's high half is what Python left
		// on its stack, the low half the descriptor.
		name: "epoll",
		file: "epoll",
		want: FDInfo{Flags: 02000002, MntID: 17, Ino: 1038, EpollTargets: []EpollTarget{
			{FD: 5, Events: 0x201d, Data: 0x7f8900000005},
			{FD: 20, Events: 0x19, Data: 0x7f8900000014},
			{FD: 23, Events: 0x80000019, Data: 0x7f8900000017},
		}},
	}, {
		name: "pidfd",
		file: "pidfd",
		want: FDInfo{Flags: 02000002, MntID: 4, Ino: 1340820, PidfdPID: 10358},
	}, {
		name: "pidfd of a reaped process",
		file: "pidfd-exited",
		want: FDInfo{Flags: 02000002, MntID: 4, Ino: 1340861, PidfdPID: -1},
	}, {
		name: "inotify lines are skipped",
		file: "inotify",
		want: FDInfo{Flags: 04000, MntID: 17, Ino: 1038},
	}, {
		name: "timerfd lines are skipped",
		file: "timerfd",
		want: FDInfo{Flags: 02, MntID: 17, Ino: 1038},
	}, {
		name: "the brief's epoll example",
		in:   "pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t1234\ntfd:        5 events:       19 data:                5  pos:0 ino:1a3 sdev:f\n",
		want: FDInfo{Flags: 2, MntID: 15, Ino: 1234, EpollTargets: []EpollTarget{{FD: 5, Events: 0x19, Data: 5}}},
	}, {
		name: "a lock line and no final newline",
		in:   "pos:\t12\nflags:\t0100002\nmnt_id:\t19\nino:\t77\nlock:\t1: FLOCK  ADVISORY  WRITE 1234 08:01:77 0 EOF",
		want: FDInfo{Pos: 12, Flags: 0100002, MntID: 19, Ino: 77, Locks: []model.FileLockEntry{{Class: "FLOCK", Type: "WRITE", PID: 1234, Range: "0 EOF"}}},
	}, {
		name: "an OFD lock held through it, and a garbled lock line",
		in:   "pos:\t0\nflags:\t02100002\nmnt_id:\t27\nino:\t9978425\nlock:\t1: OFDLCK ADVISORY  WRITE -1 fe:00:9978425 0 EOF\nlock:\tgarbage\n",
		want: FDInfo{Flags: 02100002, MntID: 27, Ino: 9978425, Locks: []model.FileLockEntry{{Class: "OFDLCK", Type: "WRITE", PID: -1, Range: "0 EOF"}}},
	}, {
		name: "an old kernel: no ino line",
		in:   "pos:\t0\nflags:\t0100002\nmnt_id:\t19\n",
		want: FDInfo{Flags: 0100002, MntID: 19},
	}, {
		name: "an eventfd count of zero is not a missing count",
		in:   "pos:\t0\nflags:\t02\neventfd-count:                0\n",
		want: FDInfo{Flags: 2, EventfdCount: uint64Ptr(0)},
	}, {
		name:    "flags are octal",
		in:      "pos:\t0\nflags:\t0800\n",
		wantErr: `parsing fdinfo: flags "0800"`,
	}, {
		name:    "no flags",
		in:      "pos:\t0\nmnt_id:\t15\n",
		wantErr: "no pos or flags",
	}, {
		name:    "empty",
		in:      "",
		wantErr: "no pos or flags",
	}, {
		name:    "a negative inode",
		in:      "pos:\t0\nflags:\t02\nino:\t-1\n",
		wantErr: `ino "-1"`,
	}, {
		name:    "a tfd line without data",
		in:      "pos:\t0\nflags:\t02\ntfd:        5 events:       19\n",
		wantErr: "tfd",
	}, {
		name:    "a tfd line with a negative descriptor",
		in:      "pos:\t0\nflags:\t02\ntfd:       -5 events:       19 data:                5  pos:0 ino:1a3 sdev:f\n",
		wantErr: "tfd",
	}, {
		name:    "events wider than 32 bits",
		in:      "pos:\t0\nflags:\t02\ntfd:        5 events: 100000000 data:                5  pos:0 ino:1a3 sdev:f\n",
		wantErr: "tfd",
	}, {
		name:    "a decimal-only Pid",
		in:      "pos:\t0\nflags:\t02\nPid:\t0x10\n",
		wantErr: "Pid",
	}, {
		name:    "a count that is not hex",
		in:      "pos:\t0\nflags:\t02\neventfd-count:   xyz\n",
		wantErr: "eventfd-count",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			if tc.file != "" {
				in = readTestdata(t, filepath.Join(fdinfoRoot, tc.file))
			}
			got, err := parseFDInfo(in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseFDInfo(%q) = %+v, %v; want error containing %q", in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFDInfo(%q): %v", in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseFDInfo(%q) (-want +got):\n%s", in, diff)
			}
		})
	}
}

// TestReadFDInfoLive reads the test process's own descriptors.
func TestReadFDInfoLive(t *testing.T) {
	t.Parallel()
	closeLater := func(fd int) {
		t.Cleanup(func() { unix.Close(fd) })
	}
	efd, err := unix.Eventfd(26, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(efd)
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skipf("pidfd_open: %v", err)
	}
	closeLater(pidfd)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	closeLater(p[0])
	closeLater(p[1])
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(ep)
	// Fd and Pad are the low and high halves of the 64-bit epoll_data.
	for _, e := range []struct {
		fd int
		ev unix.EpollEvent
	}{
		{p[0], unix.EpollEvent{Events: unix.EPOLLIN, Fd: 0x1234, Pad: 0x7f}},
		{efd, unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(efd)}},
	} {
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, e.fd, &e.ev); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(p[0], &st); err != nil {
		t.Fatal(err)
	}
	// Descriptors are allocated lowest first: no other test gets this one.
	const closed = 999999

	self := os.Getpid()
	for _, tc := range []struct {
		name  string
		pid   int
		fd    int
		check func(t *testing.T, fi FDInfo)
		errIs error
	}{{
		name: "eventfd",
		pid:  self, fd: efd,
		check: func(t *testing.T, fi FDInfo) {
			if fi.EventfdCount == nil || *fi.EventfdCount != 26 {
				t.Errorf("EventfdCount = %v, want 26", fi.EventfdCount)
			}
			if fi.Flags&unix.O_NONBLOCK == 0 || fi.Flags&unix.O_CLOEXEC == 0 {
				t.Errorf("Flags = %#o, want O_NONBLOCK and O_CLOEXEC", fi.Flags)
			}
		},
	}, {
		name: "pidfd",
		pid:  self, fd: pidfd,
		check: func(t *testing.T, fi FDInfo) {
			if fi.PidfdPID != self {
				t.Errorf("PidfdPID = %d, want %d", fi.PidfdPID, self)
			}
		},
	}, {
		name: "pipe write end",
		pid:  self, fd: p[1],
		check: func(t *testing.T, fi FDInfo) {
			if got := accessMode(fi.Flags); got != "w" || fi.Ino != st.Ino {
				t.Errorf("mode %q, ino %d; want w, %d", got, fi.Ino, st.Ino)
			}
		},
	}, {
		name: "epoll",
		pid:  self, fd: ep,
		check: func(t *testing.T, fi FDInfo) {
			want := map[int]EpollTarget{
				p[0]: {FD: p[0], Events: unix.EPOLLIN | unix.EPOLLERR | unix.EPOLLHUP, Data: 0x7f_0000_1234},
				efd:  {FD: efd, Events: unix.EPOLLIN | unix.EPOLLERR | unix.EPOLLHUP | unix.EPOLLET, Data: uint64(efd)},
			}
			got := make(map[int]EpollTarget)
			for _, e := range fi.EpollTargets {
				got[e.FD] = e
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("EpollTargets by descriptor (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "a closed descriptor",
		pid:  self, fd: closed,
		errIs: fs.ErrNotExist,
	}, {
		name: "no such process",
		pid:  1 << 30, fd: 0,
		errIs: ErrNoProcess,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fi, err := ReadFDInfo(NewFS(""), tc.pid, tc.fd)
			if tc.errIs != nil {
				if !errors.Is(err, tc.errIs) {
					t.Fatalf("ReadFDInfo(%d, %d) = %+v, %v; want an error wrapping %v", tc.pid, tc.fd, fi, err, tc.errIs)
				}
				if tc.errIs != ErrNoProcess && errors.Is(err, ErrNoProcess) {
					t.Errorf("ReadFDInfo(%d, %d): %v; the process is alive", tc.pid, tc.fd, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadFDInfo(%d, %d): %v", tc.pid, tc.fd, err)
			}
			tc.check(t, fi)
		})
	}
}

// addDirSeeds adds every regular file in dir to f's seed corpus.
func addDirSeeds(f *testing.F, dir string) {
	f.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".py") {
			continue
		}
		f.Add(readTestdata(f, filepath.Join(dir, e.Name())))
		n++
	}
	if n == 0 {
		f.Fatalf("no seeds in %s", dir)
	}
}

// fdinfoLines splits fdinfo the way the kernel writes it, into key and
// value at each line's first colon, for the fuzz target's own reading.
func fdinfoLines(b []byte) map[string][]string {
	m := make(map[string][]string)
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = append(m[k], strings.TrimSpace(v))
		}
	}
	return m
}

func FuzzParseFDInfo(f *testing.F) {
	addDirSeeds(f, fdinfoRoot)
	f.Add([]byte("pos:\t0\nflags:\t02\ntfd:        5 events:       19 data:                5  pos:0 ino:1a3 sdev:f\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fi, err := parseFDInfo(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "parsing fdinfo: ") {
				t.Errorf("parseFDInfo(%q): error %q does not say what it was parsing", b, err)
			}
			return
		}
		lines := fdinfoLines(b)
		if len(lines["pos"]) == 0 || len(lines["flags"]) == 0 {
			t.Fatalf("parseFDInfo(%q) succeeded without pos and flags lines", b)
		}
		last := lines["flags"][len(lines["flags"])-1]
		if flags, err := strconv.ParseUint(last, 8, 64); err != nil || flags != fi.Flags {
			t.Errorf("parseFDInfo(%q): Flags %#o, but the flags line says %q", b, fi.Flags, last)
		}
		if len(fi.EpollTargets) != len(lines["tfd"]) {
			t.Errorf("parseFDInfo(%q): %d epoll targets from %d tfd lines", b, len(fi.EpollTargets), len(lines["tfd"]))
		}
		for i, e := range fi.EpollTargets {
			if e.FD < 0 {
				t.Errorf("parseFDInfo(%q): epoll target %d has descriptor %d", b, i, e.FD)
			}
			// The kernel's own line, reprinted, reads the same.
			want := strings.Fields(lines["tfd"][i])
			got := strings.Fields(strconv.Itoa(e.FD) + " events: " + strconv.FormatUint(uint64(e.Events), 16) + " data: " + strconv.FormatUint(e.Data, 16))
			if !sameNumbers(got, want[:5]) {
				t.Errorf("parseFDInfo(%q): epoll target %d is %+v, from %q", b, i, e, lines["tfd"][i])
			}
		}
		if (fi.EventfdCount != nil) != (len(lines["eventfd-count"]) > 0) {
			t.Errorf("parseFDInfo(%q): EventfdCount %v, from %d eventfd-count lines", b, fi.EventfdCount, len(lines["eventfd-count"]))
		}
		if fi.PidfdPID != 0 && len(lines["Pid"]) == 0 {
			t.Errorf("parseFDInfo(%q): PidfdPID %d without a Pid line", b, fi.PidfdPID)
		}
	})
}

// sameNumbers compares fields that are numbers in possibly different
// spellings (leading zeros, case), and the rest exactly.
func sameNumbers(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x := strings.TrimLeft(strings.ToLower(a[i]), "0")
		y := strings.TrimLeft(strings.ToLower(b[i]), "0")
		if x != y {
			return false
		}
	}
	return true
}
