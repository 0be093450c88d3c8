package sampler

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// System is the machine a recording is taken from: the live /proc (Live),
// or a recording replayed (sampler/replay). Record reads everything
// through it, so source choice, failing sources, partial runs and peer
// following are testable without a live victim.
type System interface {
	// Open checks that pid can be sampled and returns its sampler. The
	// errors wrap ErrNoProcess, ErrKernelThread, ErrZombie or
	// ErrPermission.
	Open(pid int) (Process, error)
	// Describe gathers what a report says about a process.
	Describe(pid int) model.Target
	// Cmdline is a process's arguments, for naming it.
	Cmdline(pid int) string
	// Procs lists every process.
	Procs() ([]model.Proc, error)
	// Holders finds the descriptors that point at targets (see FindHolders).
	Holders(targets map[string]bool, order []int, budget time.Duration) (found map[string][]model.FDRef, scanned int, complete bool)
	// TCP lists the TCP sockets of pid's network namespace.
	TCP(pid int) ([]model.TCPConn, error)
	// Unix describes pid's Unix socket socket:[ino] and its other end (see
	// ReadUnix).
	Unix(pid int, ino uint64, connecting string) (self model.UnixSock, peer *model.UnixSock, ok bool)
	// PipeFill says how full the pipe behind pid's fd is.
	PipeFill(pid, fd int) (model.PipeFill, error)
	// BootTime is when the machine booted.
	BootTime() (time.Time, error)
	// Host names the machine.
	Host() model.Host
}

// Process takes samples of one process.
type Process interface {
	// Sample takes one sample; its errors wrap ErrNoProcess when the
	// process has exited and ErrPIDReused when its pid names another.
	Sample() (model.Sample, error)
	// MemErr says why futex owners cannot be read, or nil.
	MemErr() error
	Close() error
}

// Live is the system hangdoc runs on, read through fs.
func Live(fs FS) System { return live{fs} }

type live struct{ fs FS }

func (l live) Open(pid int) (Process, error) { return New(l.fs, pid) }
func (l live) Describe(pid int) model.Target { return Describe(l.fs, pid) }
func (l live) Cmdline(pid int) string        { return Cmdline(l.fs, pid) }
func (l live) Procs() ([]model.Proc, error)  { return ScanProcs(l.fs) }
func (l live) Holders(targets map[string]bool, order []int, budget time.Duration) (map[string][]model.FDRef, int, bool) {
	return FindHolders(l.fs, targets, order, budget)
}
func (l live) TCP(pid int) ([]model.TCPConn, error) { return ReadTCP(l.fs, pid) }
func (l live) Unix(pid int, ino uint64, connecting string) (model.UnixSock, *model.UnixSock, bool) {
	return ReadUnix(l.fs, pid, ino, connecting)
}
func (l live) PipeFill(pid, fd int) (model.PipeFill, error) { return ReadPipeFill(l.fs, pid, fd) }
func (l live) BootTime() (time.Time, error)                 { return BootTime(l.fs) }
func (l live) Host() model.Host                             { return DescribeHost() }

// FSOf returns the /proc tree a live system reads, for the stack sources
// that read it too; false for a replayed one.
func FSOf(sys System) (FS, bool) {
	l, ok := sys.(live)
	return l.fs, ok
}

// Target is a handle on the process being diagnosed: its pid, its start
// time and, live, a pidfd opened once. A source that acts on the target
// (attaches to it, signals it) checks through it first that the pid still
// names the process it was opened on, never a process that reused it.
type Target struct {
	Sys  System
	PID  int
	Desc model.Target
	// Start is its start time in clock ticks after boot.
	Start uint64
	// Local is its pid in hangdoc's own PID namespace (see LocalPID), for
	// helpers and signals; 0 when it has none, and LocalErr says why.
	// PID is as the /proc hangdoc reads (--proc) numbers it.
	Local    int
	LocalErr error
	pidfd    int
}

// OpenTarget opens pid on sys and takes its first look: the sampler and
// the description. The errors are Open's.
func OpenTarget(sys System, pid int) (*Target, Process, error) {
	p, err := sys.Open(pid)
	if err != nil {
		return nil, nil, err
	}
	t := &Target{Sys: sys, PID: pid, pidfd: -1}
	if s, ok := p.(*Sampler); ok {
		t.Start = s.start
		t.Local, t.LocalErr = LocalPID(s.fs, pid)
		// The pidfd is opened after the start time was read: if the pid
		// was reused in between, the first sample's start time check
		// says so, and the pidfd names the new process only until then.
		if t.Local > 0 {
			if fd, err := unix.PidfdOpen(t.Local, 0); err == nil {
				t.pidfd = fd
			}
		}
	}
	t.Desc = sys.Describe(pid)
	return t, p, nil
}

// Check reports whether the target is still the process it was opened
// on: nil, or an error wrapping ErrNoProcess (it exited; its pid may
// already name another process).
func (t *Target) Check() error {
	if t.pidfd < 0 {
		return nil
	}
	fds := []unix.PollFd{{Fd: int32(t.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	if err != nil {
		return fmt.Errorf("checking pid %d: %w", t.PID, err)
	}
	if n > 0 {
		return fmt.Errorf("pid %d exited: %w", t.PID, ErrNoProcess)
	}
	return nil
}

// Signal sends sig to the target through its pidfd, so that it never
// reaches a process that reused the pid.
func (t *Target) Signal(sig unix.Signal) error {
	if t.pidfd < 0 {
		if _, ok := t.Sys.(live); !ok {
			return fmt.Errorf("signalling pid %d: not a live process", t.PID)
		}
		if t.Local <= 0 {
			return fmt.Errorf("signalling pid %d: %w", t.PID, t.localErr())
		}
		return unix.Kill(t.Local, sig)
	}
	return unix.PidfdSendSignal(t.pidfd, sig, nil, 0)
}

func (t *Target) localErr() error {
	if t.LocalErr == nil {
		return ErrOtherNamespace
	}
	return t.LocalErr
}

// LocalNote says, when helpers take the target under another pid than
// the report's (hangdoc in a container of its own, the host's /proc at
// --proc), which pid a helper (what: "py-spy") was given; nil when the
// pids are the same or there is none (NotLocal).
func (t *Target) LocalNote(what string) *model.Note {
	if t.Local == t.PID || t.Local <= 0 {
		return nil
	}
	n := model.NewNote(model.NoteLocalPID, what, t.Local, t.PID)
	return &n
}

// NotLocal is why a helper (what: "Delve") cannot be given the target:
// hangdoc's own PID namespace does not number it.
func (t *Target) NotLocal(what string) error {
	return fmt.Errorf("%s was not run: %w (run hangdoc in the target's PID namespace or one that contains it: on the host, with hostPID, or with kubectl debug --target)", what, t.localErr())
}

// Close releases the pidfd.
func (t *Target) Close() error {
	if t.pidfd >= 0 {
		unix.Close(t.pidfd)
		t.pidfd = -1
	}
	return nil
}
