// Package strhash is the FNV-1a mixing the stack tables share (the
// parser's interning in sampler/replay, the groups in classify). It is
// not hash/fnv: that hashes a byte stream through an interface, and these
// tables hash a stack's few words and strings in place, on the path of
// every goroutine of a 100,000-goroutine dump.
package strhash

const (
	// Offset is FNV-1a's 64-bit offset basis: the hash of nothing.
	Offset uint64 = 14695981039346656037
	prime  uint64 = 1099511628211
)

// Word mixes one word into h.
func Word(h, w uint64) uint64 { return (h ^ w) * prime }

// String mixes s's length and at most its first and last 16 bytes into
// h: names and paths that differ, differ there, and a collision only costs
// the caller a comparison.
func String(h uint64, s string) uint64 {
	h = Word(h, uint64(len(s)))
	head, tail := s, ""
	if len(s) > 32 {
		head, tail = s[:16], s[len(s)-16:]
	}
	for i := 0; i < len(head); i++ {
		h = Word(h, uint64(head[i]))
	}
	for i := 0; i < len(tail); i++ {
		h = Word(h, uint64(tail[i]))
	}
	return h
}
