package sources

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/python"
)

func pythonStacks(fs sampler.FS, t *sampler.Target, opts Options) sampler.Stacks {
	s := sampler.Stacks{What: "Python stacks", ReadSource: func(path string) ([]string, error) {
		return sampler.ReadSource(fs, t.PID, path)
	}}
	// Each dump has a budget of its own: one py-spy that hangs costs a
	// sample, not the run.
	popts := python.Options{PySpy: opts.PySpy, NonBlocking: opts.NoStop, Locals: true, Timeout: python.DefaultTimeout}
	mem := &pyMemSource{fs: fs, t: t}
	if opts.Only != model.FormatNone && opts.Only != model.SourceMemory && opts.Only != model.SourcePySpy {
		s.Notes = append(s.Notes, model.NewNote(model.NoteSourceNotFor, opts.Only, "Python"))
		opts.Only = model.FormatNone
	}
	s.None = func(why []string) model.Note {
		return model.NewNote(model.NoteNoPythonStacks, strings.Join(why, "; "))
	}
	// The interpreter's memory first: it never stops the target. py-spy
	// where asked, or where the reader cannot read the interpreter (a
	// build it has no layout for: the note says which).
	if opts.Only != model.SourcePySpy {
		s.Sources = []sampler.StackSource{mem}
	}
	if opts.Only == model.SourceMemory {
		return s
	}
	_, err := python.Find(popts)
	switch {
	case err != nil && errors.Is(err, python.ErrNotFound) && opts.PySpy == "" && opts.Only != model.SourcePySpy:
		// Not needed unless the memory reader fails: then the note that
		// no source worked says so.
		s.None = func(why []string) model.Note {
			return model.NewNote(model.NoteNoPythonStacksNoSpy, strings.Join(why, "; "))
		}
	case err != nil:
		s.Notes = append(s.Notes, model.NewNote(model.NotePySpyUnused, err))
	case t.Local <= 0:
		s.Notes = append(s.Notes, model.NewNote(model.NotePySpyUnused, t.NotLocal("py-spy")))
	default:
		if n := t.LocalNote("py-spy"); n != nil {
			s.Notes = append(s.Notes, *n)
		}
		s.Sources = append(s.Sources, &pySpySource{pid: t.Local, opts: popts, fs: fs, target: t.PID})
	}
	return s
}

// pySpySource dumps a Python target's stacks with py-spy and joins each
// Python thread to its OS thread by its native id, so that every stack
// carries its measured CPU and kernel state. py-spy pauses the target for
// an instant, unless --no-stop passes --nonblocking.
type pySpySource struct {
	pid  int // as hangdoc's own PID namespace numbers it, for py-spy
	opts python.Options
	// fs and target are the /proc the samples are read from and the
	// target's pid there, for joining threads by their pthread_t.
	fs       sampler.FS
	target   int
	unjoined string // the first thread not joined, for a note
	// inNS: that thread had no id at all, and the target is in another
	// PID namespace, where py-spy gives none before Python 3.11.
	inNS bool
	// byStack: threads without an OS thread id were joined by their
	// pthread_t, for a note.
	byStack bool
	torn    string // why a dump did not pause the target, for a note
}

func (p *pySpySource) Name() model.Format { return model.SourcePySpy }

func (p *pySpySource) Stacks(ctx context.Context, s *model.Sample) error {
	opts := p.opts
	out, format, err := python.RunPySpy(ctx, p.pid, opts)
	if errors.Is(err, python.ErrUninterruptible) && !opts.NonBlocking {
		// Pausing would wait for a thread in D, with the others stopped,
		// perhaps forever: read without pausing instead (stacks may be
		// torn, which the note says).
		p.torn = err.Error()
		opts.NonBlocking = true
		out, format, err = python.RunPySpy(ctx, p.pid, opts)
	}
	s.Paused = !opts.NonBlocking
	if err != nil {
		return err
	}
	var dump python.Dump
	if format == "json" {
		dump, err = python.ParsePySpyJSON(out)
	} else {
		dump, err = python.ParsePySpyText(out)
	}
	if err != nil {
		return err
	}
	// py-spy's thread ids are mostly the target's own (the interpreter's
	// native_thread_id, gettid in its PID namespace): in a container, its
	// threads' NSTIDs. Those it reads from /proc are as /proc numbers them.
	byTID := make(map[int]int, len(s.Threads))
	var byNS map[int]int
	for i, t := range s.Threads {
		byTID[t.TID] = i
		if t.NSTID != 0 {
			if byNS == nil {
				byNS = make(map[int]int, len(s.Threads))
			}
			byNS[t.NSTID] = i
		}
	}
	join := func(i int, t python.Thread) {
		s.Threads[i].Stack, s.Threads[i].Vars = t.Frames, t.Vars
		s.Threads[i].Python = &model.PythonThread{ThreadName: t.Name, OwnsGIL: t.OwnsGIL, Active: t.Active}
	}
	var lost []python.Thread
	for _, t := range dump.Threads {
		i, ok := byNS[t.NativeID]
		if !ok {
			i, ok = byTID[t.NativeID]
		}
		if !ok {
			lost = append(lost, t)
			continue
		}
		join(i, t)
	}
	lost = p.joinByStack(s, lost, byTID, join)
	if len(lost) > 0 && p.unjoined == "" {
		t := lost[0]
		p.unjoined = t.Name
		if p.unjoined == "" {
			p.unjoined = "unnamed"
		}
		p.inNS = t.NativeID == 0 && byNS != nil
	}
	return nil
}

// joinByStack joins the threads py-spy gave no OS thread id but a
// pthread_t (Python 3.10 and older, unpaused or in another PID namespace)
// by where that pthread_t lies: at the top of the thread's stack
// (sampler.ThreadsByPthread). The main thread's is not on its stack:
// MainThread, left alone, is the process's initial thread. It returns
// the threads still not joined.
func (p *pySpySource) joinByStack(s *model.Sample, lost []python.Thread, byTID map[int]int, join func(int, python.Thread)) []python.Thread {
	if p.target == 0 || !slices.ContainsFunc(lost, func(t python.Thread) bool { return t.NativeID == 0 && t.Ident != 0 }) {
		return lost
	}
	var free []int
	for _, t := range s.Threads {
		if t.Python == nil && !t.Exited {
			free = append(free, t.TID)
		}
	}
	var idents []uint64
	for _, t := range lost {
		if t.NativeID == 0 && t.Ident != 0 {
			idents = append(idents, t.Ident)
		}
	}
	found := sampler.ThreadsByPthread(p.fs, p.target, free, idents)
	var left []python.Thread
	for _, t := range lost {
		if tid, ok := found[t.Ident]; ok && t.NativeID == 0 && t.Ident != 0 {
			join(byTID[tid], t)
			p.byStack = true
			continue
		}
		left = append(left, t)
	}
	if i, ok := byTID[p.target]; ok && len(left) == 1 && left[0].Name == "MainThread" && left[0].NativeID == 0 && s.Threads[i].Python == nil {
		join(i, left[0])
		return nil
	}
	return left
}

func (p *pySpySource) Notes() []model.Note {
	var out []model.Note
	if p.torn != "" {
		out = append(out, model.NewNote(model.NotePyTorn, p.torn))
	}
	if p.byStack {
		out = append(out, model.NewNote(model.NotePyByStack))
	}
	if p.unjoined == "" {
		return out
	}
	if p.inNS {
		return append(out, model.NewNote(model.NotePyUnjoinedNS, p.unjoined))
	}
	return append(out, model.NewNote(model.NotePyUnjoined, p.unjoined))
}
