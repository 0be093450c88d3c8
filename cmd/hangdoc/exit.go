package main

import (
	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/report"
)

// ExitCode is hangdoc's exit status: runbooks branch on it. The set is part
// of the contract documented in README.md; codes are never reused.
type ExitCode int

const (
	ExitWorking      ExitCode = 0 // not hung: the process is working
	ExitError        ExitCode = 1 // hangdoc could not diagnose (bad pid, permission, …)
	ExitUsage        ExitCode = 2 // bad flags or arguments
	ExitBlocked      ExitCode = 3
	ExitSpinning     ExitCode = 4
	ExitIdle         ExitCode = 5
	ExitDeadlock     ExitCode = 6
	ExitTargetExited ExitCode = 7 // the target exited (or its pid was reused) during sampling
	// SIGINT or SIGTERM ended the run: the report, when one could be
	// written, is of what was read by then, marked partial; else one line
	// on stderr says so.
	ExitInterrupted ExitCode = 8
)

// ExitFor is the exit code a report ends the run with.
func ExitFor(r *report.Report) ExitCode {
	if r.Sampling.TargetExited {
		return ExitTargetExited
	}
	switch r.TypedVerdict() {
	case classify.Blocked:
		return ExitBlocked
	case classify.Spinning:
		return ExitSpinning
	case classify.Idle:
		return ExitIdle
	case classify.Deadlock:
		return ExitDeadlock
	}
	return ExitWorking
}
