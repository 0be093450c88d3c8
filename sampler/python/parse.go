package python

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// Dump formats, as Dump.Format names them.
const (
	FormatPySpyJSON     = model.FormatPySpyJSON
	FormatPySpyText     = model.FormatPySpyText
	FormatFaulthandler  = model.FormatFaulthandler
	FormatCurrentFrames = model.FormatCurrentFrames // app-printed sys._current_frames() or traceback.print_stack
)

// ErrNoDump is returned when the input holds nothing recognisable as a
// Python stack dump.
var ErrNoDump = errors.New("no python stack dump found")

// Dump is one snapshot of a Python process's threads, whatever printed it.
type Dump struct {
	Format model.Format // one of the Format constants
	PID    int          // 0 when the dump does not say
	// Command is the process's command line as py-spy's header prints it
	// (its first line: a -c script's newlines continue it); "" when the
	// dump does not say.
	Command string
	Python  string // version, "" when unknown
	// Interpreter is the interpreter's executable as py-spy's header
	// names it ("/usr/bin/python3.11"), "" when unknown.
	Interpreter string
	// Threads in the order the dump prints them: py-spy's text puts
	// MainThread first, its JSON and faulthandler last.
	Threads []Thread
	// Truncated: the input ended mid-dump (or turned to garbage there);
	// Threads holds what parsed up to that point.
	Truncated bool
	// Parent is the process that py-spy --subprocesses names as this
	// one's parent ("Parent Process 19850: …"): this dump is of the same
	// moment as the dumps before it, another process of the tree.
	Parent int
}

// Thread is one thread's stack in a Dump. Which ids are known depends on
// the format: py-spy's text prints the TID (or, when it has none, the
// pthread_t), its JSON both, faulthandler and the current-frames recipe
// only the pthread_t.
type Thread struct {
	Ident    uint64 // threading.get_ident() (pthread_t); 0 when unknown
	NativeID int    // the OS thread id (Linux TID); 0 when unknown
	Name     string // "" when unknown
	Active   bool   // py-spy's instant guess; false when unknown
	OwnsGIL  bool
	Current  bool          // faulthandler's "Current thread" (or "Stack") block
	Frames   []model.Frame // innermost first, whatever order the format prints
	// Vars are the objects the frames' variables name (py-spy --locals).
	Vars []model.FrameVars
}

// unknownFunc stands for a frame whose function name the dump left empty,
// so that every Frame has a Func. faulthandler prints the same.
const unknownFunc = "???"

// Detect returns the Python dump format of b by its first distinctive
// line, FormatNone when b holds none: what Parse would read b as.
func Detect(b []byte) model.Format { return detect(b) }

// Parse detects the format of b from its first distinctive line and parses
// every dump in it, in file order. Lines before and between dumps (shell
// commands, logging) are skipped. A file holding dumps of more than one
// format yields only those of the first format found.
func Parse(b []byte) ([]Dump, error) {
	switch detect(b) {
	case FormatPySpyText:
		return parsePySpyTexts(b)
	case FormatFaulthandler:
		return ParseFaulthandler(b)
	case FormatCurrentFrames:
		return parseCurrentFrames(b)
	case FormatPySpyJSON:
		return parsePySpyJSONs(b)
	}
	return nil, fmt.Errorf("parsing python stack dump: %w", ErrNoDump)
}

// ---- lines ----

// splitLines splits b into lines without their "\n" or "\r\n", with ANSI
// escape sequences removed, and the offset in b where each starts. cut
// reports that b does not end in a newline: every format here ends each
// line with one, so the last line was cut.
func splitLines(b []byte) (lines []string, offs []int, cut bool) {
	n := bytes.Count(b, []byte{'\n'}) + 1
	lines = make([]string, 0, n)
	offs = make([]int, 0, n)
	off := 0
	for off < len(b) {
		rest := b[off:]
		i := bytes.IndexByte(rest, '\n')
		line := rest
		if i < 0 {
			cut = true
		} else {
			line = rest[:i]
		}
		lines = append(lines, stripANSI(bytes.TrimSuffix(line, []byte{'\r'})))
		offs = append(offs, off)
		off += len(line) + 1
	}
	return lines, offs, cut
}

// stripANSI removes escape sequences: py-spy colours its text when forced
// to (CLICOLOR_FORCE) or run on a TTY whose output was then saved.
func stripANSI(b []byte) string {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return string(b)
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0x1b {
			out = append(out, b[i])
			continue
		}
		if i+1 < len(b) && b[i+1] == '[' {
			// CSI: parameter bytes, intermediate bytes, one final byte.
			j := i + 2
			for j < len(b) && b[j] >= 0x30 && b[j] <= 0x3f {
				j++
			}
			for j < len(b) && b[j] >= 0x20 && b[j] <= 0x2f {
				j++
			}
			if j < len(b) && b[j] >= 0x40 && b[j] <= 0x7e {
				j++
			}
			i = j - 1
		}
		// Any other ESC is dropped alone.
	}
	return string(out)
}

// ---- detection ----

var (
	pySpyProcessRE  = regexp.MustCompile(`^Process (\d+): `)
	pySpyParentRE   = regexp.MustCompile(`^Parent Process (\d+): `)
	pySpyPythonRE   = regexp.MustCompile(`^Python v(\d+\.\d+\S*)(?: \((.*)\))?$`)
	pySpyThreadRE   = regexp.MustCompile(`^Thread(?: (0[xX][0-9A-Fa-f]+|\d+))?(?: \((idle|active|active\+gil|gil)\))?(?:: "(.*)")?$`)
	fhThreadRE      = regexp.MustCompile(`(Current thread|Thread) 0x([0-9a-fA-F]+)(?: \[(.*)\])? \(most recent call first\):$`)
	fhTimeoutRE     = regexp.MustCompile(`Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!$`)
	fhFrameRE       = regexp.MustCompile(`^  File (?:"(.*)"|\?\?\?), line (\d+|\?\?\?) in (.*)$`)
	cfThreadRE      = regexp.MustCompile(`# Thread: (.*)\((\d+)\)\s*$`)
	cfThreadIDRE    = regexp.MustCompile(`# ThreadID: (\d+)\s*$`)
	cfPlainThreadRE = regexp.MustCompile(`^\s*Thread (\d+)(?: \((.*)\))?:?\s*$`)
	cfRecipeFrameRE = regexp.MustCompile(`File: "(.*)", line (\d+), in (.*)$`)
	cfTraceFrameRE  = regexp.MustCompile(`^\s*File "(.*)", line (\d+), in (.*)$`)
)

// fhBanners start a faulthandler dump on a line of their own (or, since
// faulthandler writes straight to the file descriptor, after another
// writer's unfinished line).
var fhBanners = []string{"Fatal Python error: ", "Windows fatal exception: "}

// detect returns the format of the first line that only one format
// prints (py-spy's "Process N: …" only with its "Python v…" line after
// it). A traceback-style frame line ("  File "x", line 3, in f"), which
// exception tracebacks print too, only counts when nothing more
// distinctive is found.
func detect(b []byte) model.Format {
	lines, offs, _ := splitLines(b)
	weak := model.FormatNone
	for i, l := range lines {
		if pySpyProcessRE.MatchString(l) && i+1 < len(lines) && pySpyPythonRE.MatchString(lines[i+1]) {
			return FormatPySpyText
		}
		if f := lineFormat(l); f != model.FormatNone {
			return f
		}
		if jsonStart(b, offs[i]) >= 0 {
			return FormatPySpyJSON
		}
		if weak == model.FormatNone && cfTraceFrameRE.MatchString(l) {
			weak = FormatCurrentFrames
		}
	}
	return weak
}

func lineFormat(l string) model.Format {
	switch {
	case isPySpyThread(l):
		return FormatPySpyText
	case isFhThread(l), strings.HasSuffix(l, fhStack), isTimeout(l):
		return FormatFaulthandler
	case hasBanner(l):
		return FormatFaulthandler
	case cfThreadRE.MatchString(l), cfThreadIDRE.MatchString(l), cfRecipeFrameRE.MatchString(l):
		return FormatCurrentFrames
	}
	return model.FormatNone
}

// hasBanner reports a line that opens a faulthandler dump.
func hasBanner(l string) bool {
	for _, b := range fhBanners {
		if strings.HasPrefix(l, b) {
			return true
		}
	}
	return false
}

// isPySpyThread reports a py-spy thread header with a status: one with
// only an id ("Thread 12" from --core) is too common a phrase to detect by.
func isPySpyThread(l string) bool {
	if !strings.HasPrefix(l, "Thread") {
		return false
	}
	m := pySpyThreadRE.FindStringSubmatch(l)
	return m != nil && m[2] != ""
}

const (
	mostRecentFirst = "(most recent call first):"
	fhStack         = "Stack " + mostRecentFirst
)

func isFhThread(l string) bool {
	return strings.HasSuffix(l, mostRecentFirst) && fhThreadRE.MatchString(l)
}

func isTimeout(l string) bool {
	return strings.HasSuffix(l, ")!") && fhTimeoutRE.MatchString(l)
}

// jsonStart returns the offset of the '[' opening py-spy's JSON array if
// the line at off in b opens one, or -1. Such a line is "[" alone
// (pretty-printed, the next non-blank byte "{" or "]"), or starts "[]" or
// "[{". Log lines such as "[2024-02-28T03:25:41Z INFO …]" do not qualify.
// It reads the raw bytes: py-spy never colours its JSON.
func jsonStart(b []byte, off int) int {
	line, after := b[off:], []byte(nil)
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line, after = line[:i], line[i+1:]
	}
	l := bytes.TrimSpace(line)
	if len(l) == 0 || l[0] != '[' {
		return -1
	}
	next := bytes.TrimSpace(l[1:])
	if len(next) == 0 {
		next = bytes.TrimLeft(after, " \t\r\n")
		if len(next) == 0 {
			return off + bytes.IndexByte(line, '[') // "[" and then nothing: cut short
		}
	}
	if next[0] != '{' && next[0] != ']' {
		return -1
	}
	return off + bytes.IndexByte(line, '[')
}

// findJSONStart returns the offset of the first '[' in b that opens a
// JSON array by jsonStart, or -1. It stops there, so that reading many
// arrays one after another stays linear.
func findJSONStart(b []byte) int {
	for off := 0; off < len(b); {
		if at := jsonStart(b, off); at >= 0 {
			return at
		}
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return -1
}

// ---- py-spy text ----

// ParsePySpyText parses the text of `py-spy dump` (also --locals, whose
// variables are skipped, --native, whose frames are kept, and --core).
// Input holding several dumps (--subprocesses) yields the first; Parse
// yields them all.
func ParsePySpyText(b []byte) (Dump, error) {
	dumps, err := parsePySpyTexts(b)
	if err != nil {
		return Dump{}, err
	}
	return dumps[0], nil
}

// builder collects dumps line by line for the text formats.
type builder struct {
	dumps  []Dump
	thread *Thread // the thread frames go to; nil between threads
	// body: the current thread has printed a line of its own (a frame or
	// a marker); faulthandler prints at least one for every thread.
	body bool
	// The ids in the last dump: a dump prints each thread once.
	idents  map[uint64]bool
	natives map[int]bool
	current bool
	// texts are the source lines the current-frames recipes print under
	// the current thread's frames, one per frame ("" for none).
	texts []string
}

func (p *builder) dump() *Dump {
	if len(p.dumps) == 0 {
		return nil
	}
	return &p.dumps[len(p.dumps)-1]
}

func (p *builder) newDump(format model.Format) *Dump {
	p.dumps = append(p.dumps, Dump{Format: format})
	p.thread = nil
	p.idents, p.natives, p.current = map[uint64]bool{}, map[int]bool{}, false
	return p.dump()
}

// addThread adds t to the last dump, or to a new one when the last
// already has t's id: the same thread again means the next dump began
// (faulthandler on a repeated signal prints dumps back to back with no
// banner between).
func (p *builder) addThread(format model.Format, t Thread) {
	d := p.dump()
	if d == nil || t.Ident != 0 && p.idents[t.Ident] || t.NativeID != 0 && p.natives[t.NativeID] || t.Current && p.current {
		d = p.newDump(format)
	}
	if t.Ident != 0 {
		p.idents[t.Ident] = true
	}
	if t.NativeID != 0 {
		p.natives[t.NativeID] = true
	}
	p.current = p.current || t.Current
	d.Threads = append(d.Threads, t)
	p.thread = &d.Threads[len(d.Threads)-1]
	p.body = false
}

func (p *builder) addFrame(f model.Frame) {
	if p.thread == nil {
		return
	}
	p.thread.Frames = append(p.thread.Frames, f)
	p.body = true
}

// addVar gives the thread's last frame a variable.
func (p *builder) addVar(v model.Var) {
	if p.thread == nil || len(p.thread.Frames) == 0 {
		return
	}
	i := len(p.thread.Frames) - 1
	if n := len(p.thread.Vars); n == 0 || p.thread.Vars[n-1].Frame != i {
		p.thread.Vars = append(p.thread.Vars, model.FrameVars{Frame: i})
	}
	fv := &p.thread.Vars[len(p.thread.Vars)-1]
	fv.Vars = append(fv.Vars, v)
}

func parsePySpyTexts(b []byte) ([]Dump, error) {
	lines, _, cut := splitLines(b)
	var p builder
	for _, l := range lines {
		if m := pySpyProcessRE.FindStringSubmatch(l); m != nil {
			d := p.newDump(FormatPySpyText)
			d.PID = atoi(m[1])
			d.Command = strings.TrimSpace(l[len(m[0]):])
			continue
		}
		if m := pySpyPythonRE.FindStringSubmatch(l); m != nil {
			d := p.dump()
			if d == nil || d.Python != "" || len(d.Threads) > 0 {
				d = p.newDump(FormatPySpyText)
			}
			d.Python, d.Interpreter = m[1], m[2]
			continue
		}
		if m := pySpyParentRE.FindStringSubmatch(l); m != nil {
			if d := p.dump(); d != nil && len(d.Threads) == 0 {
				d.Parent = atoi(m[1])
			}
			continue
		}
		if t, ok := parsePySpyThread(l); ok {
			// py-spy has no blank line between threads, so a repeated
			// id is the only sign of a dump appended without a header.
			p.addThread(FormatPySpyText, t)
			continue
		}
		if f, ok := parsePySpyFrame(l); ok {
			p.addFrame(f)
			continue
		}
		if v, ok := parsePySpyVar(l); ok {
			p.addVar(v)
			continue
		}
		// Anything else (values that are not objects, the --subprocesses rule, "Parent
		// Process", a pasted command) is not part of any stack.
	}
	if len(p.dumps) == 0 {
		return nil, errors.New("parsing py-spy text dump: no process header or thread found")
	}
	if last := p.dump(); cut || len(last.Threads) == 0 {
		// A header and no threads: py-spy failed (or was cut) after
		// printing it.
		last.Truncated = true
	}
	return p.dumps, nil
}

func parsePySpyThread(l string) (Thread, bool) {
	if !strings.HasPrefix(l, "Thread") {
		return Thread{}, false
	}
	m := pySpyThreadRE.FindStringSubmatch(l)
	if m == nil || m[1] == "" && m[2] == "" {
		return Thread{}, false
	}
	var t Thread
	if id, ok := strings.CutPrefix(strings.ToLower(m[1]), "0x"); ok {
		// No OS thread id known to py-spy: this is the pthread_t.
		t.Ident, _ = strconv.ParseUint(id, 16, 64)
	} else if m[1] != "" {
		t.NativeID = atoi(m[1])
	}
	switch m[2] {
	case "active":
		t.Active = true
	case "active+gil":
		t.Active, t.OwnsGIL = true, true
	case "gil": // --core: holds the GIL, activity unknown
		t.OwnsGIL = true
	}
	t.Name = m[3]
	return t, true
}

// parsePySpyFrame parses "    func (file:line)", "    func (file)" (line
// unknown, or a native frame's library). Names may hold spaces and
// parentheses ("<lambda>", "operator()"), so the location is the
// parenthesised group that ends the line.
func parsePySpyFrame(l string) (model.Frame, bool) {
	s, ok := strings.CutPrefix(l, "    ")
	if !ok {
		s, ok = strings.CutPrefix(l, "\t") // a paste that turned indents to tabs
	}
	if !ok || s == "" || s[0] == ' ' || s[0] == '\t' || !strings.HasSuffix(s, ")") {
		return model.Frame{}, false
	}
	open := matchingOpen(s)
	if open < 1 || s[open-1] != ' ' {
		open = strings.LastIndex(s, " (") + 1
	}
	if open < 1 {
		return model.Frame{}, false
	}
	fn := s[:open-1]
	loc := s[open+1 : len(s)-1]
	if fn == "" {
		return model.Frame{}, false
	}
	f := model.Frame{Func: fn, File: loc}
	if i := strings.LastIndexByte(loc, ':'); i >= 0 && isDigits(loc[i+1:]) {
		if n, err := strconv.Atoi(loc[i+1:]); err == nil {
			f.File, f.Line = loc[:i], n
		}
	}
	return f, true
}

// matchingOpen returns the index of the '(' that matches the ')' ending s,
// or -1.
func matchingOpen(s string) int {
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// ---- py-spy JSON ----

// ParsePySpyJSON parses `py-spy dump --json`: one JSON array of threads.
// Text before the array is skipped; input holding several arrays yields
// the first (Parse yields them all). An array cut short or turning to
// garbage keeps the threads and frames read up to there.
func ParsePySpyJSON(b []byte) (Dump, error) {
	d, _, err := parsePySpyJSON(b)
	return d, err
}

func parsePySpyJSONs(b []byte) ([]Dump, error) {
	var dumps []Dump
	for len(b) > 0 {
		d, end, err := parsePySpyJSON(b)
		if err != nil {
			if len(dumps) > 0 {
				break // trailing text that holds no further dump
			}
			return nil, err
		}
		dumps = append(dumps, d)
		if d.Truncated {
			break
		}
		b = b[end:]
		if len(bytes.TrimSpace(b)) == 0 {
			break
		}
	}
	return dumps, nil
}

// jsonFrame is the part of py-spy's Frame that hangdoc uses.
type jsonFrame struct {
	Name          string      `json:"name"`
	Filename      string      `json:"filename"`
	ShortFilename *string     `json:"short_filename"`
	Line          int64       `json:"line"`
	Locals        []jsonLocal `json:"locals"` // --locals
}

// parsePySpyJSON parses the first JSON array in b and returns the offset
// just past it.
func parsePySpyJSON(b []byte) (d Dump, end int, err error) {
	d.Format = FormatPySpyJSON
	if len(bytes.TrimSpace(b)) == 0 {
		return d, len(b), errors.New("parsing py-spy json dump: empty input")
	}
	// Skip text before the array, a pasted command say.
	start := findJSONStart(b)
	if start < 0 {
		return d, len(b), errors.New("parsing py-spy json dump: no json array found")
	}
	dec := json.NewDecoder(bytes.NewReader(b[start:]))
	if _, err := dec.Token(); err != nil { // the '['
		return d, len(b), fmt.Errorf("parsing py-spy json dump: %w", err)
	}
	var bad error
	objects := 0
	for bad == nil && dec.More() {
		var t Thread
		var got bool
		objects++
		got, bad = decodeThread(dec, &d, &t)
		if got {
			d.Threads = append(d.Threads, t)
		}
	}
	if bad == nil && objects > 0 && len(d.Threads) == 0 {
		// Objects with none of py-spy's fields: some other program's JSON.
		return d, len(b), fmt.Errorf("parsing py-spy json dump: %d objects with none of py-spy's fields (thread_id, frames): %w", objects, ErrNoDump)
	}
	if bad == nil {
		tok, err := dec.Token()
		if err != nil {
			bad = err
		} else if tok != json.Delim(']') {
			bad = fmt.Errorf("%v where a thread object or ] belongs", tok)
		}
	}
	end = start + int(dec.InputOffset())
	if bad == io.EOF {
		bad = io.ErrUnexpectedEOF
	}
	if bad != nil {
		d.Truncated = true
		if len(d.Threads) == 0 {
			return d, len(b), fmt.Errorf("parsing py-spy json dump: no thread read: %w", bad)
		}
		end = len(b)
	}
	return d, end, nil
}

// decodeThread decodes one StackTrace object into t, keeping what it read
// before any error; got reports that any of py-spy's fields was read.
func decodeThread(dec *json.Decoder, d *Dump, t *Thread) (got bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	if tok != json.Delim('{') {
		return false, fmt.Errorf("%v where a thread object belongs", tok)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return got, err
		}
		key, _ := tok.(string)
		switch key {
		case "pid":
			var pid int64
			err = dec.Decode(&pid)
			if pid > 0 && pid <= math.MaxInt32 {
				d.PID = int(pid)
			}
		case "thread_id":
			err = dec.Decode(&t.Ident)
		case "os_thread_id":
			var tid *uint64
			err = dec.Decode(&tid)
			if tid != nil && *tid <= math.MaxInt32 {
				t.NativeID = int(*tid)
			}
		case "thread_name":
			var name *string
			err = dec.Decode(&name)
			if name != nil {
				t.Name = *name
			}
		case "active":
			err = dec.Decode(&t.Active)
		case "owns_gil":
			err = dec.Decode(&t.OwnsGIL)
		case "frames":
			err = decodeFrames(dec, t)
		default:
			var skip json.RawMessage
			if err = dec.Decode(&skip); err == nil {
				continue
			}
		}
		got = true
		if err != nil {
			return got, err
		}
	}
	_, err = dec.Token() // the '}'
	return got, err
}

func decodeFrames(dec *json.Decoder, t *Thread) error {
	tok, err := dec.Token()
	if err != nil || tok == nil { // null: no frames
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("frames: %v where an array belongs", tok)
	}
	for dec.More() {
		var f *jsonFrame
		if err := dec.Decode(&f); err != nil {
			return fmt.Errorf("frame %d: %w", len(t.Frames), err)
		}
		if f == nil {
			continue // null: no frame to keep
		}
		fr := model.Frame{Func: f.Name, File: f.Filename}
		if fr.Func == "" {
			fr.Func = unknownFunc
		}
		if fr.File == "" && f.ShortFilename != nil {
			fr.File = *f.ShortFilename
		}
		if f.Line > 0 && f.Line <= math.MaxInt32 {
			fr.Line = int(f.Line)
		}
		if vars := objectVars(f.Locals); len(vars) > 0 {
			t.Vars = append(t.Vars, model.FrameVars{Frame: len(t.Frames), Vars: vars})
		}
		t.Frames = append(t.Frames, fr)
	}
	_, err = dec.Token() // the ']'
	return err
}

// ---- faulthandler ----

// ParseFaulthandler parses CPython faulthandler output: dump_traceback,
// dump_traceback_later (each repeat a dump of its own), register()ed
// signals and fatal errors, including 3.14's thread names. Lines of other
// output interleaved with the dumps are skipped.
func ParseFaulthandler(b []byte) ([]Dump, error) {
	lines, _, cut := splitLines(b)
	var p builder
	// banner: the last dump was opened by a banner line and has no
	// thread yet, so the next banner or thread belongs to it.
	banner := false
	// afterBody: the previous line was a frame or marker. Within a dump
	// faulthandler separates threads by a blank line, so a header right
	// after a thread's body starts the next dump.
	afterBody := false
	for _, l := range lines {
		wasAfterBody := afterBody
		afterBody = false
		if isTimeout(l) || containsBanner(l) {
			if !banner {
				p.endThread()
				p.newDump(FormatFaulthandler)
				banner = true
			}
			continue
		}
		if strings.HasSuffix(l, mostRecentFirst) {
			p.endThread()
			var t Thread
			if m := fhThreadRE.FindStringSubmatch(l); m != nil {
				t = Thread{Current: m[1] == "Current thread", Name: m[3]}
				t.Ident, _ = strconv.ParseUint(m[2], 16, 64)
			} else if strings.HasSuffix(l, fhStack) {
				// One thread, the caller's: dump_traceback(all_threads=
				// False), or a fatal error with the other threads hidden.
				t = Thread{Current: true}
			} else {
				// 3.14's "Current thread's C stack trace": native frames,
				// not Python's.
				continue
			}
			if wasAfterBody && !banner {
				p.newDump(FormatFaulthandler)
			}
			p.addThread(FormatFaulthandler, t)
			banner = false
			continue
		}
		if p.thread == nil {
			continue
		}
		if m := fhFrameRE.FindStringSubmatch(l); m != nil {
			f := model.Frame{File: m[1], Func: m[3]}
			if f.Func == "" {
				f.Func = unknownFunc
			}
			if n, err := strconv.Atoi(m[2]); err == nil {
				f.Line = n
			}
			p.addFrame(f)
			afterBody = true
			continue
		}
		if strings.HasPrefix(l, "  <") || l == "  ..." || l == "  Garbage-collecting" {
			// "  <no Python frame>", "  <tstate is freed>", "  ..."
			// (more than 100 frames), "  Garbage-collecting".
			p.body = true
			afterBody = l != "  Garbage-collecting"
		}
	}
	p.endThread()
	if len(p.dumps) == 0 {
		return nil, errors.New("parsing faulthandler dump: no thread found")
	}
	last := p.dump()
	if len(p.dumps) == 1 && len(last.Threads) == 0 {
		return nil, errors.New("parsing faulthandler dump: no thread after the banner")
	}
	if cut || len(last.Threads) == 0 {
		last.Truncated = true
	}
	return p.dumps, nil
}

// containsBanner finds a banner after another writer's unfinished line.
func containsBanner(l string) bool {
	for _, b := range fhBanners {
		if strings.Contains(l, b) {
			return true
		}
	}
	return false
}

// endThread marks the dump Truncated when its last thread printed nothing
// under its header: faulthandler always prints a frame or a marker.
func (p *builder) endThread() {
	if p.thread != nil && !p.body {
		p.dump().Truncated = true
	}
	p.thread = nil
}

// ---- sys._current_frames() recipes ----

// parseCurrentFrames parses an application's own dump of
// sys._current_frames(), as the widely copied recipes print it: a "#
// Thread: name(ident)" or "# ThreadID: ident" header, then frames
// outermost first as `File: "f", line N, in name` (or traceback's
// `  File "f", line N, in name`), each maybe followed by its source line.
// Frames with no header before them form a thread of unknown id.
func parseCurrentFrames(b []byte) ([]Dump, error) {
	lines, _, cut := splitLines(b)
	var p builder
	anonymous := false
	for _, l := range lines {
		if t, ok := parseCurrentFramesThread(l); ok {
			p.endRecipeThread()
			p.addThread(FormatCurrentFrames, t)
			anonymous = false
			continue
		}
		m := cfRecipeFrameRE.FindStringSubmatch(l)
		if m == nil {
			m = cfTraceFrameRE.FindStringSubmatch(l)
		}
		if m != nil {
			if p.thread == nil {
				p.addThread(FormatCurrentFrames, Thread{})
				anonymous = true
			}
			f := model.Frame{File: m[1], Func: m[3], Line: atoi(m[2])}
			if f.Func == "" {
				f.Func = unknownFunc
			}
			p.addFrame(f)
			p.texts = append(p.texts, "")
			continue
		}
		if p.thread != nil && len(p.texts) == len(p.thread.Frames) && len(p.texts) > 0 && p.texts[len(p.texts)-1] == "" &&
			(strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "\t")) {
			p.texts[len(p.texts)-1] = strings.TrimSpace(l)
		}
		if anonymous && (strings.TrimSpace(l) == "" || strings.HasPrefix(l, "Traceback (most recent call last):")) {
			p.endRecipeThread()
			anonymous = false
		}
	}
	p.endRecipeThread()
	if len(p.dumps) == 0 {
		return nil, errors.New("parsing sys._current_frames() dump: no thread found")
	}
	last := p.dump()
	if cut || len(last.Threads) == 0 || len(last.Threads[len(last.Threads)-1].Frames) == 0 {
		last.Truncated = true
	}
	return p.dumps, nil
}

// endRecipeThread puts the current thread's frames innermost first, and
// drops the frames of the code that printed them: the recipes run in a
// signal handler, on top of the frame the signal interrupted.
func (p *builder) endRecipeThread() {
	if t := p.thread; t != nil {
		slices.Reverse(t.Frames)
		if len(p.texts) == len(t.Frames) {
			slices.Reverse(p.texts)
			// The outermost of the innermost few frames whose line prints
			// stacks is the handler's, and the frame below it was running,
			// unless its line calls the handler: then the thread itself
			// prints the dump, and its stack is as it is.
			cut := -1
			for i := 0; i < len(t.Frames)-1 && i < 4; i++ {
				if dumperLineRE.MatchString(p.texts[i]) {
					cut = i
				}
			}
			if cut >= 0 && !strings.Contains(p.texts[cut+1], t.Frames[cut].Func+"(") {
				t.Frames = t.Frames[cut+1:]
			}
		}
	}
	p.thread, p.texts = nil, p.texts[:0]
}

// dumperLineRE matches a source line that prints or walks stacks: the
// handler that wrote a current-frames dump.
var dumperLineRE = regexp.MustCompile(`\b(?:_current_frames|format_stack|print_stack|extract_stack|walk_stack|dump_traceback)\b`)

func parseCurrentFramesThread(l string) (Thread, bool) {
	var t Thread
	var id string
	if m := cfThreadRE.FindStringSubmatch(l); m != nil {
		t.Name, id = m[1], m[2]
	} else if m := cfThreadIDRE.FindStringSubmatch(l); m != nil {
		id = m[1]
	} else if m := cfPlainThreadRE.FindStringSubmatch(l); m != nil {
		// "Thread 140677819672256 (submit-2):", a handler printing each
		// ident of sys._current_frames() with its thread's name.
		t.Name, id = m[2], m[1]
	} else {
		return t, false
	}
	t.Ident, _ = strconv.ParseUint(id, 10, 64)
	return t, true
}

// ---- helpers ----

// atoi parses a decimal id or line number; out of range gives 0, unknown.
func atoi(s string) int {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0
	}
	return int(n)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
