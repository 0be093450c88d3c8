package java

import (
	"slices"
	"unsafe"

	"github.com/hangdoc/hangdoc/internal/strhash"
	"github.com/hangdoc/hangdoc/model"
)

// stackTab keeps each distinct stack once: a pool's thousand workers
// parked at one place share one slice. Frames' strings are the parser's
// interned copies, so equal ones are nearly always the same string, hashed
// by where it is; a collision costs a comparison, never a wrong stack.
type stackTab struct {
	byHash map[uint64][][]model.Frame
}

func (t *stackTab) intern(fs []model.Frame) []model.Frame {
	h := strhash.Offset
	for _, f := range fs {
		h = strhash.Word(h, uint64(uintptr(unsafe.Pointer(unsafe.StringData(f.Func)))))
		h = strhash.Word(h, uint64(uintptr(unsafe.Pointer(unsafe.StringData(f.File)))))
		h = strhash.Word(h, uint64(f.Line))
	}
	for _, s := range t.byHash[h] {
		if slices.Equal(s, fs) {
			return s
		}
	}
	kept := slices.Clone(fs)
	t.byHash[h] = append(t.byHash[h], kept)
	return kept
}
