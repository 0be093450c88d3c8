package oncpu

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler"
)

// record is one ring-buffer record: a header and its body.
func record(typ uint32, misc uint16, body []byte) []byte {
	b := make([]byte, 8, 8+len(body))
	binary.NativeEndian.PutUint32(b[0:], typ)
	binary.NativeEndian.PutUint16(b[4:], misc)
	binary.NativeEndian.PutUint16(b[6:], uint16(8+len(body)))
	return append(b, body...)
}

func words(ws ...uint64) []byte {
	b := make([]byte, 8*len(ws))
	for i, w := range ws {
		binary.NativeEndian.PutUint64(b[8*i:], w)
	}
	return b
}

// sampleBody is a sample of IP | TID | CALLCHAIN with no registers
// (abi 0) and no stack copy.
func sampleBody(tid uint32, ip uint64, chain ...uint64) []byte {
	b := words(ip)
	b = binary.NativeEndian.AppendUint32(b, tid)
	b = binary.NativeEndian.AppendUint32(b, tid)
	b = append(b, words(uint64(len(chain)))...)
	b = append(b, words(chain...)...)
	return append(b, words(0, 0)...) // regs abi none, stack size 0
}

func TestParseRing(t *testing.T) {
	var ring []byte
	ring = append(ring, record(perfRecordSample, 2, sampleBody(7, 0x401000, perfContextUser, 0x401000, 0x402000))...)
	ring = append(ring, record(perfRecordLost, 0, words(1, 5))...)
	ring = append(ring, record(perfRecordSample, perfMiscKernel, sampleBody(8, 0xffffffff81000000, perfContextUser, 0x403000))...)
	ring = append(ring, record(3, 0, words(1))...) // a record of another type
	// Laid out across the ring's end: the reader wraps.
	size := 512
	data := make([]byte, size)
	start := uint64(size - 40)
	for i, c := range ring {
		data[(start+uint64(i))%uint64(size)] = c
	}
	out, lost := parseRing(data, start, start+uint64(len(ring)), nil, 0)
	if lost != 5 {
		t.Errorf("lost %d, want 5", lost)
	}
	if len(out) != 2 {
		t.Fatalf("%d samples, want 2: %+v", len(out), out)
	}
	if out[0].tid != 7 || !slices.Equal(out[0].pcs, []uint64{0x401000, 0x402000}) || out[0].kernel {
		t.Errorf("first sample %+v, want tid 7 at 0x401000 ← 0x402000, in user code", out[0])
	}
	if out[1].tid != 8 || !slices.Equal(out[1].pcs, []uint64{0x403000}) || !out[1].kernel {
		t.Errorf("second sample %+v, want tid 8, its user stack 0x403000, in the kernel", out[1])
	}
	// A record longer than what is there ends the read.
	cut, _ := parseRing(ring, 0, uint64(len(ring)-4), nil, 0)
	if len(cut) != 2 {
		t.Errorf("cut ring: %d samples, want the 2 whole ones", len(cut))
	}
}

func FuzzParseRing(f *testing.F) {
	f.Add(record(perfRecordSample, 0, sampleBody(1, 0x1000, perfContextUser, 0x1000)), uint64(0))
	f.Add(record(perfRecordLost, 0, words(1, 2)), uint64(3))
	f.Fuzz(func(t *testing.T, data []byte, tail uint64) {
		out, _ := parseRing(data, tail, tail+uint64(len(data)), nil, 0)
		for _, r := range out {
			if len(r.pcs) > len(data)/8 {
				t.Fatalf("%d pcs from %d bytes", len(r.pcs), len(data))
			}
		}
	})
}

// A kernel that refuses the event (perf_event_paranoid, seccomp): one
// note, nothing sampled, the run goes on.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		note string
	}{
		{unix.EACCES, "on-CPU sampling refused by the kernel"},
		{unix.ENOENT, "on-CPU sampling: not supported by this kernel"},
	} {
		p := New(sampler.NewFS(""), 1, Options{})
		tries := 0
		p.open = func(int, bool) (int, error) { tries++; return -1, tc.err }
		s := model.Sample{Threads: []model.Thread{{TID: 10, State: model.StateRunning}, {TID: 11, State: model.StateRunning}}}
		p.Profile(&s)
		p.Profile(&s)
		p.Close()
		if len(p.Notes()) == 0 || !strings.Contains(report.NoteText(p.Notes()[0]), tc.note) {
			t.Errorf("%v: notes %q, want %q", tc.err, p.Notes(), tc.note)
		}
		if s.Threads[0].OnCPU != nil {
			t.Errorf("%v: a profile %+v where nothing was sampled", tc.err, s.Threads[0].OnCPU)
		}
		// EACCES is tried once more without the kernel side, then never.
		if want := map[error]int{unix.EACCES: 2, unix.ENOENT: 1}[tc.err]; tries != want {
			t.Errorf("%v: %d opens, want %d", tc.err, tries, want)
		}
	}
}

// A spinning thread of a real process is caught in its loop, named by
// the executable's symbols, and a blocked one is never sampled.
func TestSpinnerCaught(t *testing.T) {
	v := testvictim.Start(t, testvictim.Build(t, "spinholder"))
	fs := sampler.NewFS("")
	p := New(fs, v.PID, Options{})
	defer p.Close()
	threads := func() model.Sample {
		var s model.Sample
		for _, tid := range append([]int{v.TID("holder")}, v.TIDs("waiters")...) {
			s.Threads = append(s.Threads, model.Thread{TID: tid, State: map[bool]model.ThreadState{true: model.StateRunning, false: model.StateSleeping}[tid == v.TID("holder")]})
		}
		return s
	}
	first := threads()
	p.Profile(&first)
	// Until the spinner has been caught, however loaded the machine.
	var got *model.OnCPU
	for i := 0; i < 600 && (got == nil || got.Samples < 10); i++ {
		time.Sleep(50 * time.Millisecond)
		s := threads()
		p.Profile(&s)
		for _, th := range s.Threads[1:] {
			if th.OnCPU != nil {
				t.Fatalf("blocked thread %d sampled: %+v", th.TID, th.OnCPU)
			}
		}
		if o := s.Threads[0].OnCPU; o != nil && o.Samples > 0 {
			if got == nil {
				got = &model.OnCPU{}
			}
			got.Samples += o.Samples
			got.Stacks = append(got.Stacks, o.Stacks...)
		}
	}
	if got == nil || got.Samples < 10 {
		t.Fatalf("spinner caught %+v times, want 10", got)
	}
	in := 0
	for _, s := range got.Stacks {
		if len(s.Frames) > 1 && s.Frames[0].Func == "paginate_forever" && s.Frames[1].Func == "renderer" {
			in += s.N
		}
	}
	if in < got.Samples*9/10 {
		t.Errorf("%d of %d samples in paginate_forever ← renderer, want nearly all: %+v", in, got.Samples, got.Stacks)
	}
}

// TestPagesFor: a faster rate gets a ring buffer as much bigger, a power
// of two of pages, bounded.
func TestPagesFor(t *testing.T) {
	for _, tc := range []struct{ hz, want int }{
		{0, dataPages}, {50, dataPages}, {Freq, dataPages}, {100, 32}, {990, 256}, {9900, maxDataPages}, {1 << 30, maxDataPages},
	} {
		if got := pagesFor(tc.hz); got != tc.want {
			t.Errorf("pagesFor(%d) = %d, want %d", tc.hz, got, tc.want)
		}
	}
}

// TestAboveInterpreter: a Python thread's native stack is cut where
// CPython's frames begin, as 3.8 (call machinery, the loop named by an
// inlined call) and 3.11+ (the loop by name) show them.
func TestAboveInterpreter(t *testing.T) {
	fr := func(names ...string) []model.Frame {
		var out []model.Frame
		for _, n := range names {
			out = append(out, model.Frame{Func: n})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []model.Frame
		want []string
	}{
		{"3.8", fr("__recv", "sock_recv", "method_vectorcall_VARARGS", "call_function", "0x7f7f3d2d5760"), []string{"__recv", "sock_recv"}},
		{"3.11", fr("__recv", "sock_recv", "cfunction_vectorcall_O", "_PyEval_EvalFrameDefault", "_PyEval_Vector"), []string{"__recv", "sock_recv"}},
		{"a Python lock", fr("__futex_abstimed_wait_common", "sem_clockwait", "PyThread_acquire_lock_timed", "acquire_timed", "lock_PyThread_acquire_lock", "method_vectorcall_VARARGS_KEYWORDS", "_PyEval_EvalFrameDefault"),
			[]string{"__futex_abstimed_wait_common", "sem_clockwait", "PyThread_acquire_lock_timed", "acquire_timed", "lock_PyThread_acquire_lock"}},
		{"a thread C started", fr("__recv", "worker", "start_thread", "clone3"), []string{"__recv", "worker", "start_thread", "clone3"}},
		{"in the loop itself", fr("_PyEval_EvalFrameDefault", "_PyEval_Vector"), nil},
	} {
		var got []string
		for _, f := range aboveInterpreter(tc.in) {
			got = append(got, f.Func)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFuncCounts: a function is counted once per stack however often it
// recurses there, at the lines of its innermost call; past the bound, the
// functions most often innermost are kept beside those most often on a
// stack.
func TestFuncCounts(t *testing.T) {
	fr := func(fn string, line int) model.Frame { return model.Frame{Func: fn, File: "x.c", Line: line} }
	stacks := []*model.CPUStack{
		{N: 5, Frames: []model.Frame{fr("match", 10), fr("match", 40), fr("search", 7)}},
		{N: 3, Frames: []model.Frame{fr("memcpy", 0), fr("match", 22), fr("search", 7)}},
	}
	for i := 0; i < keptFuncs+10; i++ {
		// Deep callers, each on one stack: more than are kept.
		stacks[1].Frames = append(stacks[1].Frames, fr(fmt.Sprintf("caller%d", i), 1))
	}
	stacks = append(stacks, &model.CPUStack{N: 1, Frames: []model.Frame{fr("leafonly", 3)}})
	got := map[string]model.FuncCount{}
	for _, c := range funcCounts(stacks) {
		got[c.Func] = c
	}
	if m := got["match"]; m.OnStack != 8 || m.Leaf != 5 || m.FirstLine != 10 || m.LastLine != 22 {
		t.Errorf("match %+v: want on 8 stacks, innermost on 5, lines 10–22", m)
	}
	if got["memcpy"].Leaf != 3 || got["leafonly"].Leaf != 1 {
		t.Errorf("leaves memcpy %+v, leafonly %+v: want both kept", got["memcpy"], got["leafonly"])
	}
	if len(got) > keptFuncs+keptLeaves {
		t.Errorf("%d functions kept, want at most %d", len(got), keptFuncs+keptLeaves)
	}
}
