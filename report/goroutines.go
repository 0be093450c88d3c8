package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
)

// GoroutineList is a report's goroutines: one entry per distinct
// goroutine, whose Twins were read exactly like it. The JSON contract
// lists every goroutine as an entry of its own, in id order: MarshalJSON
// writes each twin as its entry with its id.
type GoroutineList []Goroutine

// Count is how many goroutines the list stands for, twins included.
func (l GoroutineList) Count() int {
	n := 0
	for i := range l {
		n += 1 + len(l[i].Twins)
	}
	return n
}

// Find is the entry of goroutine id, its own or its twins', or nil.
func (l GoroutineList) Find(id int64) *Goroutine {
	for i := range l {
		if l[i].ID == id || slices.Contains(l[i].Twins, id) {
			return &l[i]
		}
	}
	return nil
}

func (l GoroutineList) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	if len(l) == l.Count() {
		return marshal([]Goroutine(l))
	}
	type entry struct {
		id int64
		i  int
	}
	all := make([]entry, 0, l.Count())
	for i := range l {
		all = append(all, entry{l[i].ID, i})
		for _, id := range l[i].Twins {
			all = append(all, entry{id, i})
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return cmp.Compare(a.id, b.id) })
	// Each distinct entry is marshalled once, with a placeholder id that
	// each twin's own replaces.
	var b bytes.Buffer
	b.WriteByte('[')
	done := make([][]byte, len(l))
	for n, e := range all {
		if done[e.i] == nil {
			g := l[e.i]
			g.ID = 0
			one, err := marshal(g)
			if err != nil {
				return nil, err
			}
			done[e.i] = one
		}
		if n > 0 {
			b.WriteByte(',')
		}
		one := done[e.i]
		// The id is the object's first field: {"id":0,…}.
		b.WriteString(`{"id":`)
		b.WriteString(strconv.FormatInt(e.id, 10))
		b.Write(one[len(`{"id":0`):])
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escapes, as JSON writes the rest.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
