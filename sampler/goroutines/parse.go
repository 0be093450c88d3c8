package goroutines

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/hangdoc/hangdoc/model"
)

// Producers, as Dump.Producer names them.
const (
	ProducerSIGQUIT     = model.GoSigquit     // kill -QUIT: "SIGQUIT: quit" preamble, runtime frames
	ProducerPanic       = model.GoPanic       // unrecovered panic
	ProducerFatal       = model.GoFatal       // "fatal error: …" or a fatal signal other than SIGQUIT
	ProducerTestTimeout = model.GoTestTimeout // go test -timeout expiry
	ProducerPprofDebug2 = model.GoPprofDebug2 // /debug/pprof/goroutine?debug=2
	ProducerPprofDebug1 = model.GoPprofDebug1 // /debug/pprof/goroutine?debug=1: Aggregated
	ProducerStack       = model.GoStack       // runtime.Stack(buf, true) and the like
	ProducerUnknown     = model.GoUnknown     // goroutine records with nothing to say who printed them
)

// ErrNoDump is returned when the input holds nothing recognisable as a
// goroutine dump.
var ErrNoDump = errors.New("no goroutine dump found")

// Dump is one goroutine dump: one SIGQUIT, panic, profile or Stack call.
type Dump struct {
	Producer   model.Format // one of the Producer constants
	Goroutines []Goroutine
	// Aggregated: a pprof debug=1 profile, which has no goroutine ids or
	// states. It is recognised, not parsed into goroutines.
	Aggregated bool
	// Truncated: the input ended inside this dump (mid-record or
	// mid-line); Goroutines holds what parsed up to that point, the last
	// one possibly with a partial stack.
	Truncated bool
	// Message is what the runtime said before the goroutines: a fatal
	// error's text ("all goroutines are asleep - deadlock!"), a panic's
	// value, a signal's name; "" for none.
	Message string
	// BadHeaders counts the lines that start like a goroutine header
	// ("goroutine 12 ") but could not be read, and FirstBad is the first
	// of them: those goroutines are missing, not silently dropped.
	BadHeaders int
	FirstBad   string
	// Repeats counts the goroutines a GOTRACEBACK=crash dump printed
	// again in a later M's section: read once, the repeats skipped.
	Repeats int
	// LongLines counts the lines longer than 1 MiB, skipped unread.
	LongLines int
}

// RuntimeDeadlock is the fatal error the Go runtime dies with when no
// goroutine can ever run again.
const RuntimeDeadlock = "all goroutines are asleep - deadlock!"

// Goroutine is one record of a dump.
type Goroutine struct {
	// ID is the goroutine id. 0 is an M's scheduler stack (g0), printed
	// only by SIGQUIT and crash dumps; ids may repeat under
	// GOTRACEBACK=crash.
	ID int64
	// State is the bracket's first part: the wait reason ("chan receive",
	// "sync.Mutex.Lock", "IO wait") or the status word ("running",
	// "runnable", "syscall", "idle"). A transient " (scan)" is dropped;
	// " (durable)" and " (leaked)" are kept.
	State string
	// WaitMinutes is "N minutes", 0 when absent. The GC stamps it, so it
	// is a lower bound and its absence does not mean "just blocked".
	WaitMinutes    int
	LockedToThread bool
	// Labels are the pprof labels of a GODEBUG=tracebacklabels=1 header;
	// nil when none.
	Labels map[string]string
	// Frames innermost first, without ancestor (tracebackancestors)
	// blocks.
	Frames []Frame
	// CreatedBy is the go statement's frame; nil for goroutine 1, system
	// goroutines' absent lines, and records cut before it.
	CreatedBy *Frame
	// CreatorID is the "in goroutine N" of CreatedBy (Go ≥1.21), else 0.
	CreatorID int64
	// ElidedFrames: the runtime left out frames of a deep stack.
	ElidedFrames bool
}

// Frame is one logical frame of a goroutine's stack.
type Frame struct {
	model.Frame

	Args    string // raw argument text with its parentheses: "(0x26ea7240a960, 0x1)"
	Offset  string // "+0x1d"; "" for inlined frames and calls at function entry
	Inlined bool   // printed with "(...)"
}

// Parse reads every goroutine dump in r, in input order. Lines that
// belong to no dump (logs, shell output) are skipped, and log prefixes
// (CRI "2024-05-01T10:00:00.123Z stderr F ", syslog/journald "May 01
// 10:00:00 host app[1]: ") are stripped from lines that are dump lines
// without them. Parse keeps every goroutine; ParseFunc keeps none.
func Parse(r io.Reader) ([]Dump, error) {
	var gs [][]Goroutine
	dumps, err := ParseFunc(r, func(dump int, g Goroutine) {
		for len(gs) <= dump {
			gs = append(gs, nil)
		}
		gs[dump] = append(gs[dump], g)
	})
	for i := range dumps {
		if i < len(gs) {
			dumps[i].Goroutines = gs[i]
		}
	}
	return dumps, err
}

// ParseFunc is Parse that hands each goroutine to fn as soon as its record
// ends, with the index of its dump in the returned slice, instead of
// keeping it: memory stays bounded by the longest record, not the input.
// The returned Dumps carry everything but Goroutines. A read error ends
// parsing; the dumps read so far are returned with it.
func ParseFunc(r io.Reader, fn func(dump int, g Goroutine)) ([]Dump, error) {
	p := &parser{fn: func(dump int, g *Goroutine) { fn(dump, *g) }}
	return p.run(r)
}

// ParseView is ParseFunc without the copy: the Goroutine fn is handed is
// the parser's own and valid only until fn returns. Its Frames, their
// Args and its CreatedBy alias buffers the next record reuses; its
// strings but Args (State, Func, File, Offset, Labels) are the parser's
// interned copies and stay valid. A caller that keeps only what it
// interns (a stack shared by many goroutines) saves copying each record.
func ParseView(r io.Reader, fn func(dump int, g *Goroutine)) ([]Dump, error) {
	p := &parser{fn: fn, view: true}
	return p.run(r)
}

func (p *parser) run(r io.Reader) ([]Dump, error) {
	p.cur, p.names, p.seen = -1, newStrtab(), map[int64]struct{}{}
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, nl, cut, err := readLine(br, &long)
		switch {
		case cut:
			p.longLine()
		case len(line) > 0 || nl:
			p.line(transient(trimCR(line)), nl)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			p.finish(false)
			return p.dumps, fmt.Errorf("reading goroutine dump: %w", err)
		}
	}
	p.finish(true)
	if len(p.dumps) == 0 && p.bad > 0 {
		// Every header was unreadable: say so, rather than that there is
		// no dump.
		p.newDump(ProducerUnknown, false)
	}
	if len(p.dumps) == 0 {
		return nil, fmt.Errorf("parsing goroutine dump: %w", ErrNoDump)
	}
	return p.dumps, nil
}

// transient views a line as a string without copying it. The string
// aliases the reader's buffer and is overwritten by the next read, so it
// lives only for one call of parser.line: whatever a Goroutine keeps from
// it is copied first (into the strtab, parser.args, or by open). Copying
// every line into a string of its own was a fifth of the parse time and
// most of its garbage.
func transient(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// maxLine bounds one line: longer ones (a huge panic value, binary junk)
// are skipped and counted (Dump.LongLines): no dump line is that long.
const maxLine = 1 << 20

// readLine returns the next line, without its "\n". nl reports the
// newline was there; a line without one was cut by the input's end. cut
// reports a line longer than maxLine, read to its end and dropped. The
// line is valid until the next call: it is the reader's own buffer when
// the line fits in it, else *long, where a longer line is put together.
func readLine(br *bufio.Reader, long *[]byte) (line []byte, nl, cut bool, err error) {
	chunk, err := br.ReadSlice('\n')
	switch {
	case err == nil:
		return chunk[:len(chunk)-1], true, false, nil
	case err != bufio.ErrBufferFull:
		return chunk, false, false, err
	}
	buf := append((*long)[:0], chunk...)
	defer func() { *long = buf[:0] }()
	for {
		chunk, err := br.ReadSlice('\n')
		cut = cut || len(buf)+len(chunk) > maxLine+1
		if !cut {
			buf = append(buf, chunk...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case cut:
			return nil, err == nil, true, err
		case err != nil:
			return buf, false, false, err
		}
		return buf[:len(buf)-1], true, false, nil
	}
}

// longLine counts a line too long to read: on the current dump, or the
// next one to begin.
func (p *parser) longLine() {
	if p.cur < 0 {
		p.long++
		return
	}
	p.dumps[p.cur].LongLines++
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// ---- the state machine ----

type parser struct {
	fn    func(int, *Goroutine)
	view  bool // hand fn the parser's own record, not a copy
	dumps []Dump
	cur   int // index of the current dump, -1 before the first
	curN  int // goroutines handed out in the current dump
	// preamble: the current dump was opened by a preamble line; closed:
	// its trailer (register dump) was seen, so a header opens a new one.
	preamble, closed bool

	g           *Goroutine // open record: nil, or &rec
	pending     bool       // a function line waits for its location line
	pendingCrt  bool       // … and it is the created-by line
	pendFrame   Frame      // its Args are in pendArgs
	pendArgs    []byte
	inAncestors bool // inside "[originating from goroutine N]:" blocks

	// The open record is built in buffers reused from record to record,
	// and emit copies it out in two allocations: its frames (with the
	// created-by frame) and the text of their arguments. Appending to
	// Goroutine.Frames and allocating each string on its own made most of
	// the parser's allocations and left up to half of each slice unused.
	rec     Goroutine
	frames  []Frame
	created Frame
	hasCrt  bool
	args    []byte    // the argument text of frames, back to back
	spans   []argSpan // where each frame's Args is in args

	// names interns what a dump repeats: function names, files, offsets,
	// states. A dump of many goroutines holds few distinct ones, so the
	// copy of each is shared.
	names *strtab
	// slot is the slot in names of the open record's last function
	// name, or of its state before its first: its entry says what came
	// after it the last time (see quick).
	slot uint64
	v    parsed // what classify learned of the current line

	// lastCut: the last line had no newline and was no dump line or was
	// inside a record, so the input ended in the middle of it.
	lastCut bool

	// indent is the leading blanks of the open record's header: a dump
	// that a test framework (t.Logf) or a paste indented keeps them on
	// every line, and they are cut before the line is read.
	indent string
	// seen holds the ids of the current dump's goroutines: a repeated id
	// starts a new dump (another runtime.Stack call in the same log), or
	// in a GOTRACEBACK=crash dump is the same goroutine printed again.
	seen map[int64]struct{}
	// separator: the last dump line was "-----", which GOTRACEBACK=crash
	// prints between the sections of one dump; crash: the current dump
	// has such sections, so repeats are skipped.
	separator, crash bool
	// skip: the open record is a repeat in a crash dump, read and
	// dropped.
	skip bool
	// bad counts unreadable headers, long the lines too long to read,
	// seen before any dump began.
	bad, long int
	firstBad  string
}

// location is a location line (without its indentation) and what it
// parsed to.
type location struct {
	text      string
	file, off string
	line      int
}

// argSpan says that frames[frame].Args is args[start:end].
type argSpan struct{ frame, start, end int }

type kind int

const (
	kOther kind = iota
	kBlank
	kHeader
	kBadHeader // "goroutine 12 …" that parseHeader cannot read
	kFunc
	kLocation
	kCreatedBy
	kElided
	kAncestor
	kSignal   // "SIGQUIT: quit"
	kPanic    // "panic: …"
	kFatal    // "fatal error: …"
	kProfile  // "goroutine profile: total N"
	kTrailer  // register dump, "exit status 2", "FAIL\t…"
	kPreamble // "PC=… m=…", "[signal …", "runtime stack:": known, nothing to keep
)

// parsed holds what classify learned from a line. Its strings alias the
// line.
type parsed struct {
	g       Goroutine // kHeader
	frame   Frame     // kFunc, kLocation (Frame.File, Line, Offset), kCreatedBy
	creator int64     // kCreatedBy
	text    string    // kSignal: signal name; kPanic: message
}

// line takes one line, s, which is transient: see transient.
func (p *parser) line(s string, nl bool) {
	raw := s
	if p.indent != "" && strings.HasPrefix(s, p.indent) {
		s = s[len(p.indent):]
	}
	if p.quick(s, nl) {
		return
	}
	v := &p.v
	k := classify(s, v)
	stripped := false
	if k == kOther {
		if rest, ok := stripPrefix(s); ok {
			var v2 parsed
			if k2 := classify(rest, &v2); k2 != kOther {
				k, *v, stripped = k2, v2, true
			}
		}
	}
	if !nl && (k == kBlank || k == kBadHeader) {
		// Trailing spaces cut from a longer line: not a record separator;
		// a header cut short: a cut, not a form to count.
		k = kOther
	}
	// The runtime ends every line with a newline: one without was cut
	// (runtime.Stack's full buffer, an excerpt), unless it closes nothing.
	p.lastCut = !nl && (k == kOther || p.g != nil || k == kHeader || k == kBadHeader)
	if k != kBlank {
		p.separator = p.separator && k == kSignal
	}
	switch k {
	case kBlank:
		p.closeRecord()
	case kHeader:
		p.closeRecord()
		if p.cur < 0 || p.closed || p.dumps[p.cur].Aggregated {
			p.newDump(model.FormatNone, false)
		}
		if id := v.g.ID; id != 0 {
			if _, again := p.seen[id]; again && p.crash {
				p.dumps[p.cur].Repeats++
				p.skip = true
			} else if again {
				// A goroutine of this dump again: the next dump of a log
				// that holds several (runtime.Stack called twice, two
				// pprof fetches appended to one file).
				p.newDump(model.FormatNone, false)
			}
			p.seen[id] = struct{}{}
		}
		if t := trimLeftBlank(raw); stripped {
			p.indent = ""
		} else if len(t) != len(raw)-len(p.indent) {
			p.indent = strings.Clone(raw[:len(raw)-len(t)])
		}
		p.open(v.g)
	case kBadHeader:
		// Its frames belong to no goroutine hangdoc can name: they are
		// skipped with it, and it is counted.
		p.closeRecord()
		if p.cur < 0 {
			if p.bad++; p.bad == 1 {
				p.firstBad = strings.Clone(trimLeftBlank(s))
			}
			return
		}
		d := &p.dumps[p.cur]
		if d.BadHeaders++; d.BadHeaders == 1 {
			d.FirstBad = strings.Clone(trimLeftBlank(s))
		}
	case kFunc:
		if p.g == nil || p.inAncestors {
			return
		}
		fn, slot := p.names.slot(v.frame.Func)
		p.names.tab[slot].isFunc = true
		p.entry().next = uint32(slot)
		p.pend(fn, slot, v.frame.Args)
	case kCreatedBy:
		if p.g == nil || p.inAncestors {
			return
		}
		p.flushPending()
		p.pending, p.pendingCrt = true, true
		var fn string
		fn, p.slot = p.names.slot(v.frame.Func)
		p.pendFrame = Frame{Frame: model.Frame{Func: fn}}
		p.pendArgs = p.pendArgs[:0]
		p.g.CreatorID = v.creator
	case kLocation:
		if p.g == nil || p.inAncestors || !p.pending {
			return
		}
		file, off := p.names.get(v.frame.File), p.names.get(v.frame.Offset)
		p.addFrame(file, v.frame.Line, off)
		// Remember the line for the next time, unless it holds "fp=" (or
		// a cgo "pc="): those differ from goroutine to goroutine, and
		// copying them would only make garbage.
		if t := trimLeftBlank(s); !stripped && strings.IndexByte(t, '=') < 0 {
			if e := p.entry(); e.loc == nil || e.loc.text != t {
				e.loc = &location{text: strings.Clone(t), file: file, off: off, line: v.frame.Line}
			}
		}
	case kElided:
		if p.g != nil && !p.inAncestors {
			p.g.ElidedFrames = true
		}
	case kAncestor:
		if p.g != nil {
			p.dropPending()
			p.inAncestors = true
		}
	case kSignal, kPanic, kFatal, kProfile:
		p.closeRecord()
		if k == kSignal && p.separator && p.cur >= 0 && !p.dumps[p.cur].Aggregated {
			// GOTRACEBACK=crash: after "-----" each M prints a section of
			// its own, "SIGQUIT: quit" again: the same dump goes on.
			p.separator, p.crash, p.closed, p.preamble = false, true, false, true
			return
		}
		producer := ProducerFatal
		switch {
		case k == kSignal && v.text == "SIGQUIT":
			producer = ProducerSIGQUIT
		case k == kPanic && strings.HasPrefix(v.text, "test timed out after "):
			producer = ProducerTestTimeout
		case k == kPanic:
			producer = ProducerPanic
		case k == kProfile:
			producer = ProducerPprofDebug1
		}
		// A preamble continues one that has no goroutines yet ("panic: …"
		// then "[signal …", or "fatal error: …" after a panic message).
		if p.cur >= 0 && p.preamble && p.curN == 0 && !p.closed && !p.dumps[p.cur].Aggregated && k != kProfile {
			if k == kFatal {
				p.dumps[p.cur].Message = strings.Clone(v.text)
			}
			return
		}
		p.newDump(producer, true)
		p.dumps[p.cur].Aggregated = k == kProfile
		if k != kProfile {
			p.dumps[p.cur].Message = strings.Clone(v.text)
		}
	case kTrailer:
		p.closeRecord()
		if p.cur >= 0 && p.curN > 0 {
			p.closed = true
		}
		p.separator = s == "-----"
	case kPreamble:
		p.closeRecord()
	case kOther:
		// Interleaved log lines, unwinder diagnostics, "goroutine running
		// on other thread": skipped without ending the record.
	}
}

func (p *parser) entry() *entry { return &p.names.tab[p.slot] }

// pend makes fn(args) the function waiting for its location line; args
// alias the line.
func (p *parser) pend(fn string, slot uint64, args string) {
	p.flushPending()
	p.pending, p.pendingCrt, p.slot = true, false, slot
	p.pendFrame = Frame{Frame: model.Frame{Func: fn}, Inlined: args == "(...)"}
	p.pendArgs = append(p.pendArgs[:0], args...)
}

// quick takes s, and reports it did, when it is a function or location
// line that repeats what followed the same function (or state) before.
// Most goroutines of a big dump are at call sites that other goroutines
// are also at, so their frames repeat line for line but for the argument
// words: a comparison with what came last time then stands for
// classifying the line, parsing it and interning its strings. It is
// exactly what line would do:
//   - A location line whose text is the one classify took for a location
//     before is the same location.
//   - A line that is N + "(" + text without "(" + ")", where N is the
//     Func of a line classify took for a function (entry.isFunc), is a
//     function line with that Func: N holds no blank, so none of the
//     other kinds' prefixes (each holds a blank, or is "PC=0x", which N
//     would then have started with) or suffixes fits.
func (p *parser) quick(s string, nl bool) bool {
	if p.g == nil || p.inAncestors || s == "" {
		return false
	}
	e := p.entry()
	if s[0] == '\t' || s[0] == ' ' {
		l := e.loc
		if !p.pending || l == nil || trimLeftBlank(s) != l.text {
			return false
		}
		p.addFrame(l.file, l.line, l.off)
	} else {
		next := &p.names.tab[e.next]
		fn := next.s
		if !next.isFunc || len(s) < len(fn)+2 || s[len(fn)] != '(' || s[len(s)-1] != ')' ||
			s[:len(fn)] != fn || strings.IndexByte(s[len(fn)+1:], '(') >= 0 {
			return false
		}
		p.pend(fn, uint64(e.next), s[len(fn):])
	}
	p.lastCut = !nl // as line sets it for a line inside a record
	return true
}

// open starts a record from its header, whose strings alias the line.
func (p *parser) open(h Goroutine) {
	h.State, p.slot = p.names.slot(h.State)
	if h.Labels != nil {
		labels := make(map[string]string, len(h.Labels))
		for k, v := range h.Labels {
			labels[strings.Clone(k)] = strings.Clone(v)
		}
		h.Labels = labels
	}
	p.rec = h
	p.g = &p.rec
	p.frames, p.args, p.spans, p.hasCrt = p.frames[:0], p.args[:0], p.spans[:0], false
}

// addFrame adds the pending frame, at file:line+off, whose Args are in
// pendArgs. It fills pendFrame in place: a Frame is 96 bytes, and
// passing it about by value was a few percent of the parse.
func (p *parser) addFrame(file string, line int, off string) {
	f := &p.pendFrame
	f.File, f.Line, f.Offset = file, line, off
	if p.pendingCrt {
		p.created, p.hasCrt = *f, true
	} else {
		switch a := p.pendArgs; {
		case f.Inlined:
			f.Args = "(...)"
		case len(a) == 2 && a[1] == ')':
			f.Args = "()"
		default:
			p.spans = append(p.spans, argSpan{len(p.frames), len(p.args), len(p.args) + len(a)})
			p.args = append(p.args, a...)
		}
		p.frames = append(p.frames, *f)
	}
	p.pending, p.pendingCrt = false, false
}

func (p *parser) dropPending() { p.pending, p.pendingCrt = false, false }

// flushPending keeps a function line whose location line never came (a
// dump cut or edited there) as a frame without a location: the same
// wherever it happens, mid-record, at a record's end or the input's.
func (p *parser) flushPending() {
	if p.pending {
		p.addFrame("", 0, "")
	}
}

func (p *parser) newDump(producer model.Format, preamble bool) {
	p.dumps = append(p.dumps, Dump{Producer: producer, BadHeaders: p.bad, FirstBad: p.firstBad, LongLines: p.long})
	p.cur, p.curN, p.preamble, p.closed, p.crash = len(p.dumps)-1, 0, preamble, false, false
	p.bad, p.firstBad, p.long = 0, "", 0
	clear(p.seen)
}

// closeRecord ends the open record and hands it out, with a function line
// still waiting for its location as a frame without one.
func (p *parser) closeRecord() {
	if p.g == nil {
		return
	}
	p.flushPending()
	p.emit()
}

// record copies the open record out of the parser's buffers.
func (p *parser) record() Goroutine {
	g := p.rec
	n := len(p.frames)
	if n == 0 && !p.hasCrt {
		return g
	}
	// One allocation for the frames and the created-by frame after them;
	// Frames' capacity ends before it, so an append cannot overwrite it.
	fs := make([]Frame, n, n+1)
	copy(fs, p.frames)
	if p.hasCrt {
		fs = append(fs, p.created)
		g.CreatedBy = &fs[n]
	}
	if n > 0 {
		g.Frames = fs[:n:n]
	}
	if len(p.spans) > 0 {
		text := string(p.args)
		for _, s := range p.spans {
			fs[s.frame].Args = text[s.start:s.end]
		}
	}
	return g
}

// viewRecord is the open record over the parser's buffers: see ParseView.
func (p *parser) viewRecord() Goroutine {
	g := p.rec
	if p.hasCrt {
		g.CreatedBy = &p.created
	}
	if len(p.frames) > 0 {
		g.Frames = p.frames
	}
	if len(p.spans) > 0 {
		text := unsafe.String(unsafe.SliceData(p.args), len(p.args))
		for _, s := range p.spans {
			p.frames[s.frame].Args = text[s.start:s.end]
		}
	}
	return g
}

func (p *parser) emit() {
	if p.skip {
		p.g, p.inAncestors, p.skip = nil, false, false
		return
	}
	var g Goroutine
	if p.view {
		g = p.viewRecord()
	} else {
		g = p.record()
	}
	p.g, p.inAncestors = nil, false
	d := &p.dumps[p.cur]
	if !p.preamble {
		// runtime.Stack and pprof debug=2 put the caller first, running.
		if p.curN == 0 {
			d.Producer = ProducerUnknown
			if g.State == "running" {
				d.Producer = ProducerStack
				for _, f := range g.Frames {
					if strings.HasPrefix(f.Func, "runtime/pprof.writeGoroutineStacks") {
						d.Producer = ProducerPprofDebug2
						break
					}
				}
			}
		}
	}
	p.curN++
	p.fn(p.cur, &g)
}

// finish ends the input. eof: it ended cleanly, so a record left open
// shows whether the dump was cut.
func (p *parser) finish(eof bool) {
	if p.cur < 0 {
		return
	}
	if p.g != nil {
		cut := p.lastCut || p.pending || len(p.frames) == 0 && !p.hasCrt
		if p.pending {
			// The location line never came: keep the function.
			p.addFrame("", 0, "")
		}
		if cut || !eof {
			p.dumps[p.cur].Truncated = true
		}
		p.emit()
		return
	}
	if p.lastCut || !eof {
		p.dumps[p.cur].Truncated = true
	}
}

// strtab interns strings: get returns a copy of s, the same copy as for
// an equal s before unless another string has taken its slot since. It is
// a direct-mapped cache, not a map, so that a dump of a million distinct
// strings costs a fixed table and a copy of each, not a table that grows
// with them; the strings a dump repeats are few and keep their slots.
//
// The table starts small, for the many small dumps, and grows while
// strings keep taking each other's slots, up to 4096 slots.
type strtab struct {
	tab   []entry
	bits  uint // len(tab) is 1<<bits
	added int  // strings copied in since the table last grew
}

// entry is a string and, for a function name (or a state), what followed
// it the last time it was read: see parser.quick. A string that takes
// the slot starts with no hints.
type entry struct {
	s      string
	isFunc bool      // s is the Func of a line classify took for a function
	next   uint32    // the slot of the next function
	loc    *location // the location line after it
}

const minStrtabBits, maxStrtabBits = 6, 12

func newStrtab() *strtab {
	return &strtab{tab: make([]entry, 1<<minStrtabBits), bits: minStrtabBits}
}

func (t *strtab) get(s string) string {
	s, _ = t.slot(s)
	return s
}

// slot is get, also returning the slot of s.
func (t *strtab) slot(s string) (string, uint64) {
	if s == "" {
		return "", 0
	}
	i := strhash(s) >> (64 - t.bits)
	if e := &t.tab[i]; e.s != s {
		if t.added++; t.added > len(t.tab)/2 && t.bits < maxStrtabBits {
			t.grow()
			return t.slot(s)
		}
		*e = entry{s: strings.Clone(s)}
	}
	return t.tab[i].s, i
}

// grow makes the table 4 times larger. Slots the parser holds (its slot,
// entries' next) still index it, though now maybe another string's:
// quick checks what it finds there.
func (t *strtab) grow() {
	old := t.tab
	t.bits += 2
	t.tab, t.added = make([]entry, 1<<t.bits), 0
	for _, e := range old {
		if e.s != "" {
			t.tab[strhash(e.s)>>(64-t.bits)] = e
		}
	}
}

// strhash picks s's slot from its length and 24 of its bytes: the first
// 8, the middle 8 and the last 8, where names and paths that share a
// prefix differ. It is a third of the cost of hashing every byte; a
// collision costs a copy, never a wrong string, since get compares.
// Its top bits are the slot.
func strhash(s string) uint64 {
	n := len(s)
	h := uint64(n)
	if n >= 8 {
		h ^= load64(s) ^ bits.RotateLeft64(load64(s[n/2-4:]), 21) ^ bits.RotateLeft64(load64(s[n-8:]), 42)
	} else {
		for i := 0; i < n; i++ {
			h = h<<8 | uint64(s[i])
		}
	}
	return h * 0x9e3779b97f4a7c15 // Fibonacci hashing: the top bits mix all of h
}

// load64 reads s's first 8 bytes as one little-endian word (the compiler
// makes it one load).
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// ---- line classification ----

// classify says what a line is, into v. Function and location lines are
// told apart by the location's leading TAB (or the spaces a paste left).
//
// Nearly every line of a dump is a function or a location line, so those
// are found without a regexp and with one pass or less over the line;
// the other kinds are tried only when the first byte allows them.
func classify(s string, v *parsed) kind {
	if isBlank(s) {
		return kBlank
	}
	t := trimLeftBlank(s)
	indented := len(t) < len(s)
	if strings.HasPrefix(t, "goroutine ") {
		if g, ok := parseHeader(t); ok {
			v.g = g
			return kHeader
		}
		if strings.HasPrefix(t, "goroutine profile: total ") && !indented {
			return kProfile
		}
		// "goroutine 12 " and a bracket: a header in a form this parser
		// does not know (a newer Go), not prose that mentions a goroutine.
		if rest := t[len("goroutine "):]; len(rest) > 0 && rest[0] >= '0' && rest[0] <= '9' && strings.Contains(rest, " [") {
			return kBadHeader
		}
		return kOther
	}
	if indented {
		if f, ok := parseLocation(t); ok {
			v.frame = f
			return kLocation
		}
		return kOther
	}
	// The prefixes below start with distinct bytes; a line starting with
	// none of them is a function line or nothing.
	switch s[0] {
	case 'c':
		if rest, ok := strings.CutPrefix(s, "created by "); ok {
			return classifyCreatedBy(rest, v)
		}
	case '.':
		if strings.HasPrefix(s, "...") && strings.HasSuffix(s, "elided...") {
			return kElided
		}
	case '[':
		if strings.HasPrefix(s, "[originating from goroutine ") && strings.HasSuffix(s, "]:") {
			return kAncestor
		}
		if strings.HasPrefix(s, "[signal ") {
			return kPreamble
		}
	case 'p':
		if msg, ok := strings.CutPrefix(s, "panic: "); ok {
			v.text = msg
			return kPanic
		}
	case 'f':
		if msg, ok := strings.CutPrefix(s, "fatal error: "); ok {
			v.text = msg
			return kFatal
		}
	case 'S':
		if strings.HasPrefix(s, "SIG") {
			if m := signalRE.FindStringSubmatch(s); m != nil {
				v.text = m[1]
				return kSignal
			}
		}
	case 'P':
		if strings.HasPrefix(s, "PC=0x") {
			return kPreamble
		}
	case '^':
		// A terminal's echo of the Ctrl-\ that sent SIGQUIT, on the
		// line the dump starts on.
		if rest, ok := strings.CutPrefix(s, `^\`); ok && rest != "" {
			return classify(rest, v)
		}
	case 'r', 's', 'i':
		if s == "runtime stack:" || strings.HasPrefix(s, "signal arrived during cgo execution") ||
			strings.HasPrefix(s, "instruction bytes:") {
			return kPreamble
		}
	case 'e', 'F', '-':
		if strings.HasPrefix(s, "exit status ") || strings.HasPrefix(s, "FAIL\t") || s == "-----" {
			return kTrailer
		}
	}
	if f, ok := parseFunc(s); ok {
		v.frame = f
		return kFunc
	}
	// A function line ends with ")", a register line never does.
	if isRegister(s) {
		return kTrailer
	}
	return kOther
}

// isBlank is strings.TrimSpace(s) == "", without the trimming for the
// lines that start with a printable ASCII byte: all dump lines but blank
// and location lines.
func isBlank(s string) bool {
	if s == "" {
		return true
	}
	if c := s[0]; c > ' ' && c < utf8.RuneSelf {
		return false
	}
	return strings.TrimSpace(s) == ""
}

// classifyCreatedBy parses what follows "created by ".
func classifyCreatedBy(fn string, v *parsed) kind {
	fn = strings.TrimSpace(fn)
	v.creator = 0
	if i := strings.Index(fn, " in goroutine "); i >= 0 {
		id, err := strconv.ParseInt(fn[i+len(" in goroutine "):], 10, 64)
		if err != nil {
			return kOther
		}
		fn, v.creator = fn[:i], id
	}
	if fn == "" || strings.IndexByte(fn, ' ') >= 0 || strings.IndexByte(fn, '\t') >= 0 {
		return kOther
	}
	v.frame = Frame{Frame: model.Frame{Func: unescapePath(fn)}}
	return kCreatedBy
}

var signalRE = regexp.MustCompile(`^(SIG[A-Z0-9]+): [a-z]`)

// isRegister matches a register line of a crash dump, as
// `^[a-z][a-z0-9]{0,6} +0x[0-9a-f]+ *$` would ("rax    0xca").
func isRegister(s string) bool {
	i := 0
	for i < len(s) && i < 8 && (s[i] >= 'a' && s[i] <= 'z' || i > 0 && s[i] >= '0' && s[i] <= '9') {
		i++
	}
	if i == 0 || i > 7 || i == len(s) || s[i] != ' ' {
		return false
	}
	s = strings.TrimLeft(s[i:], " ")
	s, ok := strings.CutPrefix(s, "0x")
	if !ok {
		return false
	}
	s = strings.TrimRight(s, " ")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// parseHeader parses "goroutine N [gp=… m=… mp=…] [body]:" (t has no
// leading space). The bracket body runs to the final "]:" since label
// values may hold "]".
func parseHeader(t string) (Goroutine, bool) {
	var g Goroutine
	t = trimRightBlank(t)
	rest, ok := strings.CutPrefix(t, "goroutine ")
	if !ok {
		return g, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	id, err := strconv.ParseInt(rest[:i], 10, 64)
	if err != nil || !strings.HasSuffix(rest, "]:") && !strings.HasSuffix(rest, "}:") {
		return g, false
	}
	g.ID = id
	rest = rest[i:]
	for _, field := range []string{" gp=", " m=", " mp="} {
		if strings.HasPrefix(rest, field) {
			j := strings.IndexByte(rest[1:], ' ')
			if j < 0 {
				return g, false
			}
			rest = rest[1+j:]
		}
	}
	if !strings.HasPrefix(rest, " [") || len(rest) < len(" []:") {
		return g, false
	}
	// No part of the bracket but labels holds a "]": the first one ends
	// it, unless Go 1.26's labels are inside it.
	body := rest[2 : len(rest)-2]
	if end := strings.IndexByte(rest, ']'); end >= 0 && end < len(rest)-2 && !strings.Contains(rest[:end], " labels:{") {
		// Go 1.27: "[chan receive] {request: r4, tenant: \"acme\"}:".
		labels, ok := rest[end+1:], false
		if labels, ok = strings.CutPrefix(labels, " {"); !ok || !strings.HasSuffix(labels, "}:") {
			return g, false
		}
		if g.Labels, ok = parseLabels(labels[:len(labels)-2]); !ok {
			return g, false
		}
		body = rest[2:end]
	} else if i := strings.Index(body, " labels:{"); i >= 0 && strings.HasSuffix(body, "}") {
		// Go 1.26 with GODEBUG=tracebacklabels=1, inside the bracket.
		labels, ok := parseLabels(body[i+len(" labels:{") : len(body)-1])
		if !ok {
			return g, false
		}
		g.Labels, body = labels, body[:i]
	}
	// The state ends at the first ", ": no wait reason holds one.
	state, rest, more := strings.Cut(body, ", ")
	g.State = state
	if strings.Contains(state, " (scan)") {
		g.State = strings.Replace(state, " (scan)", "", 1)
	}
	if g.State == "" {
		return g, false
	}
	for more {
		var part string
		part, rest, more = strings.Cut(rest, ", ")
		switch {
		case strings.HasSuffix(part, " minutes"):
			n, err := strconv.Atoi(strings.TrimSuffix(part, " minutes"))
			if err != nil || n < 0 {
				return g, false
			}
			g.WaitMinutes = n
		case part == "locked to thread":
			g.LockedToThread = true
		}
		// "synctest bubble N" and anything newer: accepted, not kept.
	}
	return g, true
}

// parseLabels parses `"k": "v", "k2": "v2"`: keys and values quoted as
// Go quotes them (Go 1.26), or, from Go 1.27, bare when they hold only
// letters, digits, '.', '/' and '_'.
func parseLabels(s string) (map[string]string, bool) {
	m := map[string]string{}
	for s != "" {
		k, rest, ok := labelPrefix(s)
		if !ok || !strings.HasPrefix(rest, ": ") {
			return nil, false
		}
		v, rest, ok := labelPrefix(rest[2:])
		if !ok {
			return nil, false
		}
		m[k] = v
		s = strings.TrimPrefix(rest, ", ")
		if s == rest && s != "" {
			return nil, false
		}
	}
	if len(m) == 0 {
		return nil, true
	}
	return m, true
}

// labelPrefix reads one label key or value off the front of s: quoted, or
// the bare run of the characters the runtime leaves unquoted.
func labelPrefix(s string) (val, rest string, ok bool) {
	if strings.HasPrefix(s, `"`) {
		return unquotePrefix(s)
	}
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '/' || s[i] == '_') {
		i++
	}
	if i == 0 {
		return "", "", false
	}
	return s[:i], s[i:], true
}

func unquotePrefix(s string) (val, rest string, ok bool) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil || q[0] != '"' {
		return "", "", false
	}
	val, err = strconv.Unquote(q)
	if err != nil {
		return "", "", false
	}
	return val, s[len(q):], true
}

// parseFunc parses "pkg.fn(args)". The arguments are the text after the
// last "(": names hold "(*T)", arguments never hold parentheses.
func parseFunc(s string) (Frame, bool) {
	var f Frame
	if !strings.HasSuffix(s, ")") {
		return f, false
	}
	i := strings.LastIndexByte(s, '(')
	// Two IndexByte calls: strings.ContainsAny builds a set for each call.
	if i <= 0 || strings.IndexByte(s[:i], ' ') >= 0 || strings.IndexByte(s[:i], '\t') >= 0 {
		return f, false
	}
	f.Func, f.Args = unescapePath(s[:i]), s[i:]
	f.Inlined = f.Args == "(...)"
	return f, true
}

// unescapePath decodes the %xx escapes the linker puts in a symbol's
// import path ("gopkg.in/yaml%2ev2.(*decoder).unmarshal": a '.' in the
// last path element), so the name reads as the package is imported.
func unescapePath(fn string) string {
	if strings.IndexByte(fn, '%') < 0 {
		return fn
	}
	b := make([]byte, 0, len(fn))
	for i := 0; i < len(fn); i++ {
		if fn[i] == '%' && i+2 < len(fn) && isHexDigit(fn[i+1]) && isHexDigit(fn[i+2]) {
			b = append(b, unhex(fn[i+1])<<4|unhex(fn[i+2]))
			i += 2
			continue
		}
		b = append(b, fn[i])
	}
	return string(b)
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// parseLocation parses "/path/file.go:123 +0x1d fp=… sp=… pc=…" (t has
// no leading space). The file is split at the last ":" since paths may
// hold one ("C:/…").
func parseLocation(t string) (Frame, bool) {
	var f Frame
	t = trimRightBlank(t)
	// " fp=0x" and " pc=0x" start with a space, and a location line has
	// few, all near its end: looking for them from the first space on
	// finds the same as looking in the whole line, in a few bytes.
	if sp := strings.IndexByte(t, ' '); sp >= 0 && strings.IndexByte(t[sp:], '=') >= 0 {
		if i := strings.Index(t[sp:], " fp=0x"); i >= 0 {
			t = t[:sp+i]
		} else if i := strings.LastIndex(t[sp:], " pc=0x"); i >= 0 { // cgo symbolizer
			t = t[:sp+i]
		}
	}
	// The offset is the hex digits at the end after " +0x". Reading them
	// back from the end finds what strings.LastIndex(t, " +0x") would,
	// without its byte-by-byte search of the whole line.
	j := len(t)
	for j > 0 && isHexDigit(t[j-1]) {
		j--
	}
	if j < len(t) && strings.HasSuffix(t[:j], " +0x") {
		f.Offset, t = t[j-3:], t[:j-4]
	}
	i := strings.LastIndexByte(t, ':')
	if i <= 0 {
		return f, false
	}
	n, err := strconv.Atoi(t[i+1:])
	if err != nil || n < 0 || t[i+1] == '+' || t[i+1] == '-' {
		return f, false
	}
	f.File, f.Line = t[:i], n
	return f, true
}

// trimLeftBlank and trimRightBlank are strings.TrimLeft and TrimRight
// with the cutset " \t", without building the cutset's set for each line.
func trimLeftBlank(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}

func trimRightBlank(s string) string {
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Log prefixes that wrap dump lines: CRI (containerd/kubelet) log lines,
// bare RFC 3339 timestamps, syslog/journald lines, and Go's own log
// package ("2026/12/01 22:55:49.782008 app[12]: ", a supervisor that
// relays a child's stderr through log.Printf).
var prefixREs = []*regexp.Regexp{
	regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? (?:(?:stdout|stderr) [FP] )?`),
	regexp.MustCompile(`^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?: [^\s:]+ [^\s:\[]+(?:\[\d+\])?:)? ?`),
	regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:[^\s:\[]+(?:\[\d+\])?: )?`),
}

// stripPrefix removes a log prefix from s, if it has one.
func stripPrefix(s string) (string, bool) {
	if s == "" || !(s[0] >= '0' && s[0] <= '9' || s[0] >= 'A' && s[0] <= 'Z') {
		return "", false
	}
	for _, re := range prefixREs {
		if loc := re.FindStringIndex(s); loc != nil {
			return s[loc[1]:], true
		}
	}
	return "", false
}
