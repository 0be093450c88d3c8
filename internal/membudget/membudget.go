// Package membudget keeps hangdoc's own heap to a budget (--max-memory):
// a diagnosis tool that grows without bound on the host it diagnoses can
// get the target killed by the OOM killer, which is the worst harm it can
// do.
//
// The mechanism is hangdoc's own: once the evidence is read, a heap past
// half the budget makes classification degrade in a stated way (see
// Degrade), so what comes after the reading stays small. The Go runtime's
// memory limit (Set) is only a backstop: it makes the collector work
// harder near the budget, it never stops an allocation.
package membudget

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/classify"
)

// Default is the budget when --max-memory is not given.
const Default = 512 << 20

// HolderLocks is how many locks, those with the most waiters, holders
// are searched for past half the budget.
const HolderLocks = 32

// Bytes is a size in bytes that reads and prints as "512MiB": a flag's
// value (pflag.Value).
type Bytes int64

// String writes b in the largest binary unit that divides it.
func (b Bytes) String() string {
	for _, u := range units[:3] {
		if b >= Bytes(u.n) && b%Bytes(u.n) == 0 {
			return strconv.FormatInt(int64(b)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// Set parses s (a flag's text).
func (b *Bytes) Set(s string) error {
	n, err := Parse(s)
	if err != nil {
		return err
	}
	*b = Bytes(n)
	return nil
}

// Type names the value in --help.
func (*Bytes) Type() string { return "size" }

var units = []struct {
	name string
	n    int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10},
	{"B", 1},
}

// Parse reads a size: a number of bytes, or a whole number with a unit
// (KiB, MiB, GiB; KB, MB, GB in powers of ten; K, M, G as binary).
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(t, u.name); ok {
			t, mult = strings.TrimSpace(rest), u.n
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a positive size, like 512MiB or 2GiB", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return n * mult, nil
}

// Set makes limit the Go runtime's soft memory limit, if it is lower
// than the one in force, and returns what puts the old one back (a test
// runs many diagnoses in one process).
func Set(limit int64) (restore func()) {
	prev := debug.SetMemoryLimit(-1)
	if limit <= 0 || limit >= prev {
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}

// errNoMetric: the runtime did not give the heap's size.
var errNoMetric = errors.New("the runtime gave no heap size")

// Heap is the heap hangdoc holds now: its objects, live or not yet
// collected. A heap that reads past limit is collected first and read
// again, so garbage alone never counts against the budget.
func Heap(limit int64) int64 {
	h, err := heapObjects()
	if err != nil {
		return 0
	}
	if h > limit {
		runtime.GC()
		if h, err = heapObjects(); err != nil {
			return 0
		}
	}
	return h
}

func heapObjects() (int64, error) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, errNoMetric
	}
	return int64(min(s[0].Value.Uint64(), math.MaxInt64)), nil
}

// Tight reports whether the heap is past half of budget once the
// evidence is read, and the heap it read.
func Tight(budget int64) (heap int64, tight bool) {
	if budget <= 0 {
		return 0, false
	}
	heap = Heap(budget / 2)
	return heap, heap > budget/2
}

// Degrade is opts for a heap past half the budget: goroutines grouped by
// their stack shape alone, and holders searched for the HolderLocks
// locks with the most waiters only.
func Degrade(opts classify.Options) classify.Options {
	opts.ShapeOnly = true
	opts.HolderLocks = HolderLocks
	return opts
}
