package sampler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
)

// maxDepth is how many waits away from the target hangdoc follows: the
// target's waits lead to depth 1, theirs to depth 2, and so on.
const maxDepth = 3

// follower follows the target's waits to other processes — the other end of
// a pipe or a socket, a waited-for child — and samples those processes
// alongside it. It never reads from or writes to a resource and never stops
// a process.
type follower struct {
	sys      System
	target   int
	budget   time.Duration // left for scanning other processes' descriptors
	procs    []model.Proc
	samplers map[int]Process
	peers    map[int]*model.Process
	order    []int // peers in the order found
	res      map[string]model.Resource
	search   model.Search
	// connects are the addresses the connect() calls on a socket wait
	// for, by "socket:[N]".
	connects map[string]string
}

func newFollower(sys System, target int, budget time.Duration) *follower {
	return &follower{
		sys: sys, target: target, budget: budget,
		samplers: map[int]Process{},
		peers:    map[int]*model.Process{},
		res:      map[string]model.Resource{},
		connects: map[string]string{},
		search:   model.Search{Complete: true, BudgetMS: budget.Milliseconds()},
	}
}

func (f *follower) close() {
	for _, s := range f.samplers {
		s.Close()
	}
}

// scan lists every process once; family filters it later.
func (f *follower) scan() {
	procs, err := f.sys.Procs()
	if err == nil {
		f.procs = procs
	}
}

// sample takes one sample of every peer.
func (f *follower) sample() {
	for _, pid := range f.order {
		p, s := f.peers[pid], f.samplers[pid]
		if s == nil {
			continue
		}
		if sm, err := s.Sample(); err == nil {
			p.Samples = append(p.Samples, sm)
		}
	}
}

// follow finds where the blocked threads of one process's sample lead, and
// starts sampling the processes there, to maxDepth.
func (f *follower) follow(pid int, sm model.Sample, depth int) {
	if depth >= maxDepth {
		return
	}
	wanted := map[string]bool{}
	var children, lockers []int
	netpoll := netpollWait(sm) || asyncioLoop(sm)
	for _, t := range sm.Threads {
		sc := t.Syscall
		if !sc.InCall() {
			continue
		}
		switch {
		case strings.HasPrefix(t.FD, "pipe:") || strings.HasPrefix(t.FD, "socket:"):
			if _, done := f.res[t.FD]; !done {
				wanted[t.FD] = true
			}
			if sc.Name == "connect" && t.Path != "" {
				f.connects[t.FD] = t.Path
			}
		case sc.Name == "wait4" || sc.Name == "waitid":
			children = append(children, f.waitedChildren(pid, t)...)
		case t.Anon != nil && t.Anon.Kind == "pidfd" && t.Anon.PID > 0:
			// A poll of a pidfd waits for that process to exit.
			children = append(children, t.Anon.PID)
		}
		// A file lock's wait leads to the processes that hold it; who has
		// the file open says who holds an OFD lock, which has no pid.
		if fl := t.FileLock; fl != nil && fl.Path != "" {
			if _, done := f.res[fl.Path]; !done {
				wanted[fl.Path] = true
			}
			for _, h := range fl.Held {
				if h.PID > 0 && h.PID != pid && !slices.Contains(lockers, h.PID) {
					lockers = append(lockers, h.PID)
				}
			}
		}
		// A poll or select waits on each of its descriptors as a read or
		// write would.
		for _, p := range t.Polled {
			if strings.HasPrefix(p.Target, "pipe:") || strings.HasPrefix(p.Target, "socket:") {
				if _, done := f.res[p.Target]; !done {
					wanted[p.Target] = true
				}
			}
		}
		if netpoll {
			// A Go program's goroutines wait for pipes and sockets
			// through the runtime's epoll instance, not in a read or
			// write of their own: its watched descriptors are where they
			// may be stuck.
			for _, w := range t.Watches {
				if _, name, _ := strings.Cut(w, " "); strings.HasPrefix(name, "pipe:") || strings.HasPrefix(name, "socket:") {
					if _, done := f.res[name]; !done {
						wanted[name] = true
					}
				}
			}
		}
	}
	f.resolve(pid, wanted)
	var next []int
	for name := range wanted {
		r := f.res[name]
		names := []string{name}
		if r.Peer != "" {
			names = append(names, r.Peer)
		}
		for _, n := range names {
			for _, h := range f.res[n].Holders {
				if h.PID != pid && !slices.Contains(next, h.PID) {
					next = append(next, h.PID)
				}
			}
		}
	}
	// A record lock another process holds on a file this one has open, while
	// it naps: the lock it may be retrying.
	for _, lf := range sm.LockedFiles {
		for _, h := range lf.Held {
			if h.PID > 0 && h.PID != pid && !slices.Contains(lockers, h.PID) {
				lockers = append(lockers, h.PID)
			}
		}
	}
	// A process-shared mutex held by a thread of another process that maps
	// the same word.
	for _, fx := range sm.Futexes {
		if fx.OwnerPID > 0 && fx.OwnerPID != pid && !slices.Contains(lockers, fx.OwnerPID) {
			lockers = append(lockers, fx.OwnerPID)
		}
	}
	for _, c := range append(children, lockers...) {
		if !slices.Contains(next, c) {
			next = append(next, c)
		}
	}
	if st := sm.Stop; st != nil && st.TracerPID > 0 && !st.ByHangdoc && !slices.Contains(next, st.TracerPID) {
		// A traced process waits on its tracer.
		next = append(next, st.TracerPID)
	}
	slices.Sort(next)
	for _, p := range next {
		if p == f.target || f.peers[p] != nil {
			continue
		}
		peer := &model.Process{PID: p, Depth: depth + 1, Samples: []model.Sample{}}
		f.peers[p] = peer
		f.order = append(f.order, p)
		s, err := f.sys.Open(p)
		if err != nil {
			peer.Err = err.Error()
			continue
		}
		f.samplers[p] = s
		peer.Cmdline = f.sys.Cmdline(p)
		desc := f.sys.Describe(p)
		peer.Runtime, peer.NSPID = desc.Runtime, desc.NSPID
		first, err := s.Sample()
		if err != nil {
			peer.Err = err.Error()
			continue
		}
		peer.Samples = append(peer.Samples, first)
		f.follow(p, first, depth+1)
	}
}

// netpollWait reports a sample with a goroutine waiting for a descriptor
// in the Go runtime's network poller (pipes and sockets both), other than
// a listener's Accept.
func netpollWait(sm model.Sample) bool {
	for _, g := range sm.Goroutines {
		if g.State != "IO wait" {
			continue
		}
		for _, f := range g.Stack {
			if strings.HasSuffix(f.Func, "(*pollDesc).waitWrite") || strings.HasSuffix(f.Func, "(*pollDesc).waitRead") && !slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return strings.HasSuffix(f.Func, ").Accept") }) {
				return true
			}
		}
	}
	return false
}

// asyncioLoop reports a sample with a thread that runs an asyncio event
// loop: its tasks wait for pipes and sockets through the loop's epoll
// instance, as a Go program's goroutines do through the runtime's.
func asyncioLoop(sm model.Sample) bool {
	return slices.ContainsFunc(sm.Threads, func(t model.Thread) bool { return model.RunsAsyncioLoop(t.Stack) })
}

// waitedChildren are the children a wait4/waitid call waits for.
func (f *follower) waitedChildren(pid int, t model.Thread) []int {
	if one := model.WaitedChild(t); one > 0 {
		return []int{one}
	}
	var out []int
	for _, p := range f.procs {
		if p.PPID == pid {
			out = append(out, p.PID)
		}
	}
	return out
}

// resolve finds who holds each wanted pipe or socket, and for a TCP socket
// the connection and its other end on this host, within the time budget.
func (f *follower) resolve(pid int, wanted map[string]bool) {
	if len(wanted) == 0 {
		return
	}
	look := map[string]bool{}
	var conns []model.TCPConn
	for name := range wanted {
		look[name] = true
		r := model.Resource{Name: name, Holders: []model.FDRef{}}
		if strings.HasPrefix(name, "socket:") {
			if conns == nil {
				conns, _ = f.sys.TCP(pid)
			}
			ino := inode(name)
			for i := range conns {
				if conns[i].Inode != ino {
					continue
				}
				c := conns[i]
				r.TCP = &c
				if peer, ok := c.Peer(conns); ok && peer.Inode != 0 {
					r.Peer = fmt.Sprintf("socket:[%d]", peer.Inode)
					look[r.Peer] = true
					pc := peer
					f.res[r.Peer] = model.Resource{Name: r.Peer, TCP: &pc, Holders: []model.FDRef{}}
				}
			}
			if r.TCP == nil {
				f.unix(pid, &r, look)
			}
		}
		f.res[name] = r
	}
	if f.budget <= 0 {
		f.search.Complete = false
		return
	}
	start := time.Now()
	found, scanned, complete := f.sys.Holders(look, f.searchOrder(pid), f.budget)
	f.budget -= time.Since(start)
	f.search.Scanned += scanned
	f.search.Complete = f.search.Complete && complete
	for name := range look {
		r := f.res[name]
		r.Holders = append(r.Holders, found[name]...)
		f.res[name] = r
	}
}

// unix describes a Unix socket and finds its other end: the peer of a
// connected one, the listener a connect waits on.
func (f *follower) unix(pid int, r *model.Resource, look map[string]bool) {
	self, peer, ok := f.sys.Unix(pid, inode(r.Name), f.connects[r.Name])
	if !ok {
		return
	}
	r.Unix = &self
	if peer == nil {
		return
	}
	r.Peer = fmt.Sprintf("socket:[%d]", peer.Inode)
	look[r.Peer] = true
	if _, done := f.res[r.Peer]; !done {
		f.res[r.Peer] = model.Resource{Name: r.Peer, Unix: peer, Holders: []model.FDRef{}}
	}
}

// searchOrder puts first the processes where the other end of a pipe or a
// socket usually is: the process itself, its parent, its children, its
// process group and session, then every other process.
func (f *follower) searchOrder(pid int) []int {
	var self model.Proc
	for _, p := range f.procs {
		if p.PID == pid {
			self = p
		}
	}
	rank := func(p model.Proc) int {
		switch {
		case p.PID == pid:
			return 0
		case p.PID == self.PPID:
			return 1
		case p.PPID == pid:
			return 2
		case self.PGRP != 0 && p.PGRP == self.PGRP:
			return 3
		case self.Session != 0 && p.Session == self.Session:
			return 4
		}
		return 5
	}
	procs := slices.Clone(f.procs)
	slices.SortStableFunc(procs, func(a, b model.Proc) int { return rank(a) - rank(b) })
	order := make([]int, 0, len(procs)+1)
	if self.PID == 0 {
		order = append(order, pid)
	}
	for _, p := range procs {
		order = append(order, p.PID)
	}
	return order
}

// fillPipes reads how full each pipe is, through any descriptor found on it.
func (f *follower) fillPipes() {
	for name, r := range f.res {
		if !strings.HasPrefix(name, "pipe:") {
			continue
		}
		for _, h := range r.Holders {
			if fill, err := f.sys.PipeFill(h.PID, h.FD); err == nil {
				r.Pipe = &fill
				f.res[name] = r
				break
			}
		}
	}
}

// family is the part of the process list the classifier needs: the
// target's process group, its session if it leads one, its ancestors, and
// the children of every process sampled.
func (f *follower) family() []model.Proc {
	byPID := map[int]model.Proc{}
	for _, p := range f.procs {
		byPID[p.PID] = p
	}
	t, ok := byPID[f.target]
	if !ok {
		return []model.Proc{}
	}
	keep := map[int]bool{f.target: true}
	for pid := t.PPID; pid > 0 && !keep[pid]; pid = byPID[pid].PPID {
		keep[pid] = true
	}
	sampled := map[int]bool{f.target: true}
	for pid := range f.peers {
		sampled[pid] = true
	}
	out := []model.Proc{}
	for _, p := range f.procs {
		if keep[p.PID] || p.PGRP == t.PGRP || (t.Session == t.PID && p.Session == t.Session) || sampled[p.PPID] || sampled[p.PID] {
			out = append(out, p)
		}
	}
	return out
}

func (f *follower) record(rec *model.Recording, before []model.Proc) {
	f.fillPipes()
	rec.Peers = []model.Process{}
	for _, pid := range f.order {
		rec.Peers = append(rec.Peers, *f.peers[pid])
	}
	rec.Resources = f.res
	rec.FamilyBefore = before
	rec.Family = f.family()
	rec.Search = f.search
	if bt, err := f.sys.BootTime(); err == nil {
		rec.BootTime = bt
	}
}

// inode is N in "socket:[N]" or "pipe:[N]".
func inode(name string) uint64 {
	i, j := strings.IndexByte(name, '['), strings.IndexByte(name, ']')
	if i < 0 || j < i {
		return 0
	}
	n, _ := strconv.ParseUint(name[i+1:j], 10, 64)
	return n
}
