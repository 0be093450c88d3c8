package diagnose

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/delve"
	"github.com/hangdoc/hangdoc/sampler/golive"
)

// Goroutine stack sources, as the report's stack_source names them.
const (
	sourcePprof   = model.SourcePprof
	sourceDelve   = model.SourceDelve
	sourceSigquit = model.SourceSigquit
)

// pprofTimeout bounds one goroutine profile fetch: a hung program's HTTP
// server may be hung too.
const pprofTimeout = 3 * time.Second

// goStacks adds a Go target's goroutines to its samples, from the first
// source that works, in the order that harms the target least: its own
// pprof endpoint (--pprof, or found on its listening sockets when it links
// net/http/pprof), then Delve (attach, read, detach: the target stops for
// an instant; never with --no-stop), then, only if asked, SIGQUIT (which
// kills it) once at the end.
type goStacks struct {
	fs   sampler.FS
	opts Options
	// source is the one in use; "" until one worked, and after every
	// source failed.
	source model.Format
	base   string // the pprof endpoint
	// why collects why each source was not used, for the note that says
	// why there are no goroutines.
	why      []string
	failures int
	frozen   []time.Duration
}

func newGoStacks(fs sampler.FS, opts Options) *goStacks {
	return &goStacks{fs: fs, opts: opts}
}

// add fetches the goroutines for one sample. The first call picks the
// source; a source that fails twice in a row is dropped.
func (g *goStacks) add(ctx context.Context, sample *model.Sample, rec *model.Recording) {
	if g.failures >= maxStackFailures {
		return
	}
	if g.source == model.FormatNone && len(rec.Samples) == 0 {
		g.pick(ctx, sample, rec)
		return
	}
	var gs []model.Goroutine
	var err error
	switch g.source {
	case sourcePprof:
		gs, err = golive.Fetch(ctx, g.base, pprofTimeout)
	case sourceDelve:
		var frozen time.Duration
		gs, frozen, err = delve.Dump(ctx, g.opts.PID)
		// Each stop costs every thread a context switch or two.
		sample.Frozen, sample.Paused = frozen, true
		g.frozen = append(g.frozen, frozen)
	default:
		return
	}
	if err != nil {
		g.failures++
		rec.Notes = append(rec.Notes, fmt.Sprintf("%s: goroutines of sample %d not read: %v", g.source.String(), len(rec.Samples)+1, err))
		return
	}
	g.failures = 0
	sample.Goroutines = gs
}

// pick tries the sources in order on the first sample.
func (g *goStacks) pick(ctx context.Context, sample *model.Sample, rec *model.Recording) {
	if g.opts.Pprof != "" {
		gs, err := golive.Fetch(ctx, strings.TrimSuffix(g.opts.Pprof, "/"), pprofTimeout)
		if err == nil {
			g.use(sourcePprof, rec)
			g.base = strings.TrimSuffix(g.opts.Pprof, "/")
			sample.Goroutines = gs
			return
		}
		g.why = append(g.why, fmt.Sprintf("--pprof %s: %v", g.opts.Pprof, err))
	} else if ok, err := golive.LinksPprof(g.fs, g.opts.PID); err != nil {
		g.why = append(g.why, "pprof: "+err.Error())
	} else if !ok {
		g.why = append(g.why, "pprof: the binary does not link net/http/pprof")
	} else if base, gs, err := golive.Discover(ctx, g.fs, g.opts.PID, pprofTimeout); err != nil {
		g.why = append(g.why, "pprof: "+err.Error())
	} else {
		g.use(sourcePprof, rec)
		g.base = base
		sample.Goroutines = gs
		rec.Notes = append(rec.Notes, "goroutines from the target's own pprof endpoint "+base+"/debug/pprof/goroutine?debug=2")
		return
	}
	if g.opts.NoStop {
		g.why = append(g.why, "delve: not tried, --no-stop forbids stopping the target")
	} else {
		gs, frozen, err := delve.Dump(ctx, g.opts.PID)
		if err == nil {
			g.use(sourceDelve, rec)
			sample.Goroutines, sample.Frozen, sample.Paused = gs, frozen, true
			g.frozen = append(g.frozen, frozen)
			return
		}
		g.why = append(g.why, "delve: "+err.Error())
	}
	g.failures = maxStackFailures
	if !g.opts.Sigquit {
		rec.Notes = append(rec.Notes, fmt.Sprintf("no goroutines: %s; the diagnosis is from kernel evidence only (serve net/http/pprof and pass --pprof URL, or allow --sigquit, which kills the target, to get them)", strings.Join(g.why, "; ")))
	}
}

func (g *goStacks) use(source model.Format, rec *model.Recording) {
	g.source = source
	rec.StackSource = source
	if len(g.why) > 0 {
		rec.Notes = append(rec.Notes, "goroutines from "+source.String()+" ("+strings.Join(g.why, "; ")+")")
	}
}

// finish ends the run: it notes how long Delve froze the target, and, when
// no other source worked and the user allowed it, takes one SIGQUIT dump
// into the last sample. SIGQUIT kills a Go program: the run ends with it.
func (g *goStacks) finish(ctx context.Context, rec *model.Recording) {
	if len(g.frozen) > 0 {
		var parts []string
		for _, f := range g.frozen {
			parts = append(parts, fmt.Sprintf("%.1fms", float64(f.Microseconds())/1000))
		}
		rec.Notes = append(rec.Notes, "delve stopped the target while it read the goroutines (attach to detach): "+strings.Join(parts, ", "))
	}
	if g.source != model.FormatNone || !g.opts.Sigquit || len(rec.Samples) == 0 || rec.TargetExited || ctx.Err() != nil {
		return
	}
	gs, err := golive.SigquitDump(ctx, g.fs, g.opts.PID, g.opts.SigquitLog)
	if err != nil {
		rec.Notes = append(rec.Notes, fmt.Sprintf("no goroutines: %s; sigquit: %v", strings.Join(g.why, "; "), err))
		return
	}
	g.use(sourceSigquit, rec)
	rec.Samples[len(rec.Samples)-1].Goroutines = gs
	rec.Notes = append(rec.Notes, "goroutines from one SIGQUIT dump after the last sample: the target was killed by it, as --sigquit allowed")
}
