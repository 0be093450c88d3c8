package model

import "time"

// Recording is a run's raw evidence: what `--record` writes, what the
// golden tests replay, and what `hangdoc analyze` makes of saved dumps.
// Classifying it again gives the same report.
type Recording struct {
	HangdocVersion string        `json:"hangdoc_version"`
	Host           Host          `json:"host"`
	Target         Target        `json:"target"`
	Requested      int           `json:"requested"`
	Interval       time.Duration `json:"interval_ns"`
	PartialReason  string        `json:"partial_reason,omitempty"`
	TargetExited   bool          `json:"target_exited,omitempty"`
	Notes          []string      `json:"notes,omitempty"`
	Samples        []Sample      `json:"samples"`
	// The world around the target: the processes its waits lead to, the
	// pipes and sockets they share, its family of processes.
	Peers        []Process           `json:"peers,omitempty"`
	Resources    map[string]Resource `json:"resources,omitempty"`
	FamilyBefore []Proc              `json:"family_before,omitempty"`
	Family       []Proc              `json:"family,omitempty"`
	Search       Search              `json:"search"`
	BootTime     time.Time           `json:"boot_time"`
	// StackSource names where the samples' stacks came from ("py-spy"),
	// "" for none; Sources are the source files their frames point into.
	StackSource Format              `json:"stack_source,omitempty"`
	Sources     map[string][]string `json:"sources,omitempty"`
}
