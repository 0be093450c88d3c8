package gomem

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/harmcheck"
	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
)

// chanBuilds are the builds of the gochanproof victim the scan is tried
// on: the oldest Go the reader reads and this machine's, both with DWARF
// (the heap's layout comes from it).
var chanBuilds = []build{
	{"go1.22.0", testvictim.ModuleBuild{Toolchain: "go1.22.0"}},
	{"host", testvictim.ModuleBuild{}},
}

// scanVictim starts the gochanproof victim in mode, reads it once with
// the channel scan and returns its goroutines by id, the scan, and the
// ready line's main and workers.
func scanVictim(t *testing.T, b testvictim.ModuleBuild, mode string) (map[int64]model.Goroutine, *model.ChanScan, int64, []int64) {
	t.Helper()
	v := testvictim.StartCmd(t, exec.Command(testvictim.BuildModule(t, "gochanproof", b), mode))
	r := openReader(t, v.PID)
	// The bound of time is for the field; here a loaded machine must not
	// cut the scan.
	r.scanTime = 5 * time.Minute
	w := harmcheck.Watch(v.PID)
	r.ScanChannels(true)
	gs, st, err := r.Goroutines(context.Background())
	w.Finish(t)
	if err != nil {
		t.Fatal(err)
	}
	if st.ChanScan == nil {
		t.Fatal("no channel scan")
	}
	mainID, err := strconv.ParseInt(v.Info["main"], 10, 64)
	if err != nil {
		t.Fatalf("ready line: %v", v.Info)
	}
	var workers []int64
	for _, s := range strings.Split(v.Info["workers"], ",") {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("ready line: %v", v.Info)
		}
		workers = append(workers, id)
	}
	t.Logf("scan: %+v", *st.ChanScan)
	return byID(gs), st.ChanScan, mainID, workers
}

// workersChan is the one channel the workers wait on.
func workersChan(t *testing.T, gs map[int64]model.Goroutine, workers []int64) string {
	t.Helper()
	var ch string
	for _, id := range workers {
		g, ok := gs[id]
		if !ok || len(g.WaitChans) != 1 || ch != "" && g.WaitChans[0] != ch {
			t.Fatalf("worker %d: %+v, want one channel shared by the workers", id, g)
		}
		ch = g.WaitChans[0]
	}
	return ch
}

// TestChanScanCounterpart: the workers wait on ctx.Done(); main, in
// wg.Wait(), holds the deferred cancel, which leads to the context and
// its channel (stack → closure → context). The scan must name main.
func TestChanScanCounterpart(t *testing.T) {
	for _, b := range chanBuilds {
		t.Run(b.name, func(t *testing.T) {
			gs, scan, mainID, workers := scanVictim(t, b.b, "ctx")
			ch := workersChan(t, gs, workers)
			if !slices.Contains(gs[mainID].HeldChans, ch) {
				t.Errorf("main (goroutine %d) holds %v, want the workers' channel %s among them", mainID, gs[mainID].HeldChans, ch)
			}
			if slices.Contains(scan.Timers, ch) {
				t.Errorf("the workers' channel %s taken for a timer's", ch)
			}
		})
	}
}

// TestChanScanNobody: the workers' channel was made by a goroutine that
// returned; nothing else refers to it. The scan must be complete and name
// no goroutine but the workers, and no global. (Goroutines of the
// victim's own machinery, the listener and the runtime's, may be there:
// they must just not be named.)
func TestChanScanNobody(t *testing.T) {
	for _, b := range chanBuilds {
		t.Run(b.name, func(t *testing.T) {
			gs, scan, _, workers := scanVictim(t, b.b, "orphan")
			ch := workersChan(t, gs, workers)
			if !scan.Complete || scan.Cut != "" || scan.Depth != scanDepth {
				t.Errorf("scan %+v, want complete to depth %d", *scan, scanDepth)
			}
			for id, g := range gs {
				if !slices.Contains(workers, id) && slices.Contains(g.HeldChans, ch) {
					t.Errorf("goroutine %d [%s] named as referring to the orphan channel %s", id, g.State, ch)
				}
			}
			if slices.Contains(scan.Globals, ch) || slices.Contains(scan.Timers, ch) {
				t.Errorf("scan %+v: the orphan channel %s among the globals' or the timers'", *scan, ch)
			}
		})
	}
}
