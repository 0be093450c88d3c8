// Package sources picks, for a target, where its stacks come from — py-spy
// for a Python program; for a Go program its own pprof endpoint, Delve,
// and, only when asked, a SIGQUIT dump — in the order that harms the
// target least, and wraps each as a sampler.StackSource.
package sources

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/delve"
)

// DefaultMaxStop is --max-stop's default: see delve.DefaultMaxStop.
const DefaultMaxStop = delve.DefaultMaxStop

// Options is what the command line says of stacks.
type Options struct {
	// PySpy is py-spy's path ("" looks it up on PATH), for Python targets.
	PySpy string
	// NoStop forbids any source that stops the target: py-spy runs with
	// --nonblocking, Delve is not used.
	NoStop bool
	// Pprof is a Go target's pprof endpoint ("http://127.0.0.1:6060"); ""
	// looks for one on the target's listening sockets.
	Pprof string
	// Sigquit allows, for a Go target no other source can read, one
	// SIGQUIT dump at the end of the run: it kills the target. The dump is
	// read from SigquitLog, or the target's stderr if that is a file.
	Sigquit    bool
	SigquitLog string
	// Only, when set, is the one source to use — for Go pprof, memory or
	// delve; for Python py-spy or memory: for comparing sources, and for
	// a user who knows better.
	Only model.Format
	// MaxStop bounds how long one Delve read keeps the target stopped
	// (--max-stop); 0 is delve.DefaultMaxStop.
	MaxStop time.Duration
}

// For says how a run gets the stacks of t.
func For(t *sampler.Target, opts Options) sampler.Stacks {
	fs, live := sampler.FSOf(t.Sys)
	if !live {
		return sampler.Stacks{}
	}
	switch t.Desc.Runtime {
	case model.RuntimePython:
		return pythonStacks(fs, t, opts)
	case model.RuntimeGo:
		return goStacks(fs, t, opts)
	case model.RuntimeJava:
		return javaStacks(fs, t, opts)
	}
	var s sampler.Stacks
	if opts.Pprof != "" || opts.Sigquit {
		rt := t.Desc.Runtime.String()
		if rt == "" {
			rt = "unnamed"
		}
		s.Notes = append(s.Notes, model.NewNote(model.NoteNotGo, t.PID, rt))
	}
	return s
}

func goStacks(fs sampler.FS, t *sampler.Target, opts Options) sampler.Stacks {
	s := sampler.Stacks{What: "goroutines", ReadSource: func(path string) ([]string, error) {
		return sampler.ReadSource(fs, t.PID, path)
	}}
	pprof := &pprofSource{fs: fs, pid: t.PID, url: strings.TrimSuffix(opts.Pprof, "/")}
	if opts.Only == model.SourcePySpy {
		s.Notes = append(s.Notes, model.NewNote(model.NoteSourceNotFor, opts.Only, "Go"))
		opts.Only = model.FormatNone
	}
	switch opts.Only {
	case model.SourcePprof:
		s.Sources = []sampler.StackSource{pprof}
	case model.SourceMemory:
		mem := &memSource{fs: fs, t: t}
		s.Sources, s.Close = []sampler.StackSource{mem}, mem.close
	case model.SourceDelve:
		d := &delveSource{t: t, opts: delve.Options{MaxStop: opts.MaxStop}}
		s.Sources, s.Close = []sampler.StackSource{d}, d.settle
	case model.FormatNone:
		s.Sources, s.Close = goSources(fs, t, opts, pprof)
	}
	if opts.Sigquit {
		s.Final = &sigquitSource{fs: fs, t: t, log: opts.SigquitLog}
	}
	s.None = func(why []string) model.Note {
		if opts.Sigquit {
			return model.NewNote(model.NoteNoGoroutinesQuit, strings.Join(why, "; "))
		}
		return model.NewNote(model.NoteNoGoroutines, strings.Join(why, "; "))
	}
	return s
}

// refused is a source that is not to be used, and says why.
type refused struct {
	name model.Format
	why  string
}

func (r refused) Name() model.Format { return r.name }
func (r refused) Stacks(ctx context.Context, s *model.Sample) error {
	return errors.New(r.why)
}

// goSources are a Go target's sources in the order that harms it least:
// its own endpoint, its memory read while it runs, and only then Delve,
// which stops it.
func goSources(fs sampler.FS, t *sampler.Target, opts Options, pprof *pprofSource) ([]sampler.StackSource, func()) {
	sources := []sampler.StackSource{pprof}
	if opts.Pprof != "" {
		// --pprof names the source: one that does not answer is said, not
		// replaced by another.
		return append(sources, refused{model.SourceMemory, "not tried, --pprof names the source"},
			refused{model.SourceDelve, "not tried, --pprof names the source"}), nil
	}
	mem := &memSource{fs: fs, t: t}
	sources = append(sources, mem)
	if opts.NoStop {
		return append(sources, refused{model.SourceDelve, "not tried, --no-stop forbids stopping the target"}), mem.close
	}
	d := &delveSource{t: t, opts: delve.Options{MaxStop: opts.MaxStop}}
	return append(sources, d), func() { mem.close(); d.settle() }
}
