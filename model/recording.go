package model

import "time"

// RecordingVersion is the version of the recording format this hangdoc
// writes and the newest it reads: docs/recording.md. It changes when a
// field's meaning does, not when a field is added.
const RecordingVersion = 2

// Recording is a run's raw evidence: what `--record` writes, what the
// golden tests replay, and what `hangdoc analyze` makes of saved dumps.
// Classifying it again gives the same report.
type Recording struct {
	// Version is the recording format's (RecordingVersion when written);
	// 0 in recordings written before it was versioned, which read alike.
	Version        int           `json:"recording_version,omitempty"`
	HangdocVersion string        `json:"hangdoc_version"`
	Host           Host          `json:"host"`
	Target         Target        `json:"target"`
	Requested      int           `json:"requested"`
	Interval       time.Duration `json:"interval_ns"`
	PartialReason  string        `json:"partial_reason,omitempty"`
	TargetExited   bool          `json:"target_exited,omitempty"`
	Notes          []Note        `json:"notes,omitempty"`
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
