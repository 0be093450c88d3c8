package sampler

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/hangdoc/hangdoc/model"
)

// tcpStates names the st column: include/net/tcp_states.h.
var tcpStates = [...]string{
	1:  "ESTABLISHED",
	2:  "SYN_SENT",
	3:  "SYN_RECV",
	4:  "FIN_WAIT1",
	5:  "FIN_WAIT2",
	6:  "TIME_WAIT",
	7:  "CLOSE",
	8:  "CLOSE_WAIT",
	9:  "LAST_ACK",
	10: "LISTEN",
	11: "CLOSING",
	12: "NEW_SYN_RECV",
}

// parseNetTCP parses /proc/net/tcp or /proc/net/tcp6. Entries are the
// lines that begin "N:"; every other line (the header, blank lines) is
// skipped, and the columns after inode (refcount, pointer, timers), which
// TIME_WAIT lines lack, are ignored.
//
// Addresses are hex words in the kernel's memory order: IPv4 is one 32-bit
// word and IPv6 four, each printed as a number in host byte order, so on a
// little-endian machine 127.0.0.1 is 0100007F and ::1 ends in 01000000.
// The file is read on the host that wrote it; a capture from a machine of
// the other byte order would need its words swapped. Ports are printed as
// numbers.
func parseNetTCP(b []byte) ([]model.TCPConn, error) {
	conns := []model.TCPConn{}
	n := 0
	for line := range bytes.Lines(b) {
		n++
		// sl, local, remote, st, tx:rx, tr:when, retrnsmt, uid, timeout, inode.
		var f [10][]byte
		k := 0
		for w := range bytes.FieldsSeq(line) {
			if k == len(f) {
				break
			}
			f[k] = w
			k++
		}
		if k == 0 || !isSlot(f[0]) {
			continue
		}
		if k < len(f) {
			return nil, fmt.Errorf("parsing net/tcp line %d: %w (%d): %q", n, errShort, k, trim(line))
		}
		c, err := parseTCPEntry(f)
		if err != nil {
			return nil, fmt.Errorf("parsing net/tcp line %d: %w: %q", n, err, trim(line))
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// isSlot reports whether w is an entry's first column, "N:".
func isSlot(w []byte) bool {
	if len(w) < 2 || w[len(w)-1] != ':' {
		return false
	}
	for _, c := range w[:len(w)-1] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func parseTCPEntry(f [10][]byte) (model.TCPConn, error) {
	var c model.TCPConn
	var err error
	if c.Local, err = parseHexAddrPort(f[1]); err != nil {
		return c, fmt.Errorf("local address: %w", err)
	}
	if c.Remote, err = parseHexAddrPort(f[2]); err != nil {
		return c, fmt.Errorf("remote address: %w", err)
	}
	if c.Local.Addr().Is4() != c.Remote.Addr().Is4() {
		return c, fmt.Errorf("local and remote addresses of different families")
	}
	st, err := strconv.ParseUint(string(f[3]), 16, 8)
	if err != nil || len(f[3]) != 2 || int(st) >= len(tcpStates) || tcpStates[st] == "" {
		return c, fmt.Errorf("unknown state %q", f[3])
	}
	c.State = tcpStates[st]
	tx, rx, ok := bytes.Cut(f[4], []byte(":"))
	if !ok {
		return c, fmt.Errorf("queues %q", f[4])
	}
	if c.TxQueue, err = strconv.ParseUint(string(tx), 16, 64); err != nil {
		return c, fmt.Errorf("tx_queue %q", tx)
	}
	if c.RxQueue, err = strconv.ParseUint(string(rx), 16, 64); err != nil {
		return c, fmt.Errorf("rx_queue %q", rx)
	}
	uid, err := strconv.ParseUint(string(f[7]), 10, 32)
	if err != nil {
		return c, fmt.Errorf("uid %q", f[7])
	}
	c.UID = int(uid)
	if c.Inode, err = strconv.ParseUint(string(f[9]), 10, 64); err != nil {
		return c, fmt.Errorf("inode %q", f[9])
	}
	return c, nil
}

// parseHexAddrPort parses "0100007F:1F90" (127.0.0.1:8080) or its IPv6
// form with 32 hex digits before the colon.
func parseHexAddrPort(b []byte) (netip.AddrPort, error) {
	host, port, ok := bytes.Cut(b, []byte(":"))
	if !ok || len(port) != 4 || (len(host) != 8 && len(host) != 32) {
		return netip.AddrPort{}, fmt.Errorf("%q is not HEX:PORT", trim(b))
	}
	p, err := strconv.ParseUint(string(port), 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q", port)
	}
	var a [16]byte
	for i := 0; i < len(host); i += 8 {
		w, err := strconv.ParseUint(string(host[i:i+8]), 16, 32)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("address %q", trim(host))
		}
		binary.NativeEndian.PutUint32(a[i/2:], uint32(w))
	}
	if len(host) == 8 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(a[:4])), uint16(p)), nil
	}
	return netip.AddrPortFrom(netip.AddrFrom16(a), uint16(p)), nil
}

// ReadTCP reads the TCP sockets of pid's network namespace, from
// /proc/PID/net/tcp and /proc/PID/net/tcp6; either may be missing (a
// kernel without IPv6), not both.
func ReadTCP(fs FS, pid int) ([]model.TCPConn, error) {
	all := []model.TCPConn{}
	buf := make([]byte, 0, 16<<10)
	var missing error
	for _, name := range []string{"tcp", "tcp6"} {
		path := fs.pidPath(pid, "net", name)
		b, err := readFile(path, buf)
		if err != nil {
			if vanished(err) {
				if missing != nil {
					return nil, missing
				}
				missing = classifyErr("reading", path, err)
				continue
			}
			return nil, classifyErr("reading", path, err)
		}
		if cap(b) > cap(buf) {
			buf = b[:0]
		}
		conns, err := parseNetTCP(b)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		all = append(all, conns...)
	}
	return all, nil
}
