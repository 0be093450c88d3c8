package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/report"
)

// IO is where a command reads and writes, decided once: the streams,
// which of them are terminals, and whether colour is wanted.
type IO struct {
	In             io.Reader
	Out, Err       io.Writer
	OutTTY, ErrTTY bool
	// NoColor: NO_COLOR is set, which turns --color auto off.
	NoColor bool
}

// newIO bundles the streams and looks at them once.
func newIO(in io.Reader, out, errw io.Writer) *IO {
	_, noColor := os.LookupEnv("NO_COLOR")
	return &IO{In: in, Out: out, Err: errw, OutTTY: isTerminal(out), ErrTTY: isTerminal(errw), NoColor: noColor}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Format is a report format, as --format names it.
type Format int

const (
	FormatText Format = iota
	FormatMarkdown
	FormatJSON
	FormatDOT // the wait-for graph for Graphviz
)

func parseFormat(s string) (Format, error) {
	switch s {
	case "text":
		return FormatText, nil
	case "markdown", "md":
		return FormatMarkdown, nil
	case "json":
		return FormatJSON, nil
	case "dot":
		return FormatDOT, nil
	}
	return 0, fmt.Errorf("--format %q: want text, markdown, json or dot", s)
}

// ColorMode is --color.
type ColorMode int

const (
	ColorAuto ColorMode = iota
	ColorAlways
	ColorNever
)

func parseColor(s string) (ColorMode, error) {
	switch s {
	case "auto":
		return ColorAuto, nil
	case "always":
		return ColorAlways, nil
	case "never":
		return ColorNever, nil
	}
	return 0, fmt.Errorf("--color %q: want auto, always or never", s)
}

// palette is the text report's colours: only text, only when asked or when
// writing to a terminal without NO_COLOR.
func (ios *IO) palette(mode ColorMode, toTTY bool) report.Palette {
	on := mode == ColorAlways || mode == ColorAuto && !ios.NoColor && toTTY
	if !on {
		return report.Palette{}
	}
	paint := func(attrs ...color.Attribute) func(string) string {
		c := color.New(attrs...)
		c.EnableColor()
		return func(s string) string { return c.Sprint(s) }
	}
	return report.Palette{
		Bad:  paint(color.FgRed),
		Warn: paint(color.FgYellow),
		Good: paint(color.FgGreen),
		Dim:  paint(color.Faint),
		Bold: paint(color.Bold),
	}
}

// nrOpenCap bounds how far root raises the descriptor limit.
const nrOpenCap = 1 << 20

// raiseFDLimit lifts the soft descriptor limit to the hard one, and, as
// root, both to the system's ceiling: the sampler keeps every thread's
// /proc files open between samples, five a thread, and a hung service may
// have thousands. It is done once, here, for the whole process; failing
// only means more opens per sample.
func raiseFDLimit() {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) != nil {
		return
	}
	if b, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if ceiling, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			ceiling = min(ceiling, nrOpenCap)
			if ceiling > r.Max && unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: ceiling, Max: ceiling}) == nil {
				return
			}
		}
	}
	if r.Cur < r.Max {
		unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: r.Max, Max: r.Max})
	}
}
