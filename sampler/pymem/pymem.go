// Package pymem reads a CPython process's threads and their Python stacks
// from its memory while it runs: process_vm_readv only, no ptrace, no
// signal, so the target is never stopped (py-spy pauses it, or reads it
// torn with --nonblocking).
//
// The way in is the interpreter's _PyRuntime, an exported symbol of
// libpython (or of the executable, in a static build): its interpreters,
// each interpreter's thread states, each thread's frames (PyFrameObject
// before 3.11, _PyInterpreterFrame since), each frame's code object (its
// file, name, first line and line table) and the offset of the
// instruction it is at. Where each field is comes from the layouts table
// (zlayouts.go, generated from the interpreters' DWARF by ./gen), by
// minor version. From 3.13 the runtime carries its own table of those
// offsets (_Py_DebugOffsets, at the start of _PyRuntime): its cookie and
// version confirm the interpreter's.
//
// The target runs while it is read: every pointer is checked against the
// process's mappings and every object's type by its name (a code object
// is "code", a name "str"), and a stack whose thread moved to another
// frame while it was walked is read again; one that keeps moving is
// marked Torn, never presented as a wait.
package pymem

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
)

// Bounds on what one read may cost, whatever the target's memory holds.
const (
	maxInterpreters = 64
	maxThreads      = 4096
	maxFrames       = 1024
	maxString       = 4096    // bytes of a file or function name
	maxTable        = 1 << 20 // bytes of a line table
	maxCodes        = 1 << 16 // code objects kept between reads
	maxRetries      = 3       // re-reads of a stack that moved
	// maxReads bounds the reads of one Threads call: 4,096 threads of 24
	// frames, each walked twice.
	maxReads     = 1 << 18
	maxReadBytes = 64 << 20
)

// errTooManyReads: a read of the threads gave up at maxReads.
var errTooManyReads = errors.New("the interpreter's threads took more reads than hangdoc allows one sample (its memory is not what its layout says, or it has more threads and frames than hangdoc reads)")

// ErrNotPython: the process has no CPython runtime hangdoc can find.
var ErrNotPython = errors.New("no CPython runtime (_PyRuntime) in the process")

// ErrUnknownVersion: the interpreter's version has no row in the layouts
// table.
var ErrUnknownVersion = errors.New("a CPython version hangdoc has no layout for")

// Thread is one Python thread state as read.
type Thread struct {
	// TID is its OS thread id, as the target's PID namespace numbers it
	// (native_thread_id from 3.11; before, read from glibc's struct
	// pthread at its pthread_t); 0 when not found.
	TID int
	// Ident is its pthread_t: threading.get_ident().
	Ident uint64
	// Name is its threading.Thread's name; "" when it has none (a thread
	// threading did not start) or it could not be read.
	Name string
	// Frames are its Python frames, innermost first.
	Frames []model.Frame
	// HoldsGIL: the GIL is locked and this thread state is its last
	// holder, as the runtime records it.
	HoldsGIL bool
	// Vars are, by frame, the variables that name objects (ReadVars).
	Vars []model.FrameVars
	// Torn: its stack changed on each of the reads; Frames are the last
	// read's and may mix two moments.
	Torn bool

	globals uint64 // threading's module dict, from a frame in threading.py
}

// threadingFrame is what the reader takes from a thread's frames in
// threading.py: the Thread object _bootstrap runs (its self), and the
// module's globals.
type threadingFrame struct {
	self, globals uint64
}

// Reader reads one CPython process. It is not safe for concurrent use.
type Reader struct {
	fs      sampler.FS
	pid     int
	mem     *memory
	lay     Layout
	minor   int
	version string // "3.12.1" where known, else "3.12"
	runtime uint64 // the address of _PyRuntime
	codes   map[uint64]*code
	types   map[uint64]string
	// pthreadTID is the offset of the tid in glibc's struct pthread, found
	// by the threads of the first read (3.8 to 3.10); -1 before.
	pthreadTID int
	// debugOffsets: 3.13's _Py_DebugOffsets confirmed the version.
	debugOffsets bool
	// vars: read the frames' variables (ReadVars).
	vars bool
	// tstateSpan and frameSpan are how much of a thread state and of a
	// frame one read takes: every field the reader needs of it.
	tstateSpan, frameSpan int
	// names are the threads' names by their Thread objects, read once
	// (again with the variables, on a run's last sample).
	names map[uint64]string
	// known are the target's thread ids (KnownThreads); nil for none.
	known []int
}

// ReadVars asks the reads that follow for the frames' variables too (as
// py-spy --locals): what a lock rule names, at a cost per frame, so a run
// asks for them on its last sample.
func (r *Reader) ReadVars(on bool) { r.vars = on }

// code is what a code object says, read once.
type code struct {
	file, name string
	first      int
	table      []byte
	bytecode   uint64 // the address of its first instruction
	// vars and cells are its variables' names and which slots hold cells
	// (varNames), read the first time a frame's variables are.
	vars     []string
	cells    []bool
	varsRead bool
	// telling: a task's frame of this code has variables worth reading
	// (taskVarsWanted): 0 not yet known, 1 yes, -1 no.
	telling int8
}

// Open finds the CPython runtime of pid: the mapped libpython3.N.so, or
// the executable, whose symbols name _PyRuntime.
func Open(fsys sampler.FS, pid int) (*Reader, error) {
	maps, err := os.ReadFile(fsys.Path(strconv.Itoa(pid), "maps"))
	if err != nil {
		return nil, err
	}
	path, base, err := runtimeFile(maps)
	if err != nil {
		return nil, err
	}
	file := fsys.Path(strconv.Itoa(pid), "root") + path
	sym, minor, patch, err := runtimeSymbol(file, path)
	if err != nil {
		return nil, err
	}
	r := &Reader{fs: fsys, pid: pid, mem: newMemory(pid), runtime: base + sym, minor: minor,
		codes: map[uint64]*code{}, types: map[uint64]string{}, pthreadTID: -1}
	if err := r.checkVersion(); err != nil {
		return nil, err
	}
	if patch != "" && !r.debugOffsets {
		r.version = patch
	}
	lay, ok := layouts[r.minor]
	if !ok {
		return nil, fmt.Errorf("Python %s: %w (3.8 to 3.13)", r.version, ErrUnknownVersion)
	}
	r.lay = lay
	r.tstateSpan = 8 + max(lay.TstateNext, lay.TstateFrame, lay.TstateCFrame, lay.TstateThreadID, lay.TstateNativeThreadID)
	if lay.IFrameCode >= 0 {
		r.frameSpan = 8 + max(lay.IFramePrevious, lay.IFrameOwner, lay.IFrameCode, lay.IFrameInstr, lay.IFrameGlobals)
	} else {
		r.frameSpan = 8 + max(lay.FrameBack, lay.FrameCode, lay.FrameLasti, lay.FrameGlobals)
	}
	r.names = map[uint64]string{}
	return r, nil
}

// Version is the interpreter's version: "3.12.1", or "3.12" where only
// the library's name says it.
func (r *Reader) Version() string { return r.version }

// DebugOffsets reports a 3.13+ runtime whose own offsets table confirmed
// its version.
func (r *Reader) DebugOffsets() bool { return r.debugOffsets }

var libpython = regexp.MustCompile(`/libpython3\.(\d+)[a-z]*\.so`)
var pythonExe = regexp.MustCompile(`/python3\.(\d+)[a-z]*$`)

// runtimeFile is the mapped file that holds _PyRuntime — libpython when
// one is mapped, else the executable named python3.N — and the address
// its first mapping (file offset 0) is loaded at.
func runtimeFile(maps []byte) (string, uint64, error) {
	var exe string
	var exeBase uint64
	for line := range bytes.Lines(maps) {
		f := strings.Fields(string(line))
		if len(f) < 6 || f[2] != "00000000" && strings.Trim(f[2], "0") != "" {
			continue
		}
		lo, _, _ := strings.Cut(f[0], "-")
		addr, err := strconv.ParseUint(lo, 16, 64)
		if err != nil {
			continue
		}
		path := strings.Join(f[5:], " ")
		if libpython.MatchString(path) {
			return path, addr, nil
		}
		if exe == "" && pythonExe.MatchString(path) {
			exe, exeBase = path, addr
		}
	}
	if exe == "" {
		return "", 0, ErrNotPython
	}
	return exe, exeBase, nil
}

// runtimeSymbol is _PyRuntime's address relative to where the file's
// first segment is loaded, the minor version its name says (0 when it
// does not), and its full version where its read-only data holds it
// ("3.10.13": PY_VERSION, a string of its own there; "" when not found).
func runtimeSymbol(file, path string) (uint64, int, string, error) {
	f, err := elf.Open(file)
	if err != nil {
		return 0, 0, "", err
	}
	defer f.Close()
	var first uint64
	found := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			first, found = p.Vaddr-p.Off, true
			break
		}
	}
	if !found {
		return 0, 0, "", fmt.Errorf("%s: no loadable segment", path)
	}
	addr := uint64(0)
	for _, load := range []func() ([]elf.Symbol, error){f.DynamicSymbols, f.Symbols} {
		syms, _ := load()
		for _, s := range syms {
			if s.Name == "_PyRuntime" {
				addr = s.Value
				break
			}
		}
		if addr != 0 {
			break
		}
	}
	if addr == 0 {
		return 0, 0, "", fmt.Errorf("%s: %w", path, ErrNotPython)
	}
	minor := 0
	if m := libpython.FindStringSubmatch(path); m != nil {
		minor, _ = strconv.Atoi(m[1])
	} else if m := pythonExe.FindStringSubmatch(path); m != nil {
		minor, _ = strconv.Atoi(m[1])
	}
	return addr - first, minor, pyVersion(f, minor), nil
}

// pyVersion is the file's full version: Py_Version (3.11 on, its
// PY_VERSION_HEX), else PY_VERSION ("3.10.13") in its read-only data,
// where the linker may have merged it into the tail of a longer string
// (the build directory's "/Python-3.10.13").
func pyVersion(f *elf.File, minor int) string {
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if s.Name != "Py_Version" || s.Size != 4 && s.Size != 8 {
			continue
		}
		for _, sec := range f.Sections {
			if s.Value >= sec.Addr && s.Value+4 <= sec.Addr+sec.Size && sec.Type == elf.SHT_PROGBITS {
				b := make([]byte, 4)
				if _, err := sec.ReadAt(b, int64(s.Value-sec.Addr)); err == nil {
					hex := binary.LittleEndian.Uint32(b)
					if hex>>24 == 3 && int(hex>>16&0xff) == minor {
						return fmt.Sprintf("3.%d.%d", minor, hex>>8&0xff)
					}
				}
			}
		}
	}
	ro := f.Section(".rodata")
	if ro == nil || minor == 0 || ro.Size > 64<<20 {
		return ""
	}
	b, err := ro.Data()
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(`[^0-9.]3\.` + strconv.Itoa(minor) + `\.\d{1,3}\x00`).Find(b)
	if m == nil {
		return ""
	}
	return string(m[1 : len(m)-1])
}

// checkVersion sets the version: from 3.13 the runtime's _Py_DebugOffsets
// says it (its cookie "xdebugpy", then PY_VERSION_HEX); before, the file's
// name.
func (r *Reader) checkVersion() error {
	b, err := r.mem.read(r.runtime, 16)
	if err == nil && string(b[:8]) == "xdebugpy" {
		hex := binary.LittleEndian.Uint64(b[8:])
		major, minor, micro := int(hex>>24&0xff), int(hex>>16&0xff), int(hex>>8&0xff)
		if major != 3 || r.minor != 0 && minor != r.minor {
			return fmt.Errorf("the runtime's debug offsets say Python %d.%d, its file 3.%d: %w", major, minor, r.minor, ErrUnknownVersion)
		}
		r.minor, r.version, r.debugOffsets = minor, fmt.Sprintf("3.%d.%d", minor, micro), true
		return nil
	}
	if r.minor == 0 {
		return fmt.Errorf("no version in the runtime's file name: %w", ErrUnknownVersion)
	}
	if r.minor >= 13 {
		return fmt.Errorf("Python 3.%d without its debug offsets: %w", r.minor, ErrUnknownVersion)
	}
	r.version = "3." + strconv.Itoa(r.minor)
	return nil
}

// Threads reads every thread state of every interpreter, with its stack.
func (r *Reader) Threads(ctx context.Context) ([]Thread, error) {
	if len(r.codes) > maxCodes {
		clear(r.codes)
	}
	l := &r.lay
	interp, err := r.mem.ptr(r.runtime + uint64(l.RuntimeInterpretersHead))
	if err != nil {
		return nil, fmt.Errorf("reading _PyRuntime: %w", err)
	}
	var out []Thread
	// A list that loops back on itself (memory torn, or not what the
	// layout says) is read once round.
	seen := map[uint64]bool{}
	r.mem.reset()
	for n := 0; interp != 0 && n < maxInterpreters && !seen[interp]; n++ {
		seen[interp] = true
		ts, err := r.mem.ptr(interp + uint64(l.InterpThreadsHead))
		if err != nil {
			return nil, fmt.Errorf("reading an interpreter: %w", err)
		}
		gilp := r.gilAddr(interp)
		g := r.gilAt(gilp)
		holder := uint64(0)
		if g.locked {
			holder = g.holder
		}
		for k := 0; ts != 0 && k < maxThreads && !seen[ts]; k++ {
			seen[ts] = true
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if r.mem.reads > maxReads || r.mem.bytes > maxReadBytes {
				return nil, errTooManyReads
			}
			t, next, err := r.thread(ts, gilp)
			if err != nil {
				return nil, err
			}
			t.HoldsGIL = holder != 0 && holder == ts
			out = append(out, t)
			ts = next
		}
		if interp, err = r.mem.ptr(interp + uint64(l.InterpNext)); err != nil {
			break
		}
	}
	if l.TstateNativeThreadID < 0 {
		r.tidsFromPthreads(out)
	}
	r.mainName(out)
	return out, nil
}

// thread reads one thread state — its fields in one read — and its
// stack. The stack is read whole when the walk reached the outermost
// frame and the thread cannot have run while it was walked (the GIL says
// so); else it is walked again, and kept when two walks in a row agree,
// frame by frame and instruction by instruction; a stack that changed on
// every walk is marked torn. A check of the innermost frame alone is not
// enough: a thread that returned and called again, reusing the same
// frame's memory, leaves it as it was (TestChurn). next is the thread
// state after it.
func (r *Reader) thread(ts, gilp uint64) (t Thread, next uint64, err error) {
	l := &r.lay
	b, err := r.mem.read(ts, r.tstateSpan)
	if err != nil {
		return t, 0, err
	}
	word := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	t.Ident, next = word(l.TstateThreadID), word(l.TstateNext)
	if l.TstateNativeThreadID >= 0 {
		t.TID = int(word(l.TstateNativeThreadID))
	}
	var prev []uint64
	for try := 0; ; try++ {
		// The GIL first, then the innermost frame: a frame read before the
		// GIL was may be one the thread has left since.
		before := r.gilAt(gilp)
		top, err := r.topFrame(ts, nil)
		if err != nil {
			return t, 0, err
		}
		w := r.walk(top)
		after := r.gilAt(gilp)
		t.Frames, t.Vars = w.frames, w.vars
		if w.whole && (stillWhile(ts, before, after) || slices.Equal(prev, w.sig)) {
			t.Name = r.threadName(w.boot.self)
			t.globals = w.boot.globals
			return t, next, nil
		}
		if try == maxRetries {
			// The name is the Thread object's, whatever the stack does.
			t.Torn, t.Name = true, r.threadName(w.boot.self)
			return t, next, nil
		}
		prev = w.sig
	}
}

// topFrame is the address of a thread's innermost frame; 0 for none.
// state is the thread state's fields as read, nil to read them afresh.
func (r *Reader) topFrame(ts uint64, state []byte) (uint64, error) {
	l := &r.lay
	at := l.TstateFrame // a PyFrameObject (3.8 to 3.10), or 3.13's current_frame
	if l.IFrameCode >= 0 && l.TstateCFrame >= 0 {
		at = l.TstateCFrame // 3.11 and 3.12: through the thread's _PyCFrame
	}
	var p uint64
	if state != nil {
		p = binary.LittleEndian.Uint64(state[at:])
	} else {
		var err error
		if p, err = r.mem.ptr(ts + uint64(at)); err != nil {
			return 0, err
		}
	}
	if at != l.TstateCFrame || p == 0 {
		return p, nil
	}
	return r.mem.ptr(p + uint64(l.CFrameCurrent))
}

// walked is one walk of a thread's frames.
type walked struct {
	frames []model.Frame
	vars   []model.FrameVars
	boot   threadingFrame
	// sig is each frame's address and, but for the innermost, the word
	// its instruction is read from: two walks that agree on it read the
	// same stack. The innermost frame's instruction moves on in a thread
	// that runs: where it stands is a sample, as on-CPU sampling's is.
	sig []uint64
	// whole: the walk reached the outermost frame (or the bound on
	// frames); a frame it could not read ended it early.
	whole bool
}

// walk reads the frames from the innermost outwards; a frame it cannot
// read ends the walk.
func (r *Reader) walk(f uint64) walked {
	l := &r.lay
	var w walked
	out, vars, boot := w.frames, w.vars, w.boot
	n := 0
	for ; f != 0 && n < maxFrames; n++ {
		b, err := r.mem.read(f, r.frameSpan)
		if err != nil {
			break
		}
		word := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
		var next, codeAddr uint64
		var off int
		if l.IFrameCode < 0 {
			// A PyFrameObject: f_lasti is the last instruction's byte
			// offset (3.8, 3.9) or index (3.10).
			next, codeAddr = word(l.FrameBack), word(l.FrameCode)
			w.sig = append(w.sig, f, uint64(binary.LittleEndian.Uint32(b[l.FrameLasti:]))*uint64(min(n, 1)))
			off = max(0, int(int32(binary.LittleEndian.Uint32(b[l.FrameLasti:]))))
			if r.minor == 10 {
				off *= 2
			}
		} else {
			next = word(l.IFramePrevious)
			if b[l.IFrameOwner] == frameOwnedByCStack && r.minor >= 12 {
				f = next // the C stack's shim frame: no code of its own
				continue
			}
			codeAddr = word(l.IFrameCode)
			instr := word(l.IFrameInstr)
			w.sig = append(w.sig, f, instr*uint64(min(n, 1)))
			c := r.code(codeAddr)
			if c == nil {
				f = next // 3.13's f_executable may be None: no Python code
				continue
			}
			if instr >= c.bytecode {
				off = int(instr - c.bytecode)
			}
		}
		c := r.code(codeAddr)
		if c == nil {
			break
		}
		if l.IFrameCode < 0 && r.nameOfType(word(l.ObType)) != "frame" {
			break
		}
		line := lineOf(r.minor, c.first, c.table, off)
		locals, globals := l.IFrameLocals, l.IFrameGlobals
		if l.IFrameCode < 0 {
			locals, globals = l.FrameLocals, l.FrameGlobals
		}
		if r.vars {
			if vs := r.frameVars(codeAddr, c, f+uint64(locals), nil); len(vs) > 0 {
				vars = append(vars, model.FrameVars{Frame: len(out), Vars: vs})
			}
		}
		out = append(out, model.Frame{Func: c.name, File: c.file, Line: line})
		if strings.HasSuffix(c.file, "/threading.py") {
			boot.globals = word(globals)
			if c.name == "_bootstrap" || c.name == "Thread._bootstrap" {
				boot.self, _ = r.mem.ptr(f + uint64(locals))
			}
		}
		f = next
	}
	w.frames, w.vars, w.boot = out, vars, boot
	w.whole = f == 0 || n == maxFrames
	return w
}

// frameOwnedByCStack is the owner of 3.12's and 3.13's shim frames, which
// the C stack owns and which run no Python code.
const frameOwnedByCStack = 3

// code reads a code object, once; nil when addr is not one.
func (r *Reader) code(addr uint64) *code {
	if c, ok := r.codes[addr]; ok {
		return c
	}
	if r.typeName(addr) != "code" {
		return nil
	}
	l := &r.lay
	c := &code{}
	fileAddr, err1 := r.mem.ptr(addr + uint64(l.CodeFilename))
	// The qualified name where the code has one (3.11 on: Thread.run),
	// as py-spy and tracebacks name a frame.
	nameAt := l.CodeName
	if l.CodeQualname >= 0 {
		nameAt = l.CodeQualname
	}
	nameAddr, err2 := r.mem.ptr(addr + uint64(nameAt))
	first, err3 := r.mem.i32(addr + uint64(l.CodeFirstLine))
	tableAddr, err4 := r.mem.ptr(addr + uint64(l.CodeLineTable))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil
	}
	c.file, c.name, c.first = r.str(fileAddr), r.str(nameAddr), int(first)
	c.table = r.bytesObject(tableAddr)
	if l.CodeAdaptive >= 0 {
		c.bytecode = addr + uint64(l.CodeAdaptive)
	}
	r.codes[addr] = c
	return c
}

// typeName is the name of an object's type ("code", "str"); "" when it
// cannot be read.
func (r *Reader) typeName(obj uint64) string {
	typ, err := r.mem.ptr(obj + uint64(r.lay.ObType))
	if err != nil {
		return ""
	}
	return r.nameOfType(typ)
}

// nameOfType is a type object's name, read once.
func (r *Reader) nameOfType(typ uint64) string {
	if typ == 0 {
		return ""
	}
	if n, ok := r.types[typ]; ok {
		return n
	}
	np, err := r.mem.ptr(typ + uint64(r.lay.TypeName))
	if err != nil {
		return ""
	}
	n := r.mem.cstring(np, 64)
	if len(r.types) < 4096 {
		r.types[typ] = n
	}
	return n
}

// str reads a str object: compact ASCII, Latin-1, UCS-2 or UCS-4; "?"
// for what it cannot read.
func (r *Reader) str(obj uint64) string {
	if obj == 0 || r.typeName(obj) != "str" {
		return "?"
	}
	l := &r.lay
	n, err := r.mem.ptr(obj + uint64(l.ASCIILength))
	if err != nil || n > maxString {
		return "?"
	}
	st, err := r.mem.read(obj+uint64(l.ASCIIState), 4)
	if err != nil {
		return "?"
	}
	state := binary.LittleEndian.Uint32(st)
	kind, compact, ascii := state>>2&7, state>>5&1 == 1, state>>6&1 == 1
	if !compact {
		return "?"
	}
	data := obj + uint64(l.CompactSize)
	if ascii {
		data = obj + uint64(l.ASCIISize)
	}
	if kind != 1 && kind != 2 && kind != 4 {
		return "?"
	}
	b, err := r.mem.read(data, int(n)*int(kind))
	if err != nil {
		return "?"
	}
	if kind == 1 {
		if ascii {
			return string(b)
		}
		rs := make([]rune, len(b))
		for i, c := range b {
			rs[i] = rune(c)
		}
		return string(rs)
	}
	rs := make([]rune, n)
	for i := range rs {
		if kind == 2 {
			rs[i] = rune(binary.LittleEndian.Uint16(b[2*i:]))
		} else {
			rs[i] = rune(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return string(rs)
}

// bytesObject reads a bytes object's contents; nil when it is not one.
func (r *Reader) bytesObject(obj uint64) []byte {
	if obj == 0 || r.typeName(obj) != "bytes" {
		return nil
	}
	n, err := r.mem.ptr(obj + uint64(r.lay.VarSize))
	if err != nil || n > maxTable {
		return nil
	}
	b, err := r.mem.read(obj+uint64(r.lay.BytesData), int(n))
	if err != nil {
		return nil
	}
	return b
}

// gil is what an interpreter's GIL says at one instant.
type gil struct {
	ok       bool
	locked   bool
	holder   uint64 // the thread state that took it last
	switches uint64 // times it passed from one thread to another
}

// gilAddr is where an interpreter's GIL is (the runtime's, before
// 3.12); 0 when it cannot be read.
func (r *Reader) gilAddr(interp uint64) uint64 {
	l := &r.lay
	switch {
	case l.RuntimeGIL >= 0:
		return r.runtime + uint64(l.RuntimeGIL)
	case l.InterpGIL >= 0:
		p, _ := r.mem.ptr(interp + uint64(l.InterpGIL))
		return p
	}
	return 0
}

// gilAt reads the GIL at addr (gilAddr), in one read.
func (r *Reader) gilAt(addr uint64) gil {
	l := &r.lay
	if addr == 0 {
		return gil{}
	}
	b, err := r.mem.read(addr, 8+max(l.GILLocked, l.GILHolder, l.GILSwitch))
	if err != nil {
		return gil{}
	}
	return gil{ok: true, locked: binary.LittleEndian.Uint32(b[l.GILLocked:]) != 0,
		holder: binary.LittleEndian.Uint64(b[l.GILHolder:]), switches: binary.LittleEndian.Uint64(b[l.GILSwitch:])}
}

// stillWhile reports a thread state that cannot have run Python code
// between two readings of the GIL: it was not the last to take it at
// either, and the GIL passed to no other thread in between — a thread
// that took it would have been its last holder, and a passing counted.
// Only a thread that holds the GIL changes its frames.
func stillWhile(ts uint64, before, after gil) bool {
	return before.ok && after.ok && before.switches == after.switches && before.holder != ts && after.holder != ts
}

// mainName names the main thread, which no _bootstrap frame names:
// threading._main_thread, in the globals of any frame in threading.py.
func (r *Reader) mainName(ts []Thread) {
	main, err := r.mem.ptr(r.runtime + uint64(r.lay.RuntimeMainThread))
	if err != nil {
		return
	}
	var globals uint64
	for _, t := range ts {
		if t.globals != 0 {
			globals = t.globals
			break
		}
	}
	for i := range ts {
		if ts[i].Ident == main && ts[i].Name == "" && globals != 0 {
			ts[i].Name = r.threadName(r.dictGet(globals, "_main_thread"))
		}
	}
}

// KnownThreads gives the reader the target's thread ids as its own PID
// namespace numbers them (each thread's NSTID, else its TID): what a tid
// read from glibc's struct pthread (3.8 to 3.10) must be one of while
// its offset is looked for. A caller that has read the threads already
// (a sample) saves the reader a look at /proc.
func (r *Reader) KnownThreads(tids []int) { r.known = tids }

// knownTIDs is the set KnownThreads gave, else the process's tids as
// /proc/PID/task lists them (its own, outside a container).
func (r *Reader) knownTIDs() map[int]bool {
	set := map[int]bool{}
	for _, t := range r.known {
		set[t] = true
	}
	if len(set) > 0 {
		return set
	}
	ents, _ := os.ReadDir(r.fs.Path(strconv.Itoa(r.pid), "task"))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			set[n] = true
		}
	}
	return set
}

// tidsFromPthreads gives the threads of 3.8 to 3.10, whose thread states
// keep no OS thread id, theirs from glibc's struct pthread, whose address
// is the pthread_t: the tid is at an offset that depends on glibc's
// version, found once as the one at which every thread's struct holds a
// distinct tid of the process.
func (r *Reader) tidsFromPthreads(ts []Thread) {
	if r.pthreadTID >= 0 {
		// The offset is known: each thread's tid is read, not checked
		// (a caller joins the threads by their tids, and drops one no
		// thread of the process has).
		for i, t := range ts {
			if v, err := r.mem.i32(t.Ident + uint64(r.pthreadTID)); err == nil {
				ts[i].TID = int(v)
			}
		}
		return
	}
	tids := r.knownTIDs()
	const span = 0x800
	blocks := make([][]byte, len(ts))
	for i, t := range ts {
		blocks[i], _ = r.mem.read(t.Ident, span)
	}
	if len(ts) == 0 {
		return
	}
	// One thread proves no offset: its tid may be anywhere its struct
	// holds the pid. It is still the process's one tid; the offset is
	// kept only when two threads or more agree on it.
	for off := 0; off+4 <= span; off += 4 {
		seen := map[int]bool{}
		ok := true
		for _, b := range blocks {
			if len(b) < off+4 {
				ok = false
				break
			}
			v := int(int32(binary.LittleEndian.Uint32(b[off:])))
			if !tids[v] || seen[v] {
				ok = false
				break
			}
			seen[v] = true
		}
		if !ok {
			continue
		}
		if len(ts) > 1 {
			r.pthreadTID = off
		}
		for i, b := range blocks {
			ts[i].TID = int(int32(binary.LittleEndian.Uint32(b[off:])))
		}
		return
	}
}
