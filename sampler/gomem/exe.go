package gomem

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/gomem/internal/layout"
)

// exe is what the reader takes from the target's executable file, once.
// Addresses here are the file's; the target's are bias higher.
type exe struct {
	path    string
	version string // runtime.Version() of the build
	arch    string
	ptrSize int
	pie     bool
	ino     uint64

	sections   map[string]*elf.Section
	firstVaddr uint64 // page of the first PT_LOAD, offset 0

	tab     *pclntab
	tabAddr uint64 // .gopclntab's address

	// syms holds the few symbols the reader uses, when the file still
	// has its symbol table.
	syms map[string]elf.Symbol

	lay     layout.Layout
	layFrom string              // "DWARF" or "table"
	refs    map[string][]uint64 // global addresses referenced by allgadd and forEachGRace
	funcs   map[string]funcInfo // special functions, by name
}

// symbols the reader looks up in a symbol table.
var wantSyms = []string{
	"runtime.allglen", "runtime.allgptr", "runtime.allgs", "runtime.firstmoduledata",
	"runtime.waitReasonStrings", "runtime.gStatusStrings", "go:func.*",
	"runtime.mheap_",   // the channel scan's way to heap objects
	"runtime.semtable", // the lock waits' semaphores (sema.go)
}

// special functions the unwinder and the frame filter know by name:
// their funcIDs move between versions.
var specialFuncs = []string{
	"runtime.goexit", "runtime.sigpanic", "runtime.asyncPreempt", "runtime.debugCallV2",
	"runtime.gopanic", "runtime.panicwrap", "runtime.forEachGRace", "runtime.allgadd",
	"runtime.mstart", "runtime.rt0_go", "runtime.morestack", "runtime.mcall",
	"runtime.semacquire1",
}

// heapLayout reads the runtime's heap layout from the file's DWARF, and
// where the runtime's own globals are from its symbol table, for the
// channel scan; an error for a file without them.
func (e *exe) heapLayout() (layout.Heap, [][2]uint64, error) {
	f, err := elf.Open(e.path)
	if err != nil {
		return layout.Heap{}, nil, err
	}
	defer f.Close()
	if f.Section(".debug_info") == nil {
		return layout.Heap{}, nil, errors.New("the binary has no DWARF")
	}
	syms, err := f.Symbols()
	if err != nil {
		return layout.Heap{}, nil, fmt.Errorf("the binary has no symbol table: %v", err)
	}
	var vars [][2]uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Size > 0 && (strings.HasPrefix(s.Name, "runtime.") || strings.HasPrefix(s.Name, "internal/runtime/")) {
			vars = append(vars, [2]uint64{s.Value, s.Value + s.Size})
		}
	}
	d, err := layout.TypeDWARF(f)
	if err != nil {
		return layout.Heap{}, nil, err
	}
	h, err := layout.HeapFromDWARF(d, e.arch)
	return h, vars, err
}

func unsupported(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, a...))
}

// openExe reads the executable at path (a /proc/PID/exe link).
func openExe(path string) (*exe, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fileErr(path, err)
	}
	e := &exe{path: path, syms: map[string]elf.Symbol{}, sections: map[string]*elf.Section{}}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		e.ino = s.Ino
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, fileErr(path, err)
		}
		return nil, unsupported("not a Go program (%v)", err)
	}
	e.version = bi.GoVersion
	if n := layout.MinorNumber(e.version); n < 22 {
		return nil, unsupported("built with %s; the memory reader reads Go 1.22 and later", e.version)
	}

	f, err := elf.Open(path)
	if err != nil {
		return nil, unsupported("reading %s: %v", path, err)
	}
	defer f.Close()
	e.arch, e.ptrSize = layout.Arch(f.Machine)
	if e.arch == "" {
		return nil, unsupported("%s is for %v; the memory reader reads amd64 and arm64", path, f.Machine)
	}
	e.pie = f.Type == elf.ET_DYN
	for _, s := range f.Sections {
		e.sections[s.Name] = s
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Off == 0 {
			e.firstVaddr = p.Vaddr &^ 0xfff
			break
		}
	}

	tabSec := f.Section(".gopclntab")
	if tabSec == nil {
		// An internally linked PIE keeps it in .data.rel.ro; the symbol
		// table (if any) says where.
		return nil, unsupported("%s has no .gopclntab section", path)
	}
	data, err := tabSec.Data()
	if err != nil {
		return nil, unsupported("reading the pclntab of %s: %v", path, err)
	}
	e.tab, err = newPclntab(data)
	if err != nil {
		return nil, unsupported("%s: %v", path, err)
	}
	e.tabAddr = tabSec.Addr
	if e.tab.textStart == 0 {
		// A PIE's header is filled in by the dynamic loader.
		if t := f.Section(".text"); t != nil {
			e.tab.textStart = t.Addr
		}
	}

	if syms, err := f.Symbols(); err == nil {
		want := map[string]bool{}
		for _, s := range wantSyms {
			want[s] = true
		}
		for _, s := range syms {
			if want[s.Name] {
				e.syms[s.Name] = s
			}
		}
	}

	if f.Section(".debug_info") != nil {
		if d, err := layout.TypeDWARF(f); err == nil {
			if l, err := layout.FromDWARF(d, e.arch, e.ptrSize); err == nil {
				e.lay, e.layFrom = l, "DWARF"
			}
		}
	}
	if e.layFrom == "" {
		l, ok := layout.Lookup(e.version, e.arch)
		if !ok {
			return nil, unsupported("%s (%s/%s) is stripped and the layout table has no %s: regenerate it (cd sampler/gomem && go run ./gen)", path, e.version, e.arch, layout.Minor(e.version))
		}
		e.lay, e.layFrom = l, "table"
	}
	e.lay.Version = e.version
	if err := e.lay.Check(); err != nil {
		return nil, unsupported("%s: %v", path, err)
	}

	e.funcs = e.tab.funcByName(specialFuncs...)
	if _, ok := e.funcs["runtime.goexit"]; !ok {
		return nil, unsupported("%s: runtime.goexit not in the pclntab", path)
	}
	e.refs = map[string][]uint64{}
	text := f.Section(".text")
	for _, name := range []string{"runtime.forEachGRace", "runtime.allgadd", "runtime.semacquire1"} {
		fn, ok := e.funcs[name]
		if !ok || text == nil || fn.entry < text.Addr || fn.end > text.Addr+text.Size || fn.end-fn.entry > 1<<16 {
			continue
		}
		code := make([]byte, fn.end-fn.entry)
		if _, err := text.ReadAt(code, int64(fn.entry-text.Addr)); err != nil && !errors.Is(err, io.EOF) {
			continue
		}
		e.refs[name] = dataRefs(e.arch, code, fn.entry)
	}
	return e, nil
}

// section returns the section holding addr (a file address).
func (e *exe) sectionOf(addr uint64) *elf.Section {
	for _, s := range e.sections {
		if s.Addr != 0 && addr >= s.Addr && addr < s.Addr+s.Size && s.Flags&elf.SHF_ALLOC != 0 {
			return s
		}
	}
	return nil
}

// inSection reports whether addr (a file address) lies in one of the
// named sections.
func (e *exe) inSection(addr uint64, names ...string) bool {
	for _, n := range names {
		if s := e.sections[n]; s != nil && addr >= s.Addr && addr < s.Addr+s.Size {
			return true
		}
	}
	return false
}

// readOnly loads the read-only section holding addr (go:func.*), from the
// file: the funcdata there is plain numbers, the same in every process.
func (e *exe) readOnly(addr uint64) ([]byte, uint64, error) {
	s := e.sectionOf(addr)
	if s == nil || s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_WRITE != 0 {
		return nil, 0, fmt.Errorf("go:func.* at %#x is in no read-only section", addr)
	}
	f, err := os.Open(e.path)
	if err != nil {
		return nil, 0, fileErr(e.path, err)
	}
	defer f.Close()
	b := make([]byte, s.Size)
	if _, err := f.ReadAt(b, int64(s.Offset)); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("reading %s of %s: %v", s.Name, e.path, err)
	}
	return b, s.Addr, nil
}

// bias finds where the target mapped the executable: 0 for a
// position-dependent one, the load address for a PIE.
func (e *exe) bias(ms *mappings) (uint64, error) {
	for _, m := range ms.list {
		if m.offset != 0 || (e.ino != 0 && m.inode != e.ino) || m.inode == 0 {
			continue
		}
		if m.start < e.firstVaddr {
			continue
		}
		b := m.start - e.firstVaddr
		if !e.pie && b != 0 {
			continue
		}
		return b, nil
	}
	if !e.pie {
		return 0, nil
	}
	return 0, fmt.Errorf("the executable %s is not in the process's memory map", e.path)
}

func fileErr(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("reading %s: %w", path, sampler.ErrNoProcess)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("reading %s: %w: %s", path, sampler.ErrPermission, sampler.PermissionHint)
	}
	return fmt.Errorf("reading %s: %w", path, err)
}
