package replay_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// instant is a clock that never waits; it ends the run after stopAfter
// waits when that is set.
type instant struct {
	waits, stopAfter int
}

func (c *instant) Now() time.Time { return time.Time{} }
func (c *instant) After(ctx context.Context, d time.Duration) error {
	c.waits++
	if c.stopAfter > 0 && c.waits >= c.stopAfter {
		return context.Canceled
	}
	return ctx.Err()
}

func load(t *testing.T, name string) model.Recording {
	t.Helper()
	rec, err := replay.Read(filepath.Join("..", "..", "report", "testdata", name+".recording.json"))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// record replays rec through sampler.Record with the given stacks.
func record(t *testing.T, rec model.Recording, samples int, stacks sampler.Stacks, clock sampler.Clock) model.Recording {
	t.Helper()
	target, first, err := sampler.OpenTarget(replay.System(rec), rec.Samples[0].PID)
	if err != nil {
		t.Fatal(err)
	}
	if clock == nil {
		clock = &instant{}
	}
	got, err := sampler.Record(context.Background(), target, first,
		sampler.Options{Samples: samples, Interval: time.Second, Stacks: stacks, Clock: clock, Version: rec.HangdocVersion})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReplayIsTheRecording: every recording replayed through Record comes
// out with the same samples, the same processes followed and the same
// resources, so it classifies the same. The recordings of other processes'
// waits exercise peer following without a live victim.
func TestReplayIsTheRecording(t *testing.T) {
	recs, err := filepath.Glob("../../report/testdata/*.recording.json")
	if err != nil || len(recs) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	for _, path := range recs {
		name := strings.TrimSuffix(filepath.Base(path), ".recording.json")
		t.Run(name, func(t *testing.T) {
			rec := load(t, name)
			got := record(t, rec, rec.Requested, replay.Stacks(rec), nil)
			if rec.TargetExited {
				if !got.TargetExited || got.PartialReason == "" {
					t.Errorf("replay of an exited target: exited %v, partial %q", got.TargetExited, got.PartialReason)
				}
			}
			for i := range got.Samples {
				if rec.Samples[i].StackSource == model.FormatNone {
					// Recorded before samples named their source.
					got.Samples[i].StackSource = model.FormatNone
				}
			}
			if diff := cmp.Diff(rec.Samples, got.Samples); diff != "" {
				t.Errorf("samples (-recorded +replayed):\n%s", diff)
			}
			var pids, wantPIDs []int
			for _, p := range got.Peers {
				pids = append(pids, p.PID)
			}
			for _, p := range rec.Peers {
				wantPIDs = append(wantPIDs, p.PID)
			}
			if !slices.Equal(pids, wantPIDs) {
				t.Errorf("peers followed %v, recorded %v", pids, wantPIDs)
			}
			want := report.New(rec, classify.Classify(rec, classify.DefaultOptions()))
			have := report.New(got, classify.Classify(got, classify.DefaultOptions()))
			if want.Summary != have.Summary || want.Verdict != have.Verdict {
				t.Errorf("replayed: %s: %s\nrecorded: %s: %s", have.Verdict, have.Summary, want.Verdict, want.Summary)
			}
		})
	}
}

// fake is a stack source whose answers are scripted, sample by sample.
type fake struct {
	name  model.Format
	fails []bool // per call; past the end, it works
	calls int
}

func (f *fake) Name() model.Format { return f.name }
func (f *fake) Stacks(_ context.Context, s *model.Sample) error {
	f.calls++
	if f.calls <= len(f.fails) && f.fails[f.calls-1] {
		return fmt.Errorf("scripted failure %d", f.calls)
	}
	s.Goroutines = []model.Goroutine{{ID: 1, State: "chan receive", Stack: []model.Frame{{Func: "main.main"}}}}
	return nil
}

// lastFake is a fake that says at which of its calls it was told the
// sample was the run's last.
type lastFake struct {
	fake
	lastAt []int
}

func (f *lastFake) Last() { f.lastAt = append(f.lastAt, f.calls+1) }

// long is a recording of six samples: the deadlock victim's, repeated.
func long(t *testing.T) model.Recording {
	rec := load(t, "deadlock")
	for len(rec.Samples) < 6 {
		s := rec.Samples[len(rec.Samples)-3]
		s.Time = rec.Samples[len(rec.Samples)-1].Time.Add(time.Second)
		rec.Samples = append(rec.Samples, s)
	}
	return rec
}

func TestSourceChoice(t *testing.T) {
	rec := long(t)
	t.Run("the first that works is used, and the others say why not", func(t *testing.T) {
		a := &fake{name: model.SourcePprof, fails: []bool{true}}
		b := &fake{name: model.SourceDelve}
		got := record(t, rec, 3, sampler.Stacks{What: "goroutines", Sources: []sampler.StackSource{a, b}}, nil)
		if got.StackSource != model.SourceDelve || a.calls != 1 || b.calls != 3 {
			t.Errorf("source %s, calls %d and %d: want delve, the failed one tried once, the other every sample", got.StackSource, a.calls, b.calls)
		}
		if !slices.Contains(report.NoteTexts(got.Notes), "goroutines from delve (pprof: scripted failure 1)") {
			t.Errorf("notes %q: want why pprof was not used", got.Notes)
		}
		for i, s := range got.Samples {
			if len(s.Goroutines) != 1 || s.StackSource != model.SourceDelve {
				t.Errorf("sample %d: %d goroutines from %s", i, len(s.Goroutines), s.StackSource)
			}
		}
	})
	t.Run("a source that reads more on the last sample is told which one it is", func(t *testing.T) {
		a := &lastFake{fake: fake{name: model.SourceMemory}}
		record(t, rec, 4, sampler.Stacks{What: "goroutines", Sources: []sampler.StackSource{a}}, nil)
		if !slices.Equal(a.lastAt, []int{4}) {
			t.Errorf("told last before calls %v, want [4] only", a.lastAt)
		}
		b := &lastFake{fake: fake{name: model.SourceMemory}}
		record(t, rec, 1, sampler.Stacks{What: "goroutines", Sources: []sampler.StackSource{b}}, nil)
		if !slices.Equal(b.lastAt, []int{1}) {
			t.Errorf("one sample: told last before calls %v, want [1]", b.lastAt)
		}
	})
	t.Run("a source that fails twice in a row is dropped", func(t *testing.T) {
		a := &fake{name: model.SourcePprof, fails: []bool{false, true, true, false}}
		got := record(t, rec, 5, sampler.Stacks{What: "goroutines", Sources: []sampler.StackSource{a}}, nil)
		if a.calls != 3 {
			t.Errorf("%d calls, want 3: dropped after two failures", a.calls)
		}
		var failed int
		for _, n := range got.Notes {
			if n.Kind == model.NoteSampleUnread && n.Args[1] == "goroutines" {
				failed++
			}
		}
		if failed != 2 || len(got.Samples[0].Goroutines) == 0 || len(got.Samples[2].Goroutines) != 0 {
			t.Errorf("notes %q, samples with goroutines: want two failure notes and the first sample's goroutines", got.Notes)
		}
	})
	t.Run("when none works, the final one reads the last sample", func(t *testing.T) {
		a := &fake{name: model.SourcePprof, fails: []bool{true}}
		final := &fake{name: model.SourceSigquit}
		none := ""
		got := record(t, rec, 2, sampler.Stacks{What: "goroutines", Sources: []sampler.StackSource{a}, Final: final,
			None: func(why []string) model.Note {
				none = strings.Join(why, "; ")
				return model.NewNote(model.NoteNoGoroutines, none)
			}}, nil)
		if got.StackSource != model.SourceSigquit || final.calls != 1 || len(got.Samples[1].Goroutines) != 1 || len(got.Samples[0].Goroutines) != 0 {
			t.Errorf("source %s, final calls %d: want the final source on the last sample only", got.StackSource, final.calls)
		}
		if none != "" {
			t.Errorf("a note that none worked (%q), though the final one did", none)
		}
	})
	t.Run("when none works, the note says why each was not used", func(t *testing.T) {
		a := &fake{name: model.SourcePprof, fails: []bool{true, true, true}}
		b := &fake{name: model.SourceDelve, fails: []bool{true, true, true}}
		got := record(t, rec, 3, sampler.Stacks{What: "goroutines", Sources: []sampler.StackSource{a, b},
			None: func(why []string) model.Note {
				return model.NewNote(model.NoteNoGoroutinesQuit, strings.Join(why, "; "))
			}}, nil)
		want := model.NewNote(model.NoteNoGoroutinesQuit, "pprof: scripted failure 1; delve: scripted failure 1")
		if got.StackSource != model.FormatNone || !slices.ContainsFunc(got.Notes, want.Equal) || a.calls != 1 || b.calls != 1 {
			t.Errorf("source %s, notes %q, calls %d %d: want none, %q, each tried once", got.StackSource, got.Notes, a.calls, b.calls, want)
		}
	})
}

func TestPartialRuns(t *testing.T) {
	rec := load(t, "idle")
	t.Run("the target exits", func(t *testing.T) {
		got := record(t, rec, len(rec.Samples)+2, sampler.Stacks{}, nil)
		want := fmt.Sprintf("the target exited after %d of %d samples", len(rec.Samples), len(rec.Samples)+2)
		if !got.TargetExited || got.PartialReason != want || len(got.Samples) != len(rec.Samples) {
			t.Errorf("exited %v, partial %q, %d samples; want %q", got.TargetExited, got.PartialReason, len(got.Samples), want)
		}
	})
	t.Run("the run is cut short", func(t *testing.T) {
		got := record(t, rec, 3, sampler.Stacks{}, &instant{stopAfter: 2})
		want := "stopped after 2 of 3 samples: interrupted"
		if got.TargetExited || got.PartialReason != want || len(got.Samples) != 2 {
			t.Errorf("exited %v, partial %q, %d samples; want %q", got.TargetExited, got.PartialReason, len(got.Samples), want)
		}
	})
	t.Run("no process", func(t *testing.T) {
		_, _, err := sampler.OpenTarget(replay.System(rec), 999999)
		if !errors.Is(err, sampler.ErrNoProcess) {
			t.Errorf("opening a pid the recording lacks: %v, want ErrNoProcess", err)
		}
	})
}

// TestReplayKeepsNamespacedPIDs: a peer in a container keeps its pid there
// when the recording is played back.
func TestReplayKeepsNamespacedPIDs(t *testing.T) {
	rec := model.Recording{Target: model.Target{PID: 4187, NSPID: 1}, Peers: []model.Process{{PID: 4190, NSPID: 4, Cmdline: "peer"}}}
	sys := replay.System(rec)
	if got := sys.Describe(4187); got.NSPID != 1 {
		t.Errorf("target %+v, want nspid 1", got)
	}
	if got := sys.Describe(4190); got.NSPID != 4 || got.Cmdline != "peer" {
		t.Errorf("peer %+v, want nspid 4", got)
	}
}
