package gomem

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/model"

	"golang.org/x/sys/unix"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler"
)

// recording is a memory that keeps a copy of every piece it reads.
type recording struct {
	m      memory
	pieces []request
}

func (rec *recording) read(reqs []request) error {
	err := rec.m.read(reqs)
	for _, q := range reqs {
		if q.OK {
			rec.pieces = append(rec.pieces, request{Addr: q.Addr, Buf: slices.Clone(q.Buf), OK: true})
		}
	}
	return err
}

// replay serves reads from a recording, after mutate (when set) has had
// its way with each piece: it is told the piece's address and how many
// times that address was read before.
type replay struct {
	pieces []request
	mutate func(addr uint64, b []byte, nth int)
	reads  map[uint64]int
}

func (rp *replay) read(reqs []request) error {
	for i := range reqs {
		q := &reqs[i]
		q.OK = false
		for _, p := range rp.pieces {
			if q.Addr >= p.Addr && q.Addr+uint64(len(q.Buf)) <= p.Addr+uint64(len(p.Buf)) {
				copy(q.Buf, p.Buf[q.Addr-p.Addr:])
				q.OK = true
				break
			}
		}
		if q.OK && rp.mutate != nil {
			rp.mutate(q.Addr, q.Buf, rp.reads[q.Addr])
		}
		rp.reads[q.Addr]++
	}
	return nil
}

// snapshot is one read of a victim, recorded, with the victim gone: the
// replays below read exactly what it read.
type snapshot struct {
	r      *Reader
	pieces []request
	maps   *mappings
	gs     []model.Goroutine
	allgs  uint64 // the address of the array of g pointers
	gAddrs []uint64
}

var (
	snapOnce sync.Once
	snap     *snapshot
)

func recorded(t testing.TB) *snapshot {
	t.Helper()
	snapOnce.Do(func() {
		v := startVictim(t, testvictim.ModuleBuild{LDFlags: strip})
		r, err := Open(sampler.NewFS(""), v.PID)
		if err != nil {
			t.Fatal(err)
		}
		rec := &recording{m: r.mem}
		r.mem = rec
		gs, _, err := r.Goroutines(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		allgs, err := r.u64(r.allgptr)
		if err != nil {
			t.Fatal(err)
		}
		s := &snapshot{r: r, pieces: rec.pieces, maps: r.maps, gs: gs, allgs: allgs}
		for _, p := range rec.pieces {
			if p.Addr == allgs {
				for i := 0; i+8 <= len(p.Buf); i += 8 {
					s.gAddrs = append(s.gAddrs, binary.LittleEndian.Uint64(p.Buf[i:]))
				}
				break
			}
		}
		r.Close()
		r.live = nil
		snap = s
	})
	if snap == nil {
		t.Fatal("no snapshot")
	}
	return snap
}

// replayRead reads the snapshot again through mutate.
func (s *snapshot) replayRead(mutate func(addr uint64, b []byte, nth int)) ([]model.Goroutine, Stats, error) {
	s.r.mem = &replay{pieces: s.pieces, mutate: mutate, reads: map[uint64]int{}}
	s.r.readMaps = func() (*mappings, error) { return s.maps, nil }
	return s.r.Goroutines(context.Background())
}

// gAt is the address of the g of goroutine id in the snapshot.
func (s *snapshot) gAt(t *testing.T, id int64) uint64 {
	t.Helper()
	for _, a := range s.gAddrs {
		if b := s.bytesAt(a, s.r.lay.G.Size); b != nil && int64(field(b, s.r.lay.G.Goid)) == id {
			return a
		}
	}
	t.Fatalf("goroutine %d not in the snapshot", id)
	return 0
}

// bytesAt is the recorded memory at [a, a+n), nil if not recorded.
func (s *snapshot) bytesAt(a uint64, n int) []byte {
	for _, p := range s.pieces {
		if a >= p.Addr && a+uint64(n) <= p.Addr+uint64(len(p.Buf)) {
			return p.Buf[a-p.Addr : a-p.Addr+uint64(n)]
		}
	}
	return nil
}

// within is the part of a piece read at a that holds [x, x+n), or nil: the
// reader reads neighbouring gs as one piece.
func within(a uint64, b []byte, x uint64, n int) []byte {
	if x >= a && x+uint64(n) <= a+uint64(len(b)) {
		return b[x-a : x-a+uint64(n)]
	}
	return nil
}

func put(b []byte, off, size int, v uint64) {
	switch size {
	case 1:
		b[off] = byte(v)
	case 4:
		binary.LittleEndian.PutUint32(b[off:], uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(b[off:], v)
	}
}

// userGoroutine is a parked goroutine of the program's own, with a stack.
func (s *snapshot) userGoroutine(t *testing.T) model.Goroutine {
	for _, g := range s.gs {
		if !model.RuntimeGoroutine(g.Stack, g.CreatedBy) && g.State == "sync.Mutex.Lock" {
			return g
		}
	}
	t.Fatal("no mutex waiter in the snapshot")
	return model.Goroutine{}
}

// TestGarbage feeds the reader corrupted memory: each kind of garbage
// costs the one goroutine it hits, counted, never a panic, and a replay
// without corruption reads exactly what the live read did.
func TestGarbage(t *testing.T) {
	s := recorded(t)
	gs, st, err := s.replayRead(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(s.gs, gs); d != "" {
		t.Fatalf("the replay reads differently from the live read:\n%s", d)
	}
	if st.Dropped != 0 || st.Moving != 0 || st.Retries != 0 {
		t.Fatalf("a faithful replay: %+v", st)
	}
	victim := s.userGoroutine(t)
	ga := s.gAt(t, victim.ID)
	l := s.r.lay.G
	// reads counts the reads of victim's g in a replay, first or second.
	var reads int

	for _, tc := range []struct {
		name   string
		mutate func(addr uint64, b []byte, nth int)
		check  func(t *testing.T, gs []model.Goroutine, st Stats)
	}{
		{"g pointer unmapped", func(a uint64, b []byte, _ int) {
			if b := within(a, b, s.allgs, 8*len(s.gAddrs)); b != nil {
				for i := 0; i+8 <= len(b); i += 8 {
					if binary.LittleEndian.Uint64(b[i:]) == ga {
						binary.LittleEndian.PutUint64(b[i:], 0xdead0000)
					}
				}
			}
		}, dropped(1)},
		{"pc in no function", func(a uint64, b []byte, _ int) {
			if b := within(a, b, ga, l.Size); b != nil {
				put(b, l.SchedPC.Off, l.SchedPC.Size, 0x1234)
			}
		}, dropped(1)},
		{"stack bounds reversed", func(a uint64, b []byte, _ int) {
			if b := within(a, b, ga, l.Size); b != nil {
				lo := field(b, l.StackLo)
				put(b, l.StackLo.Off, 8, field(b, l.StackHi))
				put(b, l.StackHi.Off, 8, lo)
			}
		}, dropped(1)},
		{"stack pointer off its stack", func(a uint64, b []byte, _ int) {
			if b := within(a, b, ga, l.Size); b != nil {
				put(b, l.SchedSP.Off, 8, field(b, l.StackHi)+4096)
			}
		}, dropped(1)},
		{"unknown status", func(a uint64, b []byte, _ int) {
			if b := within(a, b, ga, l.Size); b != nil {
				put(b, l.Status.Off, l.Status.Size, 77)
			}
		}, dropped(1)},
		{"status changes once", func(a uint64, b []byte, _ int) {
			if b := within(a, b, ga, l.Size); b != nil {
				if reads++; reads == 2 {
					put(b, l.Status.Off, l.Status.Size, gRunnable)
				}
			}
		}, func(t *testing.T, gs []model.Goroutine, st Stats) {
			if st.Retries != 1 || st.Moving != 0 || st.Dropped != 0 {
				t.Errorf("stats %+v, want one retry, nothing moving or dropped", st)
			}
			if d := cmp.Diff(s.gs, gs, sortByID()); d != "" {
				t.Errorf("after the retry (-want +got):\n%s", d)
			}
		}},
		{"always moving", func(a uint64, b []byte, _ int) {
			if b := within(a, b, ga, l.Size); b != nil {
				if reads++; reads%2 == 0 {
					put(b, l.SchedPC.Off, l.SchedPC.Size, field(b, l.SchedPC)+uint64(reads))
				}
			}
		}, func(t *testing.T, gs []model.Goroutine, st Stats) {
			if st.Moving != 1 || st.Retries != maxRetries || !slices.Equal(st.MovingIDs, []int64{victim.ID}) {
				t.Errorf("stats %+v, want goroutine %d moving after %d retries", st, victim.ID, maxRetries)
			}
			for _, g := range gs {
				if g.ID == victim.ID && len(g.Stack) != 0 {
					t.Errorf("a moving goroutine has a stack: %v", g.Stack)
				}
			}
			if len(gs) != len(s.gs) {
				t.Errorf("%d goroutines, want %d", len(gs), len(s.gs))
			}
		}},
		{"parked five minutes ago", func(a uint64, b []byte, _ int) {
			if b := within(a, b, ga, l.Size); b != nil {
				var ts unix.Timespec
				unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
				put(b, l.WaitSince.Off, 8, uint64(ts.Nano()-int64(5*time.Minute+30*time.Second)))
			}
		}, func(t *testing.T, gs []model.Goroutine, st Stats) {
			for _, g := range gs {
				if want := 0; g.ID == victim.ID {
					want = 5
					if g.WaitMinutes != want {
						t.Errorf("goroutine %d waited %d minutes, want %d", g.ID, g.WaitMinutes, want)
					}
				} else if g.WaitMinutes != want {
					t.Errorf("goroutine %d waited %d minutes, want %d", g.ID, g.WaitMinutes, want)
				}
			}
		}},
		{"return address garbage", func(a uint64, b []byte, _ int) {
			if a == field(s.bytesAt(ga, l.Size), l.SchedSP) {
				// Every word of the stack window: no return address is
				// any longer one.
				for i := 0; i+8 <= len(b); i += 8 {
					binary.LittleEndian.PutUint64(b[i:], 0x5a5a5a5a5a5a5a5a)
				}
			}
		}, func(t *testing.T, gs []model.Goroutine, st Stats) {
			if st.Dropped+st.Truncated < 1 {
				t.Errorf("stats %+v, want the goroutine truncated or dropped", st)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads = 0
			gs, st, err := s.replayRead(tc.mutate)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, gs, st)
		})
	}
}

func sortByID() cmp.Option {
	return cmp.Transformer("byID", func(gs []model.Goroutine) []model.Goroutine {
		out := slices.Clone(gs)
		slices.SortFunc(out, func(a, b model.Goroutine) int { return int(a.ID - b.ID) })
		return out
	})
}

func dropped(n int) func(t *testing.T, gs []model.Goroutine, st Stats) {
	return func(t *testing.T, gs []model.Goroutine, st Stats) {
		t.Helper()
		if st.Dropped != n {
			t.Errorf("%d dropped, want %d (stats %+v)", st.Dropped, n, st)
		}
		if len(st.Notes) == 0 {
			t.Errorf("no note says why")
		}
		if len(gs) != len(snap.gs)-n {
			t.Errorf("%d goroutines, want %d", len(gs), len(snap.gs)-n)
		}
	}
}

// FuzzCorruptMemory flips bytes anywhere in a recorded read of a victim:
// the reader may drop goroutines or stop with an error, never panic or
// loop.
func FuzzCorruptMemory(f *testing.F) {
	s := recorded(f)
	total := 0
	for _, p := range s.pieces {
		total += len(p.Buf)
	}
	for _, seed := range []uint64{0, 8, 152, 4096, uint64(total / 2), uint64(total - 1)} {
		f.Add(seed, byte(0xff), uint8(1))
	}
	f.Fuzz(func(t *testing.T, at uint64, x byte, span uint8) {
		// The corruption hits span bytes from the at-th byte of the
		// recording (in the order the pieces were read).
		target := at % uint64(total)
		pos := uint64(0)
		var addr uint64
		var inPiece uint64
		for _, p := range s.pieces {
			if target < pos+uint64(len(p.Buf)) {
				addr, inPiece = p.Addr, target-pos
				break
			}
			pos += uint64(len(p.Buf))
		}
		s.replayRead(func(a uint64, b []byte, _ int) {
			if a != addr {
				return
			}
			for i := inPiece; i < inPiece+uint64(span)+1 && i < uint64(len(b)); i++ {
				b[i] ^= x
			}
		})
	})
}
