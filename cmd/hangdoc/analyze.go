package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/internal/diagnose"
	"github.com/hangdoc/hangdoc/internal/membudget"
	"github.com/hangdoc/hangdoc/internal/version"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// analyzeOptions are the flags of `hangdoc analyze`.
type analyzeOptions struct {
	out       outputOptions
	timeout   time.Duration
	src       []string
	maxMemory membudget.Bytes
	// sourceTimeout bounds the read of one source file (hidden: tests
	// set it long, to hold a read on a hung mount until they interrupt).
	sourceTimeout time.Duration
	read          func(string) ([]string, error) // the sources, as --src says
}

func newAnalyze(ios *IO) *cobra.Command {
	opts := &analyzeOptions{}
	cmd := &cobra.Command{
		Use:   "analyze FILE...",
		Short: "Diagnose from saved stack dumps (Go goroutine dumps, py-spy, faulthandler, JVM thread dumps) or a --record recording",
		Long: `analyze reads stack dumps saved to files ("-" reads standard input) and
diagnoses them as 'hangdoc PID' would, from the stacks alone: one file is
one snapshot; several files, or several dumps in one file, are snapshots in
time order, compared like live samples (what moved, what did not).

It reads Go goroutine dumps (SIGQUIT, panics and fatal errors, go test
timeouts, /debug/pprof/goroutine?debug=2, runtime.Stack output, with log
prefixes), py-spy's text and JSON dumps, CPython's faulthandler dumps (also
from dump_traceback_later) and printed sys._current_frames() dumps, and JVM
thread dumps (jstack, jcmd Thread.print, kill -QUIT's, the JSON of jcmd
Thread.dump_to_file), gzipped or not. py-spy --subprocesses dumps are one moment of several processes.

A recording that 'hangdoc PID --record FILE' wrote is read alone: its
report is the live run's, byte for byte, with the live run's CPU and
kernel evidence (docs/recording.md).

A file has no CPU or kernel evidence, and the report says "not in a dump"
where a live 'hangdoc PID' would measure: what says a thread runs is
py-spy's active flag (where py-spy could read the OS thread), its +gil, or
a line of Python that calls nothing; one dump of something running cannot
tell a loop from work. The lines the frames stand at are read from the
files the dump names (--src maps them to a checkout). Input that does not
end (a FIFO, a terminal) is read until --timeout, and the report is of what
was read, marked partial.`,
		Example: "  curl -s localhost:6060/debug/pprof/goroutine?debug=2 > a.txt; sleep 1; curl -s localhost:6060/debug/pprof/goroutine?debug=2 > b.txt\n  hangdoc analyze a.txt b.txt\n  py-spy dump --pid 4187 --json > a.json; sleep 1; py-spy dump --pid 4187 --json > b.json\n  hangdoc analyze a.json b.json\n  hangdoc analyze --src /build/app=$HOME/src/app --src ./scripts pyspy.txt",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("which dumps? give one or more files, or - for standard input")}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			r, err := runAnalyze(args, opts, ios)
			if err != nil {
				return err
			}
			return exitError{ExitFor(r)}
		},
	}
	opts.out.register(cmd)
	f := cmd.Flags()
	f.DurationVar(&opts.timeout, "timeout", time.Minute, "hard bound on reading the dumps; input that has not ended by then (a FIFO, a terminal) is analysed as far as it was read, marked partial")
	opts.maxMemory = membudget.Default
	f.Var(&opts.maxMemory, "max-memory", maxMemoryHelp)
	f.DurationVar(&opts.sourceTimeout, "source-timeout", sampler.DefaultSourceTimeout, "bound on reading one source file")
	_ = f.MarkHidden("source-timeout")
	f.StringArrayVar(&opts.src, "src", nil, "read the source files the stacks name from elsewhere: `FROM=TO` maps a path prefix of the dump (where it was built) to this machine's checkout; a DIR alone is searched for each file by the last elements of its path (py-spy's short names, a relative script); repeatable")
	return cmd
}

func (o *analyzeOptions) validate() error {
	if err := o.out.validate(); err != nil {
		return err
	}
	if o.timeout <= 0 {
		return usageError{fmt.Errorf("--timeout %s: want a positive duration", o.timeout)}
	}
	if o.sourceTimeout <= 0 {
		return usageError{fmt.Errorf("--source-timeout %s: want a positive duration", o.sourceTimeout)}
	}
	var err error
	o.read, err = sourceReader(o.src, sampler.SourceFiles{Timeout: o.sourceTimeout})
	return err
}

// runAnalyze reads the dumps, diagnoses them and writes the report.
// An interrupt (SIGINT, SIGTERM) ends the reading at once: the report is
// of what was read, marked partial, and the error says it was
// interrupted.
func runAnalyze(paths []string, opts *analyzeOptions, ios *IO) (*report.Report, error) {
	defer membudget.Set(int64(opts.maxMemory))()
	sig, stop := interruptible(context.Background())
	defer stop()
	ctx, cancel := context.WithTimeout(sig, opts.timeout)
	defer cancel()
	type read struct {
		rec model.Recording
		err error
	}
	got, err := orAbandon(ctx, "reading the dumps", func() read {
		rec, err := replay.ReadDumps(ctx, replay.DumpOptions{Paths: paths, Stdin: ios.In, Version: version.Version, ReadSource: opts.read})
		return read{rec, err}
	})
	if err == nil {
		err = got.err
	}
	if err != nil {
		if in := interruption(sig); in != nil && !errors.Is(err, in) {
			return nil, fmt.Errorf("%w: %v", in, err)
		}
		return nil, err
	}
	// The timeout bounds the reading only: sig, an interrupt, the report.
	r, err := orAbandon(sig, "the report of what was read", func() *report.Report {
		return diagnose.Classify(got.rec, classify.DefaultOptions(), int64(opts.maxMemory))
	})
	if err != nil {
		return nil, err
	}
	if err := opts.out.write(r, ios); err != nil {
		return r, err
	}
	return r, reported(sig)
}

// sourceReader reads the files stacks point into, with the --src
// prefixes mapped: a dump names the files where the program was built. A
// --src DIR (no "=") is searched for a file the path does not find, by
// the last elements of its path, the most of them first: py-spy's text
// names files by their short names ("app.py"), Python 3.8 the script by
// the path it was run by.
func sourceReader(maps []string, src sampler.SourceFiles) (func(string) ([]string, error), error) {
	type prefix struct{ from, to string }
	var ps []prefix
	var dirs []string
	for _, m := range maps {
		from, to, ok := strings.Cut(m, "=")
		if !ok {
			if fi, err := os.Stat(m); err != nil || !fi.IsDir() {
				return nil, usageError{fmt.Errorf("--src %q: want FROM=TO, like /build/app=/home/me/app, or a directory", m)}
			}
			abs, err := filepath.Abs(m)
			if err != nil {
				return nil, usageError{fmt.Errorf("--src %q: %w", m, err)}
			}
			dirs = append(dirs, abs)
			continue
		}
		if from == "" || to == "" {
			return nil, usageError{fmt.Errorf("--src %q: want FROM=TO, like /build/app=/home/me/app", m)}
		}
		ps = append(ps, prefix{filepath.Clean(from), filepath.Clean(to)})
	}
	return func(path string) ([]string, error) {
		for _, p := range ps {
			if rest, ok := strings.CutPrefix(path, p.from); ok && (rest == "" || rest[0] == '/') {
				return src.Local(p.to + rest)
			}
		}
		lines, err := src.Local(path)
		if err == nil || len(dirs) == 0 {
			return lines, err
		}
		parts := strings.Split(filepath.ToSlash(filepath.Clean(path)), "/")
		for len(parts) > 0 && (parts[0] == "" || parts[0] == "." || parts[0] == "..") {
			parts = parts[1:]
		}
		for _, dir := range dirs {
			for k := range parts {
				// Tried by the bounded reader, not stat'ed: a stat on a
				// hung mount would block.
				p := filepath.Join(append([]string{dir}, parts[k:]...)...)
				lines, perr := src.Local(p)
				if perr == nil || errors.Is(perr, deadline.ErrAbandoned) || errors.Is(perr, sampler.ErrHungMount) {
					return lines, perr
				}
			}
		}
		return nil, err
	}, nil
}
