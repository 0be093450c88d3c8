package layout

import (
	"debug/dwarf"
	"fmt"
)

// Heap is what the channel scan needs of the runtime's heap to tell the
// object a pointer points into: mheap_.arenas leads to a heapArena, whose
// spans array gives the mspan of the pointer's page, whose start and
// element size bound the object. It is read from DWARF only (the layout
// table does not carry it): a stripped build's heap is not walked.
type Heap struct {
	// Arenas is the offset of runtime.mheap's arenas array: on linux
	// amd64 and arm64, one pointer to the second-level array.
	Arenas int
	// Spans is the offset of runtime.heapArena's spans array.
	Spans int
	// The fields of runtime.mspan that are read, and its size.
	SpanSize                        int
	StartAddr, Npages, Elemsize     Field
	State, Spanclass                Field
	ArenaBytes, ArenaBase, PageSize uint64
}

// HeapFromDWARF reads the heap's layout from a Go binary's DWARF.
func HeapFromDWARF(d *dwarf.Data, arch string) (Heap, error) {
	sts, err := findStructs(d, "runtime.mheap", "runtime.heapArena", "runtime.mspan")
	if err != nil {
		return Heap{}, err
	}
	mh, ha, ms := sts["runtime.mheap"], sts["runtime.heapArena"], sts["runtime.mspan"]
	h := Heap{
		SpanSize:  int(ms.ByteSize),
		StartAddr: find(ms, "startAddr"), Npages: find(ms, "npages"), Elemsize: find(ms, "elemsize"),
		State: find(ms, "state"), Spanclass: find(ms, "spanclass"),
		// runtime/malloc.go on 64-bit Linux: 64 MiB arenas, no first
		// level, amd64's addresses offset by arenaBaseOffset; 8 KiB pages.
		ArenaBytes: 64 << 20, PageSize: 8 << 10,
	}
	if arch == "amd64" {
		h.ArenaBase = 0xffff800000000000
	}
	var ok1, ok2 bool
	h.Arenas, ok1 = fieldOffset(mh, "arenas")
	h.Spans, ok2 = fieldOffset(ha, "spans")
	if !ok1 || !ok2 || !h.StartAddr.OK() || !h.Npages.OK() || !h.Elemsize.OK() || !h.State.OK() || !h.Spanclass.OK() {
		return Heap{}, fmt.Errorf("%w: a field of runtime.mheap, runtime.heapArena or runtime.mspan", ErrNoType)
	}
	return h, nil
}

// fieldOffset is the offset of a struct's field, whatever its type.
func fieldOffset(st *dwarf.StructType, name string) (int, bool) {
	for _, f := range st.Field {
		if f.Name == name {
			return int(f.ByteOffset), true
		}
	}
	return 0, false
}

// findStructs finds the named struct types in the runtime's compile units.
func findStructs(d *dwarf.Data, names ...string) (map[string]*dwarf.StructType, error) {
	want := map[string]dwarf.Offset{}
	for _, n := range names {
		want[n] = 0
	}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("reading DWARF: %w", err)
		}
		if cu == nil {
			break
		}
		if name, _ := cu.Val(dwarf.AttrName).(string); cu.Tag != dwarf.TagCompileUnit || name != "runtime" {
			r.SkipChildren()
			continue
		}
		for {
			e, err := r.Next()
			if err != nil {
				return nil, fmt.Errorf("reading DWARF: %w", err)
			}
			if e == nil || e.Tag == 0 {
				break
			}
			if n, _ := e.Val(dwarf.AttrName).(string); e.Tag == dwarf.TagStructType {
				if off, ok := want[n]; ok && off == 0 {
					want[n] = e.Offset
				}
			}
			if e.Children {
				r.SkipChildren()
			}
		}
	}
	out := map[string]*dwarf.StructType{}
	for name, off := range want {
		if off == 0 {
			return nil, fmt.Errorf("%w: %s", ErrNoType, name)
		}
		t, err := d.Type(off)
		if err != nil {
			return nil, fmt.Errorf("reading DWARF type %s: %w", name, err)
		}
		st, ok := t.(*dwarf.StructType)
		if !ok {
			return nil, fmt.Errorf("DWARF type %s is %T, not a struct", name, t)
		}
		out[name] = st
	}
	return out, nil
}
