package gomem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// pclntab reads the runtime's function table (the Go 1.20+ format, which
// every Go from 1.20 to 1.27 writes): function bounds, names, files and
// lines, SP deltas, the inline tree and the argument tables. It is kept by
// -ldflags=-s -w, so it is the one map of the code a release build has.
//
// It is written here rather than taken from debug/gosym: gosym answers
// pc → file, line and outer function only, and the traceback the reader
// must reproduce also needs the SP delta at each pc (to unwind), the
// funcID and flags (to stop at goexit, to hide wrappers), the inline tree
// (to print inlined calls as frames of their own) and the argument
// layout (to print argument words as the runtime does). The tests check
// this reader against debug/gosym.
type pclntab struct {
	data      []byte
	quantum   uint64
	ptrSize   int
	nfunc     int
	textStart uint64 // in the file's addresses

	funcnametab, cutab, filetab, pctab, functab []byte

	// ro is the file's read-only data holding go:func.*, where
	// funcdata offsets point (from gofunc); nil until setGofunc.
	ro     []byte
	roAddr uint64
	gofunc uint64
}

// pcHeader magic of Go 1.20 and later.
const go120Magic = 0xfffffff1

var errBadPclntab = errors.New("malformed pclntab")

// Indexes of the pcdata and funcdata tables of a function
// (internal/abi), stable since Go 1.20.
const (
	pcdataInlTreeIndex = 2
	pcdataArgLiveIndex = 3
	funcdataInlTree    = 3
	funcdataArgInfo    = 5
	funcdataArgLive    = 6
)

// Function flags (internal/abi.FuncFlag).
const (
	flagTopFrame = 1 << 0
	flagSPWrite  = 1 << 1
)

func newPclntab(data []byte) (*pclntab, error) {
	if len(data) < 8 {
		return nil, errBadPclntab
	}
	magic := binary.LittleEndian.Uint32(data)
	if magic != go120Magic {
		return nil, fmt.Errorf("%w: magic %#x (Go before 1.20 or not Go)", errBadPclntab, magic)
	}
	if data[4] != 0 || data[5] != 0 {
		return nil, errBadPclntab
	}
	t := &pclntab{data: data, quantum: uint64(data[6]), ptrSize: int(data[7])}
	if t.ptrSize != 8 || t.quantum == 0 {
		return nil, fmt.Errorf("%w: pointer size %d, pc quantum %d", errBadPclntab, t.ptrSize, t.quantum)
	}
	word := func(i int) uint64 {
		off := 8 + i*t.ptrSize
		if off+8 > len(data) {
			return 0
		}
		return binary.LittleEndian.Uint64(data[off:])
	}
	nfunc := word(0)
	// word(1) is nfiles.
	t.textStart = word(2)
	sub := func(off uint64) []byte {
		if off >= uint64(len(data)) {
			return nil
		}
		return data[off:]
	}
	t.funcnametab = sub(word(3))
	t.cutab = sub(word(4))
	t.filetab = sub(word(5))
	t.pctab = sub(word(6))
	t.functab = sub(word(7))
	if t.functab == nil || nfunc == 0 || nfunc >= uint64(len(t.functab))/8 {
		return nil, fmt.Errorf("%w: function table", errBadPclntab)
	}
	t.nfunc = int(nfunc)
	return t, nil
}

// setGofunc says where go:func.* is (in the file's addresses) and gives
// the read-only data it lies in.
func (t *pclntab) setGofunc(gofunc uint64, ro []byte, roAddr uint64) {
	t.gofunc, t.ro, t.roAddr = gofunc, ro, roAddr
}

// funcInfo is one function's _func record.
type funcInfo struct {
	idx        int
	off        uint32 // of the _func in functab
	entry, end uint64
	nameOff    int32
	args       int32
	pcsp       uint32
	pcfile     uint32
	pcln       uint32
	npcdata    uint32
	cuOffset   uint32
	startLine  int32
	funcID     uint8
	flag       uint8
	nfuncdata  uint8
}

func (f *funcInfo) valid() bool { return f != nil && f.entry != 0 }

func (t *pclntab) u32(b []byte, off uint64) (uint32, bool) {
	if off+4 > uint64(len(b)) || off+4 < off {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[off:]), true
}

// entryAt is the entry offset of the function at index i of the table.
func (t *pclntab) entryAt(i int) uint32 {
	return binary.LittleEndian.Uint32(t.functab[i*8:])
}

// find returns the function holding pc (a file address), or false.
func (t *pclntab) find(pc uint64) (funcInfo, bool) {
	if pc < t.textStart {
		return funcInfo{}, false
	}
	rel := pc - t.textStart
	if rel >= uint64(t.entryAt(t.nfunc)) {
		return funcInfo{}, false
	}
	i := sort.Search(t.nfunc, func(i int) bool { return uint64(t.entryAt(i+1)) > rel })
	if i >= t.nfunc || uint64(t.entryAt(i)) > rel {
		return funcInfo{}, false
	}
	return t.funcAt(i)
}

// funcAt reads the function at index i of the table.
func (t *pclntab) funcAt(i int) (funcInfo, bool) {
	funcOff := binary.LittleEndian.Uint32(t.functab[i*8+4:])
	b := t.functab
	o := uint64(funcOff)
	if o+44 > uint64(len(b)) {
		return funcInfo{}, false
	}
	r := func(k uint64) uint32 { return binary.LittleEndian.Uint32(b[o+k:]) }
	f := funcInfo{
		idx:       i,
		off:       funcOff,
		entry:     t.textStart + uint64(r(0)),
		end:       t.textStart + uint64(t.entryAt(i+1)),
		nameOff:   int32(r(4)),
		args:      int32(r(8)),
		pcsp:      r(16),
		pcfile:    r(20),
		pcln:      r(24),
		npcdata:   r(28),
		cuOffset:  r(32),
		startLine: int32(r(36)),
		funcID:    b[o+40],
		flag:      b[o+41],
		nfuncdata: b[o+43],
	}
	if f.npcdata > 64 || o+44+uint64(f.npcdata)*4+uint64(f.nfuncdata)*4 > uint64(len(b)) {
		return funcInfo{}, false
	}
	if uint64(r(0)) != uint64(t.entryAt(i)) {
		return funcInfo{}, false
	}
	return f, true
}

// cstring is the NUL-terminated string at b[off:].
func cstring(b []byte, off uint64) string {
	if off >= uint64(len(b)) {
		return ""
	}
	s := b[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

func (t *pclntab) funcName(nameOff int32) string {
	if nameOff < 0 {
		return ""
	}
	return cstring(t.funcnametab, uint64(nameOff))
}

// pcdataOff is the pctab offset of the function's pcdata table i, 0 for
// none.
func (t *pclntab) pcdataOff(f *funcInfo, i uint32) uint32 {
	if i >= f.npcdata {
		return 0
	}
	v, _ := t.u32(t.functab, uint64(f.off)+44+uint64(i)*4)
	return v
}

// funcdata returns the bytes of the function's funcdata i, from the file's
// go:func.*, or nil.
func (t *pclntab) funcdata(f *funcInfo, i uint8) []byte {
	if i >= f.nfuncdata || t.ro == nil {
		return nil
	}
	off, ok := t.u32(t.functab, uint64(f.off)+44+uint64(f.npcdata)*4+uint64(i)*4)
	if !ok || off == ^uint32(0) {
		return nil
	}
	addr := t.gofunc + uint64(off)
	if addr < t.roAddr || addr-t.roAddr >= uint64(len(t.ro)) {
		return nil
	}
	return t.ro[addr-t.roAddr:]
}

// pcvalue decodes the pc-value table at pctab[off] for targetpc, as the
// runtime's pcvalue does. ok is false when there is no table or pc is
// past its end.
func (t *pclntab) pcvalue(off uint32, entry, targetpc uint64) (int32, bool) {
	if off == 0 || uint64(off) >= uint64(len(t.pctab)) {
		return -1, false
	}
	p := t.pctab[off:]
	pc := entry
	val := int32(-1)
	first := true
	for {
		var ok bool
		p, ok = t.step(p, &pc, &val, first)
		if !ok {
			return -1, false
		}
		first = false
		if targetpc < pc {
			return val, true
		}
	}
}

func (t *pclntab) step(p []byte, pc *uint64, val *int32, first bool) ([]byte, bool) {
	uvdelta, n := binary.Uvarint(p)
	if n <= 0 || uvdelta == 0 && !first {
		return nil, false
	}
	p = p[n:]
	d := uint32(uvdelta)
	*val += int32(-(d & 1) ^ (d >> 1))
	pcdelta, n := binary.Uvarint(p)
	if n <= 0 {
		return nil, false
	}
	*pc += pcdelta * t.quantum
	return p[n:], true
}

// fileLine is the file and line at pc, "?" and 0 when unknown.
func (t *pclntab) fileLine(f *funcInfo, pc uint64) (string, int) {
	fileno, ok1 := t.pcvalue(f.pcfile, f.entry, pc)
	line, ok2 := t.pcvalue(f.pcln, f.entry, pc)
	if !ok1 || !ok2 || fileno < 0 || line < 0 {
		return "?", 0
	}
	off, ok := t.u32(t.cutab, (uint64(f.cuOffset)+uint64(fileno))*4)
	if !ok || off == ^uint32(0) {
		return "?", 0
	}
	return cstring(t.filetab, uint64(off)), int(line)
}

// spdelta is the function's frame size at pc.
func (t *pclntab) spdelta(f *funcInfo, pc uint64) (int32, bool) {
	return t.pcvalue(f.pcsp, f.entry, pc)
}

// inlinedCall is one node of a function's inline tree (runtime.inlinedCall,
// 16 bytes since Go 1.20).
type inlinedCall struct {
	funcID    uint8
	nameOff   int32
	parentPc  int32
	startLine int32
}

func (t *pclntab) inlineNode(tree []byte, i int32) (inlinedCall, bool) {
	o := int(i) * 16
	if i < 0 || o+16 > len(tree) {
		return inlinedCall{}, false
	}
	return inlinedCall{
		funcID:    tree[o],
		nameOff:   int32(binary.LittleEndian.Uint32(tree[o+4:])),
		parentPc:  int32(binary.LittleEndian.Uint32(tree[o+8:])),
		startLine: int32(binary.LittleEndian.Uint32(tree[o+12:])),
	}, true
}

// funcByName finds the functions named in want, by a walk of the table.
func (t *pclntab) funcByName(want ...string) map[string]funcInfo {
	out := map[string]funcInfo{}
	set := map[string]bool{}
	for _, w := range want {
		set[w] = true
	}
	for i := 0; i < t.nfunc && len(out) < len(set); i++ {
		f, ok := t.funcAt(i)
		if !ok {
			continue
		}
		if n := t.funcName(f.nameOff); set[n] {
			if _, dup := out[n]; !dup {
				out[n] = f
			}
		}
	}
	return out
}
