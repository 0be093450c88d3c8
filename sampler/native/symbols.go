// Package native names and unwinds a live process's native code without
// stopping it: code addresses by the Go program's pclntab or the mapped
// file's ELF symbols, and a blocked thread's stack from the stack pointer
// and program counter the kernel shows with its system call, through the
// mapped files' .eh_frame call-frame information and the target's memory
// (process_vm_readv), as a debugger unwinds but without ptrace.
package native

import (
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/gomem"
)

// maxSymbols bounds the function symbols kept of one file.
const maxSymbols = 1 << 20

// Symbolizer names a target's code addresses: Go code by the program's
// pclntab (stripped builds included, inlined calls expanded, through the
// memory reader), other code by the .symtab or .dynsym of the file mapped
// there. Without debug information a native frame has a function and its
// file's path, no line.
type Symbolizer struct {
	fs   sampler.FS
	pid  int
	maps []sampler.ExecMapping
	// mapsErr: the maps could not be read; every address is unnamed.
	mapsErr error
	exe     string // the executable's path, as maps names it
	goRead  *gomem.Reader
	goTried bool
	files   map[string]*elfSymbols
	cache   map[uint64][]model.Frame // by pc<<1 | leaf
}

// NewSymbolizer reads pid's mappings; files are read as addresses need them.
func NewSymbolizer(fs sampler.FS, pid int) *Symbolizer {
	s := &Symbolizer{fs: fs, pid: pid, files: map[string]*elfSymbols{}, cache: map[uint64][]model.Frame{}}
	s.Refresh()
	return s
}

// Refresh rereads the mappings (a library loaded since).
func (s *Symbolizer) Refresh() {
	s.maps, s.mapsErr = sampler.ExecMappings(s.fs, s.pid)
	if s.exe == "" && len(s.maps) > 0 {
		// The executable is mapped first (lowest) in a non-PIE and a
		// PIE alike, unless ASLR put a library below it: prefer the
		// mapping of /proc/PID/exe's path.
		s.exe = s.maps[0].Path
		if p, err := os.Readlink(s.fs.Path(strconv.Itoa(s.pid), "exe")); err == nil {
			s.exe = p
		}
	}
	for k := range s.cache {
		if s.mapOf(k>>1) == nil {
			delete(s.cache, k)
		}
	}
}

// Close releases the Go reader.
func (s *Symbolizer) Close() {
	if s.goRead != nil {
		s.goRead.Close()
		s.goRead = nil
	}
}

func (s *Symbolizer) mapOf(pc uint64) *sampler.ExecMapping {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].End > pc })
	if i < len(s.maps) && s.maps[i].Start <= pc {
		return &s.maps[i]
	}
	return nil
}

// Frames names pc: one frame, or several where Go inlined calls there.
// leaf: pc is where the thread is, not a return address.
func (s *Symbolizer) Frames(pc uint64, leaf bool) []model.Frame {
	key := pc << 1
	if leaf {
		key |= 1
	}
	if f, ok := s.cache[key]; ok {
		return f
	}
	f := s.name(pc, leaf)
	s.cache[key] = f
	return f
}

func (s *Symbolizer) name(pc uint64, leaf bool) []model.Frame {
	m := s.mapOf(pc)
	if m == nil {
		return []model.Frame{{Func: fmt.Sprintf("0x%x", pc)}}
	}
	if m.Path == s.exe {
		if r := s.goReader(); r != nil {
			if f := r.PCFrames(pc, leaf); len(f) > 0 {
				return f
			}
		}
	}
	syms := s.file(m.Path, m)
	off := pc - m.Start + m.Offset
	if !leaf && off > 0 {
		off-- // a return address: the call is the byte before
	}
	if name, ok := syms.at(off); ok {
		if file, line := s.lineOf(syms, m.Path, off); line > 0 {
			return []model.Frame{{Func: name, File: file, Line: line}}
		}
		return []model.Frame{{Func: name, File: m.Path}}
	}
	return []model.Frame{{Func: fmt.Sprintf("%s+0x%x", filepath.Base(m.Path), pc-m.Start+m.Offset), File: m.Path}}
}

// Mapped reports whether pc is in a mapped file's code: an address that
// is not came from a walk that went astray (a frame-pointer chain
// through code built without frame pointers), and nothing past it holds.
func (s *Symbolizer) Mapped(pc uint64) bool { return s.mapOf(pc) != nil }

// lineOf is the source file and line of a file offset in a mapped file
// built with -g; 0 where its line table says nothing.
func (s *Symbolizer) lineOf(e *elfSymbols, path string, off uint64) (string, int) {
	if !e.lines.done {
		e.lines.done = true
		e.lines.rows = readLines(s.fs.Path(strconv.Itoa(s.pid), "root") + path)
	}
	vaddr, ok := e.vaddr(off)
	if !ok || len(e.lines.rows) == 0 {
		return "", 0
	}
	return e.lines.at(vaddr)
}

// GoReaderAt is the Go reader where pc is the executable's code; nil
// elsewhere, or for a program that is not Go.
func (s *Symbolizer) GoReaderAt(pc uint64) *gomem.Reader {
	if m := s.mapOf(pc); m == nil || m.Path != s.exe {
		return nil
	}
	return s.goReader()
}

// goReader opens the Go memory reader once, for a Go executable.
func (s *Symbolizer) goReader() *gomem.Reader {
	if !s.goTried {
		s.goTried = true
		if r, err := gomem.Open(s.fs, s.pid); err == nil {
			s.goRead = r
		}
	}
	return s.goRead
}

// file reads the symbols of a mapped file once: through /proc/PID/root
// (the target's own view, a container's), else its map_files link.
func (s *Symbolizer) file(path string, m *sampler.ExecMapping) *elfSymbols {
	if e, ok := s.files[path]; ok {
		return e
	}
	p := strconv.Itoa(s.pid)
	root := s.fs.Path(p, "root")
	e, err := readSymbols(root+path, root)
	if err != nil {
		e, err = readSymbols(s.fs.Path(p, "map_files", fmt.Sprintf("%x-%x", m.Start, m.End)), root)
	}
	if err != nil {
		e = &elfSymbols{}
	}
	s.files[path] = e
	return e
}

// elfSymbols are a file's function symbols, by file offset: an address
// in a mapping is its file offset, then its virtual address by the load
// segment that holds it.
type elfSymbols struct {
	loads []elf.ProgHeader
	syms  []symbol // by Value
	plt   []symbol // the PLT's stubs and sections, by Value
	cfi   cfi
	lines lineTable
}

type symbol struct {
	value, size uint64
	name        string
}

// readSymbols reads the function symbols of the file at path, and of its
// debug file under root (the target's filesystem) where it is stripped.
func readSymbols(path, root string) (*elfSymbols, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	e := &elfSymbols{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			e.loads = append(e.loads, p.ProgHeader)
		}
	}
	reads := []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols}
	if f.Section(".symtab") == nil {
		// A stripped library (libc): its symbols may be in a separate
		// debug file, found by build id (Debian's -dbg and -dbgsym
		// packages), in the target's filesystem.
		if d := debugFile(root, f); d != nil {
			defer d.Close()
			reads = append(reads, d.Symbols)
		}
	}
	for _, read := range reads {
		syms, _ := read()
		for _, y := range syms {
			if elf.ST_TYPE(y.Info) != elf.STT_FUNC || y.Value == 0 || len(e.syms) >= maxSymbols {
				continue
			}
			name, _, _ := strings.Cut(y.Name, "@") // a symbol version: "pthread_mutex_lock@GLIBC_2.2.5"
			e.syms = append(e.syms, symbol{value: y.Value, size: y.Size, name: demangle(name)})
		}
	}
	e.plt = pltStubs(f)
	for _, y := range e.plt {
		if len(e.syms) < maxSymbols {
			e.syms = append(e.syms, y)
		}
	}
	slices.SortFunc(e.syms, func(a, b symbol) int {
		switch {
		case a.value != b.value:
			return cmpU64(a.value, b.value)
		case a.size != b.size:
			return cmpU64(b.size, a.size) // the sized one first
		}
		return 0
	})
	e.syms = slices.CompactFunc(e.syms, func(a, b symbol) bool { return a.value == b.value })
	return e, nil
}

// debugFile opens the separate debug file of f by its build id:
// /usr/lib/debug/.build-id/xx/yyyy.debug; nil when there is none.
func debugFile(root string, f *elf.File) *elf.File {
	sec := f.Section(".note.gnu.build-id")
	if sec == nil || sec.Size > 1024 {
		return nil
	}
	b, err := sec.Data()
	// The note: namesz, descsz, type, "GNU\0", then the id.
	if err != nil || len(b) < 16 {
		return nil
	}
	namesz := f.ByteOrder.Uint32(b[0:])
	descsz := f.ByteOrder.Uint32(b[4:])
	start := 12 + (namesz+3)&^3
	if descsz < 2 || uint64(start)+uint64(descsz) > uint64(len(b)) {
		return nil
	}
	id := hex.EncodeToString(b[start : start+descsz])
	d, err := elf.Open(root + "/usr/lib/debug/.build-id/" + id[:2] + "/" + id[2:] + ".debug")
	if err != nil {
		return nil
	}
	return d
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// at names the function at a file offset.
func (e *elfSymbols) at(off uint64) (string, bool) {
	vaddr, ok := e.vaddr(off)
	if !ok {
		return "", false
	}
	return e.atVaddr(vaddr)
}

// atVaddr names the function at a virtual address of the file.
func (e *elfSymbols) atVaddr(vaddr uint64) (string, bool) {
	i := sort.Search(len(e.syms), func(i int) bool { return e.syms[i].value > vaddr }) - 1
	if i < 0 {
		return "", false
	}
	y := e.syms[i]
	if y.size > 0 && vaddr >= y.value+y.size {
		return "", false
	}
	return y.name, true
}

// pltStubs names a file's procedure linkage table (amd64): each stub
// "F@plt" by the relocation of its slot (.rela.plt's i-th names .plt.sec's
// i-th stub, or .plt's (i+1)-th where there is no .plt.sec: .plt starts
// with the resolver's), and each PLT section as a whole "[plt]". Without
// them a stub took the name of the symbol before it (_init, sized 0),
// and a thread caught in memcpy's stub was "in _init". Only amd64
// objects: arm64 PLT stubs are sized differently.
func pltStubs(f *elf.File) []symbol {
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		return nil
	}
	var out []symbol
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		if sec := f.Section(name); sec != nil && sec.Size > 0 {
			out = append(out, symbol{value: sec.Addr, size: sec.Size, name: "[plt]"})
		}
	}
	rela := f.Section(".rela.plt")
	stubs := f.Section(".plt.sec")
	first := uint64(0)
	if stubs == nil {
		stubs, first = f.Section(".plt"), 16
	}
	if rela == nil || stubs == nil || rela.Size > 1<<20 {
		return out
	}
	b, err := rela.Data()
	if err != nil {
		return out
	}
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return out
	}
	const relaSize, stubSize = 24, 16
	for i := 0; (i+1)*relaSize <= len(b); i++ {
		info := f.ByteOrder.Uint64(b[i*relaSize+8:])
		at := stubs.Addr + first + uint64(i)*stubSize
		if at+stubSize > stubs.Addr+stubs.Size {
			break
		}
		// DynamicSymbols leaves out the null symbol 0.
		if k := int(info>>32) - 1; k >= 0 && k < len(dyn) && dyn[k].Name != "" {
			name, _, _ := strings.Cut(dyn[k].Name, "@")
			out = append(out, symbol{value: at, size: stubSize, name: demangle(name) + "@plt"})
		}
	}
	return out
}

// inPLT reports a virtual address in a PLT section: a stub pushes nothing
// before its jump, so its return address is the word at the stack pointer.
func (e *elfSymbols) inPLT(vaddr uint64) bool {
	for _, y := range e.plt {
		if y.name == "[plt]" && vaddr >= y.value && vaddr < y.value+y.size {
			return true
		}
	}
	return false
}
