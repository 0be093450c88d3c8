package pymem

import "encoding/binary"

// A thread's name is its threading.Thread's _name attribute: the reader
// finds the Thread object as the self of the thread's outermost frame,
// threading's _bootstrap (the main thread's, which has no such frame, as
// threading._main_thread in that module's globals), and reads the
// attribute as CPython keeps it — in the instance's dict before 3.11, in
// a dict or a values array the class's instances share keys for from
// 3.11 (managed dicts; 3.13 keeps the values inline, after the object).

// Type flags that say where an instance's attributes are.
const (
	tpflagsInlineValues = 1 << 2 // 3.13
	tpflagsManagedDict  = 1 << 4 // 3.11 on
	maxEntries          = 1 << 12
)

// attr is the object an instance's attribute name points to; 0 when it
// cannot be found.
func (r *Reader) attr(obj uint64, name string) uint64 {
	l := &r.lay
	typ, err := r.mem.ptr(obj + uint64(l.ObType))
	if err != nil || typ == 0 {
		return 0
	}
	flags, err := r.mem.ptr(typ + uint64(l.TypeFlags))
	if err != nil {
		return 0
	}
	cached := func() uint64 {
		k, _ := r.mem.ptr(typ + uint64(l.HeapTypeCachedKeys))
		return k
	}
	switch {
	case r.minor >= 13:
		if flags&tpflagsInlineValues != 0 {
			size, err := r.mem.ptr(typ + uint64(l.TypeBasicSize))
			values := obj + size
			valid, err2 := r.mem.read(values+uint64(l.ValuesValid), 1)
			if err == nil && err2 == nil && valid[0] != 0 {
				return r.keysGet(cached(), values, name)
			}
		}
		if flags&tpflagsManagedDict != 0 {
			dict, _ := r.mem.ptr(obj - 24)
			return r.dictGet(dict, name)
		}
	case r.minor == 12:
		if flags&tpflagsManagedDict != 0 {
			// A tagged union: a dict, or its values' address less one.
			dv, _ := r.mem.ptr(obj - 24)
			if dv&1 != 0 {
				return r.keysGet(cached(), dv+1, name)
			}
			return r.dictGet(dv, name)
		}
	case r.minor == 11:
		if flags&tpflagsManagedDict != 0 {
			if dict, _ := r.mem.ptr(obj - 24); dict != 0 {
				return r.dictGet(dict, name)
			}
			values, _ := r.mem.ptr(obj - 32)
			return r.keysGet(cached(), values, name)
		}
	}
	off, err := r.mem.ptr(typ + uint64(l.TypeDictOffset))
	if err != nil || int64(off) <= 0 || off > 1<<16 {
		return 0
	}
	dict, _ := r.mem.ptr(obj + off)
	return r.dictGet(dict, name)
}

// dictGet is the object a dict maps the str key name to; 0 when none.
func (r *Reader) dictGet(dict uint64, name string) uint64 {
	if dict == 0 || r.typeName(dict) != "dict" {
		return 0
	}
	keys, err1 := r.mem.ptr(dict + uint64(r.lay.DictKeys))
	values, err2 := r.mem.ptr(dict + uint64(r.lay.DictValues))
	if err1 != nil || err2 != nil {
		return 0
	}
	return r.keysGet(keys, values, name)
}

// keysGet looks name up in a keys object by walking its entries (a dict
// of a thread's attributes has a few dozen), the values in values when
// the table is split.
func (r *Reader) keysGet(keys, values uint64, name string) uint64 {
	if keys == 0 {
		return 0
	}
	l := &r.lay
	n, err := r.mem.ptr(keys + uint64(l.KeysNEntries))
	if err != nil || n == 0 || n > maxEntries {
		return 0
	}
	var entries uint64
	size, keyAt, valueAt := uint64(l.EntrySize), uint64(l.EntryKey), uint64(l.EntryValue)
	split := values != 0
	valuesAt := values
	if l.KeysSize >= 0 {
		// Before 3.11: dk_size slots of indices, each as wide as the
		// table needs.
		slots, err := r.mem.ptr(keys + uint64(l.KeysSize))
		if err != nil || slots > 1<<20 {
			return 0
		}
		width := uint64(8)
		switch {
		case slots <= 0xff:
			width = 1
		case slots <= 0xffff:
			width = 2
		case slots <= 0xffffffff:
			width = 4
		}
		entries = keys + uint64(l.KeysIndices) + slots*width
	} else {
		b, err := r.mem.read(keys+uint64(l.KeysLog2Size), 3)
		if err != nil || b[1] > 32 {
			return 0
		}
		entries = keys + uint64(l.KeysIndices) + 1<<b[1]
		if b[2] != 0 { // DICT_KEYS_UNICODE or _SPLIT: a key and a value
			size, keyAt, valueAt = uint64(l.UnicodeEntrySize), 0, 8
		}
		if split {
			valuesAt = values + uint64(l.ValuesValues)
		}
	}
	b, err := r.mem.read(entries, int(n*size))
	if err != nil {
		return 0
	}
	for i := uint64(0); i < n; i++ {
		key := binary.LittleEndian.Uint64(b[i*size+keyAt:])
		if key == 0 || r.str(key) != name {
			continue
		}
		if split {
			v, _ := r.mem.ptr(valuesAt + 8*i)
			return v
		}
		return binary.LittleEndian.Uint64(b[i*size+valueAt:])
	}
	return 0
}

// threadName is a threading.Thread's name; "" when it cannot be read.
func (r *Reader) threadName(thread uint64) string {
	if thread == 0 {
		return ""
	}
	if name, ok := r.names[thread]; ok && !r.vars {
		return name
	}
	name := ""
	if n := r.attr(thread, "_name"); n != 0 && r.typeName(n) == "str" {
		name = r.str(n)
	}
	if len(r.names) > maxThreads {
		clear(r.names)
	}
	r.names[thread] = name
	return name
}
