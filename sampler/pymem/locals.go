package pymem

import (
	"encoding/binary"
	"strconv"

	"github.com/hangdoc/hangdoc/model"
)

// A frame's variables, as py-spy --locals gives them: each name with the
// type and address of the object it names (a lock is told from another
// by its address). Values are never read: a string or a number may be a
// secret. Cells (a variable a nested function captures) are followed to
// the object they hold.

const maxLocals = 256

// notObjects are the types whose values are data, not objects a lock
// rule could name: left out, as py-spy's reprs leave them.
var notObjects = map[string]bool{"NoneType": true, "str": true, "int": true, "float": true, "bool": true, "bytes": true, "tuple": true}

// Kinds of 3.11's co_localspluskinds.
const (
	coFastCell = 0x40
	coFastFree = 0x80
)

// varNames is a code object's variable names, in the order of its
// frames' slots, with whether each slot holds a cell; read once.
func (r *Reader) varNames(addr uint64, c *code) ([]string, []bool) {
	if c.varsRead {
		return c.vars, c.cells
	}
	c.varsRead = true
	l := &r.lay
	if l.CodeLocalsNames >= 0 {
		names, _ := r.mem.ptr(addr + uint64(l.CodeLocalsNames))
		kinds, _ := r.mem.ptr(addr + uint64(l.CodeLocalsKinds))
		c.vars = r.tupleStrings(names)
		k := r.bytesObject(kinds)
		if len(k) != len(c.vars) {
			c.vars = nil
			return nil, nil
		}
		c.cells = make([]bool, len(k))
		for i, b := range k {
			c.cells[i] = b&(coFastCell|coFastFree) != 0
		}
		return c.vars, c.cells
	}
	for i, off := range []int{l.CodeVarnames, l.CodeCellvars, l.CodeFreevars} {
		t, _ := r.mem.ptr(addr + uint64(off))
		names := r.tupleStrings(t)
		c.vars = append(c.vars, names...)
		for range names {
			c.cells = append(c.cells, i > 0)
		}
	}
	return c.vars, c.cells
}

// tupleStrings reads a tuple of str; nil when it is not one.
func (r *Reader) tupleStrings(t uint64) []string {
	items := r.tupleItems(t)
	if items == nil {
		return nil
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = r.str(it)
	}
	return out
}

// frameVars reads the variables of the frame at f whose slots start at
// slots: those that name objects.
//
// pages, when not nil, are pages already read (readPages): the reads go
// through them, for a batch of frames that share them (asyncio's tasks).
func (r *Reader) frameVars(codeAddr uint64, c *code, slots uint64, pages map[uint64][]byte) []model.Var {
	names, cells := r.varNames(codeAddr, c)
	if len(names) == 0 {
		return nil
	}
	read := func(addr uint64, n int) ([]byte, bool) {
		if pages == nil {
			b, err := r.mem.read(addr, n)
			return b, err == nil
		}
		sp := []span{{addr: addr, b: make([]byte, n)}}
		r.mem.readPages(sp, pages)
		return sp[0].b, sp[0].ok
	}
	word := func(addr uint64) uint64 {
		b, ok := read(addr, 8)
		if !ok {
			return 0
		}
		return binary.LittleEndian.Uint64(b)
	}
	typeOf := func(obj uint64) string { return r.nameOfType(word(obj + uint64(r.lay.ObType))) }
	b, ok := read(slots, 8*len(names))
	if !ok {
		return nil
	}
	var out []model.Var
	for i, name := range names {
		obj := binary.LittleEndian.Uint64(b[8*i:])
		if obj == 0 {
			continue
		}
		typ := typeOf(obj)
		if cells[i] && typ == "cell" {
			if obj = word(obj + uint64(r.lay.CellRef)); obj == 0 {
				continue
			}
			typ = typeOf(obj)
		}
		if typ == "" || notObjects[typ] || name == "?" {
			continue
		}
		out = append(out, model.Var{Name: name, Type: typ, Addr: "0x" + strconv.FormatUint(obj, 16)})
	}
	return out
}
