package goroutines

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/sampler"
)

// Producers, as Dump.Producer names them.
const (
	ProducerSIGQUIT     = "sigquit"      // kill -QUIT: "SIGQUIT: quit" preamble, runtime frames
	ProducerPanic       = "panic"        // unrecovered panic
	ProducerFatal       = "fatal"        // "fatal error: …" or a fatal signal other than SIGQUIT
	ProducerTestTimeout = "test-timeout" // go test -timeout expiry
	ProducerPprofDebug2 = "pprof-debug2" // /debug/pprof/goroutine?debug=2
	ProducerPprofDebug1 = "pprof-debug1" // /debug/pprof/goroutine?debug=1: Aggregated
	ProducerStack       = "stack"        // runtime.Stack(buf, true) and the like
	ProducerUnknown     = "unknown"      // goroutine records with nothing to say who printed them
)

// ErrNoDump is returned when the input holds nothing recognisable as a
// goroutine dump.
var ErrNoDump = errors.New("no goroutine dump found")

// Dump is one goroutine dump: one SIGQUIT, panic, profile or Stack call.
type Dump struct {
	Producer   string // one of the Producer constants
	Goroutines []Goroutine
	// Aggregated: a pprof debug=1 profile, which has no goroutine ids or
	// states. It is recognised, not parsed into goroutines.
	Aggregated bool
	// Truncated: the input ended inside this dump (mid-record or
	// mid-line); Goroutines holds what parsed up to that point, the last
	// one possibly with a partial stack.
	Truncated bool
}

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
	sampler.Frame
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
	p := &parser{fn: fn, cur: -1}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		line, nl, err := readLine(br, buf[:0])
		buf = line
		if len(line) > 0 || nl {
			p.line(string(trimCR(line)), nl)
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
	if len(p.dumps) == 0 {
		return nil, fmt.Errorf("parsing goroutine dump: %w", ErrNoDump)
	}
	return p.dumps, nil
}

// maxLine bounds one line: longer ones (a huge panic value, binary junk)
// are cut and read as non-dump text.
const maxLine = 1 << 20

// readLine appends the next line to buf, without its "\n". nl reports
// the newline was there; a line without one was cut by the input's end.
func readLine(br *bufio.Reader, buf []byte) (line []byte, nl bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) <= maxLine {
			buf = append(buf, chunk...)
		} else if len(buf) < maxLine {
			buf = append(buf, chunk[:maxLine-len(buf)]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return buf, false, err
		}
		if n := len(buf); n > 0 && buf[n-1] == '\n' {
			return buf[:n-1], true, nil
		}
		return buf, true, nil // cut at maxLine
	}
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// ---- the state machine ----

type parser struct {
	fn    func(int, Goroutine)
	dumps []Dump
	cur   int // index of the current dump, -1 before the first
	curN  int // goroutines handed out in the current dump
	// preamble: the current dump was opened by a preamble line; closed:
	// its trailer (register dump) was seen, so a header opens a new one.
	preamble, closed bool

	g           *Goroutine // open record
	pending     bool       // a function line waits for its location line
	pendingCrt  bool       // … and it is the created-by line
	pendFrame   Frame
	inAncestors bool // inside "[originating from goroutine N]:" blocks

	// lastCut: the last line had no newline and was no dump line or was
	// inside a record, so the input ended in the middle of it.
	lastCut bool
}

type kind int

const (
	kOther kind = iota
	kBlank
	kHeader
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

// parsed holds what classify learned from a line.
type parsed struct {
	g       Goroutine // kHeader
	frame   Frame     // kFunc, kLocation (Frame.File, Line, Offset), kCreatedBy
	creator int64     // kCreatedBy
	text    string    // kSignal: signal name; kPanic: message
}

func (p *parser) line(s string, nl bool) {
	k, v := classify(s)
	if k == kOther {
		if rest, ok := stripPrefix(s); ok {
			if k2, v2 := classify(rest); k2 != kOther {
				k, v = k2, v2
			}
		}
	}
	if !nl && k == kBlank {
		// Trailing spaces cut from a longer line: not a record separator.
		k = kOther
	}
	// The runtime ends every line with a newline: one without was cut
	// (runtime.Stack's full buffer, an excerpt), unless it closes nothing.
	p.lastCut = !nl && (k == kOther || p.g != nil || k == kHeader)
	switch k {
	case kBlank:
		p.closeRecord()
	case kHeader:
		p.closeRecord()
		if p.cur < 0 || p.closed || p.dumps[p.cur].Aggregated {
			p.newDump("", false)
		}
		g := v.g
		p.g = &g
	case kFunc:
		if p.g == nil || p.inAncestors {
			return
		}
		p.pending, p.pendingCrt, p.pendFrame = true, false, v.frame
	case kCreatedBy:
		if p.g == nil || p.inAncestors {
			return
		}
		p.pending, p.pendingCrt, p.pendFrame = true, true, v.frame
		p.g.CreatorID = v.creator
	case kLocation:
		if p.g == nil || p.inAncestors || !p.pending {
			return
		}
		f := p.pendFrame
		f.File, f.Line, f.Offset = v.frame.File, v.frame.Line, v.frame.Offset
		p.addFrame(f)
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
			return
		}
		p.newDump(producer, true)
		p.dumps[p.cur].Aggregated = k == kProfile
	case kTrailer:
		p.closeRecord()
		if p.cur >= 0 && p.curN > 0 {
			p.closed = true
		}
	case kPreamble:
		p.closeRecord()
	case kOther:
		// Interleaved log lines, unwinder diagnostics, "goroutine running
		// on other thread": skipped without ending the record.
	}
}

func (p *parser) addFrame(f Frame) {
	if p.pendingCrt {
		p.g.CreatedBy = &f
	} else {
		p.g.Frames = append(p.g.Frames, f)
	}
	p.pending, p.pendingCrt = false, false
}

func (p *parser) dropPending() { p.pending, p.pendingCrt = false, false }

func (p *parser) newDump(producer string, preamble bool) {
	p.dumps = append(p.dumps, Dump{Producer: producer})
	p.cur, p.curN, p.preamble, p.closed = len(p.dumps)-1, 0, preamble, false
}

// closeRecord ends the open record and hands it out. A function line
// still waiting for its location is dropped: mid-input it was not a frame.
func (p *parser) closeRecord() {
	if p.g == nil {
		return
	}
	p.dropPending()
	p.emit()
}

func (p *parser) emit() {
	g := *p.g
	p.g, p.inAncestors = nil, false
	d := &p.dumps[p.cur]
	if !p.preamble {
		// runtime.Stack and pprof debug=2 put the caller first, running;
		// another such record starts the next dump of a log that holds
		// several.
		starts := g.State == "running"
		if starts && p.curN > 0 && (d.Producer == ProducerStack || d.Producer == ProducerPprofDebug2) {
			p.newDump("", false)
			d = &p.dumps[p.cur]
		}
		if p.curN == 0 {
			d.Producer = ProducerUnknown
			if starts {
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
	p.fn(p.cur, g)
}

// finish ends the input. eof: it ended cleanly, so a record left open
// shows whether the dump was cut.
func (p *parser) finish(eof bool) {
	if p.cur < 0 {
		return
	}
	if p.g != nil {
		cut := p.lastCut || p.pending || len(p.g.Frames) == 0 && p.g.CreatedBy == nil
		if p.pending {
			// The location line never came: keep the function.
			p.addFrame(p.pendFrame)
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

// ---- line classification ----

// classify says what a line is. Function and location lines are told
// apart by the location's leading TAB (or the spaces a paste left).
func classify(s string) (kind, parsed) {
	var v parsed
	if strings.TrimSpace(s) == "" {
		return kBlank, v
	}
	t := strings.TrimLeft(s, " \t")
	indented := len(t) < len(s)
	if strings.HasPrefix(t, "goroutine ") {
		if g, ok := parseHeader(t); ok {
			v.g = g
			return kHeader, v
		}
		if strings.HasPrefix(t, "goroutine profile: total ") && !indented {
			return kProfile, v
		}
		return kOther, v
	}
	if indented {
		if f, ok := parseLocation(t); ok {
			v.frame = f
			return kLocation, v
		}
		return kOther, v
	}
	switch {
	case strings.HasPrefix(s, "created by "):
		fn := strings.TrimSpace(s[len("created by "):])
		if i := strings.Index(fn, " in goroutine "); i >= 0 {
			id, err := strconv.ParseInt(fn[i+len(" in goroutine "):], 10, 64)
			if err != nil {
				return kOther, v
			}
			fn, v.creator = fn[:i], id
		}
		if fn == "" || strings.ContainsAny(fn, " \t") {
			return kOther, v
		}
		v.frame.Func = fn
		return kCreatedBy, v
	case strings.HasPrefix(s, "...") && strings.HasSuffix(s, "elided..."):
		return kElided, v
	case strings.HasPrefix(s, "[originating from goroutine ") && strings.HasSuffix(s, "]:"):
		return kAncestor, v
	case strings.HasPrefix(s, "panic: "):
		v.text = s[len("panic: "):]
		return kPanic, v
	case strings.HasPrefix(s, "fatal error: "):
		v.text = s[len("fatal error: "):]
		return kFatal, v
	case strings.HasPrefix(s, "SIG"):
		if m := signalRE.FindStringSubmatch(s); m != nil {
			v.text = m[1]
			return kSignal, v
		}
	case strings.HasPrefix(s, "PC=0x"), strings.HasPrefix(s, "[signal "),
		s == "runtime stack:", strings.HasPrefix(s, "signal arrived during cgo execution"),
		strings.HasPrefix(s, "instruction bytes:"):
		return kPreamble, v
	case strings.HasPrefix(s, "exit status "), strings.HasPrefix(s, "FAIL\t"), s == "-----",
		registerRE.MatchString(s):
		return kTrailer, v
	}
	if f, ok := parseFunc(s); ok {
		v.frame = f
		return kFunc, v
	}
	return kOther, v
}

var (
	signalRE   = regexp.MustCompile(`^(SIG[A-Z0-9]+): [a-z]`)
	registerRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,6} +0x[0-9a-f]+ *$`)
)

// parseHeader parses "goroutine N [gp=… m=… mp=…] [body]:" (t has no
// leading space). The bracket body runs to the final "]:" since label
// values may hold "]".
func parseHeader(t string) (Goroutine, bool) {
	var g Goroutine
	t = strings.TrimRight(t, " \t")
	rest, ok := strings.CutPrefix(t, "goroutine ")
	if !ok {
		return g, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	id, err := strconv.ParseInt(rest[:i], 10, 64)
	if err != nil || !strings.HasSuffix(rest, "]:") {
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
	body := rest[2 : len(rest)-2]
	if i := strings.Index(body, " labels:{"); i >= 0 && strings.HasSuffix(body, "}") {
		labels, ok := parseLabels(body[i+len(" labels:{") : len(body)-1])
		if !ok {
			return g, false
		}
		g.Labels, body = labels, body[:i]
	}
	parts := strings.Split(body, ", ")
	g.State = strings.Replace(parts[0], " (scan)", "", 1)
	if g.State == "" {
		return g, false
	}
	for _, part := range parts[1:] {
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

// parseLabels parses `"k": "v", "k2": "v2"` (Go-quoted keys and values).
func parseLabels(s string) (map[string]string, bool) {
	m := map[string]string{}
	for s != "" {
		k, rest, ok := unquotePrefix(s)
		if !ok || !strings.HasPrefix(rest, ": ") {
			return nil, false
		}
		v, rest, ok := unquotePrefix(rest[2:])
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
	if i <= 0 || strings.ContainsAny(s[:i], " \t") {
		return f, false
	}
	f.Func, f.Args = s[:i], s[i:]
	f.Inlined = f.Args == "(...)"
	return f, true
}

// parseLocation parses "/path/file.go:123 +0x1d fp=… sp=… pc=…" (t has
// no leading space). The file is split at the last ":" since paths may
// hold one ("C:/…").
func parseLocation(t string) (Frame, bool) {
	var f Frame
	t = strings.TrimRight(t, " \t")
	if i := strings.Index(t, " fp=0x"); i >= 0 {
		t = t[:i]
	} else if i := strings.LastIndex(t, " pc=0x"); i >= 0 { // cgo symbolizer
		t = t[:i]
	}
	if i := strings.LastIndex(t, " +0x"); i >= 0 && isHex(t[i+4:]) {
		f.Offset, t = t[i+1:], t[:i]
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

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Log prefixes that wrap dump lines: CRI (containerd/kubelet) log lines,
// bare RFC 3339 timestamps, and syslog/journald lines.
var prefixREs = []*regexp.Regexp{
	regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? (?:(?:stdout|stderr) [FP] )?`),
	regexp.MustCompile(`^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?: [^\s:]+ [^\s:\[]+(?:\[\d+\])?:)? ?`),
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
