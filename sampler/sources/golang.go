package sources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/delve"
	"github.com/hangdoc/hangdoc/sampler/golive"
	"github.com/hangdoc/hangdoc/sampler/gomem"
)

// settleTimeout bounds the wait for Delve to detach after a run ends.
const settleTimeout = 5 * time.Second

// pprofSource reads the goroutines from the program's own
// net/http/pprof endpoint: --pprof, or found on its listening sockets when
// its binary links net/http/pprof. The program pauses itself to write the
// profile; nothing outside it stops it. Each fetch's timeout is sized by
// the goroutine count (pprof's index, then the last profile's): a program
// with many goroutines writes a long profile, and one given up is not
// replaced by a source that stops the target.
type pprofSource struct {
	fs    sampler.FS
	pid   int
	url   string // --pprof, "" to look for one
	base  string // the endpoint in use
	found string // how it was found, for a note
	last  int    // goroutines in the last profile
}

func (p *pprofSource) Name() model.Format { return model.SourcePprof }

func (p *pprofSource) Stacks(ctx context.Context, s *model.Sample) error {
	if p.base != "" {
		gs, err := golive.Fetch(ctx, p.base, golive.FetchTimeout(p.last))
		if err != nil {
			return err
		}
		p.last, s.Goroutines = len(gs), gs
		return nil
	}
	if p.url != "" {
		timeout := golive.FetchTimeout(0)
		if n, err := golive.Probe(ctx, p.url, golive.DefaultProbeTimeout); err == nil {
			timeout = golive.FetchTimeout(n)
		}
		gs, err := golive.Fetch(ctx, p.url, timeout)
		if err != nil {
			return fmt.Errorf("--pprof %s: %w", p.url, err)
		}
		p.base, p.last, s.Goroutines = p.url, len(gs), gs
		return nil
	}
	ok, err := golive.LinksPprofContext(ctx, p.fs, p.pid)
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("the binary does not link net/http/pprof")
	}
	base, gs, err := golive.Discover(ctx, p.fs, p.pid, golive.DefaultProbeTimeout)
	if err != nil {
		return err
	}
	p.base, p.last, s.Goroutines = base, len(gs), gs
	p.found = base + "/debug/pprof/goroutine?debug=2"
	return nil
}

func (p *pprofSource) Notes() []model.Note {
	if p.found == "" {
		return nil
	}
	return []model.Note{model.NewNote(model.NotePprofUsed, p.found)}
}

// memSource reads the goroutines from the target's memory while it runs
// (sampler/gomem): no stop, no signal, stripped builds included.
type memSource struct {
	fs     sampler.FS
	t      *sampler.Target
	r      *gomem.Reader
	broken error // an open given up: its read may still be blocked
	notes  []model.Note
	last   bool // the next read is the run's last: scan for channels
}

// Last asks the next read to scan the target's memory for the goroutines
// that refer to the channels others wait on (gomem's channel scan): once
// a run, for its cost.
func (m *memSource) Last() { m.last = true }

// exeTimeout bounds the memory reader's read of the target's executable
// (its symbols and pclntab): generous for a large binary on a loaded
// machine, so that a read this long is stuck, not slow.
const exeTimeout = 10 * time.Second

func (m *memSource) Name() model.Format { return model.SourceMemory }

func (m *memSource) Stacks(ctx context.Context, s *model.Sample) error {
	if m.broken != nil {
		return m.broken
	}
	if m.r == nil {
		// The executable is read through /proc/PID/exe, which blocks on a
		// hung filesystem: given up at exeTimeout, and not tried again
		// (the read is left blocked, see internal/deadline).
		r, err := deadline.Within(ctx, exeTimeout, fmt.Sprintf("reading pid %d's executable (/proc/%d/exe)", m.t.PID, m.t.PID), func() (*gomem.Reader, error) {
			return gomem.Open(m.fs, m.t.PID)
		})
		if errors.Is(err, deadline.ErrAbandoned) {
			m.broken = err
		}
		if err != nil {
			return err
		}
		m.r = r
	}
	m.r.ScanChannels(m.last)
	gs, st, err := m.r.Goroutines(ctx)
	switch {
	case errors.Is(err, gomem.ErrExited) && len(gs) > 0:
		// The goroutines read before the target exited are data.
		m.note(model.NewNote(model.NoteGoExited, s.Time.Format("15:04:05.000"), len(gs)))
	case err != nil:
		return err
	}
	for _, n := range st.Notes {
		m.note(n)
	}
	s.Goroutines = gs
	s.ChanScan = st.ChanScan
	return nil
}

func (m *memSource) note(n model.Note) {
	if !slices.ContainsFunc(m.notes, n.Equal) {
		m.notes = append(m.notes, n)
	}
}

func (m *memSource) Notes() []model.Note {
	if m.r == nil {
		return nil
	}
	return append([]model.Note{model.NewNote(model.NoteMemoryRead, m.r.LayoutSource())}, m.notes...)
}

func (m *memSource) close() {
	if m.r != nil {
		m.r.Close()
	}
}

// delveSource reads every goroutine through Delve, one stop per sample:
// one Session per run loads the binary's DWARF once, with the target
// running; each Dump seizes and interrupts the threads, reads, and lets
// them go, within MaxStop. The sample records the stop, so that it is not
// read as the target's own idleness.
type delveSource struct {
	t      *sampler.Target
	opts   delve.Options
	s      *delve.Session
	frozen []time.Duration
	notes  []model.Note
}

func (d *delveSource) Name() model.Format { return model.SourceDelve }

func (d *delveSource) Stacks(ctx context.Context, s *model.Sample) error {
	// Never attach to a process that reused the pid.
	if err := d.t.Check(); err != nil {
		return err
	}
	if d.s == nil {
		if d.t.Local <= 0 {
			return d.t.NotLocal("Delve")
		}
		// Delve takes the pid as hangdoc's own PID namespace numbers it.
		sess, err := delve.Open(ctx, d.t.Local, d.opts)
		if err != nil {
			return err
		}
		d.s = sess
	}
	res, err := d.s.Dump(ctx)
	if res.Frozen > 0 || err == nil {
		// Each stop costs every thread a context switch or two.
		s.Frozen, s.Paused = res.Frozen, true
		d.frozen = append(d.frozen, res.Frozen)
	}
	if res.Cut {
		d.note(model.NewNote(model.NoteDelveCut, len(res.Goroutines), res.Total))
	}
	switch {
	case errors.Is(err, delve.ErrUninterruptible):
		// Not stopped at all: a stop would wait for that thread, which on
		// a hung filesystem may be forever. The next sample checks again.
		d.note(model.NewNote(model.NoteDelveErr, err))
		return err
	case errors.Is(err, delve.ErrMaxStop) && len(res.Goroutines) > 0:
		// What was read within the bound is data; the note says what is
		// missing.
		d.note(model.NewNote(model.NoteDelveErr, err))
		s.Goroutines = res.Goroutines
		return nil
	case errors.Is(err, delve.ErrMaxStop):
		d.note(model.NewNote(model.NoteDelveErr, err))
		return err
	case err != nil:
		return err
	}
	s.Goroutines = res.Goroutines
	return nil
}

func (d *delveSource) note(n model.Note) {
	if !slices.ContainsFunc(d.notes, n.Equal) {
		d.notes = append(d.notes, n)
	}
}

func (d *delveSource) Notes() []model.Note {
	var out []model.Note
	if len(d.frozen) > 0 {
		var parts []string
		for _, f := range d.frozen {
			parts = append(parts, fmt.Sprintf("%.1fms", float64(f.Microseconds())/1000))
		}
		out = append(out, model.NewNote(model.NoteDelveStopped, strings.Join(parts, ", ")))
	}
	return append(out, d.notes...)
}

// settle waits for a Delve attach that the run's end cut short to detach
// in the background: otherwise this process may exit first and leave the
// kernel to detach a target whose threads were being stopped, and stay
// stopped.
func (d *delveSource) settle() {
	if d.s != nil {
		d.s.Close()
	}
	delve.Settle(settleTimeout)
}

// sigquitSource takes one SIGQUIT dump after the last sample, for a
// target nothing else can read. SIGQUIT kills a Go program.
type sigquitSource struct {
	fs  sampler.FS
	t   *sampler.Target
	log string
}

func (q *sigquitSource) Name() model.Format { return model.SourceSigquit }

func (q *sigquitSource) Stacks(ctx context.Context, s *model.Sample) error {
	// Never signal a process that reused the pid.
	if err := q.t.Check(); err != nil {
		return err
	}
	if q.t.Local != q.t.PID {
		// SigquitDump signals the pid it reads /proc under: where
		// hangdoc's namespace numbers the target otherwise (--proc), that
		// pid is not the target's.
		return fmt.Errorf("SIGQUIT not sent: pid %d is the target as %s numbers it, not as hangdoc's own PID namespace does", q.t.PID, q.fs.Path())
	}
	gs, err := golive.SigquitDump(ctx, q.fs, q.t.PID, q.log)
	if err != nil {
		return err
	}
	s.Goroutines = gs
	return nil
}

func (q *sigquitSource) Notes() []model.Note {
	return []model.Note{model.NewNote(model.NoteSigquitUsed)}
}
