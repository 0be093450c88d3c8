package sampler

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// A claim another diagnosis holds is a foreign stop at this sample and the
// next (it was free to stop the target in between); once it comes free
// this run takes it.
func TestForeignClaim(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1-2.lock")
	other, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	other.WriteString("4242\n")
	c := &Claim{path: path}
	defer c.Release()
	prevOther := -1
	var s1, s2, s3 model.Sample
	foreignAround(&s1, nil, c, &prevOther)
	other.Close() // the other diagnosis ends
	foreignAround(&s2, &s1, c, &prevOther)
	foreignAround(&s3, &s2, c, &prevOther)
	want := []model.ForeignStop{{Kind: model.ForeignClaim, PID: 4242}}
	if !slices.Equal(s1.Foreign, want) || !slices.Equal(s2.Foreign, want) || s3.Foreign != nil {
		t.Errorf("foreign stops %v, %v, %v; want %v twice, then none", s1.Foreign, s2.Foreign, s3.Foreign, want)
	}
	if c.f == nil {
		t.Errorf("the claim came free and was not taken")
	}
	var none *Claim
	if _, held := none.Other(); held {
		t.Errorf("no claim: held")
	}
}

// A thread that came back in restart_syscall is a stop: this run's own
// when it paused the target after the sample before, else someone else's.
func TestForeignRestart(t *testing.T) {
	waiting := model.Thread{TID: 7, Syscall: model.Syscall{Nr: 7, Name: "poll"}}
	resumed := model.Thread{TID: 7, Syscall: model.Syscall{Nr: 7, Name: "poll", Restarted: true}}
	for _, tt := range []struct {
		name   string
		prev   model.Sample
		cur    model.Thread
		paused bool
		want   bool
	}{
		{"resumed after a stop not ours", model.Sample{Threads: []model.Thread{waiting}}, resumed, false, true},
		{"resumed after our pause", model.Sample{Threads: []model.Thread{waiting}}, resumed, true, false},
		{"still resumed from before", model.Sample{Threads: []model.Thread{resumed}}, resumed, false, false},
		{"no restart", model.Sample{Threads: []model.Thread{waiting}}, waiting, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prevOther := -1
			tt.prev.Paused = tt.paused
			cur := model.Sample{Threads: []model.Thread{tt.cur}}
			foreignAround(&cur, &tt.prev, nil, &prevOther)
			got := slices.Contains(cur.Foreign, model.ForeignStop{Kind: model.ForeignRestart, TID: 7})
			if got != tt.want || len(cur.Foreign) > 1 {
				t.Errorf("foreign %v, want a restart: %v", cur.Foreign, tt.want)
			}
		})
	}
}
