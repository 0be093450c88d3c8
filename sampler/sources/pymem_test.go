package sources

import (
	"testing"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/pymem"
)

// TestSameTasks: of two reads of the tasks while their loop ran, a task
// is kept when the earlier read saw it with the same frames and the same
// awaited object; one that moved, finished, or was not there before is
// left out.
func TestSameTasks(t *testing.T) {
	at := func(line int) []model.Frame { return []model.Frame{{Func: "handle", File: "/app/m.py", Line: line}} }
	a := []pymem.Task{{Addr: 1, Stack: at(3), Awaits: 9}, {Addr: 2, Stack: at(3), Awaits: 9}, {Addr: 3, Stack: at(3)}, {Addr: 4, Stack: at(3)}}
	b := []pymem.Task{{Addr: 1, Stack: at(3), Awaits: 9}, {Addr: 2, Stack: at(4), Awaits: 9}, {Addr: 3, Stack: at(3), Awaits: 8}, {Addr: 4, Stack: at(3), Done: true}, {Addr: 5, Stack: at(3)}}
	got := sameTasks(a, b)
	if len(got) != 1 || got[0].Addr != 1 {
		t.Errorf("kept %+v, want task 1 alone", got)
	}
}
