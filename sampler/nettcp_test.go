package sampler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hangdoc/hangdoc/model"
)

// netRoot holds /proc/net/tcp and tcp6 captured by testdata/net/capture.py
// on a little-endian x86_64 machine running Linux 6.18.
const netRoot = "testdata/net"

// littleEndianOnly skips tests of captured files on a big-endian machine,
// which would read the captured address words the other way round.
func littleEndianOnly(t *testing.T) {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the captures were made on a little-endian machine")
	}
}

// tcpConn is a TCPConn owned by uid 0, from addresses in netip's notation.
func tcpConn(local, remote, state string, tx, rx, inode uint64) model.TCPConn {
	return model.TCPConn{
		Local: netip.MustParseAddrPort(local), Remote: netip.MustParseAddrPort(remote),
		State: state, TxQueue: tx, RxQueue: rx, Inode: inode,
	}
}

// capturedTCP and capturedTCP6 are what the captures say, decoded by hand
// (with Python's inet_ntop, not this package).
var (
	capturedTCP = []model.TCPConn{
		tcpConn("0.0.0.0:2024", "0.0.0.0:0", "LISTEN", 0, 0, 552),
		tcpConn("127.0.0.1:47551", "0.0.0.0:0", "LISTEN", 0, 0, 8327967),
		tcpConn("127.0.0.1:57487", "0.0.0.0:0", "LISTEN", 0, 0, 8327973),
		tcpConn("127.0.0.1:59217", "0.0.0.0:0", "LISTEN", 0, 0, 8327958),
		tcpConn("127.0.0.1:44003", "0.0.0.0:0", "LISTEN", 0, 0, 8327970),
		// A sender stuck on a full receiver: 3.6 MB not yet acknowledged.
		tcpConn("127.0.0.1:60024", "127.0.0.1:44003", "ESTABLISHED", 3797504, 0, 8327971),
		tcpConn("127.0.0.1:44966", "127.0.0.1:47551", "FIN_WAIT2", 0, 0, 8327968),
		tcpConn("127.0.0.1:38474", "127.0.0.1:59217", "ESTABLISHED", 0, 0, 8327959),
		// The IPv4 client of the dual-stack listener [::]:35395.
		tcpConn("127.0.0.1:38226", "127.0.0.1:35395", "ESTABLISHED", 0, 0, 8327965),
		// TIME_WAIT: no inode, and fewer columns.
		tcpConn("127.0.0.1:42384", "127.0.0.1:57487", "TIME_WAIT", 0, 0, 0),
		tcpConn("127.0.0.1:59217", "127.0.0.1:38474", "ESTABLISHED", 0, 5, 8327960),
		tcpConn("127.0.0.1:44003", "127.0.0.1:60024", "ESTABLISHED", 0, 113152, 8327972),
		// The FIN it has not read counts as a byte.
		tcpConn("127.0.0.1:47551", "127.0.0.1:44966", "CLOSE_WAIT", 0, 1, 8327969),
	}
	capturedTCP6 = []model.TCPConn{
		tcpConn("[::]:35395", "[::]:0", "LISTEN", 0, 0, 8327964),
		tcpConn("[::1]:35211", "[::]:0", "LISTEN", 0, 0, 8327961),
		tcpConn("[::1]:41858", "[::1]:35211", "ESTABLISHED", 0, 0, 8327962),
		tcpConn("[::ffff:127.0.0.1]:35395", "[::ffff:127.0.0.1]:38226", "ESTABLISHED", 0, 0, 8327966),
		tcpConn("[::1]:35211", "[::1]:41858", "ESTABLISHED", 0, 0, 8327963),
	}
)

const tcpHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

// tcpLine is an entry line as the kernel prints it, from its columns.
func tcpLine(local, remote, st, queues, uid, inode string) string {
	return fmt.Sprintf("   0: %s %s %s %s 00:00000000 00000000 %5s        0 %s 1 0000000000000000 100 0 0 10 0\n",
		local, remote, st, queues, uid, inode)
}

func TestParseNetTCP(t *testing.T) {
	littleEndianOnly(t)
	for _, tc := range []struct {
		name    string
		file    string // under netRoot, or "" for in
		in      string
		want    []model.TCPConn
		wantErr string
	}{{
		name: "captured tcp",
		file: "tcp",
		want: capturedTCP,
	}, {
		name: "captured tcp6",
		file: "tcp6",
		want: capturedTCP6,
	}, {
		name: "the brief's example: 0100007F:1F90 is 127.0.0.1:8080",
		in:   tcpHeader + tcpLine("0100007F:1F90", "00000000:0000", "0A", "00000000:00000003", "1000", "4242"),
		want: []model.TCPConn{{
			Local: netip.MustParseAddrPort("127.0.0.1:8080"), Remote: netip.MustParseAddrPort("0.0.0.0:0"),
			State: "LISTEN", RxQueue: 3, UID: 1000, Inode: 4242,
		}},
	}, {
		name: "IPv6 words in host order, lower-case hex",
		in:   tcpLine("000000fd000000000000000002000000:0016", "B80D0120000000000000000001000000:FFFF", "0c", "00000001:00000000", "0", "0"),
		want: []model.TCPConn{tcpConn("[fd00::2]:22", "[2001:db8::1]:65535", "NEW_SYN_RECV", 1, 0, 0)},
	}, {
		name: "only a header",
		in:   tcpHeader,
		want: []model.TCPConn{},
	}, {
		name: "empty",
		in:   "",
		want: []model.TCPConn{},
	}, {
		name: "lines that are not entries are skipped",
		in:   tcpHeader + "\n   \n" + tcpLine("0100007F:1F90", "0100007F:C350", "01", "00000000:00000000", "0", "7") + "trailing garbage\n:: 12 34\n",
		want: []model.TCPConn{tcpConn("127.0.0.1:8080", "127.0.0.1:50000", "ESTABLISHED", 0, 0, 7)},
	}, {
		name:    "a cut-short entry",
		in:      tcpHeader + "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000\n",
		wantErr: "parsing net/tcp line 2: too few fields (5)",
	}, {
		name:    "state 0D, TCP_BOUND_INACTIVE, is never listed",
		in:      tcpLine("0100007F:1F90", "00000000:0000", "0D", "00000000:00000000", "0", "1"),
		wantErr: `unknown state "0D"`,
	}, {
		name:    "state 00",
		in:      tcpLine("0100007F:1F90", "00000000:0000", "00", "00000000:00000000", "0", "1"),
		wantErr: `unknown state "00"`,
	}, {
		name:    "a short address",
		in:      tcpLine("7F:1F90", "00000000:0000", "0A", "00000000:00000000", "0", "1"),
		wantErr: "local address",
	}, {
		name:    "a five-digit port",
		in:      tcpLine("0100007F:1F900", "00000000:0000", "0A", "00000000:00000000", "0", "1"),
		wantErr: "local address",
	}, {
		name:    "a signed address word",
		in:      tcpLine("0100007F:1F90", "+100007F:0000", "0A", "00000000:00000000", "0", "1"),
		wantErr: "remote address",
	}, {
		name:    "an IPv4 local and an IPv6 remote",
		in:      tcpLine("0100007F:1F90", "00000000000000000000000001000000:0000", "0A", "00000000:00000000", "0", "1"),
		wantErr: "different families",
	}, {
		name:    "queues without a colon",
		in:      tcpLine("0100007F:1F90", "00000000:0000", "0A", "0000000000000000", "0", "1"),
		wantErr: "queues",
	}, {
		name:    "a negative uid",
		in:      tcpLine("0100007F:1F90", "00000000:0000", "0A", "00000000:00000000", "-1", "1"),
		wantErr: `uid "-1"`,
	}, {
		name:    "the error names the line",
		in:      tcpHeader + tcpLine("0100007F:1F90", "00000000:0000", "0A", "00000000:00000000", "0", "1") + tcpLine("0100007F:1F90", "00000000:0000", "0A", "00000000:00000000", "0", "x"),
		wantErr: `parsing net/tcp line 3: inode "x"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			if tc.file != "" {
				in = readTestdata(t, filepath.Join(netRoot, tc.file))
			}
			got, err := parseNetTCP(in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseNetTCP(%q) = %v, %v; want error containing %q", in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseNetTCP(%q): %v", in, err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
				t.Errorf("parseNetTCP(%q) (-want +got):\n%s", in, diff)
			}
		})
	}
}

func TestPeer(t *testing.T) {
	littleEndianOnly(t)
	all := slices.Concat(capturedTCP, capturedTCP6)
	byLocal := func(s string) model.TCPConn {
		t.Helper()
		for _, c := range all {
			if c.Local.String() == s && c.State != "LISTEN" {
				return c
			}
		}
		t.Fatalf("no connection from %s", s)
		return model.TCPConn{}
	}
	for _, tc := range []struct {
		name     string
		from     string // Local of the connection asked about
		listener bool
		want     string // Local of its peer, "" for none
	}{
		{name: "IPv4 sender to its receiver", from: "127.0.0.1:60024", want: "127.0.0.1:44003"},
		{name: "IPv4 receiver to its sender", from: "127.0.0.1:44003", want: "127.0.0.1:60024"},
		{name: "IPv6", from: "[::1]:41858", want: "[::1]:35211"},
		{name: "IPv4 client to its dual-stack server", from: "127.0.0.1:38226", want: "[::ffff:127.0.0.1]:35395"},
		{name: "dual-stack server to its IPv4 client", from: "[::ffff:127.0.0.1]:35395", want: "127.0.0.1:38226"},
		{name: "half closed", from: "127.0.0.1:44966", want: "127.0.0.1:47551"},
		{name: "TIME_WAIT after the other end is gone", from: "127.0.0.1:42384"},
		{name: "a listener", from: "127.0.0.1:44003", listener: true},
		{name: "a wildcard listener", from: "0.0.0.0:2024", listener: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c model.TCPConn
			if tc.listener {
				i := slices.IndexFunc(all, func(c model.TCPConn) bool { return c.Local.String() == tc.from && c.State == "LISTEN" })
				c = all[i]
			} else {
				c = byLocal(tc.from)
			}
			got, ok := c.Peer(all)
			if tc.want == "" {
				if ok {
					t.Errorf("%v.Peer() = %v, want none", c, got)
				}
				return
			}
			if want := byLocal(tc.want); !ok || got != want {
				t.Errorf("%v.Peer() = %v, %v; want %v", c, got, ok, want)
			}
		})
	}
}

func TestReadTCPFixture(t *testing.T) {
	littleEndianOnly(t)
	tcp := string(readTestdata(t, filepath.Join(netRoot, "tcp")))
	tcp6 := string(readTestdata(t, filepath.Join(netRoot, "tcp6")))
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    []model.TCPConn
		wantErr string
		errIs   error
	}{{
		name:  "both",
		files: map[string]string{"1/net/tcp": tcp, "1/net/tcp6": tcp6},
		want:  slices.Concat(capturedTCP, capturedTCP6),
	}, {
		name:  "no IPv6",
		files: map[string]string{"1/net/tcp": tcp},
		want:  capturedTCP,
	}, {
		name:  "no IPv4",
		files: map[string]string{"1/net/tcp6": tcp6},
		want:  capturedTCP6,
	}, {
		name:    "neither",
		files:   map[string]string{"1/stat": ""},
		wantErr: "1/net/tcp: no such process",
		errIs:   ErrNoProcess,
	}, {
		name:    "a garbled tcp6",
		files:   map[string]string{"1/net/tcp": tcp, "1/net/tcp6": tcpHeader + "   0: 0\n"},
		wantErr: "1/net/tcp6: parsing net/tcp line 2: too few fields",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewFS(writeTree(t, tc.files))
			got, err := ReadTCP(fs, 1)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || (tc.errIs != nil && !errors.Is(err, tc.errIs)) {
					t.Fatalf("ReadTCP = %v, %v; want error containing %q (errors.Is %v)", got, err, tc.wantErr, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadTCP: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
				t.Errorf("ReadTCP (-want +got):\n%s", diff)
			}
		})
	}
}

// socketName is what /proc/self/fd says of c's descriptor: "socket:[N]".
func socketName(t *testing.T, c syscall.Conn) (fd int, name string) {
	t.Helper()
	fd = sockFD(t, c)
	name, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		t.Fatal(err)
	}
	return fd, name
}

// TestTCPLive connects to itself and finds both ends and the listener in
// /proc/PID/net, pairs them with Peer, and finds the test process holding
// all three.
func TestTCPLive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                     string
		listenNet, listenAddr    string
		dialNet, dialHost        string
		listener, server, client netip.Addr // as the kernel shows them
	}{{
		name:      "127.0.0.1",
		listenNet: "tcp4", listenAddr: "127.0.0.1:0",
		dialNet: "tcp4", dialHost: "127.0.0.1",
		listener: netip.MustParseAddr("127.0.0.1"), server: netip.MustParseAddr("127.0.0.1"), client: netip.MustParseAddr("127.0.0.1"),
	}, {
		name:      "::1",
		listenNet: "tcp6", listenAddr: "[::1]:0",
		dialNet: "tcp6", dialHost: "::1",
		listener: netip.MustParseAddr("::1"), server: netip.MustParseAddr("::1"), client: netip.MustParseAddr("::1"),
	}, {
		name:      "dual-stack listener, IPv4 client",
		listenNet: "tcp", listenAddr: "[::]:0",
		dialNet: "tcp4", dialHost: "127.0.0.1",
		listener: netip.MustParseAddr("::"), server: netip.MustParseAddr("::ffff:127.0.0.1"), client: netip.MustParseAddr("127.0.0.1"),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen(tc.listenNet, tc.listenAddr)
			if err != nil {
				t.Skipf("listen %s %s: %v", tc.listenNet, tc.listenAddr, err)
			}
			defer ln.Close()
			port := uint16(ln.Addr().(*net.TCPAddr).Port)
			client, err := net.Dial(tc.dialNet, net.JoinHostPort(tc.dialHost, fmt.Sprint(port)))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			// Five bytes the server never reads.
			if _, err := client.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			clientPort := uint16(client.LocalAddr().(*net.TCPAddr).Port)
			lnFD, lnName := socketName(t, ln.(*net.TCPListener))
			sFD, sName := socketName(t, server.(*net.TCPConn))
			cFD, cName := socketName(t, client.(*net.TCPConn))

			self := os.Getpid()
			var all []model.TCPConn
			var sEnd model.TCPConn
			// Loopback delivers at once; allow a moment anyway.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				all, err = ReadTCP(NewFS(""), self)
				if err != nil {
					t.Fatalf("ReadTCP(/proc, %d): %v", self, err)
				}
				sEnd, _ = byInode(all, sName)
				if sEnd.RxQueue == 5 || time.Now().After(deadline) {
					break
				}
			}
			want := map[string]model.TCPConn{
				lnName: {Local: netip.AddrPortFrom(tc.listener, port), Remote: netip.AddrPortFrom(unspecified(tc.listener), 0), State: "LISTEN"},
				sName:  {Local: netip.AddrPortFrom(tc.server, port), Remote: netip.AddrPortFrom(tc.server, clientPort), State: "ESTABLISHED", RxQueue: 5},
				cName:  {Local: netip.AddrPortFrom(tc.client, clientPort), Remote: netip.AddrPortFrom(tc.client, port), State: "ESTABLISHED"},
			}
			got := make(map[string]model.TCPConn)
			for name, w := range want {
				c, ok := byInode(all, name)
				if !ok {
					t.Fatalf("ReadTCP: no %s among %d sockets", name, len(all))
				}
				w.UID, w.Inode = os.Geteuid(), c.Inode
				want[name] = w
				got[name] = c
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
				t.Errorf("ReadTCP, by socket (-want +got):\n%s", diff)
			}

			if p, ok := got[cName].Peer(all); !ok || p != got[sName] {
				t.Errorf("client %v: Peer() = %v, %v; want the server end %v", got[cName], p, ok, got[sName])
			}
			if p, ok := got[sName].Peer(all); !ok || p != got[cName] {
				t.Errorf("server end %v: Peer() = %v, %v; want the client %v", got[sName], p, ok, got[cName])
			}

			targets := map[string]bool{lnName: true, sName: true, cName: true}
			found, scanned, complete := FindHolders(NewFS(""), targets, []int{self}, time.Minute)
			wantFound := map[string][]model.FDRef{
				lnName: {{PID: self, FD: lnFD, Mode: "rw"}},
				sName:  {{PID: self, FD: sFD, Mode: "rw"}},
				cName:  {{PID: self, FD: cFD, Mode: "rw"}},
			}
			if diff := cmp.Diff(wantFound, found); diff != "" {
				t.Errorf("FindHolders (-want +got):\n%s", diff)
			}
			if scanned != 1 || !complete {
				t.Errorf("FindHolders: scanned %d, complete %v; want 1, true", scanned, complete)
			}
		})
	}
}

func byInode(all []model.TCPConn, name string) (model.TCPConn, bool) {
	for _, c := range all {
		if c.Inode != 0 && fmt.Sprintf("socket:[%d]", c.Inode) == name {
			return c, true
		}
	}
	return model.TCPConn{}, false
}

func unspecified(a netip.Addr) netip.Addr {
	if a.Is4() {
		return netip.IPv4Unspecified()
	}
	return netip.IPv6Unspecified()
}

// entryLine is what the kernel's entry lines look like: "N:" first.
var entryLine = regexp.MustCompile(`^\s*[0-9]+:\s`)

// kernelHex prints an address as /proc/net/tcp does, on this machine.
func kernelHex(ap netip.AddrPort) string {
	var s strings.Builder
	b := ap.Addr().AsSlice()
	for i := 0; i < len(b); i += 4 {
		fmt.Fprintf(&s, "%08X", binary.NativeEndian.Uint32(b[i:]))
	}
	fmt.Fprintf(&s, ":%04X", ap.Port())
	return s.String()
}

func FuzzParseNetTCP(f *testing.F) {
	addDirSeeds(f, netRoot)
	f.Add([]byte(tcpHeader + tcpLine("0100007F:1F90", "00000000:0000", "0A", "00000000:00000003", "1000", "4242")))
	f.Add([]byte(tcpLine("000000fd000000000000000002000000:0016", "B80D0120000000000000000001000000:FFFF", "0c", "00000001:00000000", "0", "0")))
	known := make(map[string]bool)
	for _, s := range tcpStates {
		if s != "" {
			known[s] = true
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		conns, err := parseNetTCP(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "parsing net/tcp line ") {
				t.Errorf("parseNetTCP(%q): error %q does not name the line", b, err)
			}
			return
		}
		// Every line whose first field is "N:" is an entry; the parser
		// must have read each into one TCPConn that prints back the same.
		var entries [][]string
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) > 0 && entryLine.MatchString(f[0]+" ") {
				entries = append(entries, f)
			}
		}
		if len(conns) != len(entries) {
			t.Fatalf("parseNetTCP(%q): %d connections from %d entry lines", b, len(conns), len(entries))
		}
		for i, c := range conns {
			if !known[c.State] {
				t.Errorf("parseNetTCP(%q): entry %d has state %q", b, i, c.State)
			}
			if !c.Local.IsValid() || !c.Remote.IsValid() || c.Local.Addr().Is4() != c.Remote.Addr().Is4() {
				t.Errorf("parseNetTCP(%q): entry %d: addresses %v, %v", b, i, c.Local, c.Remote)
			}
			if got, want := kernelHex(c.Local), strings.ToUpper(entries[i][1]); got != want {
				t.Errorf("parseNetTCP(%q): entry %d: local %v prints as %s, not %s", b, i, c.Local, got, want)
			}
			if got, want := kernelHex(c.Remote), strings.ToUpper(entries[i][2]); got != want {
				t.Errorf("parseNetTCP(%q): entry %d: remote %v prints as %s, not %s", b, i, c.Remote, got, want)
			}
		}
	})
}

// TestTCPManySockets: /proc/PID/net/tcp gives a page per read, so a table
// of more than a page must be read to its end (a socket past the first
// page was once missed).
func TestTCPManySockets(t *testing.T) {
	var want []netip.AddrPort
	for range 120 {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		want = append(want, netip.MustParseAddrPort(ln.Addr().String()))
	}
	conns, err := ReadTCP(NewFS(""), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	listening := map[netip.AddrPort]bool{}
	for _, c := range conns {
		if c.State == "LISTEN" {
			listening[c.Local] = true
		}
	}
	for _, ap := range want {
		if !listening[ap] {
			t.Errorf("listener %s missing from ReadTCP's %d sockets", ap, len(conns))
		}
	}
}
