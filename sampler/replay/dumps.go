package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/hangdoc/hangdoc/internal/strhash"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/goroutines"
	"github.com/hangdoc/hangdoc/sampler/java"
	"github.com/hangdoc/hangdoc/sampler/python"
)

// DumpOptions say which dumps to read and where to find their sources.
type DumpOptions struct {
	// Paths are the files to read, in time order; "-" is Stdin.
	Paths   []string
	Stdin   io.Reader
	Version string
	// ReadSource reads a source file a frame names, for the classifier
	// to find the locks its frames hold; nil reads this machine's file by
	// its path.
	ReadSource func(path string) ([]string, error)
}

// The bounds that keep any input, however long or strange, to a bounded
// amount of memory. A goroutine dump is streamed: what is kept is one
// reading per distinct goroutine (its stack shared with every goroutine
// that has the same one) and an id per twin, up to maxGoroutines in all
// and maxReadings distinct; a Python dump is read whole, up to
// maxPythonBytes.
const (
	sniffBytes     = 1 << 20
	maxLine        = 1 << 20
	maxPythonBytes = 64 << 20
)

// Variables, for the tests to lower.
var (
	maxSamples    = 1000
	maxGoroutines = 2_000_000
	maxReadings   = 200_000
)

// ErrNotText is returned for an input that holds binary data, not a dump.
var ErrNotText = errors.New("not text")

// Dumps reads stack dumps from files ("-" is stdin) and records them as
// samples, in order: see ReadDumps.
func Dumps(paths []string, stdin io.Reader, version string) (model.Recording, error) {
	return ReadDumps(context.Background(), DumpOptions{Paths: paths, Stdin: stdin, Version: version})
}

// ReadDumps reads stack dumps and records them as samples, in order: one
// dump is one snapshot, several (in one file or several) are snapshots in
// time, compared like live samples (what moved, what did not). It reads
// Go goroutine dumps (every producer the goroutines package knows) and
// py-spy's text and JSON dumps, CPython's faulthandler dumps and printed
// sys._current_frames(); a gzipped file is read through. There is no
// kernel evidence in a file: CPU, wchan and syscalls are unknown, and
// only py-spy's active flag says anything of a thread's CPU.
//
// py-spy --subprocesses prints one moment of several processes: the first
// is the target, the others its peers (rec.Peers), each with a sample of
// the same moment, as a live run records the processes its waits lead to.
//
// When ctx is done before the input ends (a FIFO or a terminal that never
// closes, a file too long to read in the time), what was read is
// recorded and the recording is marked partial.
func ReadDumps(ctx context.Context, o DumpOptions) (model.Recording, error) {
	r := &dumpReader{
		ctx: ctx, o: o,
		rec: model.Recording{
			HangdocVersion: o.Version,
			Host:           sampler.DescribeHost(),
			Samples:        []model.Sample{},
		},
		tids:  map[int]map[string]int{},
		peers: map[int]int{},
		depth: map[int]int{},
	}
	for _, path := range o.Paths {
		if err := r.file(path); err != nil {
			return r.rec, err
		}
		if r.rec.PartialReason != "" {
			break
		}
	}
	if r.replayed {
		// A live run's evidence, classified again as it was: nothing is
		// added to it, so the report is the live run's.
		return r.rec, nil
	}
	rec := &r.rec
	if len(rec.Samples) == 0 {
		if rec.PartialReason != "" {
			return *rec, fmt.Errorf("%s: no complete goroutine or thread read before %s", joinPaths(o.Paths), rec.PartialReason)
		}
		return *rec, fmt.Errorf("%s: no goroutine or thread in the dumps", joinPaths(o.Paths))
	}
	rec.Target.Cmdline = fmt.Sprintf("(%s)", joinPaths(o.Paths))
	rec.Requested = len(rec.Samples)
	for i := range rec.Samples {
		rec.Samples[i].PID = rec.Target.PID
	}
	read := o.ReadSource
	if read == nil {
		read = sampler.ReadLocalSource
	}
	if lib := pythonLib(rec.Target); lib != "" {
		read = withStdlib(read, lib)
	}
	last := rec.Samples[len(rec.Samples)-1]
	if r.stacks != nil {
		// One frame of each file the stacks name, not every goroutine's
		// frames: they say the same.
		last = model.Sample{Goroutines: []model.Goroutine{{Stack: r.stacks.files}}}
	}
	if rec.Target.Runtime == model.RuntimeJava {
		// A JVM dump names a class's source file by its name alone, and
		// the rules read no Java source.
		last = model.Sample{}
	}
	var notes []model.Note
	var cut error
	rec.Sources, notes, cut = sampler.ReadSourcesContext(r.ctx, []model.Sample{last}, read)
	rec.Notes = append(rec.Notes, notes...)
	if cut != nil && rec.PartialReason == "" {
		rec.PartialReason = r.stopped() + " while reading the source files the frames name: the report is of the dumps, with the sources read by then"
	}
	sampler.AddGoStdSources(rec)
	return *rec, nil
}

// dumpReader builds one recording from many inputs.
type dumpReader struct {
	ctx context.Context
	o   DumpOptions
	rec model.Recording
	// tids matches Python threads across dumps, per process.
	tids map[int]map[string]int
	// peers indexes rec.Peers by pid; depth is each process's distance
	// from the target in py-spy's process tree.
	peers map[int]int
	depth map[int]int
	// kept counts the goroutines kept, dropped those over maxGoroutines.
	kept, dropped int
	stacks        *stackTab
	// java keeps a JVM's stand-in TIDs across its dumps.
	java *java.Snapshots
	// replayed: the input was a --record recording, now rec.
	replayed bool
}

func (r *dumpReader) note(k model.NoteKind, args ...any) {
	r.rec.Notes = append(r.rec.Notes, model.NewNote(k, args...))
}

// file reads one input into the recording.
func (r *dumpReader) file(path string) error {
	in, saved, closeIn, err := open(r.ctx, path, r.o.Stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	// A read that timed out ends the input: the parsers see it end
	// there, and say so.
	head, err := readHead(in)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errTimedOut) {
		return fmt.Errorf("reading %s: %w", name(path), err)
	}
	if isGzip(head) {
		zr, err := gzip.NewReader(io.MultiReader(bytes.NewReader(head), in))
		if err != nil {
			return fmt.Errorf("reading %s: %w", name(path), err)
		}
		in = zr
		if head, err = readHead(in); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errTimedOut) {
			return fmt.Errorf("reading %s: gunzip: %w", name(path), err)
		}
	}
	if why := binary(head); why != "" {
		return fmt.Errorf("%s: %w (%s): hangdoc analyze reads stack dumps saved as text; a core file needs a debugger (dlv core, gdb)", name(path), ErrNotText, why)
	}
	rest := io.MultiReader(bytes.NewReader(head), in)
	if isRecording(head) {
		return r.recording(path, rest)
	}
	if r.replayed {
		return fmt.Errorf("%s: a recording is analyzed alone, not with dumps", name(path))
	}
	if java.Detect(head) != model.FormatNone {
		return r.javaDumps(path, rest, saved)
	}
	if python.Detect(beforeGo(head)) != model.FormatNone {
		return r.python(path, rest, saved)
	}
	return r.golang(path, rest, saved)
}

// timedOut marks the recording partial: the input did not end in time.
func (r *dumpReader) timedOut(path string) {
	if r.rec.PartialReason != "" {
		return
	}
	r.rec.PartialReason = fmt.Sprintf("%s while reading %s: the report is of what was read by then", r.stopped(), name(path))
}

// stopped says why ctx ended: the timeout, or an interrupt (its cause
// names the signal).
func (r *dumpReader) stopped() string {
	if !errors.Is(r.ctx.Err(), context.Canceled) {
		return "the --timeout ran out"
	}
	if c := context.Cause(r.ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c.Error()
	}
	return "interrupted"
}

func name(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

// readHead reads the start of in, up to sniffBytes, to tell what it is.
func readHead(in io.Reader) ([]byte, error) {
	b := make([]byte, sniffBytes)
	n, err := io.ReadFull(in, b)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return b[:n], err
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// binary says why b is not text, or "" when it is: text has no NUL bytes,
// and few bytes that are neither UTF-8 nor the control characters
// terminals and logs use.
func binary(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return fmt.Sprintf("a NUL byte at offset %d", i)
	}
	odd := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b && c != '\b' && c != 0x1c {
				odd++
			}
			i++
			continue
		}
		rr, size := utf8.DecodeRune(b[i:])
		if rr == utf8.RuneError && size == 1 && len(b)-i >= utf8.UTFMax {
			odd++
		}
		i += size
	}
	if odd > 16 && odd*10 > len(b) {
		return fmt.Sprintf("%d of its first %d bytes are neither text nor UTF-8", odd, len(b))
	}
	return ""
}

// beforeGo is the part of b before its first goroutine header: a Python
// dump is one whose distinctive lines come before any.
func beforeGo(b []byte) []byte {
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte("goroutine "))
		if i < 0 {
			return b
		}
		at := off + i + len("goroutine ")
		if at < len(b) && b[at] >= '0' && b[at] <= '9' {
			if eol := bytes.IndexByte(b[at:], '\n'); eol < 0 || bytes.Contains(b[at:at+eol], []byte(" [")) {
				return b[:off+i]
			}
		}
		off = at
	}
}

// ---- Go ----

// golang streams the goroutine dumps of one input into samples.
func (r *dumpReader) golang(path string, in io.Reader, saved time.Time) error {
	if r.rec.Target.Runtime == model.RuntimePython {
		return fmt.Errorf("%s: a Go goroutine dump after Python dumps: analyze one program's dumps at a time", name(path))
	}
	if r.stacks == nil {
		r.stacks = newStackTab()
	}
	first := len(r.rec.Samples)
	// Each dump's goroutines go to a sample of its own as the parser
	// hands them out; a dump past maxSamples is counted, not kept.
	index := map[int]int{} // the parser's dump → sample, -1 for one not kept
	skipped := 0
	// What makes a sample an excerpt: goroutine 1 never seen, goroutines
	// read but not kept, how many were read.
	withMain, cut, read := map[int]bool{}, map[int]bool{}, map[int]int{}
	dumps, err := goroutines.ParseView(in, func(dump int, g *goroutines.Goroutine) {
		if g.ID == 0 {
			// g0, an M's scheduler stack (SIGQUIT and crash dumps): not a
			// goroutine of the program.
			return
		}
		i, ok := index[dump]
		if !ok {
			i = -1
			if len(r.rec.Samples) < maxSamples {
				i = len(r.rec.Samples)
				at := saved.Add(time.Duration(i) * time.Second)
				r.rec.Samples = append(r.rec.Samples, model.Sample{Time: at.UTC(), Threads: []model.Thread{}, Goroutines: []model.Goroutine{}})
			} else {
				skipped++
			}
			index[dump] = i
		}
		if i < 0 {
			return
		}
		withMain[i] = withMain[i] || g.ID == 1
		read[i]++
		if r.kept >= maxGoroutines || !r.stacks.add(&r.rec.Samples[i], i, g, r.stacks.distinct < maxReadings) {
			r.dropped++
			cut[i] = true
			return
		}
		r.kept++
	})
	timedOut := errors.Is(err, errTimedOut)
	switch {
	case errors.Is(err, goroutines.ErrNoDump):
		return fmt.Errorf("%s: no stack dump found: %s", name(path), whatAnalyzeReads)
	case timedOut:
		r.timedOut(path)
	case err != nil:
		return fmt.Errorf("%s: %w", name(path), err)
	}
	r.rec.Target.Runtime = model.RuntimeGo
	for n, d := range dumps {
		r.goNotes(path, d, len(dumps) > 1, n)
		if i, ok := index[n]; ok && i >= 0 {
			r.rec.Samples[i].StackSource, r.rec.Samples[i].Message = d.Producer, d.Message
			r.rec.Samples[i].Excerpt = excerpt(d, withMain[i], cut[i] || timedOut && n == len(dumps)-1, read[i])
			if !withMain[i] && !d.Truncated {
				r.note(model.NoteDumpNoMain, name(path), dumpName(len(dumps) > 1, n))
			}
			r.rec.StackSource = d.Producer
		}
	}
	if skipped > 0 {
		r.note(model.NoteDumpTooManyN, name(path), maxSamples, skipped)
	}
	if r.dropped > 0 {
		r.note(model.NoteDumpGoroutines, maxGoroutines, maxReadings, r.dropped)
		r.dropped = 0
	}
	if len(r.rec.Samples) > first || timedOut {
		return nil
	}
	for _, d := range dumps {
		if d.BadHeaders > 0 {
			return fmt.Errorf("%s: no goroutine could be read: %d goroutine headers in a form hangdoc does not know (the first: %q)", name(path), d.BadHeaders, d.FirstBad)
		}
	}
	if dumps[0].Aggregated {
		return fmt.Errorf("%s: only pprof goroutine?debug=1 profiles, which count stacks without ids or states: fetch /debug/pprof/goroutine?debug=2 instead", name(path))
	}
	return fmt.Errorf("%s: no goroutine in the dumps", name(path))
}

// excerpt reports a dump that may not hold every goroutine of its
// program: cut short, with goroutines unread (headers in an unknown form,
// lines too long) or not kept, without goroutine 1 (every whole dump of a
// live program has it: a paste of some records does not), or a panic's
// with one goroutine (GOTRACEBACK=single, the default, prints only the
// panicking one).
func excerpt(d goroutines.Dump, withMain, cut bool, read int) bool {
	return d.Truncated || d.BadHeaders > 0 || d.LongLines > 0 || cut || !withMain ||
		d.Producer == goroutines.ProducerPanic && read == 1
}

// whatAnalyzeReads ends the error for an input that holds no dump.
const whatAnalyzeReads = "hangdoc analyze reads Go goroutine dumps (SIGQUIT, panic, go test timeout, pprof goroutine?debug=2, runtime.Stack), Python dumps (py-spy text or JSON, faulthandler, sys._current_frames()) and JVM thread dumps (jstack, jcmd Thread.print, jcmd Thread.dump_to_file -format=json)"

// dumpName names one dump of a file for a note: "the dump", "dump 2".
func dumpName(several bool, n int) string {
	if several {
		return fmt.Sprintf("dump %d", n+1)
	}
	return "the dump"
}

// goNotes says what a Go dump's reading left out or found odd.
func (r *dumpReader) goNotes(path string, d goroutines.Dump, several bool, n int) {
	which := fmt.Sprintf("%s: %s", name(path), dumpName(several, n))
	if d.Aggregated {
		r.note(model.NoteDumpDebug1, which)
		return
	}
	switch {
	case d.Message == "" || d.Producer == goroutines.ProducerSIGQUIT:
	case d.Producer == goroutines.ProducerFatal && !strings.HasPrefix(d.Message, "SIG"):
		r.note(model.NoteDumpFatal, which, d.Message)
	case d.Producer == goroutines.ProducerPanic || d.Producer == goroutines.ProducerTestTimeout:
		r.note(model.NoteDumpPanic, which, d.Message)
	default:
		r.note(model.NoteDumpSays, which, d.Message)
	}
	if d.Truncated {
		r.note(model.NoteDumpTruncated, which)
	}
	if d.BadHeaders > 0 {
		r.note(model.NoteDumpBadHeaders, which, d.BadHeaders, strconv.Quote(d.FirstBad))
	}
	if d.Repeats > 0 {
		r.note(model.NoteDumpRepeats, which, d.Repeats)
	}
	if d.LongLines > 0 {
		r.note(model.NoteDumpLongLines, which, d.LongLines)
	}
}

// stackTab interns what goroutines of a dump share: their stacks (with the
// argument words), their creators' frames; and a goroutine that reads
// exactly like one before it in its sample is recorded as that one's twin
// (model.Goroutine.Twins). A pile of goroutines parked at one place costs
// one reading and an id each, however many there are.
type stackTab struct {
	stacks  map[uint64][][]model.Frame
	created map[model.Frame]*model.Frame
	scratch []model.Frame
	// readings finds a reading equal to a goroutine's in its sample
	// (sample is the one readings is of).
	readings map[twinKey]int
	sample   int
	distinct int // readings kept, in all samples
	// files is one frame of each file the stacks name, for the sources.
	files []model.Frame
	seen  map[string]bool
}

// twinKey is what twins share: all but the id, the stack and the
// creator's frame by their interned copies.
type twinKey struct {
	state   string
	minutes int
	locked  bool
	stack   *model.Frame
	frames  int
	created *model.Frame
	creator int64
	labels  string
}

// add records g in sample s (the recording's sample i): as a twin of an
// equal reading, or as a reading of its own if more are allowed; it
// reports whether it kept g.
func (t *stackTab) add(s *model.Sample, i int, g *goroutines.Goroutine, more bool) bool {
	if t.readings == nil || t.sample != i {
		t.readings, t.sample = map[twinKey]int{}, i
	}
	m := t.goroutine(g)
	key := twinKey{state: m.State, minutes: m.WaitMinutes, locked: m.LockedToThread, frames: len(m.Stack), created: m.CreatedBy, creator: m.CreatorID}
	if len(m.Stack) > 0 {
		key.stack = &m.Stack[0]
	}
	if m.Labels != nil {
		keys := make([]string, 0, len(m.Labels))
		for k, v := range m.Labels {
			keys = append(keys, strconv.Quote(k)+"="+strconv.Quote(v))
		}
		slices.Sort(keys)
		key.labels = strings.Join(keys, ",")
	}
	if j, ok := t.readings[key]; ok {
		s.Goroutines[j].Twins = append(s.Goroutines[j].Twins, m.ID)
		return true
	}
	if !more {
		return false
	}
	t.readings[key] = len(s.Goroutines)
	s.Goroutines = append(s.Goroutines, m)
	t.distinct++
	return true
}

func newStackTab() *stackTab {
	return &stackTab{stacks: map[uint64][][]model.Frame{}, created: map[model.Frame]*model.Frame{}, seen: map[string]bool{}}
}

// goroutine converts a goroutine the parser handed out (and will reuse)
// into one the recording keeps.
func (t *stackTab) goroutine(g *goroutines.Goroutine) model.Goroutine {
	out := model.Goroutine{
		ID: g.ID, State: g.State, WaitMinutes: g.WaitMinutes, LockedToThread: g.LockedToThread,
		Labels: g.Labels, CreatorID: g.CreatorID, Stack: t.stack(g.Frames),
	}
	if c := g.CreatedBy; c != nil {
		key := model.Frame{Func: c.Func, File: c.File, Line: c.Line}
		p := t.created[key]
		if p == nil {
			p = &key
			t.created[key] = p
		}
		out.CreatedBy = p
	}
	return out
}

// stack returns the interned copy of frames. Func and File are the
// parser's interned strings and are kept as they are; Args alias its
// buffer and are copied once, with the stack.
func (t *stackTab) stack(frames []goroutines.Frame) []model.Frame {
	fs := t.scratch[:0]
	h := strhash.Offset
	for _, f := range frames {
		m := f.Frame
		if f.Args == "(...)" {
			m.Args = ""
		} else {
			m.Args = f.Args
		}
		fs = append(fs, m)
		// Func and File are the parser's interned copies: equal ones are
		// nearly always the same string, hashed by where it is; a
		// collision or a copy the parser made twice only costs a
		// comparison or a second entry, never a wrong stack.
		h = hashPtr(h, m.Func)
		h = hashPtr(h, m.File)
		h = strhash.String(h, m.Args)
		h = strhash.Word(h, uint64(m.Line))
	}
	t.scratch = fs
	for _, s := range t.stacks[h] {
		if slices.Equal(s, fs) {
			return s
		}
	}
	kept := make([]model.Frame, len(fs))
	copy(kept, fs)
	for i := range kept {
		if kept[i].Args != "" {
			kept[i].Args = strings.Clone(kept[i].Args)
		}
		if f := kept[i]; !t.seen[f.File] && !model.GoStd(f.Func) && len(t.files) < 1000 {
			t.seen[f.File] = true
			t.files = append(t.files, model.Frame{Func: f.Func, File: f.File})
		}
	}
	t.stacks[h] = append(t.stacks[h], kept)
	return kept
}

// hashPtr mixes where s is and its length into h.
func hashPtr(h uint64, s string) uint64 {
	h = strhash.Word(h, uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))))
	return strhash.Word(h, uint64(len(s)))
}

// ---- Python ----

// python reads one input's Python dumps into samples: the target's, and
// its peers' for the processes py-spy --subprocesses printed beside it.
func (r *dumpReader) python(path string, in io.Reader, saved time.Time) error {
	if r.rec.Target.Runtime == model.RuntimeGo {
		return fmt.Errorf("%s: a Python dump after Go goroutine dumps: analyze one program's dumps at a time", name(path))
	}
	b, err := io.ReadAll(io.LimitReader(in, maxPythonBytes+1))
	switch {
	case errors.Is(err, errTimedOut):
		r.timedOut(path)
	case err != nil:
		return fmt.Errorf("reading %s: %w", name(path), err)
	}
	if len(b) > maxPythonBytes {
		b = b[:maxPythonBytes]
		r.note(model.NoteDumpTooBig, name(path), maxPythonBytes>>20)
	}
	b, long := dropLongLines(b)
	if long > 0 {
		r.note(model.NoteDumpLongLines, name(path), long)
	}
	dumps, err := python.Parse(b)
	if errors.Is(err, python.ErrNoDump) {
		return fmt.Errorf("%s: no stack dump found: %s", name(path), whatAnalyzeReads)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name(path), err)
	}
	r.rec.Target.Runtime = model.RuntimePython
	var at time.Time
	for _, d := range dumps {
		if d.Truncated {
			r.note(model.NoteDumpTruncated, name(path)+": the dump")
		}
		if d.Python != "" && r.rec.Target.RuntimeVersion == "" {
			r.rec.Target.RuntimeVersion = d.Python
		}
		if d.Interpreter != "" && r.rec.Target.Exe == "" {
			r.rec.Target.Exe = d.Interpreter
		}
		if d.Parent != 0 && len(r.rec.Samples) > 0 {
			// Another process of the same moment (py-spy --subprocesses).
			r.peer(d, at)
			continue
		}
		if len(r.rec.Samples) >= maxSamples {
			r.note(model.NoteDumpTooMany, name(path), maxSamples)
			break
		}
		if d.PID != 0 {
			r.rec.Target.PID = d.PID
		}
		// Dumps in one file a second apart, from when the file was saved:
		// what a file does not say, the report does not invent beyond that.
		at = saved.Add(time.Duration(len(r.rec.Samples)) * time.Second)
		r.depth[d.PID] = 0
		r.rec.StackSource = d.Format
		r.rec.Samples = append(r.rec.Samples, r.snapshot(d, at))
	}
	return nil
}

// peer adds a dump of another process of the moment at to rec.Peers.
func (r *dumpReader) peer(d python.Dump, at time.Time) {
	depth := 1
	if pd, ok := r.depth[d.Parent]; ok {
		depth = pd + 1
	}
	r.depth[d.PID] = depth
	i, ok := r.peers[d.PID]
	if !ok {
		i = len(r.rec.Peers)
		r.peers[d.PID] = i
		r.rec.Peers = append(r.rec.Peers, model.Process{PID: d.PID, Cmdline: d.Command, Depth: depth})
	}
	s := r.snapshot(d, at)
	s.PID = d.PID
	r.rec.Peers[i].Samples = append(r.rec.Peers[i].Samples, s)
}

// dropLongLines removes the lines of b longer than maxLine.
func dropLongLines(b []byte) ([]byte, int) {
	long := 0
	var out []byte
	for off := 0; off < len(b); {
		end := bytes.IndexByte(b[off:], '\n')
		next := off + end + 1
		if end < 0 {
			end, next = len(b)-off, len(b)
		}
		if end > maxLine {
			if out == nil {
				out = append(make([]byte, 0, len(b)), b[:off]...)
			}
			long++
		} else if out != nil {
			out = append(out, b[off:next]...)
		}
		off = next
	}
	if out == nil {
		return b, 0
	}
	return out, long
}

// snapshot turns one dump into a sample. Threads are matched across dumps
// by their OS thread id, else their Python ident, else their name; a
// thread with no OS id is given a small stand-in TID, the same in every
// snapshot, and is named by its ident when the dump gives no name.
func (r *dumpReader) snapshot(d python.Dump, at time.Time) model.Sample {
	tids := r.tids[d.PID]
	if tids == nil {
		tids = map[string]int{}
		r.tids[d.PID] = tids
	}
	s := model.Sample{Time: at.UTC(), PID: d.PID, Threads: []model.Thread{}, StackSource: d.Format}
	pyspy := d.Format == model.FormatPySpyText || d.Format == model.FormatPySpyJSON
	for n, t := range d.Threads {
		key := "name:" + t.Name
		switch {
		case t.NativeID > 0:
			key = "tid:" + strconv.Itoa(t.NativeID)
		case t.Ident > 0:
			key = "ident:" + strconv.FormatUint(t.Ident, 16)
		case t.Name == "":
			key = "index:" + strconv.Itoa(n)
		}
		tid, ok := tids[key]
		if !ok {
			tid = t.NativeID
			if tid == 0 {
				tid = len(tids) + 1
			}
			tids[key] = tid
		}
		name := t.Name
		switch {
		case name != "":
		case t.Ident != 0 && d.Format == model.FormatFaulthandler:
			name = fmt.Sprintf("0x%016x", t.Ident) // as faulthandler prints it
		case t.Ident != 0:
			name = fmt.Sprintf("0x%x", t.Ident)
		default:
			name = fmt.Sprintf("thread-%d", tid)
		}
		s.Threads = append(s.Threads, model.Thread{
			TID: tid, Name: name, Stack: t.Frames, Vars: t.Vars,
			Syscall: model.Syscall{Unknown: true, Nr: -1},
			Python: &model.PythonThread{
				ThreadName: t.Name, OwnsGIL: t.OwnsGIL, Active: t.Active, Ident: t.Ident,
				// py-spy prints the TID when it could read the OS thread;
				// the pthread_t when it could not, and then its active
				// flag is a default.
				ActiveRead: pyspy && t.NativeID > 0,
			},
		})
	}
	return s
}

// ---- inputs ----

// open opens a dump and says when it was saved (now, for a stream). Every
// read of the returned reader gives up when ctx is done.
func open(ctx context.Context, path string, stdin io.Reader) (io.Reader, time.Time, func(), error) {
	if path == "-" {
		if stdin == nil {
			return nil, time.Time{}, nil, errors.New("reading standard input: there is none")
		}
		return &ctxReader{ctx: ctx, r: stdin, async: true}, time.Now(), func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, nil, fmt.Errorf("reading the dump: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, time.Time{}, nil, fmt.Errorf("reading the dump: %w", err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, time.Time{}, nil, fmt.Errorf("reading the dump: %s is a directory: give the dump files in it", path)
	}
	saved := time.Now()
	if fi.Mode().IsRegular() {
		saved = fi.ModTime()
	}
	// A FIFO, a terminal or a device may never end: its reads are waited
	// for on the side, so that ctx can end them.
	return &ctxReader{ctx: ctx, r: f, async: !fi.Mode().IsRegular()}, saved, func() { f.Close() }, nil
}

// errTimedOut is a read given up because its context was done.
var errTimedOut = errors.New("reading timed out")

// ctxReader gives up reading when ctx is done. A regular file's reads
// return promptly and are only checked between; any other's (a FIFO, a
// terminal, stdin) are made by a goroutine of its own, which is left
// blocked if ctx ends first: the process is about to report and exit.
type ctxReader struct {
	ctx   context.Context
	r     io.Reader
	async bool
	res   chan readResult
	buf   []byte
	data  []byte // read and not yet returned
}

type readResult struct {
	n   int
	err error
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if len(c.data) > 0 {
		// What was read before the context ended is handed out first.
		n := copy(p, c.data)
		c.data = c.data[n:]
		return n, nil
	}
	if c.ctx.Err() != nil {
		return 0, errTimedOut
	}
	if !c.async {
		return c.r.Read(p)
	}
	if c.res == nil {
		c.res = make(chan readResult, 1)
		c.buf = make([]byte, 64<<10)
	}
	// The goroutine gets its reader, buffer and channel as values: after a
	// timeout the fields change under it.
	r, buf, out := c.r, c.buf, c.res
	go func() {
		n, err := r.Read(buf)
		out <- readResult{n, err}
	}()
	var res readResult
	select {
	case res = <-c.res:
	case <-c.ctx.Done():
		select {
		case res = <-c.res: // it came in the same instant: keep it
		default:
			c.async = false // the goroutine still owns buf: never read again
			c.r = errReader{}
			return 0, errTimedOut
		}
	}
	n := copy(p, c.buf[:res.n])
	c.data = c.buf[n:res.n]
	if len(c.data) > 0 && res.err != nil {
		// Hand out the rest first; the error comes with the next read.
		return n, nil
	}
	return n, res.err
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errTimedOut }

func joinPaths(paths []string) string {
	if len(paths) == 1 {
		return paths[0]
	}
	return fmt.Sprintf("%s … %s, %d files", paths[0], paths[len(paths)-1], len(paths))
}

// pythonLib is the standard library's directory of the interpreter a
// Python dump names (py-spy's header: "Python v3.11.7
// (/opt/py/bin/python3.11)" → /opt/py/lib/python3.11), "" when it does
// not name one.
func pythonLib(t model.Target) string {
	if t.Runtime != model.RuntimePython || !filepath.IsAbs(t.Exe) {
		return ""
	}
	parts := strings.SplitN(t.RuntimeVersion, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return filepath.Join(filepath.Dir(filepath.Dir(t.Exe)), "lib", "python"+parts[0]+"."+parts[1])
}

// withStdlib reads a file read does not find, named by a relative path
// (py-spy names the standard library's files so: "logging/__init__.py"),
// from the interpreter's standard library on this machine, where the
// library's own locks are read (a logging handler's, a queue's).
func withStdlib(read func(string) ([]string, error), lib string) func(string) ([]string, error) {
	return func(path string) ([]string, error) {
		lines, err := read(path)
		if err == nil || filepath.IsAbs(path) || strings.HasPrefix(path, "..") {
			return lines, err
		}
		if l, lerr := read(filepath.Join(lib, path)); lerr == nil {
			return l, nil
		}
		return lines, err
	}
}
