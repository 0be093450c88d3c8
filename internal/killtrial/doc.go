// Package killtrial holds the kill trials of issue 14: hangdoc, the binary,
// is SIGKILLed at chosen points and spread delays while it holds a Go
// target stopped through Delve or a Python target paused through py-spy,
// and the target must come out unharmed (no thread stopped, no tracer, its
// heartbeat advancing, its code the same as its executable's). The trials
// are its tests; HANGDOC_KILL_TRIALS sets how many of each kind a run does
// (RELIABILITY.md records a long run).
package killtrial
