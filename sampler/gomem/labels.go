package gomem

import (
	"encoding/binary"

	"github.com/hangdoc/hangdoc/sampler/gomem/internal/layout"
)

// Label bounds: a label set past these is garbage.
const (
	maxLabels    = 64
	maxLabelText = 4096
)

// readLabels reads the pprof labels of the chunk's goroutines that have
// any. A label set is immutable once a goroutine points at it (pprof
// makes a new one for each change), so each is read once per read of the
// process, shared by the goroutines that point at it.
func (c *chunkState) readLabels() {
	r := c.r
	if !r.lay.G.Labels.OK() {
		return
	}
	for i := range c.gs {
		g := &c.gs[i]
		if g.skip() || g.status == 0 {
			continue
		}
		p := field(g.b, r.lay.G.Labels)
		if p == 0 {
			continue
		}
		ls, ok := c.labels[p]
		if !ok {
			if layout.LabelsSlice(r.exe.version) {
				ls = r.labelSlice(p)
			} else {
				ls = r.labelHmap(p)
			}
			c.labels[p] = ls
		}
		g.labels = ls
	}
}

// labelSlice reads a Go 1.24+ labelMap: a slice of {key, value string}.
func (r *Reader) labelSlice(p uint64) map[string]string {
	var hdr [24]byte
	if !r.maps.readable(p, 24) || r.read1(p, hdr[:]) != nil {
		return nil
	}
	ptr, n := binary.LittleEndian.Uint64(hdr[:]), binary.LittleEndian.Uint64(hdr[8:])
	if n == 0 || n > maxLabels || !r.maps.readable(ptr, n*32) {
		return nil
	}
	b := make([]byte, n*32)
	if r.read1(ptr, b) != nil {
		return nil
	}
	out := make(map[string]string, n)
	for i := uint64(0); i < n; i++ {
		e := b[i*32:]
		k, ok1 := r.str(binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:]))
		v, ok2 := r.str(binary.LittleEndian.Uint64(e[16:]), binary.LittleEndian.Uint64(e[24:]))
		if !ok1 || !ok2 {
			return nil
		}
		out[k] = v
	}
	return out
}

// labelHmap reads a Go 1.22/1.23 labelMap: a pointer to a
// map[string]string, the runtime's hmap of those versions (runtime/map.go:
// count, flags, B, noverflow, hash0, buckets, oldbuckets, ...; buckets of
// eight tophash bytes, eight keys, eight values and an overflow pointer).
func (r *Reader) labelHmap(p uint64) map[string]string {
	hp, err := r.u64(p)
	if err != nil || hp == 0 {
		return nil
	}
	var h [48]byte
	if !r.maps.readable(hp, 48) || r.read1(hp, h[:]) != nil {
		return nil
	}
	count := binary.LittleEndian.Uint64(h[:])
	bshift := h[9]
	if count == 0 || count > maxLabels || bshift > 4 {
		return nil
	}
	const bucketSize = 8 + 8*16 + 8*16 + 8
	out := make(map[string]string, count)
	for _, base := range []uint64{binary.LittleEndian.Uint64(h[24:]), binary.LittleEndian.Uint64(h[16:])} {
		if base == 0 {
			continue
		}
		nb := uint64(1) << bshift
		if base == binary.LittleEndian.Uint64(h[24:]) && nb > 1 {
			nb /= 2 // oldbuckets is half the size
		}
		for i := uint64(0); i < nb; i++ {
			b := base + i*bucketSize
			for hops := 0; b != 0 && hops < 16; hops++ {
				var bk [bucketSize]byte
				if !r.maps.readable(b, bucketSize) || r.read1(b, bk[:]) != nil {
					return nil
				}
				for cell := 0; cell < 8; cell++ {
					if bk[cell] < 5 { // empty or evacuated (minTopHash)
						continue
					}
					ko, vo := 8+cell*16, 8+8*16+cell*16
					k, ok1 := r.str(binary.LittleEndian.Uint64(bk[ko:]), binary.LittleEndian.Uint64(bk[ko+8:]))
					v, ok2 := r.str(binary.LittleEndian.Uint64(bk[vo:]), binary.LittleEndian.Uint64(bk[vo+8:]))
					if !ok1 || !ok2 {
						return nil
					}
					out[k] = v
				}
				b = binary.LittleEndian.Uint64(bk[bucketSize-8:])
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// str reads a string of the target.
func (r *Reader) str(p, n uint64) (string, bool) {
	if n == 0 {
		return "", true
	}
	if n > maxLabelText || !r.maps.readable(p, n) {
		return "", false
	}
	b := make([]byte, n)
	if r.read1(p, b) != nil {
		return "", false
	}
	return string(b), true
}
