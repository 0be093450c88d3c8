package layout

import (
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// FromELF reads a whole Layout from a Go executable that has its DWARF
// and symbol table: the structs from DWARF, the texts from the arrays
// runtime.waitReasonStrings and runtime.gStatusStrings as the file
// initialises them. The executable must not be position-independent: a
// PIE's data holds zeros where the dynamic loader writes pointers.
func FromELF(path string) (Layout, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return Layout{}, fmt.Errorf("reading the build info of %s: %w", path, err)
	}
	f, err := elf.Open(path)
	if err != nil {
		return Layout{}, err
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		return Layout{}, fmt.Errorf("%s: not a position-dependent executable (ELF type %v)", path, f.Type)
	}
	arch, ptr := Arch(f.Machine)
	if arch == "" {
		return Layout{}, fmt.Errorf("%s: unsupported machine %v", path, f.Machine)
	}
	d, err := TypeDWARF(f)
	if err != nil {
		return Layout{}, fmt.Errorf("reading the DWARF of %s: %w", path, err)
	}
	l, err := FromDWARF(d, arch, ptr)
	if err != nil {
		return Layout{}, fmt.Errorf("%s: %w", path, err)
	}
	l.Version = bi.GoVersion
	syms, err := f.Symbols()
	if err != nil {
		return Layout{}, fmt.Errorf("reading the symbols of %s: %w", path, err)
	}
	read := func(addr uint64, b []byte) error { return readFile(f, addr, b) }
	for _, s := range syms {
		switch s.Name {
		case "runtime.waitReasonStrings":
			l.WaitReasons, err = Strings(read, s.Value, int(s.Size)/(2*ptr), ptr)
		case "runtime.gStatusStrings":
			l.Statuses, err = Strings(read, s.Value, int(s.Size)/(2*ptr), ptr)
		}
		if err != nil {
			return Layout{}, fmt.Errorf("%s: reading %s: %w", path, s.Name, err)
		}
	}
	if len(l.WaitReasons) == 0 || len(l.Statuses) == 0 {
		return Layout{}, fmt.Errorf("%s: runtime.waitReasonStrings or runtime.gStatusStrings not in the symbol table", path)
	}
	return l, nil
}

// TypeDWARF reads the part of a binary's DWARF that describes types:
// .debug_info and what its attributes refer to. (*elf.File).DWARF
// decompresses every debug section, the line and location tables
// included, which is most of the cost of opening a big unstripped binary.
func TypeDWARF(f *elf.File) (*dwarf.Data, error) {
	data := func(name string) ([]byte, error) {
		s := f.Section(name)
		if s == nil {
			return nil, nil
		}
		return s.Data()
	}
	abbrev, err := data(".debug_abbrev")
	if err != nil {
		return nil, err
	}
	info, err := data(".debug_info")
	if err != nil {
		return nil, err
	}
	if info == nil || abbrev == nil {
		return nil, errors.New("no .debug_info")
	}
	str, err := data(".debug_str")
	if err != nil {
		return nil, err
	}
	d, err := dwarf.New(abbrev, nil, nil, info, nil, nil, nil, str)
	if err != nil {
		return nil, err
	}
	// DWARF 5 (Go 1.25 on) may refer to these from .debug_info.
	for _, name := range []string{".debug_addr", ".debug_str_offsets", ".debug_line_str"} {
		b, err := data(name)
		if err != nil {
			return nil, err
		}
		if b != nil {
			if err := d.AddSection(name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// Arch maps an ELF machine to GOARCH and the pointer size; "" for what
// the reader does not support.
func Arch(m elf.Machine) (string, int) {
	switch m {
	case elf.EM_X86_64:
		return "amd64", 8
	case elf.EM_AARCH64:
		return "arm64", 8
	}
	return "", 0
}

// maxString bounds one text read from a target: no wait reason or status
// is longer.
const maxString = 256

// Strings reads a [n]string array at addr through read, which fills b
// with the memory at an address. Empty strings keep their slot.
func Strings(read func(addr uint64, b []byte) error, addr uint64, n, ptrSize int) ([]string, error) {
	if n <= 0 || n > 4096 {
		return nil, fmt.Errorf("implausible array length %d", n)
	}
	hdr := make([]byte, n*2*ptrSize)
	if err := read(addr, hdr); err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		p := binary.LittleEndian.Uint64(hdr[i*2*ptrSize:])
		l := binary.LittleEndian.Uint64(hdr[i*2*ptrSize+ptrSize:])
		if l == 0 {
			continue
		}
		if l > maxString {
			return nil, fmt.Errorf("string %d of the array at %#x has length %d", i, addr, l)
		}
		b := make([]byte, l)
		if err := read(p, b); err != nil {
			return nil, fmt.Errorf("string %d of the array at %#x: %w", i, addr, err)
		}
		out[i] = string(b)
	}
	return out, nil
}

// readFile reads the initialised contents of an ELF executable's memory
// image at addr; .bss reads as zeros.
func readFile(f *elf.File, addr uint64, b []byte) error {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr+uint64(len(b)) > p.Vaddr+p.Memsz {
			continue
		}
		off := addr - p.Vaddr
		clear(b)
		if off >= p.Filesz {
			return nil
		}
		n := min(uint64(len(b)), p.Filesz-off)
		if _, err := p.ReadAt(b[:n], int64(off)); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
	return fmt.Errorf("address %#x not in the file's image", addr)
}
