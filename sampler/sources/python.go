package sources

import (
	"context"
	"errors"
	"fmt"

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
	if _, err := python.Find(popts); err != nil {
		if errors.Is(err, python.ErrNotFound) && opts.PySpy == "" {
			s.Notes = append(s.Notes, "no Python stacks: py-spy is not installed (pip install py-spy, or --py-spy PATH); the diagnosis is from kernel evidence only")
		} else {
			s.Notes = append(s.Notes, "no Python stacks: "+err.Error())
		}
		return s
	}
	if t.Local <= 0 {
		s.Notes = append(s.Notes, "no Python stacks: "+t.LocalNote("py-spy")+"; the diagnosis is from kernel evidence only")
		return s
	}
	if n := t.LocalNote("py-spy"); n != "" {
		s.Notes = append(s.Notes, n)
	}
	s.Sources = []sampler.StackSource{&pySpySource{pid: t.Local, opts: popts}}
	s.None = func(why []string) string {
		return fmt.Sprintf("no Python stacks: %s; the diagnosis is from kernel evidence only", why[0])
	}
	return s
}

// pySpySource dumps a Python target's stacks with py-spy and joins each
// Python thread to its OS thread by its native id, so that every stack
// carries its measured CPU and kernel state. py-spy pauses the target for
// an instant, unless --no-stop passes --nonblocking.
type pySpySource struct {
	pid      int
	opts     python.Options
	unjoined string // the first thread not joined, for a note
	torn     string // why a dump did not pause the target, for a note
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
	for _, t := range dump.Threads {
		i, ok := byNS[t.NativeID]
		if !ok {
			i, ok = byTID[t.NativeID]
		}
		if !ok {
			if p.unjoined == "" {
				p.unjoined = t.Name
				if p.unjoined == "" {
					p.unjoined = "unnamed"
				}
			}
			continue
		}
		s.Threads[i].Stack, s.Threads[i].Vars = t.Frames, t.Vars
		s.Threads[i].Python = &model.PythonThread{ThreadName: t.Name, OwnsGIL: t.OwnsGIL, Active: t.Active}
	}
	return nil
}

func (p *pySpySource) Notes() []string {
	var out []string
	if p.torn != "" {
		out = append(out, "py-spy read some stacks without pausing the target (--nonblocking; a stack may be torn): "+p.torn)
	}
	if p.unjoined == "" {
		return out
	}
	return append(out, fmt.Sprintf("py-spy gave a thread (%s) no OS thread id that matches the process's threads (Python 3.10 or older with --no-stop?): its stack is not joined to CPU and kernel state", p.unjoined))
}
