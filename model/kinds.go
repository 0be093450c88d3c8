package model

import (
	"fmt"
)

// The typed kinds below are small enumerations, each with one table that
// says what its values are. They marshal as the words of the JSON contract
// (docs/json.md), so recordings and reports keep their text form.

// enum is a table of names, index = value: the one place a kind's values
// are spelled.
type enum []string

func (e enum) text(v uint8) string {
	if int(v) < len(e) {
		return e[v]
	}
	return fmt.Sprintf("?%d", v)
}

func (e enum) parse(kind string, b []byte) (uint8, error) {
	for i, n := range e {
		if n == string(b) {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q", kind, b)
}

// ThreadState is a thread's scheduling state, the third field of
// /proc/TID/stat. StateUnknown is a thread read from a dump: no kernel
// evidence.
type ThreadState uint8

const (
	StateUnknown  ThreadState = iota
	StateRunning              // R: on a CPU or waiting for one
	StateSleeping             // S: interruptible sleep
	StateDisk                 // D: uninterruptible sleep
	StateStopped              // T: stopped by a signal
	StateTraced               // t: stopped by a tracer
	StateZombie               // Z
	StateDead                 // X
	StateIdle                 // I: an idle kernel thread
	StateParked               // P
	StateWaking               // W
)

var threadStates = enum{"", "R", "S", "D", "T", "t", "Z", "X", "I", "P", "W"}

// ParseThreadState reads the state letter of a stat file; an unknown
// letter is StateUnknown.
func ParseThreadState(s string) ThreadState {
	v, err := threadStates.parse("thread state", []byte(s))
	if err != nil {
		return StateUnknown
	}
	return ThreadState(v)
}

func (s ThreadState) String() string { return threadStates.text(uint8(s)) }

// Stopped reports a stop by a signal or a tracer.
func (s ThreadState) Stopped() bool { return s == StateStopped || s == StateTraced }

// Known reports kernel evidence: a state read from /proc, not a dump.
func (s ThreadState) Known() bool { return s != StateUnknown }

func (s ThreadState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *ThreadState) UnmarshalText(b []byte) error {
	*s = ParseThreadState(string(b))
	return nil
}

// Runtime is the language runtime a process runs.
type Runtime uint8

const (
	RuntimeUnknown Runtime = iota
	RuntimeGo
	RuntimePython
	RuntimeJava
	RuntimeNode
	RuntimeNative
)

// RuntimeUnknown says "unknown": the executable could not be read in time
// (a hung filesystem), or a dump did not say.
var runtimes = enum{"unknown", "go", "python", "java", "node", "native"}

func (r Runtime) String() string               { return runtimes.text(uint8(r)) }
func (r Runtime) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
func (r *Runtime) UnmarshalText(b []byte) error {
	v, err := runtimes.parse("runtime", b)
	*r = Runtime(v)
	return err
}

// Trend is which way memory went across a run.
type Trend uint8

const (
	TrendUnknown Trend = iota
	TrendFlat
	TrendGrowing
	TrendShrinking
)

var trends = enum{"unknown", "flat", "growing", "shrinking"}

func (t Trend) String() string               { return trends.text(uint8(t)) }
func (t Trend) MarshalText() ([]byte, error) { return []byte(t.String()), nil }
func (t *Trend) UnmarshalText(b []byte) error {
	v, err := trends.parse("trend", b)
	*t = Trend(v)
	return err
}

// Format is what printed a stack dump that hangdoc read from a file, or
// the live source its stacks came from.
type Format uint8

const (
	FormatNone Format = iota
	// Live stack sources.
	SourcePySpy   // py-spy dump, joined to the threads by their TIDs
	SourcePprof   // the program's own /debug/pprof/goroutine?debug=2
	SourceDelve   // Delve attached and detached each sample
	SourceSigquit // one SIGQUIT dump after the last sample
	SourceMemory  // read from the target's memory while it runs
	// Python dump formats.
	FormatPySpyText
	FormatPySpyJSON
	FormatFaulthandler
	FormatCurrentFrames // app-printed sys._current_frames() or traceback.print_stack
	// Go dump producers.
	GoSigquit     // kill -QUIT: "SIGQUIT: quit" preamble, runtime frames
	GoPanic       // unrecovered panic
	GoFatal       // "fatal error: …" or a fatal signal other than SIGQUIT
	GoTestTimeout // go test -timeout expiry
	GoPprofDebug2 // /debug/pprof/goroutine?debug=2
	GoPprofDebug1 // /debug/pprof/goroutine?debug=1: counts, no goroutines
	GoStack       // runtime.Stack(buf, true) and the like
	GoUnknown     // goroutine records with nothing to say who printed them
	// JVM thread dumps.
	FormatJstack   // jstack, jcmd Thread.print, kill -QUIT: the JVM's text thread dump
	FormatJavaJSON // jcmd Thread.dump_to_file -format=json (JDK 21+)
	// SourceAttach: a live JVM's thread dump, asked for through HotSpot's
	// attach socket each sample.
	SourceAttach
	// SourceUnwind: a native program's blocked threads' stacks, unwound
	// from its memory by their call-frame information, never stopped.
	SourceUnwind
	// SourceJcmd: a live JVM's thread dump taken by the JDK's jcmd or
	// jstack, where hangdoc's own attach client could not get one.
	SourceJcmd
)

var formats = enum{
	"none",
	"py-spy", "pprof", "delve", "sigquit", "memory",
	"py-spy-text", "py-spy-json", "faulthandler", "current-frames",
	"go dump (sigquit)", "go dump (panic)", "go dump (fatal)", "go dump (test-timeout)",
	"go dump (pprof-debug2)", "go dump (pprof-debug1)", "go dump (stack)", "go dump (unknown)",
	"jstack", "jvm json",
	"jvm attach", "native unwind", "jcmd",
}

func (f Format) String() string { return formats.text(uint8(f)) }

// IsGoDump reports a Go goroutine dump read from a file.
func (f Format) IsGoDump() bool { return f >= GoSigquit && f <= GoUnknown }

// IsDump reports stacks read from a file, not a live process.
func (f Format) IsDump() bool {
	return f >= FormatPySpyText && f != SourceAttach && f != SourceUnwind && f != SourceJcmd
}

func (f Format) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

func (f *Format) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*f = FormatNone
		return nil
	}
	v, err := formats.parse("stack format", b)
	*f = Format(v)
	return err
}
