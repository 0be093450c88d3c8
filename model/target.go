package model

import (
	"fmt"
	"time"
)

// Target is what a report says about the process it diagnoses.
type Target struct {
	PID int `json:"pid"`
	// NSPID is the pid in the target's own PID namespace (a container's),
	// where that differs from PID, which is as hangdoc's /proc numbers it;
	// 0 when they are the same.
	NSPID          int       `json:"nspid,omitempty"`
	PPID           int       `json:"ppid"`
	Cmdline        string    `json:"cmdline"`
	Exe            string    `json:"exe"`
	User           string    `json:"user"`
	Started        time.Time `json:"started"`
	Runtime        Runtime   `json:"runtime"`
	RuntimeVersion string    `json:"runtime_version,omitempty"`
	// GoMaxProcsEnv is a Go program's GOMAXPROCS environment variable, the
	// one variable hangdoc reads of its environment; "" when unset.
	GoMaxProcsEnv string `json:"gomaxprocs_env,omitempty"`
}

// Host is the machine a report was made on.
type Host struct {
	Name   string `json:"name"`
	Kernel string `json:"kernel"`
	Arch   string `json:"arch"`
	CPUs   int    `json:"cpus"`
}

// String is how errors and progress lines name a target.
func (t Target) String() string {
	if t.Cmdline == "" {
		return fmt.Sprintf("pid %d", t.PID)
	}
	c := t.Cmdline
	if len(c) > 60 {
		c = c[:57] + "..."
	}
	return fmt.Sprintf("pid %d (%s)", t.PID, c)
}
