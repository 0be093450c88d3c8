package classify

import (
	"cmp"
	"slices"

	"github.com/hangdoc/hangdoc/internal/strhash"
	"github.com/hangdoc/hangdoc/model"
)

// This file is classification degraded for a heap past its budget
// (Options.ShapeOnly, Options.HolderLocks): the passes stay as they are,
// their input is made smaller at the entry.

// byShape folds each sample's goroutines by state and stack shape
// (functions, files, lines; argument words aside): one reading per fold,
// the first goroutine's, with the others its twins. Their own argument
// words, wait times, labels and creators are not read; nor is channel
// evidence, which belongs to one goroutine and not to its fold.
func byShape(gs [][]model.Goroutine) [][]model.Goroutine {
	out := make([][]model.Goroutine, len(gs))
	for n, list := range gs {
		var folded []model.Goroutine
		index := map[uint64][]int{}
		for i := range list {
			g := &list[i]
			h := strhash.String(strhash.Offset, g.State)
			for _, f := range g.Stack {
				h = strhash.String(h, f.Func)
				h = strhash.String(h, f.File)
				h = strhash.Word(h, uint64(f.Line))
			}
			k := slices.IndexFunc(index[h], func(j int) bool {
				return folded[j].State == g.State && sameNoArgs(folded[j].Stack, g.Stack)
			})
			if k >= 0 {
				f := &folded[index[h][k]]
				f.Twins = append(append(f.Twins, g.ID), g.Twins...)
				continue
			}
			r := *g
			r.Twins = slices.Clone(g.Twins)
			r.WaitChans, r.ChanRefs, r.WaitLock, r.HeldLocks = nil, nil, "", nil
			index[h] = append(index[h], len(folded))
			folded = append(folded, r)
		}
		if folded == nil {
			folded = []model.Goroutine{}
		}
		out[n] = folded
	}
	return out
}

// searchHolders is findHolders for the max locks with the most waiters
// (all when max is 0); the others are listed with their waiters and no
// holder.
func searchHolders(pid int, groups []*lockGroup, holds []lockHold, unseen []*Actor, max int) []Lock {
	if max <= 0 || len(groups) <= max {
		return findHolders(pid, groups, holds, unseen)
	}
	waiters := make(map[*lockGroup]int, len(groups))
	for _, g := range groups {
		for _, w := range g.waits {
			waiters[g] += w.a.Count()
		}
	}
	sorted := slices.Clone(groups)
	slices.SortStableFunc(sorted, func(a, b *lockGroup) int { return cmp.Compare(waiters[b], waiters[a]) })
	locks := findHolders(pid, sorted[:max], holds, unseen)
	locks = append(locks, findHolders(pid, sorted[max:], nil, nil)...)
	slices.SortStableFunc(locks, func(a, b Lock) int { return cmp.Compare(len(b.Waiters), len(a.Waiters)) })
	return locks
}
