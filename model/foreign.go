package model

// ForeignStop is a sign, read at one sample, that something other than
// the diagnosis taking the samples may have stopped the target since the
// sample before: another diagnosis's py-spy pause or Delve attach, a
// debugger. A stop wakes every thread it catches — a context switch, a
// timed wait resumed as restart_syscall, a stack read mid-way — none of
// which is the target's own doing, so no switch and no stack change across
// that interval counts as movement.
type ForeignStop struct {
	Kind ForeignKind `json:"kind"`
	// PID is the other diagnosis's or the tracer's pid; 0 when unknown.
	PID int `json:"pid,omitempty"`
	// TID is the thread that showed it (a t or T state, restart_syscall);
	// 0 for the process.
	TID int `json:"tid,omitempty"`
}

// ForeignKind is what showed a stop that was not this diagnosis's own.
type ForeignKind uint8

const (
	// ForeignClaim: another diagnosis held the target's claim at this
	// sample or the one before, so it was free to stop it in between.
	ForeignClaim ForeignKind = iota
	// ForeignTracer: TracerPid named a process other than this one.
	ForeignTracer
	// ForeignStopped: the target or a thread was in state t or T.
	ForeignStopped
	// ForeignRestart: a thread came back in restart_syscall after a stop
	// this diagnosis did not make.
	ForeignRestart
)

var foreignKinds = enum{"claim", "tracer", "stopped", "restart"}

func (k ForeignKind) String() string { return foreignKinds.text(uint8(k)) }

func (k ForeignKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *ForeignKind) UnmarshalText(b []byte) error {
	v, err := foreignKinds.parse("foreign stop", b)
	*k = ForeignKind(v)
	return err
}
