package gomem

import (
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler/gomem/internal/layout"
)

// tableBuild is the build of the victim a table row was generated from.
func tableBuild(l layout.Layout) testvictim.ModuleBuild {
	b := testvictim.ModuleBuild{Toolchain: l.Version, GOARCH: l.Arch}
	if l.Version == runtime.Version() {
		b.Toolchain = ""
	}
	return b
}

// TestLayoutTable rebuilds the victim with every toolchain and
// architecture the table covers and checks the table's row against the
// binary's DWARF and string arrays: the table is what reads stripped
// builds, so a row that drifted would misread them.
func TestLayoutTable(t *testing.T) {
	if len(layout.Known) == 0 {
		t.Fatal("the layout table is empty: run go run ./gen")
	}
	versions := map[string]bool{}
	for _, row := range layout.Known {
		versions[row.Version] = true
		t.Run(row.Version+"-"+row.Arch, func(t *testing.T) {
			bin := testvictim.BuildModule(t, victimModule, tableBuild(row))
			got, err := layout.FromELF(bin)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(row, got); d != "" {
				t.Errorf("table row (-) and the binary (+) differ: regenerate the table (go run ./gen):\n%s", d)
			}
		})
	}
	for _, v := range []string{"go1.22.0", "go1.27.0", runtime.Version()} {
		if !versions[v] {
			t.Errorf("the table lacks %s", v)
		}
	}
}

// TestStrippedFinders checks, on the unstripped build of every table row
// (both architectures), that what a stripped binary is read through finds
// what the symbol table says: the pclntab finds the special functions,
// forEachGRace's first two globals are allglen then allgptr, allgadd
// refers to allgs, and the moduledata scan of the file's image finds
// runtime.firstmoduledata and go:func.*.
func TestStrippedFinders(t *testing.T) {
	for _, row := range layout.Known {
		t.Run(row.Version+"-"+row.Arch, func(t *testing.T) {
			bin := testvictim.BuildModule(t, victimModule, tableBuild(row))
			e, err := openExe(bin)
			if err != nil {
				t.Fatal(err)
			}
			sym := func(name string) uint64 {
				s, ok := e.syms[name]
				if !ok {
					t.Fatalf("%s not in the symbol table", name)
				}
				return s.Value
			}
			for _, n := range []string{"runtime.goexit", "runtime.sigpanic", "runtime.asyncPreempt", "runtime.gopanic", "runtime.forEachGRace", "runtime.allgadd"} {
				if _, ok := e.funcs[n]; !ok {
					t.Errorf("%s not found in the pclntab", n)
				}
			}
			refs := e.refs["runtime.forEachGRace"]
			var bss []uint64
			for _, a := range refs {
				if e.inSection(a, ".bss", ".noptrbss") {
					bss = append(bss, a)
				}
			}
			if len(bss) < 2 || bss[0] != sym("runtime.allglen") || bss[1] != sym("runtime.allgptr") {
				t.Errorf("forEachGRace's first globals %#x, want allglen %#x then allgptr %#x", bss, sym("runtime.allglen"), sym("runtime.allgptr"))
			}
			add := e.refs["runtime.allgadd"]
			for _, n := range []string{"runtime.allgs", "runtime.allglen", "runtime.allgptr"} {
				if !slices.Contains(add, sym(n)) {
					t.Errorf("allgadd's globals %#x lack %s %#x", add, n, sym(n))
				}
			}

			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := &Reader{exe: e, lay: e.lay, mem: fileMemory{f}, notes: map[string]bool{}}
			delete(e.syms, "runtime.firstmoduledata") // as if stripped
			if err := r.findModule(); err != nil {
				t.Fatalf("finding the moduledata in the file's image: %v", err)
			}
			if got, want := e.tab.gofunc, sym("go:func.*"); got != want {
				t.Errorf("go:func.* at %#x, the symbol table says %#x", got, want)
			}
			// An inline tree read through it: main.recvOne is inlined.
			if !inlinedSomewhere(t, r, "main.recvOne") {
				t.Errorf("no inlined call of main.recvOne found in the inline trees")
			}
		})
	}
}

// inlinedSomewhere reports whether some function's inline tree names fn.
func inlinedSomewhere(t *testing.T, r *Reader, fn string) bool {
	tab := r.exe.tab
	for i := 0; i < tab.nfunc; i++ {
		f, ok := tab.funcAt(i)
		if !ok {
			t.Fatalf("function %d of the pclntab unreadable", i)
		}
		tree := tab.funcdata(&f, funcdataInlTree)
		for j := int32(0); tree != nil; j++ {
			node, ok := tab.inlineNode(tree, j)
			if !ok || node.nameOff <= 0 || int(node.nameOff) >= len(tab.funcnametab) {
				break
			}
			if tab.funcName(node.nameOff) == fn {
				return true
			}
		}
	}
	return false
}

// fileMemory reads an executable's image from the file: initialised data
// as the file holds it, .bss as zeros.
type fileMemory struct{ f *elf.File }

func (m fileMemory) read(reqs []request) error {
	for i := range reqs {
		q := &reqs[i]
		q.OK = false
		for _, p := range m.f.Progs {
			if p.Type != elf.PT_LOAD || q.Addr < p.Vaddr || q.Addr+uint64(len(q.Buf)) > p.Vaddr+p.Memsz {
				continue
			}
			clear(q.Buf)
			off := q.Addr - p.Vaddr
			if off < p.Filesz {
				n := min(uint64(len(q.Buf)), p.Filesz-off)
				if _, err := p.ReadAt(q.Buf[:n], int64(off)); err != nil && !errors.Is(err, io.EOF) {
					return err
				}
			}
			q.OK = true
			break
		}
	}
	return nil
}

// TestPclntabAgainstGosym checks the reader's pclntab against
// debug/gosym on this machine's build: every function's name and bounds,
// and the file and line at a spread of pcs in each.
func TestPclntabAgainstGosym(t *testing.T) {
	bin := testvictim.BuildModule(t, victimModule, testvictim.ModuleBuild{})
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := f.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	text := f.Section(".text").Addr
	gt, err := gosym.NewTable(nil, gosym.NewLineTable(data, text))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := newPclntab(data)
	if err != nil {
		t.Fatal(err)
	}
	if tab.textStart == 0 {
		// An externally linked binary's header is filled in at load
		// time (the reader takes it from the moduledata).
		tab.textStart = text
	}
	if tab.nfunc != len(gt.Funcs) {
		t.Fatalf("%d functions, gosym has %d", tab.nfunc, len(gt.Funcs))
	}
	checked := 0
	for i, gf := range gt.Funcs {
		mine, ok := tab.funcAt(i)
		if !ok {
			t.Fatalf("function %d (%s) unreadable", i, gf.Name)
		}
		if name := tab.funcName(mine.nameOff); name != gf.Name || mine.entry != gf.Entry || mine.end != gf.End {
			t.Fatalf("function %d: %s [%#x, %#x), gosym has %s [%#x, %#x)", i, name, mine.entry, mine.end, gf.Name, gf.Entry, gf.End)
		}
		if mine.pcln == 0 {
			// A C function (cgo): no line table, where gosym reads
			// whatever follows.
			continue
		}
		for pc := gf.Entry; pc < gf.End; pc += max(1, (gf.End-gf.Entry)/7) {
			found, ok := tab.find(pc)
			if !ok || found.entry != mine.entry {
				t.Fatalf("find(%#x) = %v, %v; want %s", pc, found.entry, ok, gf.Name)
			}
			file, line := tab.fileLine(&mine, pc)
			wfile, wline, _ := gt.PCToLine(pc)
			if wline < 0 {
				// Past the end of the line table (padding): unknown,
				// which the reader says as the runtime does.
				wfile, wline = "?", 0
			}
			if file != wfile || line != wline {
				t.Errorf("%s+%#x: %s:%d, gosym says %s:%d", gf.Name, pc-gf.Entry, file, line, wfile, wline)
			}
			checked++
		}
	}
	if _, ok := tab.find(text - 1); ok {
		t.Errorf("a pc before the text is found")
	}
	t.Logf("%d functions, %d pcs checked", tab.nfunc, checked)
}

// TestDataRefsARM64 decodes the three instruction forms the arm64
// compiler addresses globals with.
func TestDataRefsARM64(t *testing.T) {
	code := []uint32{
		0xb0000cc1, // ADRP X1, +0x199000 (at 0x469d0)
		0x912aa021, // ADD X1, X1, #0xaa8
		0xc8dffc21, // LDAR X1, [X1]
		0xf0000982, // ADRP X2, +0x133000
		0xf9400443, // LDR X3, [X2, #8]
		0x91400442, // ADD X2, X2, #1, LSL #12
	}
	b := make([]byte, 4*len(code))
	for i, w := range code {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	got := refsARM64(b, 0x469d0)
	want := []uint64{0x1dfaa8, 0x179008, 0x17a000}
	if !slices.Equal(got, want) {
		t.Errorf("refs %#x, want %#x", got, want)
	}
}

// FuzzPclntab feeds arbitrary bytes to the pclntab reader: nothing may
// panic or loop.
func FuzzPclntab(f *testing.F) {
	good := []byte{0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8}
	good = append(good, make([]byte, 8*8)...)
	f.Add(good, uint64(0))
	f.Add([]byte(strings.Repeat("\xf1\xff\xff\xff\x00\x00\x01\x08\x02", 40)), uint64(17))
	f.Fuzz(func(t *testing.T, data []byte, pc uint64) {
		tab, err := newPclntab(data)
		if err != nil {
			return
		}
		tab.setGofunc(0, data, 0)
		for _, p := range []uint64{pc, tab.textStart, tab.textStart + pc%4096} {
			fn, ok := tab.find(p)
			if !ok {
				continue
			}
			tab.fileLine(&fn, p)
			tab.spdelta(&fn, p)
			tab.funcName(fn.nameOff)
			tree := tab.funcdata(&fn, funcdataInlTree)
			tab.pcvalue(tab.pcdataOff(&fn, pcdataInlTreeIndex), fn.entry, p)
			for i := int32(0); i < 4; i++ {
				tab.inlineNode(tree, i)
			}
		}
		tab.funcByName("runtime.goexit")
	})
}
