// Package strhash is the FNV-1a mixing the stack tables share (the
// parser's interning in sampler/replay, the groups in classify), a word
// at a time. It is not hash/fnv: that hashes a byte stream through an
// interface, and these tables hash a stack's few words and strings in
// place, on the path of every goroutine of a 100,000-goroutine dump.
package strhash

const (
	// Offset is FNV-1a's 64-bit offset basis: the hash of nothing.
	Offset uint64 = 14695981039346656037
	prime  uint64 = 1099511628211
)

// Word mixes one word into h.
func Word(h, w uint64) uint64 { return (h ^ w) * prime }

// String mixes s's length and then all of s into h, eight bytes at a
// time: each step is one-to-one in its word, so strings of one length
// that differ in one word never share a hash, and a collision of others
// only costs the caller a comparison.
func String(h uint64, s string) uint64 {
	h = Word(h, uint64(len(s)))
	for len(s) >= 8 {
		h = Word(h, le64(s))
		s = s[8:]
	}
	if len(s) > 0 {
		h = Word(h, tail(s))
	}
	return h
}

// le64 is s's first eight bytes as a little-endian word.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// tail is the last bytes of a string, fewer than eight, as a word.
func tail(s string) uint64 {
	var w uint64
	for i := 0; i < len(s); i++ {
		w |= uint64(s[i]) << (8 * i)
	}
	return w
}

// Offset2 and Word2 are a second mixing, independent of Word's, for a
// key of two hashes.
const (
	Offset2 uint64 = 0x9e3779b97f4a7c15
	prime2  uint64 = 0xff51afd7ed558ccd
)

// Word2 mixes one word into h, as Word does with another prime and a
// rotation, so that the two hashes of one input are independent.
func Word2(h, w uint64) uint64 {
	h = (h ^ w) * prime2
	return h ^ h>>29
}

// Whole mixes all of s into a and b (Word's and Word2's hashes), eight
// bytes at a time, its length first.
func Whole(a, b uint64, s string) (uint64, uint64) {
	a, b = Word(a, uint64(len(s))), Word2(b, uint64(len(s)))
	for len(s) >= 8 {
		w := le64(s)
		a, b = Word(a, w), Word2(b, w)
		s = s[8:]
	}
	w := tail(s)
	return Word(a, w), Word2(b, w)
}
