package sampler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hangdoc/hangdoc/model"
)

func u64(n uint64) *uint64 { return &n }

func TestParseAnonInfo(t *testing.T) {
	tests := []struct {
		name, kind, info string
		want             model.AnonFD
	}{
		{"eventfd", "eventfd", "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1038\neventfd-count:                a\neventfd-id: 2\neventfd-semaphore: 0\n",
			model.AnonFD{Kind: "eventfd", Count: u64(10), ID: u64(2)}},
		{"eventfd before ids", "eventfd", "pos:\t0\nflags:\t02\neventfd-count: 0\n", model.AnonFD{Kind: "eventfd", Count: u64(0)}},
		{"signalfd", "signalfd", "pos:\t0\nflags:\t02\nsigmask:\t0000000000004200\n", model.AnonFD{Kind: "signalfd", Signals: []string{"SIGUSR1", "SIGTERM"}}},
		{"timerfd", "timerfd", "clockid: 1\nticks: 0\nsettime flags: 00\nit_value: (3599, 999786000)\nit_interval: (0, 500)\n",
			model.AnonFD{Kind: "timerfd", ValueNS: 3599999786000, IntervalNS: 500, Armed: true}},
		{"timerfd disarmed", "timerfd", "it_value: (0, 0)\nit_interval: (0, 0)\n", model.AnonFD{Kind: "timerfd"}},
		{"timerfd garbage", "timerfd", "it_value: (-1, 5)\nit_interval: 7\n", model.AnonFD{Kind: "timerfd"}},
		{"inotify", "inotify", "pos:\t0\ninotify wd:1 ino:3c4a3 sdev:fe00000 mask:fff ignored_mask:0 fhandle-bytes:8 fhandle-type:1 f_handle:a3c4\ninotify wd:2 ino:zz sdev:1\n",
			model.AnonFD{Kind: "inotify", Watches: []model.InotifyWatch{{Inode: 0x3c4a3, Dev: "fe:00", Mask: 0xfff}}, WatchCount: 1}},
		{"pidfd", "pidfd", "pos:\t0\nflags:\t02\nPid:\t4242\nNSpid:\t4242\n", model.AnonFD{Kind: "pidfd", PID: 4242}},
		{"pidfd of a reaped process", "pidfd", "Pid:\t-1\n", model.AnonFD{Kind: "pidfd", PID: -1}},
		{"io_uring", "io_uring", "pos:\t0\nSqMask:\t0x3\nSqHead:\t0\nSqTail:\t2\nCqMask:\t0x7\nSQEs:\t2\nCQEs:\t0\nSqThread:\t-1\n",
			model.AnonFD{Kind: "io_uring", SQEs: u64(2), CQEs: u64(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, parseAnonInfo(tt.kind, []byte(tt.info))); d != "" {
				t.Errorf("parseAnonInfo(%q) (-want +got):\n%s", tt.info, d)
			}
		})
	}
}

// TestParseAnonInfoBounded: an inotify instance with more watches than
// an AnonFD lists counts them all and lists MaxInotifyWatches.
func TestParseAnonInfoBounded(t *testing.T) {
	var b []byte
	for range model.MaxInotifyWatches + 10 {
		b = append(b, "inotify wd:1 ino:1 sdev:1 mask:1\n"...)
	}
	a := parseAnonInfo("inotify", b)
	if len(a.Watches) != model.MaxInotifyWatches || a.WatchCount != model.MaxInotifyWatches+10 {
		t.Errorf("%d watches listed of %d, want %d of %d", len(a.Watches), a.WatchCount, model.MaxInotifyWatches, model.MaxInotifyWatches+10)
	}
}

func FuzzParseAnonInfo(f *testing.F) {
	f.Add("timerfd", []byte("it_value: (3599, 999786000)\nit_interval: (0, 500)\n"))
	f.Add("inotify", []byte("inotify wd:1 ino:3c4a3 sdev:fe00000 mask:fff\n"))
	f.Add("signalfd", []byte("sigmask:\tffffffffffffffff\n"))
	f.Add("eventfd", []byte("eventfd-count: 5\neventfd-id: 9\n"))
	f.Fuzz(func(t *testing.T, kind string, b []byte) {
		a := parseAnonInfo(kind, b)
		if a.ValueNS < 0 || a.IntervalNS < 0 || len(a.Watches) > model.MaxInotifyWatches || len(a.Signals) > 64 {
			t.Errorf("parseAnonInfo(%q, %q) = %+v", kind, b, a)
		}
	})
}

func TestAnonFD(t *testing.T) {
	read := model.Syscall{Nr: 0, Name: "read", Args: [6]uint64{3}}
	write := model.Syscall{Nr: 1, Name: "write", Args: [6]uint64{3}}
	tests := []struct {
		name string
		th   model.Thread
		fd   int
		kind string
		ok   bool
	}{
		{"read of an eventfd", model.Thread{Syscall: read, FD: "anon_inode:[eventfd]"}, 3, "eventfd", true},
		{"write to an eventfd", model.Thread{Syscall: write, FD: "anon_inode:[eventfd]"}, 0, "", false},
		{"read of a pipe", model.Thread{Syscall: read, FD: "pipe:[7]"}, 0, "", false},
		{"poll of one pidfd", model.Thread{Syscall: model.Syscall{Nr: 7, Name: "poll"}, Polled: []model.PolledFD{{FD: 5, Read: true, Target: "anon_inode:[pidfd]"}}}, 5, "pidfd", true},
		{"io_uring_enter waiting for completions", model.Thread{Syscall: model.Syscall{Nr: 426, Name: "io_uring_enter", Args: [6]uint64{4, 0, 1, 1}}, FD: "anon_inode:[io_uring]"}, 4, "io_uring", true},
		{"io_uring_enter only submitting", model.Thread{Syscall: model.Syscall{Nr: 426, Name: "io_uring_enter", Args: [6]uint64{4, 1, 0, 0}}, FD: "anon_inode:[io_uring]"}, 0, "", false},
		{"poll of two", model.Thread{Syscall: model.Syscall{Nr: 7, Name: "poll"}, Polled: []model.PolledFD{{FD: 5, Read: true, Target: "anon_inode:[pidfd]"}, {FD: 6, Read: true, Target: "pipe:[1]"}}}, 0, "", false},
	}
	for _, tt := range tests {
		fd, kind, ok := anonFD(&tt.th)
		if fd != tt.fd || kind != tt.kind || ok != tt.ok {
			t.Errorf("%s: anonFD = %d, %q, %v; want %d, %q, %v", tt.name, fd, kind, ok, tt.fd, tt.kind, tt.ok)
		}
	}
}
