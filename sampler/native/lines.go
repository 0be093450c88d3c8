package native

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"io"
	"slices"
	"sort"
)

// Bounds on the line tables read of one file: a binary built with -g whose
// .debug_line is larger is named by symbols alone.
const (
	maxDebugLine = 16 << 20
	maxLineRows  = 1 << 20
)

// lineRow is one row of a file's line table: from addr on (up to the next
// row), the code is file's line; line 0 ends a sequence.
type lineRow struct {
	addr uint64
	file string
	line int
}

// lineTable is a file's DWARF line table, read on first use; nil rows
// where the file has none (no -g, stripped, too large).
type lineTable struct {
	done bool
	rows []lineRow
}

// readLines reads every compile unit's line program of the ELF file at
// path into one table sorted by address.
func readLines(path string) []lineRow {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if s := f.Section(".debug_line"); s == nil || s.Size > maxDebugLine {
		return nil
	}
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	var rows []lineRow
	r := d.Reader()
	for len(rows) < maxLineRows {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(cu)
		r.SkipChildren()
		if err != nil || lr == nil {
			continue
		}
		var e dwarf.LineEntry
		for len(rows) < maxLineRows {
			if err := lr.Next(&e); err != nil {
				if !errors.Is(err, io.EOF) {
					break
				}
				break
			}
			row := lineRow{addr: e.Address, line: e.Line}
			if e.File != nil {
				row.file = e.File.Name
			}
			if e.EndSequence {
				row.line = 0
			}
			rows = append(rows, row)
		}
	}
	slices.SortStableFunc(rows, func(a, b lineRow) int { return cmpU64(a.addr, b.addr) })
	return rows
}

// at is the source line of a virtual address: the last row at or before
// it, unless that row ends a sequence.
func (t *lineTable) at(vaddr uint64) (string, int) {
	i := sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr > vaddr }) - 1
	if i < 0 || t.rows[i].line == 0 {
		return "", 0
	}
	return t.rows[i].file, t.rows[i].line
}
