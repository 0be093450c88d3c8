package diagnose

import (
	"context"
	"errors"
	"fmt"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler/python"
)

// maxStackFailures is how many failed dumps end the attempts: a py-spy that
// cannot read the target will not start to.
const maxStackFailures = 2

// pyStacks adds py-spy's Python stacks to the samples of a Python target,
// joined to the OS threads by their native thread ids.
type pyStacks struct {
	opts     python.Options
	failures int
	unjoined int
}

// newPyStacks returns the stack source for a Python target, or nil with a
// note saying why there will be no stacks.
func newPyStacks(opts Options) (*pyStacks, string) {
	popts := python.Options{PySpy: opts.PySpy, NonBlocking: opts.NoStop}
	if _, err := python.Find(popts); err != nil {
		if errors.Is(err, python.ErrNotFound) && opts.PySpy == "" {
			return nil, "no Python stacks: py-spy is not installed (pip install py-spy, or --py-spy PATH); the diagnosis is from kernel evidence only"
		}
		return nil, "no Python stacks: " + err.Error()
	}
	return &pyStacks{opts: popts}, ""
}

// add dumps the target's Python stacks and joins them to sample's threads.
// A failure becomes a note, once.
func (p *pyStacks) add(ctx context.Context, pid int, sample *model.Sample, rec *model.Recording) {
	if p == nil || p.failures >= maxStackFailures {
		return
	}
	out, format, err := python.RunPySpy(ctx, pid, p.opts)
	sample.Paused = !p.opts.NonBlocking
	var dump python.Dump
	if err == nil {
		if format == "json" {
			dump, err = python.ParsePySpyJSON(out)
		} else {
			dump, err = python.ParsePySpyText(out)
		}
	}
	if err != nil {
		p.failures++
		if p.failures == 1 {
			rec.Notes = append(rec.Notes, "py-spy: "+err.Error())
		}
		return
	}
	rec.StackSource = model.SourcePySpy
	byTID := map[int]int{}
	for i, t := range sample.Threads {
		byTID[t.TID] = i
	}
	for _, t := range dump.Threads {
		i, ok := byTID[t.NativeID]
		if !ok {
			p.unjoined++
			if p.unjoined == 1 {
				rec.Notes = append(rec.Notes, fmt.Sprintf("py-spy gave a thread (%s) no OS thread id that matches the process's threads (Python 3.10 or older with --no-stop?): its stack is not joined to CPU and kernel state", orUnnamed(t.Name)))
			}
			continue
		}
		sample.Threads[i].Stack = t.Frames
		sample.Threads[i].Python = &model.PythonThread{ThreadName: t.Name, OwnsGIL: t.OwnsGIL, Active: t.Active}
	}
}

func orUnnamed(name string) string {
	if name == "" {
		return "unnamed"
	}
	return name
}

// sources reads the files that waiting threads' innermost frames point
// into, with read (the target's files through /proc/PID/root live, this
// machine's offline), so the classifier can find the with-blocks they wait
// at. A file that cannot be read maps to nil.
func sources(samples []model.Sample, read func(path string) ([]string, error)) map[string][]string {
	if len(samples) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, t := range samples[len(samples)-1].Threads {
		if len(t.Stack) == 0 || t.State == model.StateRunning {
			continue
		}
		file := t.Stack[0].File
		if _, done := out[file]; !done {
			out[file], _ = read(file)
		}
	}
	return out
}
