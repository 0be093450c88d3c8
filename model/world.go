package model

import (
	"net/netip"
	"time"
)

// Process is a process that one of the target's waits leads to — the other
// end of a pipe or socket, a waited-for child — sampled alongside it.
type Process struct {
	PID int `json:"pid"`
	// NSPID is its pid in its own PID namespace, where that differs.
	NSPID   int    `json:"nspid,omitempty"`
	Cmdline string `json:"cmdline"`
	// Depth is how many waits away from the target it is: 1 for a process
	// the target waits on directly.
	Depth int `json:"depth"`
	// Runtime is its language runtime, as its executable says: a Go
	// program's threads parked in futex are its scheduler's, not waits of
	// its own.
	Runtime Runtime  `json:"runtime,omitempty"`
	Samples []Sample `json:"samples"`
	// Err says why it could not be sampled (gone, permission); Samples is
	// then empty.
	Err string `json:"err,omitempty"`
}

// Resource is what the kernel says about one thing a blocked thread waits
// on, named as /proc/PID/fd names it: "pipe:[32921]", "socket:[123]".
type Resource struct {
	Name string `json:"name"`
	// Holders are every descriptor found open on it, in any process.
	Holders []FDRef   `json:"holders"`
	Pipe    *PipeFill `json:"pipe,omitempty"`
	TCP     *TCPConn  `json:"tcp,omitempty"`
	// Unix is what the kernel's Unix socket table says of a Unix socket.
	Unix *UnixSock `json:"unix,omitempty"`
	// Peer names the other end of a TCP connection on this host, of a
	// connected Unix socket, or the listener a Unix connect waits on
	// ("socket:[456]"), itself a Resource.
	Peer string `json:"peer,omitempty"`
}

// UnixSock is one Unix socket as sock_diag (or /proc/net/unix) shows it.
type UnixSock struct {
	Inode uint64 `json:"inode"`
	Type  string `json:"type"` // stream, dgram, seqpacket
	// Path is the name it is bound to ("/run/app.sock", "@abstract"); ""
	// for none (a socketpair's, a client's).
	Path      string `json:"path,omitempty"`
	Listening bool   `json:"listening,omitempty"`
	// For a listener read through sock_diag: Queued connections wait to
	// be accepted, Backlog is listen()'s limit; a connect blocks once
	// Queued exceeds Backlog. Nil when unread.
	Queued  *int `json:"queued,omitempty"`
	Backlog *int `json:"backlog,omitempty"`
	// Connecting is the address a connect() on it waits for
	// ("unix:/run/app.sock").
	Connecting string `json:"connecting,omitempty"`
}

// Search says how the holders of resources were looked for.
type Search struct {
	Scanned  int   `json:"scanned_processes"`
	Complete bool  `json:"complete"`
	BudgetMS int64 `json:"budget_ms"`
}

// Proc is one process as its stat file describes it.
type Proc struct {
	PID        int           `json:"pid"`
	PPID       int           `json:"ppid"`
	PGRP       int           `json:"pgrp"`
	Session    int           `json:"session"`
	Comm       string        `json:"comm"`
	State      ThreadState   `json:"state"`
	StartTicks uint64        `json:"start_ticks"` // start time, in clock ticks after boot
	CPUTime    time.Duration `json:"cpu_ns"`      // user + system
}

// FDRef is one descriptor of one process.
type FDRef struct {
	PID int `json:"pid"`
	FD  int `json:"fd"`
	// Mode is the access mode the file was opened with: "r", "w" or "rw";
	// "" when fdinfo could not be read.
	Mode string `json:"mode"`
	// Locks are the file locks its fdinfo lists as held through it: an
	// OFD or flock lock's exact holder, which /proc/locks does not name.
	Locks []FileLockEntry `json:"locks,omitempty"`
}

// PipeFill is how full a pipe is, in bytes.
type PipeFill struct {
	Queued   int `json:"queued"`   // written and not yet read
	Capacity int `json:"capacity"` // the most it holds before a writer blocks
}

// TCPConn is one TCP socket as /proc/net/tcp or /proc/net/tcp6 shows it.
type TCPConn struct {
	// Local and Remote are as the kernel has them: tcp6 shows the IPv4
	// peers of a dual-stack socket as ::ffff:a.b.c.d. A listener's Remote
	// is the unspecified address, port 0.
	Local  netip.AddrPort `json:"local"`
	Remote netip.AddrPort `json:"remote"`
	State  string         `json:"state"` // ESTABLISHED, LISTEN, TIME_WAIT, …
	// TxQueue is the bytes written and not yet acknowledged by the peer.
	TxQueue uint64 `json:"tx_queue"`
	// RxQueue is the bytes received and not yet read (a FIN counts as
	// one); for a listener, the connections waiting to be accepted.
	RxQueue uint64 `json:"rx_queue"`
	UID     int    `json:"uid"`
	// Inode is the N of "socket:[N]" in the holders' /proc/PID/fd. It is
	// 0 for TIME_WAIT and half-open (SYN_RECV) entries: no descriptor
	// holds them.
	Inode uint64 `json:"inode"`
}

// Peer finds the other end of c among all, the sockets of c's network
// namespace: the entry whose Local is c's Remote and whose Remote is c's
// Local. IPv4 and IPv4-mapped IPv6 addresses are the same address here, so
// a dual-stack server's ::ffff:127.0.0.1 end pairs with an IPv4 client. A
// listener, or a connection to another host, has none.
func (c TCPConn) Peer(all []TCPConn) (TCPConn, bool) {
	if c.Remote.Port() == 0 {
		return TCPConn{}, false
	}
	local, remote := unmapAddrPort(c.Local), unmapAddrPort(c.Remote)
	for _, o := range all {
		if unmapAddrPort(o.Local) == remote && unmapAddrPort(o.Remote) == local {
			return o, true
		}
	}
	return TCPConn{}, false
}

func unmapAddrPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
