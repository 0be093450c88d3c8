package classify

import (
	"regexp"
	"strings"
)

// The Python source reader: which locks a function holds at a line and
// which one it waits to take there, read from its source by indentation —
// a `with X:` block the line is inside, an X.acquire() before it with no
// X.release() in between.

var (
	// A `with` line: "with X:" opening a block, or "with X: body" on one
	// line (m[2], the body).
	pyWithRE    = regexp.MustCompile(`^\s*(?:async\s+)?with\s+(.+?):(?:\s*(?:#.*)?|\s+([^#\s].*))$`)
	pyAcquireRE = regexp.MustCompile(`([A-Za-z_][\w.]*)\.acquire\(`)
	pyReleaseRE = regexp.MustCompile(`([A-Za-z_][\w.]*)\.release\(`)
	pyDefRE     = regexp.MustCompile(`^(\s*)(?:async\s+)?def\s+(\w+)\s*\(([^)]*)`)
	pyClassRE   = regexp.MustCompile(`^(\s*)class\s+(\w+)`)
	pyAssignRE  = regexp.MustCompile(`^([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]`)
	pyIdentRE   = regexp.MustCompile(`^[A-Za-z_][\w.]*$`)
	// A Condition over another lock: "self.not_empty = threading.Condition(self.mutex)".
	pyCondOverRE = regexp.MustCompile(`^\s*self\.(\w+)\s*=\s*(?:threading\.)?Condition\(\s*self\.(\w+)\s*\)`)
)

// pyFunc is the function a line of a Python file is in.
type pyFunc struct {
	name   string
	class  string // the class it is a method of, "" for none
	params []string
	from   int // the def line
	indent int // the def's indentation
	// module: not a def but a module's top-level code (a <module> frame):
	// every line at module scope above it, outside def and class bodies.
	module bool
}

// pyModuleFunc is a module's top-level code, as a function.
var pyModuleFunc = &pyFunc{name: "<module>", indent: -1, module: true}

// pyFuncAt finds the def a line is in, and the class that def is in.
func pyFuncAt(lines []string, line int) *pyFunc {
	if line < 1 || line > len(lines) {
		return nil
	}
	at := indentOf(lines[line-1])
	for i := line - 1; i >= 1; i-- {
		l := lines[i-1]
		if strings.TrimSpace(l) == "" {
			continue
		}
		in := indentOf(l)
		if in >= at {
			continue
		}
		at = in
		m := pyDefRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		f := &pyFunc{name: m[2], from: i, indent: in}
		for _, p := range strings.Split(m[3], ",") {
			p = strings.TrimSpace(p)
			p, _, _ = strings.Cut(p, "=")
			p, _, _ = strings.Cut(p, ":")
			p = strings.TrimLeft(strings.TrimSpace(p), "*")
			if p != "" {
				f.params = append(f.params, p)
			}
		}
		for j := i - 1; j >= 1; j-- {
			cl := lines[j-1]
			if strings.TrimSpace(cl) == "" || indentOf(cl) >= in {
				continue
			}
			if c := pyClassRE.FindStringSubmatch(cl); c != nil {
				f.class = c[2]
			}
			break
		}
		return f
	}
	return nil
}

// withItems reads the lock expressions of a `with` line: "with a, b as c:"
// → a, b; items that are not plain names or attributes (a call) are left
// out.
func withItems(line string) []string {
	m := pyWithRE.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	var out []string
	for _, it := range strings.Split(m[1], ",") {
		it, _, _ = strings.Cut(strings.TrimSpace(it), " as ")
		it = strings.TrimSpace(it)
		if pyIdentRE.MatchString(it) {
			out = append(out, it)
		}
	}
	return out
}

// pyLockingAt is the lock a line waits to take: the items of a `with` on
// it, or an X.acquire() on it.
func pyLockingAt(lines []string, line int) []string {
	if line < 1 || line > len(lines) {
		return nil
	}
	l := lines[line-1]
	if items := withItems(l); len(items) > 0 {
		return items
	}
	if m := pyAcquireRE.FindStringSubmatch(l); m != nil {
		return []string{m[1]}
	}
	return nil
}

// pyHeldAt is what the function around line holds there: the items of the
// `with` blocks the line is inside, and what it acquired above the line and
// did not release. For a module's top-level code (f.module) that is every
// line at module scope above it. Lines inside strings (docstrings) are not
// code.
func pyHeldAt(lines []string, line int, f *pyFunc) []string {
	return newPyFile(lines).heldAt(line, f)
}

// heldAt is pyHeldAt with the file read once (newPyFile).
func (pf *pyFile) heldAt(line int, f *pyFunc) []string {
	lines, code := pf.lines, pf.code
	if f == nil || line < 1 || line > len(lines) {
		return nil
	}
	isCode := func(i int) bool { return i-1 < len(code) && code[i-1] != pyInString }
	var held []string
	at := indentOf(lines[line-1])
	for i := line - 1; i > f.from; i-- {
		l := lines[i-1]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") || !isCode(i) {
			continue
		}
		if in := indentOf(l); in < at {
			at = in
			held = append(held, withItems(l)...)
		}
	}
	released := map[string]int{}
	for i := line - 1; i > f.from; i-- {
		if !isCode(i) || f.module && code[i-1] != pyAtModule {
			continue
		}
		l := lines[i-1]
		if m := pyReleaseRE.FindStringSubmatch(l); m != nil {
			released[m[1]]++
		}
		if m := pyAcquireRE.FindStringSubmatch(l); m != nil {
			if released[m[1]] > 0 {
				released[m[1]]--
				continue
			}
			held = append(held, pf.pyUnwrap(f, m[1]))
		}
	}
	return held
}

// pyUnwrap names the lock a method of the frame's own class takes for it:
// self.acquire() in a class whose acquire() is `self.lock.acquire()`
// (logging.Handler before Python 3.13) takes self.lock. Any other
// expression is itself.
func (pf *pyFile) pyUnwrap(f *pyFunc, expr string) string {
	if expr != "self" || f.class == "" {
		return expr
	}
	if x := pf.acquires[f.class]; x != "" {
		return x
	}
	return expr
}

// pyInlineHeld is what a frame holds at a one-line `with X: call()` while
// it is inside the call (a frame above it runs): X.
func pyInlineHeld(lines []string, line int) []string {
	if line < 1 || line > len(lines) {
		return nil
	}
	m := pyWithRE.FindStringSubmatch(lines[line-1])
	if m == nil || m[2] == "" {
		return nil
	}
	if body, _, _ := strings.Cut(m[2], "#"); strings.TrimSpace(body) == "pass" || strings.TrimSpace(body) == "..." {
		return nil // nothing runs inside it
	}
	return withItems(lines[line-1])
}

// pyLine says what a line of a Python file is.
type pyLine uint8

const (
	pyAtModule pyLine = iota // code at module scope
	pyInDef                  // code inside a def or class body
	pyInString               // inside a multi-line string (a docstring)
)

var pyTripleRE = regexp.MustCompile(`"""|'''`)

// pyCodeLines classifies every line of a Python file: inside a
// triple-quoted string (a docstring: the lines it spans, its first and
// last included when they start with it), inside a def or class body, or
// at module scope. The scan is lexical and approximate: triple quotes
// inside comments and ordinary strings are not told apart.
func pyCodeLines(lines []string) []pyLine {
	out := make([]pyLine, len(lines))
	quote := "" // the triple quote a string open at the line's start began with
	body := -1  // the indentation of the def or class whose body this is
	for i, l := range lines {
		if quote != "" {
			out[i] = pyInString
			quote = closeTriple(l, quote)
			continue
		}
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			if body >= 0 {
				out[i] = pyInDef
			}
			continue
		}
		if in := indentOf(l); body >= 0 && in <= body {
			body = -1
		}
		switch {
		case body >= 0:
			out[i] = pyInDef
		case pyDefRE.MatchString(l) || pyClassRE.MatchString(l):
			body = indentOf(l)
		}
		quote = closeTriple(l, "")
		if strings.HasPrefix(t, `"""`) || strings.HasPrefix(t, "'''") {
			out[i] = pyInString
		}
	}
	return out
}

// closeTriple scans s for triple quotes, open being the one a string is
// open with ("" for none), and returns the one still open at its end.
func closeTriple(s, open string) string {
	for {
		loc := pyTripleRE.FindStringIndex(s)
		if loc == nil {
			return open
		}
		q := s[loc[0]:loc[1]]
		switch {
		case open == "":
			open = q
		case q == open:
			open = ""
		}
		s = s[loc[1]:]
	}
}

// pyScope says what the root of a lock expression is: self (a field of
// the class), a parameter, a local, or a module global.
func pyScope(lines []string, f *pyFunc, expr string) (scope, int) {
	root, _, _ := strings.Cut(expr, ".")
	if f != nil && !f.module {
		for i, p := range f.params {
			if p == root {
				if i == 0 && f.class != "" && (p == "self" || p == "cls") {
					return scopeReceiver, 0
				}
				return scopeParam, i
			}
		}
		for i := f.from + 1; i <= len(lines); i++ {
			l := lines[i-1]
			if strings.TrimSpace(l) != "" && indentOf(l) <= f.indent {
				break
			}
			if m := pyAssignRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil && m[1] == root {
				return scopeLocal, 0
			}
		}
	}
	return scopeGlobal, 0
}

// pyAlias names the lock a Condition attribute is built over:
// self.not_empty, in a class that sets `self.not_empty =
// threading.Condition(self.mutex)` (queue.Queue), is self.mutex: taking
// either takes the same lock. Any other expression is itself.
func (pf *pyFile) pyAlias(f *pyFunc, expr string) string {
	attr, ok := strings.CutPrefix(expr, "self.")
	if !ok || f == nil || f.class == "" || strings.Contains(attr, ".") {
		return expr
	}
	if x, ok := pf.conds[f.class+"."+attr]; ok {
		return x
	}
	return expr
}

// pyFile is a Python source file as the lock rules read it, each thing
// found once per file: its lines, which of them are code, and, per
// class, the lock its acquire() method takes and the locks its Condition
// attributes are built over.
type pyFile struct {
	lines []string
	code  []pyLine
	// acquires: class → the lock its acquire() takes ("self.lock"), ""
	// for an acquire() that takes none of self's.
	acquires map[string]string
	// conds: "Class.attr" → the lock the Condition attribute is built
	// over ("self.mutex").
	conds map[string]string
}

// newPyFile reads a file's lines for the lock rules.
func newPyFile(lines []string) *pyFile {
	pf := &pyFile{lines: lines, code: pyCodeLines(lines), acquires: map[string]string{}, conds: map[string]string{}}
	for i, l := range lines {
		if strings.Contains(l, "Condition(") {
			if m := pyCondOverRE.FindStringSubmatch(l); m != nil {
				if g := pyFuncAt(lines, i+1); g != nil && g.class != "" {
					pf.conds[g.class+"."+m[1]] = "self." + m[2]
				}
			}
			continue
		}
		if !strings.Contains(l, "def acquire") {
			continue
		}
		m := pyDefRE.FindStringSubmatch(l)
		if m == nil || m[2] != "acquire" || !strings.HasPrefix(strings.TrimSpace(m[3]), "self") {
			continue
		}
		g := pyFuncAt(lines, i+2)
		if g == nil || g.from != i+1 || g.class == "" {
			continue
		}
		if _, seen := pf.acquires[g.class]; seen {
			continue // the class's first acquire() decides
		}
		pf.acquires[g.class] = ""
		in := len(m[1])
		for _, b := range lines[i+1:] {
			if strings.TrimSpace(b) == "" {
				continue
			}
			if indentOf(b) <= in {
				break
			}
			if a := pyAcquireRE.FindStringSubmatch(b); a != nil && strings.HasPrefix(a[1], "self.") {
				pf.acquires[g.class] = a[1]
				break
			}
		}
	}
	return pf
}
