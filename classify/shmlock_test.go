package classify_test

import (
	"slices"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// TestSharedWordNotNobodyLeft: a lone thread on a futex word nobody in its
// process could wake is "nobody left", unless the word lies in shared
// memory: then another process that maps it could, and the wait names the
// mapping and those processes instead.
func TestSharedWordNotNobodyLeft(t *testing.T) {
	sem := &model.SharedWord{Path: "/dev/shm/sem.jobs", Offset: 0, Dev: "00:1a", Inode: 9}
	tests := []struct {
		name   string
		futex  model.Futex
		nobody bool
		mapped []int
	}{
		{"private word", model.Futex{}, true, nil},
		{"POSIX named semaphore another process maps", model.Futex{Shared: sem, MappedBy: []int{812}, MappedComplete: true}, false, []int{812}},
		{"shared word nobody else maps", model.Futex{Shared: sem, MappedComplete: true}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify(steady(2, map[string]model.Futex{"0x1000": tt.futex},
				th{tid: pid, name: "main", state: "S", call: futexWait(0x1000, 0)}), World{}, classify.DefaultOptions())
			if d.Verdict != classify.Blocked {
				t.Fatalf("verdict %s (%s), want blocked", d.Verdict, d.Summary)
			}
			w := waitFrom(d, pid)
			if w == nil || w.Nobody != tt.nobody || !slices.Equal(w.MappedBy, tt.mapped) || (w.Shared != nil) != (tt.futex.Shared != nil) {
				t.Errorf("wait %+v, want nobody %v, mapped by %v", w, tt.nobody, tt.mapped)
			}
		})
	}
}
