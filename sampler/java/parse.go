// Package java reads JVM thread dumps: the text jstack and `jcmd PID
// Thread.print [-l] [-e]` print (and kill -QUIT writes to the JVM's
// stdout) from JDK 6 to 25, and the JSON thread dump of JDK 21 and later
// (`jcmd PID Thread.dump_to_file -format=json FILE`), which alone lists
// virtual threads. It interprets nothing: classify decides what the
// threads, their monitors and their synchronizers mean.
//
// The entry point, for dumps read from files and for a live attach alike,
// is Parse: the raw bytes of one dump or of several (a file holding
// several "Full thread dump" sections is several snapshots, oldest
// first). For dumps read from files, Snapshots.Sample turns each Dump into
// a model.Sample, its threads keyed by their Linux tids (the dump's nid=)
// where the dump gives them. For a live JVM (an attach's threaddump
// reply), Merge joins one Dump to the sample of the threads /proc gave,
// by nid: classify then reads each thread's kernel wait and its Java
// locks together.
package java

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/hangdoc/hangdoc/model"
)

// ErrNoDump is returned for input with nothing recognisable as a JVM
// thread dump.
var ErrNoDump = errors.New("no JVM thread dump found")

// MaxBytes bounds what Parse reads of its input.
const MaxBytes = 256 << 20

// Dump is one thread dump of one JVM.
type Dump struct {
	Format model.Format // FormatJstack or FormatJavaJSON
	// Time is the dump's own timestamp; zero when it printed none.
	Time time.Time
	// VM is what the "Full thread dump" line names: "OpenJDK 64-Bit
	// Server VM (17.0.15+6 mixed mode, sharing)"; the JSON's
	// runtimeVersion.
	VM string
	// PID is the process, where the dump says (jcmd's first line, the
	// JSON's processId); 0 when it does not.
	PID     int
	Threads []Thread
	// Deadlocks are the JVM's own "Found one Java-level deadlock:"
	// sections: its word that these threads wait for each other.
	Deadlocks []Deadlock
	// JNIGlobalRefs is the "JNI global refs" count; -1 when not printed.
	JNIGlobalRefs int
	// Truncated: the input ended in the middle of a line, or the dump
	// has no "Full thread dump" header (an excerpt, a paste).
	Truncated bool
	// LongLines counts lines longer than MaxLine, skipped unread.
	LongLines int
	// Excerpt: only part of the dump's threads may be here (no header,
	// or the deadlock section alone).
	Excerpt bool
}

// Thread is one thread of a dump.
type Thread struct {
	Name string
	// Number is the "#N" Java thread number (the JSON's tid); 0 for the
	// JVM's own threads, which have none.
	Number int64
	Daemon bool
	// NID is the Linux thread id (nid=, hex before JDK 19, decimal
	// since); 0 when the dump gives none (JSON, a deadlock excerpt).
	NID int
	// CPUMillis is cpu= (JDK 11+), CPU time since the thread started;
	// CPUKnown says it was printed. ElapsedSeconds is elapsed=.
	CPUMillis      float64
	CPUKnown       bool
	ElapsedSeconds float64
	// Status is the header's words after nid=: "waiting on condition",
	// "waiting for monitor entry", "runnable", "in Object.wait()".
	Status string
	// State is the java.lang.Thread.State line: "BLOCKED (on object
	// monitor)", "WAITING (parking)", "RUNNABLE"; "" for the JVM's own
	// threads.
	State string
	// Virtual: a virtual thread (JSON dumps).
	Virtual bool
	Frames  []model.Frame
	// Locks are the lock lines under the frames, innermost first.
	Locks []LockLine
	// Ownable are the "Locked ownable synchronizers:" (-l), or nil when
	// the section was not printed; OwnableRead says it was.
	Ownable     []Object
	OwnableRead bool
	// BlockerOwner is, for a JSON thread that parks (its parkBlocker),
	// the blocker's owner's Java thread id when the JVM recorded one.
	BlockerOwner int64
}

// LockKind is what a lock line says a frame does with a monitor or a
// synchronizer.
type LockKind uint8

const (
	Locked        LockKind = iota + 1 // - locked <a>: holds the monitor
	WaitingToLock                     // - waiting to lock <a>: a monitor enter (BLOCKED)
	WaitingOn                         // - waiting on <a>: Object.wait, the monitor released
	Parking                           // - parking to wait for <a>: LockSupport.park's blocker
	Relocking                         // - waiting to re-lock in wait() <a>
	Eliminated                        // - eliminated <a>: a lock the JIT removed
)

var lockKinds = [...]string{"", "locked", "waiting to lock", "waiting on", "parking to wait for", "waiting to re-lock in wait()", "eliminated"}

func (k LockKind) String() string {
	if int(k) < len(lockKinds) {
		return lockKinds[k]
	}
	return "?"
}

// Object is an object a dump names: its address ("0x00000000ffd17098"),
// or in a JSON dump its identity string ("java.lang.Object@1b6d3586"),
// and its class.
type Object struct {
	Addr  string
	Class string
}

// LockLine is one "- …" line under a frame.
type LockLine struct {
	Frame int // the frame above it, innermost 0
	Kind  LockKind
	Object
}

// Deadlock is one "Found one Java-level deadlock:" section: each thread,
// what it waits for and who the JVM says holds it.
type Deadlock struct {
	Links []Link
}

// Link is one thread of a deadlock: Thread waits for Object (a monitor,
// or an ownable synchronizer when Ownable), which HeldBy holds ("" when
// the JVM could not name it: a virtual thread's UNKNOWN_owner_addr).
type Link struct {
	Thread  string
	Ownable bool
	Object
	HeldBy string
}

// Parse reads one or more JVM thread dumps: jstack or jcmd Thread.print
// text (several "Full thread dump" sections are several dumps, oldest
// first), or one JSON thread dump. Text is read a line at a time, its
// repeated words and stacks kept once; it reads at most MaxBytes, and
// skips lines longer than MaxLine.
func Parse(r io.Reader) ([]Dump, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxBytes), 64<<10)
	head, _ := br.Peek(4096)
	if jsonStart(head) >= 0 {
		b, err := io.ReadAll(br)
		if err != nil {
			return nil, fmt.Errorf("parsing JVM thread dump: %w", err)
		}
		return ParseBytes(b)
	}
	p := newTextParser()
	var long []byte
	cut := false
	for {
		l, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gathered up to MaxLine.
			if len(long)+len(l) <= MaxLine {
				long = append(long, l...)
			} else {
				long = long[:0]
				p.longLines++
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = br.ReadSlice('\n')
				}
				if err != nil {
					break
				}
				continue
			}
			continue
		}
		if len(long) > 0 {
			l = append(long, l...)
			long = long[:0]
		}
		if len(l) > 0 {
			cut = l[len(l)-1] != '\n'
			p.line(unsafeString(trimEOL(l)))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parsing JVM thread dump: %w", err)
		}
	}
	return p.end(cut)
}

// MaxLine bounds a line of a text dump; longer ones are skipped.
const MaxLine = 1 << 20

func trimEOL(l []byte) []byte {
	l = bytes.TrimSuffix(l, []byte("\n"))
	return bytes.TrimSuffix(l, []byte("\r"))
}

// unsafeString views b as a string without copying: the parser keeps no
// part of it that it has not interned or cloned.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// ParseBytes is Parse over bytes already read.
func ParseBytes(b []byte) ([]Dump, error) {
	if i := jsonStart(b); i >= 0 {
		d, err := parseJSON(b[i:])
		if err != nil {
			return nil, err
		}
		return []Dump{d}, nil
	}
	return Parse(bytes.NewReader(b))
}

// Detect reports whether b (the start of an input) holds a JVM thread
// dump, and which kind. It reads b without copying it: every input is
// sniffed with it first.
func Detect(b []byte) model.Format {
	if jsonStart(b) >= 0 {
		return model.FormatJavaJSON
	}
	for len(b) > 0 {
		l := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		l = bytes.TrimSpace(l)
		switch {
		case len(l) == 0:
		case bytes.HasPrefix(l, []byte("Full thread dump ")), string(l) == "Found one Java-level deadlock:",
			bytes.HasPrefix(l, []byte("java.lang.Thread.State: ")):
			return model.FormatJstack
		case l[0] == '"' && bytes.Contains(l, []byte(" nid=")):
			if _, ok := parseHeader(string(l)); ok {
				return model.FormatJstack
			}
		}
	}
	return model.FormatNone
}

// textParser holds the state of a text parse.
type textParser struct {
	dumps []Dump
	d     *Dump
	t     *Thread
	// stamp is a timestamp line not yet claimed by a dump; pid jcmd's "PID:" line.
	stamp time.Time
	pid   int
	// In a deadlock section: dl is the one being read, link its last
	// thread; info: in its "Java stack information" part.
	dl   *Deadlock
	info bool
	// words interns the strings a dump repeats (functions, files, states,
	// classes, addresses); stacks the stacks (stack.go); frames is the
	// current thread's stack as it is read.
	words     map[string]string
	stacks    stackTab
	frames    []model.Frame
	longLines int
	// names are the thread names of namesOf, the dump being read.
	names   map[string]bool
	namesOf *Dump
}

func newTextParser() *textParser {
	return &textParser{words: map[string]string{}, stacks: stackTab{byHash: map[uint64][][]model.Frame{}}}
}

// intern returns the kept copy of s, which may be a view of the read
// buffer.
func (p *textParser) intern(s string) string {
	if w, ok := p.words[s]; ok {
		return w
	}
	if len(p.words) >= 1<<20 {
		return strings.Clone(s) // an input of nothing but distinct words: bounded
	}
	w := strings.Clone(s)
	p.words[w] = w
	return w
}

// setThread ends the thread being read (its stack kept once) and starts t
// (nil for none).
func (p *textParser) setThread(t *Thread) {
	if p.t != nil && len(p.frames) > 0 {
		p.t.Frames = p.stacks.intern(p.frames)
	}
	p.frames = p.frames[:0]
	p.t = t
}

func (p *textParser) dump() *Dump {
	if p.d == nil {
		p.dumps = append(p.dumps, Dump{Format: model.FormatJstack, JNIGlobalRefs: -1, Truncated: true, Excerpt: true, Time: p.stamp, PID: p.pid})
		p.d = &p.dumps[len(p.dumps)-1]
		p.stamp, p.pid = time.Time{}, 0
	}
	return p.d
}

// stampLayout is jstack's timestamp line: "2026-12-05 00:39:51".
const stampLayout = "2006-01-02 15:04:05"

// end finishes a parse: cut says the last line had no line end.
func (p *textParser) end(cut bool) ([]Dump, error) {
	p.setThread(nil)
	if len(p.dumps) == 0 {
		return nil, fmt.Errorf("parsing JVM thread dump: %w", ErrNoDump)
	}
	n := 0
	for i := range p.dumps {
		p.dumps[i].deadlockThreads()
		n += len(p.dumps[i].Threads)
	}
	if n == 0 {
		return nil, fmt.Errorf("parsing JVM thread dump: %w: no thread in it", ErrNoDump)
	}
	last := &p.dumps[len(p.dumps)-1]
	if cut {
		last.Truncated = true
	}
	last.LongLines += p.longLines
	return p.dumps, nil
}

func (p *textParser) line(raw string) {
	line := strings.TrimSpace(raw)
	switch {
	case line == "":
		return
	case strings.HasPrefix(line, "Full thread dump "):
		p.setThread(nil)
		p.dumps = append(p.dumps, Dump{Format: model.FormatJstack, JNIGlobalRefs: -1, Time: p.stamp, PID: p.pid,
			VM: strings.Clone(strings.TrimSuffix(strings.TrimPrefix(line, "Full thread dump "), ":"))})
		p.d, p.dl, p.info = &p.dumps[len(p.dumps)-1], nil, false
		p.stamp, p.pid = time.Time{}, 0
		return
	case len(line) == len(stampLayout) && line[4] == '-' && line[13] == ':':
		if t, err := time.Parse(stampLayout, line); err == nil {
			p.stamp = t
			return
		}
	case isPIDLine(line):
		// jcmd's first line: "7421:".
		p.pid, _ = strconv.Atoi(strings.TrimSuffix(line, ":"))
		return
	case line == "Found one Java-level deadlock:" || line == "Found one Java-level deadlock on virtual threads:":
		p.setThread(nil)
		d := p.dump()
		d.Deadlocks = append(d.Deadlocks, Deadlock{})
		p.dl, p.info = &d.Deadlocks[len(d.Deadlocks)-1], false
		return
	case line == "Java stack information for the threads listed above:":
		p.setThread(nil)
		p.info = true
		return
	case strings.HasPrefix(line, "Found ") && (strings.HasSuffix(line, " deadlock.") || strings.HasSuffix(line, " deadlocks.")):
		p.setThread(nil)
		p.dl, p.info = nil, false
		return
	case strings.HasPrefix(line, "JNI global ref"):
		// "JNI global refs: 15, weak refs: 0" (JDK 9+), "JNI global references: 873" (older).
		v := line[strings.IndexByte(line, ':')+1:]
		if i := strings.IndexByte(v, ','); i >= 0 {
			v = v[:i]
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			p.dump().JNIGlobalRefs = n
		}
		p.setThread(nil)
		return
	}
	if p.dl != nil && !p.info {
		p.deadlockLine(line)
		return
	}
	if strings.HasPrefix(line, `"`) {
		p.setThread(nil)
		h, ok := parseHeader(line)
		if !ok {
			return
		}
		d := p.dump()
		if p.names == nil || p.namesOf != d {
			p.names, p.namesOf = map[string]bool{}, d
		}
		if p.info && p.names[h.Name] {
			// The deadlock's threads again: new only in an excerpt that
			// holds nothing but the deadlock section.
			return
		}
		h.Name, h.Status = strings.Clone(h.Name), p.intern(h.Status)
		p.names[h.Name] = true
		d.Threads = append(d.Threads, h)
		p.t = &d.Threads[len(d.Threads)-1]
		return
	}
	t := p.t
	if t == nil {
		return
	}
	switch {
	case strings.HasPrefix(line, "java.lang.Thread.State: "):
		t.State = p.intern(strings.TrimPrefix(line, "java.lang.Thread.State: "))
	case strings.HasPrefix(line, "at "):
		f := parseFrame(strings.TrimPrefix(line, "at "))
		f.Func, f.File = p.intern(f.Func), p.intern(f.File)
		p.frames = append(p.frames, f)
	case strings.HasPrefix(line, "Locked ownable synchronizers:"):
		t.OwnableRead = true
	case strings.HasPrefix(line, "- "):
		rest := strings.TrimPrefix(line, "- ")
		if t.OwnableRead {
			if o, ok := parseObject(rest); ok {
				t.Ownable = append(t.Ownable, p.object(o))
			}
			return
		}
		for k := Locked; k <= Eliminated; k++ {
			if after, ok := strings.CutPrefix(rest, k.String()+" "); ok {
				o, _ := parseObject(strings.TrimSpace(after))
				t.Locks = append(t.Locks, LockLine{Frame: max(len(p.frames)-1, 0), Kind: k, Object: p.object(o)})
				return
			}
		}
	}
}

// object keeps o's strings.
func (p *textParser) object(o Object) Object {
	return Object{Addr: p.intern(o.Addr), Class: p.intern(o.Class)}
}

func isPIDLine(line string) bool {
	if len(line) < 2 || len(line) > 12 || line[len(line)-1] != ':' {
		return false
	}
	for _, c := range line[:len(line)-1] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// thread finds a thread of d by its name; -1 when there is none.
func (d *Dump) thread(name string) int {
	for i := range d.Threads {
		if d.Threads[i].Name == name {
			return i
		}
	}
	return -1
}

// deadlockLine reads one line of a deadlock section's first part:
//
//	"abba-1":
//	  waiting to lock monitor 0x00007f3fbc067200 (object 0x00000000ffd17098, a java.lang.Object),
//	  waiting for ownable synchronizer 0x00000000ffd19a08, (a java.util.concurrent.locks.ReentrantLock$NonfairSync),
//	  which is held by "abba-2"
func (p *textParser) deadlockLine(line string) {
	dl := p.dl
	switch {
	case len(line) >= 3 && strings.HasPrefix(line, `"`) && strings.HasSuffix(line, `":`):
		dl.Links = append(dl.Links, Link{Thread: p.intern(line[1 : len(line)-2])})
	case len(dl.Links) == 0 || strings.HasPrefix(line, "="):
	case strings.HasPrefix(line, "waiting to lock monitor "):
		l := &dl.Links[len(dl.Links)-1]
		if i := strings.Index(line, "(object "); i >= 0 {
			rest := line[i+len("(object "):]
			addr, class, _ := strings.Cut(rest, ", a ")
			l.Addr, l.Class = p.intern(addr), p.intern(strings.TrimRight(class, "),"))
		}
	case strings.HasPrefix(line, "waiting for ownable synchronizer "):
		l := &dl.Links[len(dl.Links)-1]
		rest := strings.TrimPrefix(line, "waiting for ownable synchronizer ")
		addr, class, _ := strings.Cut(rest, ", (a ")
		l.Ownable, l.Addr, l.Class = true, p.intern(addr), p.intern(strings.TrimRight(class, "),"))
	case strings.HasPrefix(line, "which is held by "):
		l := &dl.Links[len(dl.Links)-1]
		by := strings.TrimPrefix(line, "which is held by ")
		if strings.HasPrefix(by, `"`) && strings.HasSuffix(by, `"`) && len(by) >= 2 {
			l.HeldBy = p.intern(by[1 : len(by)-1])
		}
	}
}

// parseObject reads "<0x00000000ffd17098> (a java.lang.Object)"; "<no
// object reference available>" and "<owner is scalar replaced>" give no
// address.
func parseObject(s string) (Object, bool) {
	var o Object
	if !strings.HasPrefix(s, "<") {
		return o, false
	}
	end := strings.IndexByte(s, '>')
	if end < 0 {
		return o, false
	}
	if a := s[1:end]; strings.HasPrefix(a, "0x") {
		o.Addr = a
	}
	rest := strings.TrimSpace(s[end+1:])
	if c, ok := strings.CutPrefix(rest, "(a "); ok {
		o.Class = strings.TrimSuffix(c, ")")
	}
	return o, o.Addr != ""
}

// parseHeader reads a thread's header line:
//
//	"main" #1 prio=5 os_prio=0 cpu=34.61ms elapsed=0.31s tid=0x00007fd808017f30 nid=0x14eb in Object.wait()  [0x00007fd80d31e000]
//	"main" #3 [7425] prio=5 os_prio=0 cpu=32.26ms elapsed=0.64s allocated=409K defined_classes=33 tid=0x… nid=7425 in Object.wait()  [0x…]
//	"GC Thread#0" os_prio=0 cpu=0.11ms elapsed=0.64s tid=0x00007f401404fb60 nid=7427 runnable
//	"RMI TCP Connection(idle)" daemon prio=10 tid=0x083f6800 nid=0x53d9 waiting on condition [0xce963000..0xce964130]
//	"abba-1":   (a deadlock section's)
//
// A name may hold quotes: it ends at the last quote before the fields.
func parseHeader(line string) (Thread, bool) {
	var t Thread
	if !strings.HasPrefix(line, `"`) {
		return t, false
	}
	if strings.HasSuffix(line, `":`) && len(line) >= 3 {
		t.Name = line[1 : len(line)-2]
		return t, true
	}
	fieldsAt := len(line)
	for _, key := range []string{" tid=", " nid="} {
		if i := strings.LastIndex(line, key); i > 0 && i < fieldsAt {
			fieldsAt = i
		}
	}
	end := strings.LastIndexByte(line[:fieldsAt], '"')
	if end <= 0 || fieldsAt == len(line) {
		return t, false
	}
	t.Name = line[1:end]
	rest := line[end+1:]
	// The words after nid= are the status; fields before it are key=value
	// or bare words.
	if i := strings.Index(rest, " nid="); i >= 0 {
		after := rest[i+len(" nid="):]
		nid, status, _ := strings.Cut(after, " ")
		t.NID = parseNID(nid)
		if j := strings.Index(status, " ["); j >= 0 {
			status = status[:j]
		}
		t.Status = strings.TrimSpace(status)
		rest = rest[:i]
	}
	for _, f := range strings.Fields(rest) {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case !ok && f == "daemon":
			t.Daemon = true
		case !ok && strings.HasPrefix(f, "#"):
			t.Number, _ = strconv.ParseInt(f[1:], 10, 64)
		case k == "cpu":
			if ms, err := strconv.ParseFloat(strings.TrimSuffix(v, "ms"), 64); err == nil && strings.HasSuffix(v, "ms") && ms >= 0 {
				t.CPUMillis, t.CPUKnown = ms, true
			}
		case k == "elapsed":
			if s, err := strconv.ParseFloat(strings.TrimSuffix(v, "s"), 64); err == nil && s >= 0 {
				t.ElapsedSeconds = s
			}
		}
	}
	return t, true
}

// parseNID reads nid=: hex ("0x14eb") before JDK 19, decimal since; 0
// for anything else or out of a tid's range.
func parseNID(s string) int {
	var v uint64
	var err error
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		v, err = strconv.ParseUint(h, 16, 32)
	} else {
		v, err = strconv.ParseUint(s, 10, 32)
	}
	if err != nil || v > 1<<22 {
		return 0
	}
	return int(v)
}

// parseFrame reads a frame after "at ":
//
//	java.lang.Object.wait(java.base@17.0.15/Native Method)
//	LockAbba.take(LockAbba.java:30)
//	LockAbba$$Lambda$1/0x00007fd794000a08.run(Unknown Source)
func parseFrame(s string) model.Frame {
	open := strings.LastIndexByte(s, '(')
	if open < 0 || !strings.HasSuffix(s, ")") {
		return model.Frame{Func: s}
	}
	f := model.Frame{Func: s[:open]}
	loc := s[open+1 : len(s)-1]
	if i := strings.LastIndexByte(loc, '/'); i >= 0 {
		loc = loc[i+1:] // the module: "java.base@17.0.15/"
	}
	if file, line, ok := strings.Cut(loc, ":"); ok {
		if n, err := strconv.Atoi(line); err == nil && n > 0 {
			f.File, f.Line = file, n
			return f
		}
	}
	if strings.HasSuffix(loc, ".java") {
		f.File = loc
	}
	return f
}

// deadlockThreads adds the threads a deadlock section names that the dump
// does not hold (an excerpt of the section alone, cut short), as the JVM
// describes them: waiting for the object of their link.
func (d *Dump) deadlockThreads() {
	if len(d.Deadlocks) == 0 {
		return
	}
	have := make(map[string]bool, len(d.Threads))
	for _, t := range d.Threads {
		have[t.Name] = true
	}
	for _, dl := range d.Deadlocks {
		for _, l := range dl.Links {
			if l.Thread == "" || have[l.Thread] {
				continue
			}
			have[l.Thread] = true
			t := Thread{Name: l.Thread, State: "BLOCKED (on object monitor)"}
			k := WaitingToLock
			if l.Ownable {
				t.State, k = "WAITING (parking)", Parking
			}
			if l.Addr != "" {
				t.Locks = []LockLine{{Kind: k, Object: l.Object}}
			}
			d.Threads = append(d.Threads, t)
			d.Excerpt = true
		}
	}
}
