package sampler

import (
	"encoding/binary"

	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// Limits on what a sample reads of a poll or select: poll takes any
// number of descriptors, but a wait on more than a few thousand is a
// server's event loop, not a wait on a few processes; select cannot take
// more than FD_SETSIZE in glibc, and the kernel's own limit is the
// process's RLIMIT_NOFILE.
const (
	maxPollFDs   = 4096
	maxSelectFDs = 1 << 16
	// maxPolled is how many of them a sample names.
	maxPolled = 64
)

// Poll events that mean a wait for input (POLLIN, POLLPRI, POLLRDNORM,
// POLLRDBAND), and for room to write (POLLOUT, POLLWRNORM, POLLWRBAND), as
// asm-generic/poll.h numbers them on every architecture hangdoc reads.
const (
	pollIn  = 0x1 | 0x2 | 0x40 | 0x80
	pollOut = 0x4 | 0x100 | 0x200
)

// readPolled reads, for each thread blocked in poll, ppoll, select or
// pselect6, the descriptors it waits on from the target's memory: the
// pollfd array, or the read and write fd_sets. The arguments are the
// target's own and so are not trusted: the count must be sane and the
// memory inside one readable mapping, or the reading says why not.
func (s *Sampler) readPolled(sample *model.Sample) {
	links := map[int]string{}
	for i := range sample.Threads {
		th := &sample.Threads[i]
		kind, addr, n, rset, wset, ok := model.PollArgs(th.Syscall)
		if !ok || th.Exited {
			continue
		}
		if s.mem < 0 {
			th.PollErr = s.memErr.Error()
			continue
		}
		maps := s.readMaps()
		var fds []model.PolledFD
		var err error
		if kind == "poll" {
			fds, err = s.pollFDs(maps, addr, n)
		} else {
			fds, err = s.selectFDs(maps, n, rset, wset)
		}
		if err != nil {
			th.PollErr = err.Error()
			continue
		}
		for j := range fds {
			link, done := links[fds[j].FD]
			if !done {
				link = s.readlinkFD(fds[j].FD)
				links[fds[j].FD] = link
			}
			fds[j].Target = link
		}
		th.Polled = fds
	}
}

// pollFDs reads a pollfd array: {int fd; short events; short revents}.
func (s *Sampler) pollFDs(maps []mapping, addr, n uint64) ([]model.PolledFD, error) {
	if n == 0 {
		return []model.PolledFD{}, nil
	}
	if n > maxPollFDs {
		return nil, fmt.Errorf("poll on %d descriptors: more than the %d hangdoc reads", n, maxPollFDs)
	}
	b, err := s.readMem(maps, addr, 8*n)
	if err != nil {
		return nil, err
	}
	var out []model.PolledFD
	for i := uint64(0); i < n && len(out) < maxPolled; i++ {
		fd := int32(binary.LittleEndian.Uint32(b[8*i:]))
		ev := binary.LittleEndian.Uint16(b[8*i+4:])
		if fd < 0 {
			continue // poll skips negative descriptors
		}
		p := model.PolledFD{FD: int(fd), Read: ev&pollIn != 0, Write: ev&pollOut != 0}
		if !p.Read && !p.Write {
			// Waiting for errors or a hang-up only: as good as a read.
			p.Read = true
		}
		out = append(out, p)
	}
	return out, nil
}

// selectFDs reads select's read and write sets: bitmaps of nfds bits in
// longs.
func (s *Sampler) selectFDs(maps []mapping, nfds, rset, wset uint64) ([]model.PolledFD, error) {
	if nfds > maxSelectFDs {
		return nil, fmt.Errorf("select on %d descriptors: more than the %d hangdoc reads", nfds, maxSelectFDs)
	}
	size := (nfds + 63) / 64 * 8
	var r, w []byte
	var err error
	if rset != 0 && size > 0 {
		if r, err = s.readMem(maps, rset, size); err != nil {
			return nil, err
		}
	}
	if wset != 0 && size > 0 {
		if w, err = s.readMem(maps, wset, size); err != nil {
			return nil, err
		}
	}
	bit := func(set []byte, fd uint64) bool { return set != nil && set[fd/8]&(1<<(fd%8)) != 0 }
	out := []model.PolledFD{}
	for fd := uint64(0); fd < nfds && len(out) < maxPolled; fd++ {
		if rd, wr := bit(r, fd), bit(w, fd); rd || wr {
			out = append(out, model.PolledFD{FD: int(fd), Read: rd, Write: wr})
		}
	}
	return out, nil
}

// readMem reads n bytes of the target at addr, which must lie in one
// readable mapping.
func (s *Sampler) readMem(maps []mapping, addr, n uint64) ([]byte, error) {
	if !readable(maps, addr, n) {
		return nil, fmt.Errorf("reading %d bytes at 0x%x: not in a readable mapping of pid %d", n, addr, s.pid)
	}
	b := make([]byte, n)
	got, err := unix.Pread(s.mem, b, int64(addr))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading %d bytes at 0x%x: %w", n, addr, err)
	case uint64(got) != n:
		return nil, fmt.Errorf("reading %d bytes at 0x%x: only %d readable", n, addr, got)
	}
	return b, nil
}

// mapping is one readable range of /proc/PID/maps.
type mapping struct{ start, end uint64 }

// readMaps is the readable mappings of the target, in address order as
// the kernel lists them; nil when they cannot be read (the process
// exited, which later reads will say too). The maps are read once per
// sample (sampleMaps), whichever reader places an address first.
func (s *Sampler) readMaps() []mapping {
	m := &s.maps
	if !m.readableDone {
		m.readable, m.readableDone = parseMaps(s.mapsText(), parseMapping), true
	}
	return m.readable
}

// parseMapping parses the range of a readable line of maps:
// "7f76fd6c4000-7f76fd6c6000 rw-p 00000000 00:00 0".
func parseMapping(line string) (mapping, bool) {
	rng, rest, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(rest, "r") {
		return mapping{}, false
	}
	lo, hi, ok := strings.Cut(rng, "-")
	if !ok {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return mapping{}, false
	}
	return mapping{start, end}, true
}

// readable reports whether [addr, addr+n) lies in one of maps (adjacent
// mappings count as one).
func readable(maps []mapping, addr, n uint64) bool {
	end := addr + n
	if n == 0 || end < addr {
		return false
	}
	for i, m := range maps {
		if addr < m.start || addr >= m.end {
			continue
		}
		for hi := m.end; ; {
			if end <= hi {
				return true
			}
			i++
			if i >= len(maps) || maps[i].start != hi {
				return false
			}
			hi = maps[i].end
		}
	}
	return false
}
