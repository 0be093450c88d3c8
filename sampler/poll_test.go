package sampler

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// TestReadPolled: a thread of this very process blocked in poll() on two
// pipes, and one in select() on one, are read back from its memory.
func TestReadPolled(t *testing.T) {
	var p1, p2 [2]int
	for _, p := range []*[2]int{&p1, &p2} {
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, fd := range []int{p1[0], p1[1], p2[0], p2[1]} {
			unix.Close(fd)
		}
	}()
	// p2 is full: a poll for room to write on it waits.
	unix.SetNonblock(p2[1], true)
	for buf := make([]byte, 4096); ; {
		if _, err := unix.Write(p2[1], buf); err != nil {
			break
		}
	}
	tids := make(chan int, 2)
	go func() {
		runtime.LockOSThread()
		tids <- unix.Gettid()
		fds := []unix.PollFd{{Fd: int32(p1[0]), Events: unix.POLLIN}, {Fd: -1}, {Fd: int32(p2[1]), Events: unix.POLLOUT | unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				return
			}
		}
	}()
	go func() {
		runtime.LockOSThread()
		tids <- unix.Gettid()
		var r unix.FdSet
		r.Set(p1[0])
		for {
			if _, err := unix.Select(p1[0]+1, &r, nil, nil, nil); err != unix.EINTR {
				return
			}
		}
	}()
	want := map[int]bool{<-tids: true, <-tids: true}
	s, err := New(NewFS(""), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pipe := func(fd int) string { l, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); return l }
	// The threads get to their calls in their own time: read until both
	// are seen in them (the test is bounded by go test's timeout, not by
	// a clock of its own).
	for {
		sm, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]model.PolledFD{}
		for _, th := range sm.Threads {
			if want[th.TID] && len(th.Polled) > 0 {
				got[th.Syscall.Name] = th.Polled
			} else if want[th.TID] && th.PollErr != "" {
				t.Fatalf("tid %d in %s: %s", th.TID, th.Syscall.Name, th.PollErr)
			}
		}
		var poll, sel []model.PolledFD
		for name, fds := range got {
			if strings.Contains(name, "poll") {
				poll = fds
			} else {
				sel = fds
			}
		}
		if poll == nil || sel == nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		wantPoll := []model.PolledFD{{FD: p1[0], Read: true, Target: pipe(p1[0])}, {FD: p2[1], Read: true, Write: true, Target: pipe(p2[1])}}
		if fmt.Sprint(poll) != fmt.Sprint(wantPoll) {
			t.Errorf("poll: %+v, want %+v", poll, wantPoll)
		}
		if wantSel := []model.PolledFD{{FD: p1[0], Read: true, Target: pipe(p1[0])}}; fmt.Sprint(sel) != fmt.Sprint(wantSel) {
			t.Errorf("select: %+v, want %+v", sel, wantSel)
		}
		break
	}
	unix.Write(p1[1], []byte("x")) // let both go
	unix.Read(p2[0], make([]byte, 1<<16))
}

func TestPolledBounds(t *testing.T) {
	maps := []mapping{{0x1000, 0x3000}, {0x3000, 0x4000}, {0x8000, 0x9000}}
	for _, tt := range []struct {
		addr, n uint64
		want    bool
	}{
		{0x1000, 8, true}, {0x2ff8, 16, true}, {0x3ff8, 16, false}, {0x5000, 8, false}, {0x8ff8, 8, true},
		{0x8ff8, 9, false}, {0xfffffffffffffff8, 16, false}, {0x1000, 0, false},
	} {
		if got := readable(maps, tt.addr, tt.n); got != tt.want {
			t.Errorf("readable(0x%x, %d) = %v, want %v", tt.addr, tt.n, got, tt.want)
		}
	}
	s := &Sampler{pid: 1}
	if _, err := s.pollFDs(maps, 0x1000, maxPollFDs+1); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("poll on too many descriptors: %v", err)
	}
	if _, err := s.pollFDs(maps, 0x5000, 2); err == nil || !strings.Contains(err.Error(), "not in a readable mapping") {
		t.Errorf("poll array outside the mappings: %v", err)
	}
	if _, err := s.selectFDs(maps, maxSelectFDs+1, 0x1000, 0); err == nil {
		t.Errorf("select on too many descriptors: no error")
	}
}

func FuzzParseMapping(f *testing.F) {
	for _, s := range []string{
		"7f76fd6c4000-7f76fd6c6000 rw-p 00000000 00:00 0",
		"55eaeb9b0000-55eaeb9b1000 r--p 00000000 fe:00 123 /usr/bin/python3",
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]",
		"", "-", "1-0 r", "zz-10 r",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if m, ok := parseMapping(line); ok && m.end <= m.start {
			t.Errorf("parseMapping(%q) = %+v: an empty range", line, m)
		}
	})
}

func TestParseLockLine(t *testing.T) {
	for _, tt := range []struct {
		line, key string
		e         model.FileLockEntry
		blocked   bool
	}{
		{"1: POSIX  ADVISORY  WRITE 1234 08:01:131090 0 EOF", "08:01:131090", model.FileLockEntry{Class: "POSIX", Type: "WRITE", PID: 1234, Range: "0 EOF"}, false},
		{"1: -> FLOCK  ADVISORY  WRITE 5678 fe:00:9977871 0 EOF", "fe:00:9977871", model.FileLockEntry{Class: "FLOCK", Type: "WRITE", PID: 5678, Range: "0 EOF"}, true},
		{"4: OFDLCK ADVISORY  READ -1 00:2a:55 100 199", "00:2a:55", model.FileLockEntry{Class: "OFDLCK", Type: "READ", PID: -1, Range: "100 199"}, false},
	} {
		key, e, blocked, ok := parseLockLine(tt.line)
		if !ok || key != tt.key || e != tt.e || blocked != tt.blocked {
			t.Errorf("parseLockLine(%q) = %q, %+v, %v, %v", tt.line, key, e, blocked, ok)
		}
	}
	for _, bad := range []string{"", "1:", "1: POSIX ADVISORY WRITE x 08:01:1 0 EOF", "1: POSIX ADVISORY WRITE 1 08011 0 EOF"} {
		if _, _, _, ok := parseLockLine(bad); ok {
			t.Errorf("parseLockLine(%q) parsed", bad)
		}
	}
}

func FuzzParseLockLine(f *testing.F) {
	for _, s := range []string{
		"1: POSIX  ADVISORY  WRITE 1234 08:01:131090 0 EOF",
		"1: -> FLOCK  ADVISORY  WRITE 5678 fe:00:9977871 0 EOF",
		"4: OFDLCK ADVISORY  READ -1 00:2a:55 100 199",
		"5: LEASE  ACTIVE    READ  2030 00:1f:7 0 EOF",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		parseLockLine(line)
	})
}
