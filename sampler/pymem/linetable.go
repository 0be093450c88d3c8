package pymem

// The three line table formats CPython 3.8 to 3.13 store in a code object.
// Each decoder walks the table once from its start and stops at the entry
// that covers the offset, so the cost is linear in the table's length. The
// table comes from a memory read of a live process that may be torn, so
// every read is bounds checked and anything that does not parse is 0, the
// value for "the table does not say", rather than a guess.

// lineOf is the source line of the instruction at byte offset off from the
// start of a code object's bytecode, for CPython 3.minor (8..13): table is
// the code object's co_lnotab (3.8, 3.9) or co_linetable (3.10 and later)
// bytes, first its co_firstlineno. 0 when the table does not say (a
// truncated or garbled table, an offset past its end, an instruction
// with no line, e.g. 3.10's None or 3.11+'s "no location" entries).
//
// A negative offset (a frame that has not started) is 0 too: CPython
// reports co_firstlineno for it, which the caller has at hand if it wants
// that.
func lineOf(minor, first int, table []byte, off int) int {
	if off < 0 {
		return 0
	}
	var line int
	switch {
	case minor == 8 || minor == 9:
		line = lineOfLnotab(first, table, off)
	case minor == 10:
		line = lineOfLinetable310(first, table, off)
	case minor >= 11 && minor <= 13:
		line = lineOfLocations(first, table, off)
	}
	// A garbled table can add up to a line before the first; no real
	// instruction is there.
	if line < 0 {
		return 0
	}
	return line
}

// lineOfLnotab decodes 3.8 and 3.9's co_lnotab: pairs of an unsigned byte
// offset increment and a signed line increment, the line increment taking
// effect at the offset reached after the pair's byte increment.
//
// The table does not record the bytecode's length, so an offset past the
// last pair is on the last line, as PyCode_Addr2Line says, and an empty
// table puts every instruction on the first line (a one-line function or
// lambda has one). A trailing odd byte is ignored, as CPython ignores it.
func lineOfLnotab(first int, table []byte, off int) int {
	line, addr := first, 0
	for i := 0; i+1 < len(table); i += 2 {
		addr += int(table[i])
		if addr > off {
			break
		}
		line += int(int8(table[i+1]))
	}
	return line
}

// lineOfLinetable310 decodes 3.10's co_linetable: pairs of an unsigned
// byte length and a signed line delta, each pair a range of bytecode that
// starts where the previous one ended. A delta of -128 marks a range with
// no line and leaves the running line alone. Ranges of length 0 only carry
// line deltas too large for one pair; the offset test skips them as
// PyLineTable_NextAddressRange does.
func lineOfLinetable310(first int, table []byte, off int) int {
	line, end := first, 0
	for i := 0; i+1 < len(table); i += 2 {
		end += int(table[i])
		delta := int(int8(table[i+1]))
		noLine := delta == -128
		if !noLine {
			line += delta
		}
		if off < end {
			if noLine {
				return 0
			}
			return line
		}
	}
	return 0
}

// Location codes of the 3.11 and later location table (Objects/locations.md
// of 3.11): 0 to 9 are short forms and 10 to 12 one-line forms, none of
// which carry a line delta beyond code-10 for the one-line forms.
const (
	locOneLine0  = 10
	locOneLine2  = 12
	locNoColumns = 13
	locLong      = 14
	locNone      = 15
)

// lineOfLocations decodes the location table of 3.11 to 3.13. Each entry
// starts with a byte with bit 7 set holding the code and the number of
// code units covered less one; the bytes after it, up to the next byte with
// bit 7 set, carry the line delta (for the no-columns and long forms) and
// columns, which a line does not need. Entries are found by that bit, as
// CPython's advance does, so a form's column bytes never have to be parsed.
func lineOfLocations(first int, table []byte, off int) int {
	line, end := first, 0
	for i := 0; i < len(table); {
		head := table[i]
		if head&0x80 == 0 {
			// Not the start of an entry: the table is garbled or the
			// read began mid-table.
			return 0
		}
		j := i + 1
		for j < len(table) && table[j]&0x80 == 0 {
			j++
		}
		body := table[i+1 : j]
		code := int(head>>3) & 15
		switch {
		case code >= locOneLine0 && code <= locOneLine2:
			line += code - locOneLine0
		case code == locNoColumns || code == locLong:
			delta, ok := signedVarint(body)
			if !ok {
				return 0
			}
			line += delta
		}
		end += (int(head&7) + 1) * 2
		if off < end {
			if code == locNone {
				return 0
			}
			return line
		}
		i = j
	}
	return 0
}

// maxVarintChunks bounds a varint at 30 bits, more than any line delta
// CPython writes (it stores them in a C int), so a garbled run of
// continuation bytes is rejected instead of shifted into nonsense.
const maxVarintChunks = 5

// signedVarint reads the location table's signed varint from the start of
// b: 6-bit chunks, least significant first, bit 6 set on all but the last,
// and the value's low bit its sign. ok is false when b ends mid-varint or
// the varint is longer than any CPython writes.
func signedVarint(b []byte) (v int, ok bool) {
	var u uint
	for i := 0; i < len(b) && i < maxVarintChunks; i++ {
		u |= uint(b[i]&63) << (6 * i)
		if b[i]&64 == 0 {
			if u&1 != 0 {
				return -int(u >> 1), true
			}
			return int(u >> 1), true
		}
	}
	return 0, false
}
