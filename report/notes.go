package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// MemoryBudgetNote says how a diagnosis was degraded to keep hangdoc's
// heap within --max-memory (internal/membudget): heap is what hangdoc held
// once the evidence was read, past half of budget.
func MemoryBudgetNote(heap, budget int64, holderLocks int) string {
	return fmt.Sprintf("memory budget: hangdoc held %s once the evidence was read, past half of --max-memory %s; "+
		"goroutines are grouped by stack shape alone (argument words, wait times and channel evidence of all but each group's first are not read), "+
		"and holders were searched for the %d locks with the most waiters only", Bytes(heap), Bytes(budget), holderLocks)
}

// noteWords are the words of each kind of note (model.Note): a format
// whose %s verbs take the note's Args in order (%[N]s where one is said
// twice). TestNoteWords checks that every kind has words and that every
// model.NewNote call outside report passes as many values as they take.
var noteWords = map[model.NoteKind]string{
	model.NoteText: "%s",

	model.NoteThreadOf:            "%s is a thread of pid %s: diagnosing pid %[2]s",
	model.NoteOtherDiagnosis:      "another diagnosis (%s) holds the target: this one does not stop it, and counts no switch or stack change as movement while the other may stop it",
	model.NoteUnclaimed:           "the target could not be claimed for this diagnosis: %s",
	model.NoteTraced:              "pid %s is traced by pid %s (%s): nothing here stops it, since a second tracer cannot attach; detach the debugger for the stacks that need a stop",
	model.NoteNotGo:               "--pprof and --sigquit are for Go programs; pid %s is not one (%s): ignored",
	model.NoteSourceNotFor:        "--source %s does not read a %s program: the default sources were used",
	model.NoteNoReaper:            "%s: a helper's descendant that leaves its process group could outlive hangdoc",
	model.NoteLocalPID:            "%s was given pid %s: pid %s as hangdoc's own PID namespace numbers it",
	model.NoteNoLockOwners:        "lock owners cannot be read: %s",
	model.NoteSampleUnread:        "%s: %s of sample %s not read: %s",
	model.NoteStacksFrom:          "%s from %s (%s)",
	model.NoteNoGoroutines:        "no goroutines: %s; the diagnosis is from kernel evidence only (serve net/http/pprof and pass --pprof URL, or allow --sigquit, which kills the target, to get them)",
	model.NoteNoGoroutinesQuit:    "no goroutines: %s; the diagnosis is from kernel evidence only",
	model.NoteNoJavaStacks:        "no Java stacks: %s; the diagnosis is from kernel evidence only (a dump taken by hand, jcmd PID Thread.print -l > FILE, reads with hangdoc analyze FILE)",
	model.NoteJavaNoStop:          "no Java stacks: a JVM's thread dump is a safepoint, which stops every Java thread, and this run may not stop the target; the diagnosis is from kernel evidence only",
	model.NoteNoPythonStacksNoSpy: "no Python stacks: %s, and py-spy is not installed (pip install py-spy, or --py-spy PATH); the diagnosis is from kernel evidence only",
	model.NotePySpyUnused:         "py-spy not used: %s",
	model.NoteNoPythonStacks:      "no Python stacks: %s; the diagnosis is from kernel evidence only",
	model.NotePyMemoryRead:        "Python stacks read from the interpreter's memory while it ran (CPython %s, by %s): it was never stopped",
	model.NotePyTasksUnread:       "asyncio tasks not all read: %s",
	model.NotePyTasksTorn:         "%s asyncio tasks left out: their loop ran while they were read %s times, and they changed between the last two reads",
	model.NotePyTornLeft:          "%s Python stacks changed on each of their reads: left out rather than shown torn",

	model.NoteSourceUnread:     "source %s not read: %s",
	model.NoteSourceUnreadMore: "source %s not read: %s; %s more source file(s) on %s not tried",
	model.NoteSourcesSkipped:   "%s source file(s) on %s not read: an earlier read there did not return (a hung filesystem?)",
	model.NoteSourcesStuck:     "source files not read: %s",
	model.NoteStdSources:       "the standard library's sources (%s) were not read: no toolchain of %s on this machine (GOROOT, ~/sdk/%[2]s, or the module cache's golang.org/toolchain@v0.0.1-%[2]s.%s-%s); their frames are named by where they lock",
	model.NoteStdNoVersion:     "the standard library's sources (%s) were not read: the program's Go version is not known (a dump does not say it), and only that version's toolchain is read; their frames are named by where they lock",
	model.NoteStdNotIn:         "the standard library's sources (%s) were not read: they are not in %s; their frames are named by where they lock",

	model.NoteUnwoundPerSample: "native stacks: %s blocked threads unwound per sample, the rest left without",
	model.NoteNoNativeArch:     "native stacks of blocked threads: not read on %s (%s)",
	model.NoteBusiestSampled:   "on-CPU sampling: only the %s busiest threads are sampled",
	model.NotePerfRefused:      "on-CPU sampling refused by the kernel (perf_event_paranoid, or no CAP_PERFMON; run as root for where running threads are): %s",
	model.NotePerfUnsupported:  "on-CPU sampling: %s",
	model.NotePerfUserOnly:     "on-CPU sampling sees user code only (kernel profiling refused): time in system calls is not caught",

	model.NoteMemoryRead:      "goroutines read from the target's memory while it ran (%s): it was never stopped",
	model.NoteGoExited:        "the target exited while its goroutines were read: sample %s has the %s read before",
	model.NoteGoStackDeep:     "a stack deeper than %s MiB was read in part",
	model.NoteGoStackFrames:   "a stack of more than %s frames was read in part",
	model.NoteGoUnreadable:    "%s goroutines unreadable, left out",
	model.NoteGoMoving:        "%s goroutines changed on each of %s reads: listed without a stack",
	model.NoteGoTruncated:     "%s stacks end before their outermost frame (an unknown return address)",
	model.NoteGoGOutside:      "dropped: a g pointer outside the process's memory",
	model.NoteGoGUnread:       "dropped: a g that could not be read",
	model.NoteGoStackUnread:   "dropped: a stack that could not be read",
	model.NoteGoPCNotGo:       "dropped: a stack whose pc is no Go code",
	model.NoteGoStatusUnknown: "dropped: a g with an unknown status",
	model.NotePprofUsed:       "goroutines from the target's own pprof endpoint %s",
	model.NoteDelveStopped:    "delve stopped the target while it read the goroutines (interrupt to detach): %s",
	model.NoteDelveCut:        "read the first %s goroutines of %s (the bound on goroutines per dump)",
	model.NoteDelveErr:        "%s",
	model.NoteSigquitUsed:     "goroutines from one SIGQUIT dump after the last sample: the target was killed by it, as --sigquit allowed",

	model.NotePyTorn:             "py-spy read some stacks without pausing the target (--nonblocking; a stack may be torn): %s",
	model.NotePyByStack:          "py-spy gave threads no OS thread id (Python 3.10 or older, unpaused or in another PID namespace): they were joined to the kernel's by their pthread_t, which lies at the top of each thread's stack (the main thread's by elimination)",
	model.NotePyUnjoined:         "py-spy gave a thread (%s) no OS thread id that matches the process's threads (Python 3.10 or older with --no-stop?): its stack is not joined to CPU and kernel state",
	model.NotePyUnjoinedNS:       "py-spy gave a thread (%s) no OS thread id (it gives none for Python 3.10 or older in another PID namespace): its stack is not joined to CPU and kernel state",
	model.NoteJavaNoCounters:     "no JVM counters (GC and safepoint time): %s",
	model.NoteJavaVirtual:        "%s virtual threads read from the JVM's JSON thread dump on the last sample (they are in no text dump, and no OS thread is theirs: their tids are stand-ins, and they have no kernel evidence)",
	model.NoteJavaAttachStart:    "the JVM's attach listener was started for this run (an attach file and a SIGQUIT, which this JVM catches)",
	model.NoteJavaAttachAsUser:   "the JVM answered its attach socket only as its own user (uid %s, gid %s), as JDK 8 does",
	model.NoteJavaReused:         "%s of %s samples took no thread dump: no thread with a Java stack had run since the previous dump (the same CPU time and context switches, or in the deadlock the JVM reported), so their stacks are that dump's",
	model.NoteJavaSafepoint:      "each Java thread dump is a safepoint: the longest took %s ms, an upper bound of the JVM's pause",
	model.NoteJavaSafepointShort: "each Java thread dump is a safepoint: the longest took under 1 ms, an upper bound of the JVM's pause",
	model.NoteJavaUnjoined:       "%s Java thread dumps gave no thread a Linux tid that matched",

	model.NoteDumpTooBig:      "%s: larger than %s MiB: only its first %[2]s MiB were read",
	model.NoteDumpTooMany:     "%s: more than %s dumps: the rest were not read",
	model.NoteDumpTooManyN:    "%s: more than %s dumps: the %s after them were not read",
	model.NoteDumpLongLines:   "%s: %s lines longer than 1 MiB were skipped unread",
	model.NoteDumpTruncated:   "%s is truncated; it was read as far as it goes",
	model.NoteDumpExcerptJava: "%s has no \"Full thread dump\" header: an excerpt, so what it does not show proves nothing",
	model.NoteDumpNoMain:      "%s: %s has no goroutine 1, which every whole dump of a running program has: an excerpt, so what it does not show proves nothing",
	model.NoteDumpGoroutines:  "more goroutines than hangdoc keeps (%s in all, %s with stacks or waits of their own): %s more were counted, not read",
	model.NoteDumpDebug1:      "%s is a pprof goroutine?debug=1 profile, which counts stacks without goroutine ids or states: skipped; fetch goroutine?debug=2 instead",
	model.NoteDumpFatal:       "%s says: fatal error: %s",
	model.NoteDumpPanic:       "%s says: panic: %s",
	model.NoteDumpSays:        "%s says: %s",
	model.NoteDumpBadHeaders:  "%s: %s goroutine headers in a form hangdoc does not know were not read (the first: %s): those goroutines are missing",
	model.NoteDumpRepeats:     "%s: GOTRACEBACK=crash printed %s goroutines again in later sections: each was read once",
}

// NoteText words a note. A kind this hangdoc has no words for (a newer
// recording's), or a note whose values do not fit its words, is said as
// its kind and values: never lost, never a format error.
func NoteText(n model.Note) string {
	f, ok := noteWords[n.Kind]
	if !ok || noteArity(f) != len(n.Args) {
		if len(n.Args) == 0 {
			return string(n.Kind)
		}
		return string(n.Kind) + ": " + strings.Join(n.Args, "; ")
	}
	args := make([]any, len(n.Args))
	for i, a := range n.Args {
		args[i] = a
	}
	return fmt.Sprintf(f, args...)
}

// noteArity is how many values a note's words take: the count of its %s
// verbs, or the highest %[N]s index.
func noteArity(format string) int {
	n, pos := 0, 0
	for i := 0; i < len(format)-1; i++ {
		if format[i] != '%' {
			continue
		}
		switch c := format[i+1]; {
		case c == '%':
			i++
		case c == 's':
			pos++
			n = max(n, pos)
		case c == '[':
			j := strings.IndexByte(format[i:], ']')
			if j < 0 {
				return -1
			}
			k, err := strconv.Atoi(format[i+2 : i+j])
			if err != nil {
				return -1
			}
			pos = k
			n = max(n, pos)
		}
	}
	return n
}

// NoteTexts words notes, in order.
func NoteTexts(notes []model.Note) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = NoteText(n)
	}
	return out
}
