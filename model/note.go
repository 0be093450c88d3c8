package model

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Note is a fact about how a run gathered its evidence — what it could
// not read, what it left out, what it had to stop — as its kind and the
// values the report's words need (a path, a count, a pid, an error's
// text). The sampler and its sources return notes; report words them
// (report.NoteText), so every sentence a user reads is written in one
// place.
type Note struct {
	Kind NoteKind `json:"kind"`
	// Args are the kind's values in the order its words take them.
	Args []string `json:"args,omitempty"`
}

// NoteKind names what a note says. Its words are report's; the number of
// Args a kind takes is fixed by them (a test checks every call).
type NoteKind string

// NewNote is a note of kind k; each arg is formatted as fmt.Sprint does
// (a number, an error's text, a duration, a path).
func NewNote(k NoteKind, args ...any) Note {
	n := Note{Kind: k}
	if len(args) > 0 {
		n.Args = make([]string, len(args))
		for i, a := range args {
			n.Args[i] = fmt.Sprint(a)
		}
	}
	return n
}

// Equal reports a note of the same kind with the same values.
func (n Note) Equal(o Note) bool { return n.Kind == o.Kind && slices.Equal(n.Args, o.Args) }

// UnmarshalJSON reads a note, or a recording's note written before notes
// were typed (a JSON string: recording version 1), as NoteText.
func (n *Note) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*n = Note{Kind: NoteText, Args: []string{s}}
		return nil
	}
	type plain Note
	return json.Unmarshal(b, (*plain)(n))
}

// The kinds of note, with the values each takes. Their words are in
// report/notes.go.
const (
	// NoteText is a note already in words: one read from a recording of
	// version 1.
	NoteText NoteKind = "text" // text

	// Opening the target and choosing where its stacks come from.
	NoteThreadOf            NoteKind = "thread_of"               // tid, its process
	NoteOtherDiagnosis      NoteKind = "other_diagnosis"         // the claim's error
	NoteUnclaimed           NoteKind = "unclaimed"               // error
	NoteTraced              NoteKind = "traced"                  // pid, tracer pid, tracer's command line
	NoteNotGo               NoteKind = "not_go"                  // pid, runtime
	NoteSourceNotFor        NoteKind = "source_not_for"          // --source, the target's runtime
	NoteNoReaper            NoteKind = "no_reaper"               // error
	NoteLocalPID            NoteKind = "local_pid"               // helper, pid it was given, pid
	NoteNoLockOwners        NoteKind = "no_lock_owners"          // error
	NoteSampleUnread        NoteKind = "sample_unread"           // source, what ("goroutines"), sample number, error
	NoteStacksFrom          NoteKind = "stacks_from"             // what, source, why the sources before it failed
	NoteNoGoroutines        NoteKind = "no_goroutines"           // why each source failed
	NoteNoGoroutinesQuit    NoteKind = "no_goroutines_quit"      // why each source failed, --sigquit among them
	NoteNoJavaStacks        NoteKind = "no_java_stacks"          // why
	NoteJavaNoStop          NoteKind = "java_no_stop"            // -
	NoteNoPythonStacksNoSpy NoteKind = "no_python_stacks_no_spy" // why the memory reader failed
	NotePySpyUnused         NoteKind = "py_spy_unused"           // why
	NoteNoPythonStacks      NoteKind = "no_python_stacks"        // why each source failed
	NotePyMemoryRead        NoteKind = "py_memory_read"          // CPython version, how its layout was known
	NotePyTornLeft          NoteKind = "py_torn_left"            // stacks
	NotePyTasksUnread       NoteKind = "py_tasks_unread"         // error
	NotePyTasksTorn         NoteKind = "py_tasks_torn"           // tasks left out, reads

	// Source files.
	NoteSourceUnread     NoteKind = "source_unread"      // path, error
	NoteSourceUnreadMore NoteKind = "source_unread_more" // path, error, files not tried, mount
	NoteSourcesSkipped   NoteKind = "sources_skipped"    // files, mount
	NoteSourcesStuck     NoteKind = "sources_stuck"      // error
	NoteStdSources       NoteKind = "std_sources"        // files, Go version, GOOS, GOARCH
	NoteStdNoVersion     NoteKind = "std_no_version"     // files
	NoteStdNotIn         NoteKind = "std_not_in"         // files, directory

	// On-CPU sampling and native stacks.
	NoteUnwoundPerSample NoteKind = "unwound_per_sample" // threads
	NoteNoNativeArch     NoteKind = "no_native_arch"     // GOARCH, error
	NoteBusiestSampled   NoteKind = "busiest_sampled"    // threads
	NotePerfRefused      NoteKind = "perf_refused"       // error
	NotePerfUnsupported  NoteKind = "perf_unsupported"   // error
	NotePerfUserOnly     NoteKind = "perf_user_only"     // -

	// Goroutines from the target's memory, pprof, Delve, SIGQUIT.
	NoteMemoryRead      NoteKind = "memory_read"       // where the layouts came from ("DWARF")
	NoteGoExited        NoteKind = "go_exited"         // sample time, goroutines read
	NoteGoStackDeep     NoteKind = "go_stack_deep"     // MiB
	NoteGoStackFrames   NoteKind = "go_stack_frames"   // frames
	NoteGoUnreadable    NoteKind = "go_unreadable"     // goroutines
	NoteGoMoving        NoteKind = "go_moving"         // goroutines, reads
	NoteGoTruncated     NoteKind = "go_truncated"      // stacks
	NoteGoGOutside      NoteKind = "go_g_outside"      // -
	NoteGoGUnread       NoteKind = "go_g_unread"       // -
	NoteGoStackUnread   NoteKind = "go_stack_unread"   // -
	NoteGoPCNotGo       NoteKind = "go_pc_not_go"      // -
	NoteGoStatusUnknown NoteKind = "go_status_unknown" // -
	NotePprofUsed       NoteKind = "pprof_used"        // URL
	NoteDelveStopped    NoteKind = "delve_stopped"     // each stop's length
	NoteDelveCut        NoteKind = "delve_cut"         // goroutines read, goroutines in all
	NoteDelveErr        NoteKind = "delve_err"         // error
	NoteSigquitUsed     NoteKind = "sigquit_used"      // -

	// Python and Java through their tools.
	NotePyTorn             NoteKind = "py_torn"              // error
	NotePyByStack          NoteKind = "py_by_stack"          // -
	NotePyUnjoined         NoteKind = "py_unjoined"          // threads
	NotePyUnjoinedNS       NoteKind = "py_unjoined_ns"       // threads
	NoteJavaNoCounters     NoteKind = "java_no_counters"     // error
	NoteJavaVirtual        NoteKind = "java_virtual"         // virtual threads
	NoteJavaAttachStart    NoteKind = "java_attach_start"    // -
	NoteJavaAttachAsUser   NoteKind = "java_attach_as_user"  // uid, gid
	NoteJavaReused         NoteKind = "java_reused"          // samples without a dump, samples
	NoteJavaSafepoint      NoteKind = "java_safepoint"       // longest, ms
	NoteJavaSafepointShort NoteKind = "java_safepoint_short" // -
	NoteJavaUnjoined       NoteKind = "java_unjoined"        // dumps

	// Dumps read by analyze; "which" is a file, or "FILE: dump N".
	NoteDumpTooBig      NoteKind = "dump_too_big"      // file, MiB read
	NoteDumpTooMany     NoteKind = "dump_too_many"     // file, dumps read
	NoteDumpTooManyN    NoteKind = "dump_too_many_n"   // file, dumps read, dumps left
	NoteDumpLongLines   NoteKind = "dump_long_lines"   // which, lines
	NoteDumpTruncated   NoteKind = "dump_truncated"    // which
	NoteDumpExcerptJava NoteKind = "dump_excerpt_java" // which
	NoteDumpNoMain      NoteKind = "dump_no_main"      // file, which dump
	NoteDumpGoroutines  NoteKind = "dump_goroutines"   // kept, kept with stacks, counted only
	NoteDumpDebug1      NoteKind = "dump_debug1"       // which
	NoteDumpFatal       NoteKind = "dump_fatal"        // which, message
	NoteDumpPanic       NoteKind = "dump_panic"        // which, message
	NoteDumpSays        NoteKind = "dump_says"         // which, message
	NoteDumpBadHeaders  NoteKind = "dump_bad_headers"  // which, headers, the first quoted
	NoteDumpRepeats     NoteKind = "dump_repeats"      // which, goroutines
)
