package sampler

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
)

// The resolvers that follow a wait from one process to another (ScanProcs,
// FindHolders, ReadFDInfo, ReadTCP and Peer, BootTime) over /proc trees
// recorded from hung victims of testdata/victims, several processes to a
// tree, by testdata/capture.sh -fnbM (recipes in each tree's README.md).
// The ready lines are what the victims printed once hung; they, and the
// values read off the captured files (flags, queues, start ticks, the
// descriptor numbers the ready lines do not give), are fixture data. A new
// capture changes them all.
//
// ReadPipeFill is not tested here: it opens /proc/PID/fd/N and asks the
// pipe itself (FIONREAD, F_GETPIPE_SZ), and a captured fd/N is only the
// link's text, "pipe:[N]", which no capture can turn back into a pipe.
// TestReadPipeFillFixture checks that it fails on a tree; TestPipeLive
// reads a live pipe.
const (
	pipelineRoot = "testdata/proc-pipeline"
	// testdata/victims/pipeline.sh: yes | ( read x; exec sleep ... ).
	pipelineReady = "ready pid=21035 writer=21038 consumer=21039 pipe=pipe:[8617473]"

	tcpRoot = "testdata/proc-tcp"
	// testdata/victims/tcp_stall.py: fd is the client's socket.
	tcpReady = "ready pid=21422 server=21426 port=54315 fd=3"
	// tcpRequest is what the client sent and the server never read.
	tcpRequest = "GET / HTTP/1.0\r\n\r\n"

	// capturedBtime is the btime line of both trees' stat: they were
	// captured in one boot.
	capturedBtime = 1796013788
)

// pipelineFixture is pipelineReady, decoded.
type pipelineFixture struct {
	shell    int    // the shell running the script, in wait4
	writer   int    // yes, blocked writing to fd 1
	consumer int    // sleep, holding the read end on fd 0
	pipe     string // the writer's fd 1 and the consumer's fd 0
}

// tcpFixture is tcpReady, decoded.
type tcpFixture struct {
	client, server, port, fd int
}

func readyInfo(t *testing.T, line string) (info map[string]string, atoi func(key string) int) {
	t.Helper()
	info, err := testvictim.ParseReady(line)
	if err != nil {
		t.Fatal(err)
	}
	return info, func(key string) int {
		t.Helper()
		n, err := strconv.Atoi(info[key])
		if err != nil {
			t.Fatalf("ready line %q: %s: %v", line, key, err)
		}
		return n
	}
}

func pipelineReadyLine(t *testing.T) pipelineFixture {
	t.Helper()
	info, atoi := readyInfo(t, pipelineReady)
	return pipelineFixture{shell: atoi("pid"), writer: atoi("writer"), consumer: atoi("consumer"), pipe: info["pipe"]}
}

func tcpReadyLine(t *testing.T) tcpFixture {
	t.Helper()
	_, atoi := readyInfo(t, tcpReady)
	return tcpFixture{client: atoi("pid"), server: atoi("server"), port: atoi("port"), fd: atoi("fd")}
}

// inodeOf is N in "pipe:[N]" or "socket:[N]", parsed independently of the
// code under test.
func inodeOf(t *testing.T, link string) uint64 {
	t.Helper()
	_, rest, ok := strings.Cut(link, ":[")
	n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64)
	if !ok || !strings.HasSuffix(rest, "]") || err != nil {
		t.Fatalf("%q is not TYPE:[N]", link)
	}
	return n
}

func socketLink(ino uint64) string { return "socket:[" + strconv.FormatUint(ino, 10) + "]" }

func TestScanProcsCaptured(t *testing.T) {
	p := pipelineReadyLine(t)
	c := tcpReadyLine(t)
	for _, tc := range []struct {
		name, root string
		want       []model.Proc
	}{{
		// Each victim was started in a session of its own by a launcher
		// that then exited: init adopted its first process.
		name: "pipeline",
		root: pipelineRoot,
		want: []model.Proc{
			{PID: p.shell, PPID: 1, PGRP: p.shell, Session: p.shell, Comm: "sh", State: model.StateSleeping, StartTicks: 430735},
			{PID: p.writer, PPID: p.shell, PGRP: p.shell, Session: p.shell, Comm: "yes", State: model.StateSleeping, StartTicks: 430735},
			{PID: p.consumer, PPID: p.shell, PGRP: p.shell, Session: p.shell, Comm: "sleep", State: model.StateSleeping, StartTicks: 430735},
		},
	}, {
		name: "tcp",
		root: tcpRoot,
		want: []model.Proc{
			{PID: c.client, PPID: 1, PGRP: c.client, Session: c.client, Comm: "python3", State: model.StateSleeping,
				StartTicks: 431451, CPUTime: 30 * time.Millisecond},
			{PID: c.server, PPID: c.client, PGRP: c.client, Session: c.client, Comm: "python3", State: model.StateSleeping,
				StartTicks: 431455, CPUTime: 20 * time.Millisecond},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ScanProcs(NewFS(tc.root))
			if err != nil {
				t.Fatalf("ScanProcs(%s): %v", tc.root, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ScanProcs(%s) (-want +got):\n%s", tc.root, d)
			}
		})
	}
}

func TestFindHoldersPipelineFixture(t *testing.T) {
	p := pipelineReadyLine(t)
	writerEnd := model.FDRef{PID: p.writer, FD: 1, Mode: "w"}
	readerEnd := model.FDRef{PID: p.consumer, FD: 0, Mode: "r"}
	for _, tc := range []struct {
		name         string
		order        []int
		budget       time.Duration
		want         []model.FDRef // the pipe's holders; nil: none
		wantScanned  int
		wantComplete bool
	}{{
		// The shell closed both ends after forking the pipeline.
		name:        "every process",
		order:       []int{p.shell, p.writer, p.consumer},
		want:        []model.FDRef{writerEnd, readerEnd},
		wantScanned: 3, wantComplete: true,
	}, {
		name:        "in the caller's order",
		order:       []int{p.consumer, p.shell, p.writer},
		want:        []model.FDRef{readerEnd, writerEnd},
		wantScanned: 3, wantComplete: true,
	}, {
		name:        "only the writer",
		order:       []int{p.writer},
		want:        []model.FDRef{writerEnd},
		wantScanned: 1, wantComplete: true,
	}, {
		// The budget is looked at before each process but the first, so
		// the first is read however small the budget.
		name:        "a 1ns budget reads the first process only",
		order:       []int{p.writer, p.consumer, p.shell},
		budget:      time.Nanosecond,
		want:        []model.FDRef{writerEnd},
		wantScanned: 1, wantComplete: false,
	}, {
		name:        "a 1ns budget, and the first process holds nothing",
		order:       []int{p.shell, p.writer, p.consumer},
		budget:      time.Nanosecond,
		wantScanned: 1, wantComplete: false,
	}, {
		name:        "a 1ns budget is enough for one process",
		order:       []int{p.writer},
		budget:      time.Nanosecond,
		want:        []model.FDRef{writerEnd},
		wantScanned: 1, wantComplete: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			found, scanned, complete := FindHolders(NewFS(pipelineRoot), map[string]bool{p.pipe: true}, tc.order, tc.budget)
			want := map[string][]model.FDRef{}
			if tc.want != nil {
				want[p.pipe] = tc.want
			}
			if d := cmp.Diff(want, found); d != "" {
				t.Errorf("FindHolders(%s, %v, %v) (-want +got):\n%s", p.pipe, tc.order, tc.budget, d)
			}
			if scanned != tc.wantScanned || complete != tc.wantComplete {
				t.Errorf("FindHolders(%s, %v, %v): scanned %d, complete %v; want %d, %v",
					p.pipe, tc.order, tc.budget, scanned, complete, tc.wantScanned, tc.wantComplete)
			}
		})
	}
}

func TestReadFDInfoPipelineFixture(t *testing.T) {
	p := pipelineReadyLine(t)
	ino := inodeOf(t, p.pipe)
	// The flags are open(2)'s, printed in octal: a pipe's ends are
	// O_WRONLY and O_RDONLY; dash opens its script O_RDONLY|O_LARGEFILE
	// (0100000 on x86_64) and moves it to fd 10 with O_CLOEXEC.
	for _, tc := range []struct {
		name    string
		pid, fd int
		want    FDInfo
	}{
		{"the writer's end", p.writer, 1, FDInfo{Flags: 0o1, MntID: 16, Ino: ino}},
		{"the consumer's end", p.consumer, 0, FDInfo{Flags: 0o0, MntID: 16, Ino: ino}},
		{"the shell's script", p.shell, 10, FDInfo{Pos: 3130, Flags: 0o2100000, MntID: 27, Ino: 5309112}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFDInfo(NewFS(pipelineRoot), tc.pid, tc.fd)
			if err != nil {
				t.Fatalf("ReadFDInfo(%d, %d): %v", tc.pid, tc.fd, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ReadFDInfo(%d, %d) (-want +got):\n%s", tc.pid, tc.fd, d)
			}
		})
	}

	// A descriptor the process does not have is not a process that is gone.
	for _, tc := range []struct {
		name    string
		pid, fd int
		wantIs  error
		notIs   error
	}{
		{"a closed descriptor", p.writer, 5, fs.ErrNotExist, ErrNoProcess},
		{"a process not in the tree", 1, 0, ErrNoProcess, fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFDInfo(NewFS(pipelineRoot), tc.pid, tc.fd)
			if !errors.Is(err, tc.wantIs) || errors.Is(err, tc.notIs) {
				t.Errorf("ReadFDInfo(%d, %d) = %+v, %v; want an error wrapping %v, not %v",
					tc.pid, tc.fd, got, err, tc.wantIs, tc.notIs)
			}
		})
	}
}

// TestTCPFixture follows the client's blocked socket to the server: the
// connection in net/tcp, its other end, and the processes holding each.
//
// The addresses in net/tcp are in the byte order of the host that wrote
// them, and parseNetTCP reads them in this host's: the capture is from
// x86_64, and every machine hangdoc supports (x86_64, aarch64) is
// little-endian.
func TestTCPFixture(t *testing.T) {
	c := tcpReadyLine(t)
	tree := NewFS(tcpRoot)

	link, err := os.Readlink(filepath.Join(tcpRoot, strconv.Itoa(c.client), "fd", strconv.Itoa(c.fd)))
	if err != nil {
		t.Fatal(err)
	}
	clientIno := inodeOf(t, link)

	conns, err := ReadTCP(tree, c.client)
	if err != nil {
		t.Fatalf("ReadTCP(%s, %d): %v", tcpRoot, c.client, err)
	}
	loopback := netip.MustParseAddr("127.0.0.1")
	server := netip.AddrPortFrom(loopback, uint16(c.port))
	client := netip.AddrPortFrom(loopback, 49802) // the client's ephemeral port, 0xC28A
	listener := model.TCPConn{Local: server, Remote: netip.AddrPortFrom(netip.IPv4Unspecified(), 0), State: "LISTEN", Inode: 8618428}
	accepted := model.TCPConn{Local: server, Remote: client, State: "ESTABLISHED", RxQueue: uint64(len(tcpRequest)), Inode: 8618429}
	mine := model.TCPConn{Local: client, Remote: server, State: "ESTABLISHED", Inode: clientIno}
	addrPorts := cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })
	// The capture keeps only the sockets the two processes hold; tcp6 has
	// none.
	if d := cmp.Diff([]model.TCPConn{listener, accepted, mine}, conns, addrPorts); d != "" {
		t.Fatalf("ReadTCP(%s, %d) (-want +got):\n%s", tcpRoot, c.client, d)
	}
	// One network namespace: the server sees the same table.
	if got, err := ReadTCP(tree, c.server); err != nil || !cmp.Equal(conns, got, addrPorts) {
		t.Errorf("ReadTCP(%s, %d) = %v, %v; want the client's table %v", tcpRoot, c.server, got, err, conns)
	}

	peer, ok := mine.Peer(conns)
	if !ok || !cmp.Equal(peer, accepted, addrPorts) {
		t.Errorf("Peer of the client's %v = %+v, %v; want the server's accepted end %+v", mine, peer, ok, accepted)
	}
	if got, ok := accepted.Peer(conns); !ok || !cmp.Equal(got, mine, addrPorts) {
		t.Errorf("Peer of the server's %v = %+v, %v; want the client's end %+v", accepted, got, ok, mine)
	}
	if got, ok := listener.Peer(conns); ok {
		t.Errorf("Peer of the listener %v = %+v; want none", listener, got)
	}

	// The server listens on fd 3 and accepted on fd 4 (the capture's
	// fd links).
	targets := map[string]bool{link: true, socketLink(peer.Inode): true, socketLink(listener.Inode): true}
	found, scanned, complete := FindHolders(tree, targets, []int{c.client, c.server}, 0)
	want := map[string][]model.FDRef{
		link:                       {{PID: c.client, FD: c.fd, Mode: "rw"}},
		socketLink(accepted.Inode): {{PID: c.server, FD: 4, Mode: "rw"}},
		socketLink(listener.Inode): {{PID: c.server, FD: 3, Mode: "rw"}},
	}
	if d := cmp.Diff(want, found); d != "" {
		t.Errorf("FindHolders(%v) (-want +got):\n%s", targets, d)
	}
	if scanned != 2 || !complete {
		t.Errorf("FindHolders(%v): scanned %d, complete %v; want 2, true", targets, scanned, complete)
	}
}

func TestBootTimeFixture(t *testing.T) {
	want := time.Unix(capturedBtime, 0)
	for _, root := range []string{pipelineRoot, tcpRoot} {
		got, err := BootTime(NewFS(root))
		if err != nil || !got.Equal(want) {
			t.Errorf("BootTime(%s) = %v, %v; want %v", root, got, err, want)
		}
	}
}
