package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/internal/version"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

func newAnalyze(ios *IO) *cobra.Command {
	var out outputOptions
	var srcMaps []string
	cmd := &cobra.Command{
		Use:   "analyze FILE...",
		Short: "Diagnose from saved stack dumps (Go goroutine dumps, py-spy, faulthandler)",
		Long: `analyze reads stack dumps saved to files ("-" reads standard input) and
diagnoses them as 'hangdoc PID' would, from the stacks alone: one file is
one snapshot; several files, or several dumps in one file, are snapshots in
time order, compared like live samples (what moved, what did not).

It reads Go goroutine dumps (SIGQUIT, panics and fatal errors, go test
timeouts, /debug/pprof/goroutine?debug=2, runtime.Stack output, with log
prefixes), py-spy's text and JSON dumps, CPython's faulthandler dumps (also
from dump_traceback_later) and printed sys._current_frames() dumps. A file
has no CPU or kernel evidence: a live 'hangdoc PID' says more.`,
		Example: "  curl -s localhost:6060/debug/pprof/goroutine?debug=2 > a.txt; sleep 1; curl -s localhost:6060/debug/pprof/goroutine?debug=2 > b.txt\n  hangdoc analyze a.txt b.txt\n  py-spy dump --pid 4187 --json > a.json; sleep 1; py-spy dump --pid 4187 --json > b.json\n  hangdoc analyze a.json b.json",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("which dumps? give one or more files, or - for standard input")}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			read, err := sourceReader(srcMaps)
			if err != nil {
				return err
			}
			rec, err := replay.Dumps(args, ios.In, version.Version)
			if err != nil {
				return err
			}
			if len(srcMaps) > 0 {
				rec.Sources = sampler.ReadSources(rec.Samples, read)
			}
			r := report.New(rec, classify.Classify(rec, classify.DefaultOptions()))
			if err := out.write(r, ios); err != nil {
				return err
			}
			return exitError{ExitFor(r)}
		},
	}
	out.register(cmd)
	cmd.Flags().StringArrayVar(&srcMaps, "src", nil, "read the source files the stacks name from elsewhere: `FROM=TO` maps a path prefix of the dump (where it was built) to this machine's checkout; repeatable")
	return cmd
}

// sourceReader reads the files stacks point into, with the --src
// prefixes mapped: a dump names the files where the program was built.
func sourceReader(maps []string) (func(string) ([]string, error), error) {
	type prefix struct{ from, to string }
	var ps []prefix
	for _, m := range maps {
		from, to, ok := strings.Cut(m, "=")
		if !ok || from == "" || to == "" {
			return nil, usageError{fmt.Errorf("--src %q: want FROM=TO, like /build/app=/home/me/app", m)}
		}
		ps = append(ps, prefix{filepath.Clean(from), filepath.Clean(to)})
	}
	return func(path string) ([]string, error) {
		for _, p := range ps {
			if rest, ok := strings.CutPrefix(path, p.from); ok && (rest == "" || rest[0] == '/') {
				return sampler.ReadLocalSource(p.to + rest)
			}
		}
		return sampler.ReadLocalSource(path)
	}, nil
}
