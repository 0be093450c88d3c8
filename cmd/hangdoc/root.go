package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/internal/diagnose"
	"github.com/hangdoc/hangdoc/internal/membudget"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/sampler/replay"
	"github.com/hangdoc/hangdoc/sampler/sources"
)

// usageError marks errors that are the caller's: they exit with ExitUsage.
type usageError struct{ error }

// exitError carries an exit code out of a command that printed its own output.
type exitError struct{ code ExitCode }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs hangdoc with args and returns its exit code. Tests call it directly.
func Main(args []string, stdout, stderr io.Writer) ExitCode {
	raiseFDLimit()
	root := newRoot(newIO(os.Stdin, stdout, stderr))
	root.SetArgs(args)
	err := root.Execute()
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return ExitWorking
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "hangdoc: %v\nRun 'hangdoc --help' for usage.\n", err)
		return ExitUsage
	case errors.As(err, new(interrupted)):
		fmt.Fprintf(stderr, "hangdoc: %v\n", err)
		return ExitInterrupted
	}
	fmt.Fprintf(stderr, "hangdoc: %v\n", err)
	return ExitError
}

// outputOptions are the flags every command that prints a report shares.
type outputOptions struct {
	formatFlag string
	json       bool
	colorFlag  string
	output     string
	format     Format
	color      ColorMode
}

func (o *outputOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.formatFlag, "format", "text", "report format: text, markdown, json, or dot (the wait-for graph for Graphviz)")
	f.BoolVar(&o.json, "json", false, "same as --format json")
	f.StringVar(&o.colorFlag, "color", "auto", "colour the text report: auto, always or never (NO_COLOR turns auto off)")
	f.StringVarP(&o.output, "output", "o", "", "write the report to `FILE` instead of standard output")
}

func (o *outputOptions) validate() error {
	if o.json {
		o.formatFlag = "json"
	}
	var err error
	if o.format, err = parseFormat(o.formatFlag); err != nil {
		return usageError{err}
	}
	if o.color, err = parseColor(o.colorFlag); err != nil {
		return usageError{err}
	}
	return nil
}

// write renders r to stdout or the -o file.
// A file write that does not finish in outputGrace (a hung mount) is given
// up: the report goes to standard output instead.
const outputGrace = time.Second

func (o *outputOptions) write(r *report.Report, ios *IO) error {
	var b bytes.Buffer
	var err error
	switch o.format {
	case FormatJSON:
		err = report.JSON(&b, r)
	case FormatMarkdown:
		err = report.Markdown(&b, r)
	case FormatDOT:
		err = report.DOT(&b, r)
	default:
		// A file is no terminal: colour only for a terminal stdout.
		err = report.Text(&b, r, ios.palette(o.color, o.output == "" && ios.OutTTY))
	}
	if err != nil {
		return err
	}
	if o.output != "" {
		err := writeFileWithin(o.output, b.Bytes(), outputGrace)
		if err == nil {
			return nil
		}
		// The diagnosis is made: it is not lost for a file.
		fmt.Fprintf(ios.Err, "hangdoc: writing the report to %s: %v; the report follows on standard output\n", o.output, err)
	}
	_, err = ios.Out.Write(b.Bytes())
	return err
}

// writeFileWithin writes a file, giving up after d: a file on a hung mount
// blocks in open or write, in the kernel, forever. The write is left
// behind, not waited for (internal/deadline).
func writeFileWithin(path string, data []byte, d time.Duration) error {
	return deadline.DoWithin(context.Background(), d, "the write", func() error { return os.WriteFile(path, data, 0o644) })
}

// diagnoseOptions are the flags of `hangdoc PID`.
type diagnoseOptions struct {
	out        outputOptions
	samples    int
	interval   time.Duration
	timeout    time.Duration
	record     string
	proc       string
	pyspy      string
	noStop     bool
	noOnCPU    bool
	onCPUHz    int
	maxStop    time.Duration
	pprof      string
	sigquit    bool
	sigquitLog string
	source     string
	maxMemory  membudget.Bytes
}

const maxMemoryHelp = "hangdoc's memory budget: past half of it once the evidence is read, goroutines are grouped by stack shape alone and holders searched for the locks with the most waiters only, and the report says so; also the Go runtime's memory limit"

const longHelp = `hangdoc watches a live process for a few seconds and says why it has
stopped making progress: blocked, spinning, working (just slow), idle or
deadlocked — and on what: which lock and who holds it, which call and
which file descriptor.

It reads /proc (thread states, CPU, wchan, syscalls, and the owner of each
contended mutex from the target's memory), follows waits on pipes, sockets
and children to the processes at the other end, and adds stacks: for
Python, py-spy's (py-spy pauses the target for an instant per sample); for
Go, every goroutine, from the program's own net/http/pprof endpoint (found
on its listening sockets, or --pprof) or else by attaching Delve, which
stops it for a moment per sample (0.1-0.3s for a small program; the report
says how long). --no-stop forbids anything that stops the target. It never
signals or writes to the target, unless --sigquit allows it.

Exit codes: 0 working (not hung), 3 blocked, 4 spinning, 5 idle,
6 deadlock, 7 the target exited during sampling, 8 interrupted (SIGINT,
SIGTERM: the report, if any, is partial), 1 error, 2 usage.`

func newRoot(ios *IO) *cobra.Command {
	opts := &diagnoseOptions{}
	cmd := &cobra.Command{
		Use:           "hangdoc PID",
		Short:         "Tell why a process has stopped making progress",
		Long:          longHelp,
		Example:       "  hangdoc 4187\n  hangdoc 4187 --samples 5 --interval 500ms --format markdown -o hang.md\n  hangdoc demo",
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				if len(args) == 0 {
					return usageError{errors.New("which process? give a PID, or run 'hangdoc demo' to see one diagnosed")}
				}
				return usageError{fmt.Errorf("one PID at a time, got %d arguments", len(args))}
			}
			pid, err := strconv.Atoi(args[0])
			if err != nil || pid <= 0 {
				return usageError{fmt.Errorf("PID must be a process id (a positive number), got %q", args[0])}
			}
			if err := opts.validate(); err != nil {
				return err
			}
			r, err := runDiagnose(pid, opts, ios)
			if err != nil {
				return err
			}
			return exitError{ExitFor(r)}
		},
	}
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.Err)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	opts.register(cmd)
	cmd.AddCommand(newVersion(ios.Out), newDemo(ios), newAnalyze(ios), newVictim(ios.Out))
	return cmd
}

func (o *diagnoseOptions) register(cmd *cobra.Command) {
	o.out.register(cmd)
	f := cmd.Flags()
	f.IntVar(&o.samples, "samples", 3, "how many samples to take")
	f.DurationVar(&o.interval, "interval", time.Second, "time between samples")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "hard bound on the whole run; a run cut short reports what it has, marked partial")
	f.StringVar(&o.record, "record", "", "also write the raw evidence as JSON to `FILE`: hangdoc analyze FILE gives the same report again")
	f.StringVar(&o.proc, "proc", "", "read /proc from `DIR` (e.g. the host's /proc mounted in a container: PID is then as DIR numbers it)")
	f.StringVar(&o.pyspy, "py-spy", "", "py-spy's `PATH` for Python stacks (default: look it up on PATH; install with pip install py-spy)")
	f.BoolVar(&o.noStop, "no-stop", false, "never stop the target, even for an instant (py-spy runs --nonblocking: stacks may be torn; no Delve for Go)")
	f.BoolVar(&o.noOnCPU, "no-on-cpu", false, "do not sample where running threads are (the kernel's CPU-clock event, perf_event_open; it never stops the target)")
	f.DurationVar(&o.maxStop, "max-stop", sources.DefaultMaxStop, "the longest one Delve read may keep a Go target stopped; a read that would pass it is given up and the target let go")
	f.StringVar(&o.pprof, "pprof", "", "a Go target's net/http/pprof `URL` (http://127.0.0.1:6060); default: look for one on the target's listening sockets")
	f.BoolVar(&o.sigquit, "sigquit", false, "for a Go target no other source can read: send SIGQUIT after the last sample for a goroutine dump (this KILLS a Go target); for a JVM whose attach mechanism is off: SIGQUIT for each thread dump, read back from its stdout (a JVM that catches SIGQUIT goes on)")
	f.StringVar(&o.source, "source", "", "read the stacks from this `SOURCE` only: for a Go target pprof, memory or delve (default: the first that works, in that order); for a Python target py-spy or memory (default: py-spy, else the interpreter's memory)")
	o.maxMemory = membudget.Default
	f.Var(&o.maxMemory, "max-memory", maxMemoryHelp)
	f.StringVar(&o.sigquitLog, "sigquit-log", "", "with --sigquit: the `FILE` the target's dump goes to, a Go program's stderr or a JVM's stdout (default: that descriptor, if it is a regular file)")
	f.IntVar(&o.onCPUHz, "on-cpu-hz", 0, "the on-CPU sampling rate, Hz (default 99): other rates are for measuring what sampling costs")
	_ = f.MarkHidden("on-cpu-hz") // bench/oncpu.sh's, not a user's
}

func (o *diagnoseOptions) validate() error {
	if err := o.out.validate(); err != nil {
		return err
	}
	switch {
	case o.samples < 1 || o.samples > 1000:
		return usageError{fmt.Errorf("--samples %d: want 1 to 1000", o.samples)}
	case o.interval < 10*time.Millisecond:
		return usageError{fmt.Errorf("--interval %s: want at least 10ms", o.interval)}
	case o.timeout <= 0:
		return usageError{fmt.Errorf("--timeout %s: want a positive duration", o.timeout)}
	case o.source != "" && stackSource(o.source) == model.FormatNone:
		return usageError{fmt.Errorf("--source %q: want pprof, memory, delve or py-spy", o.source)}
	case o.source == "delve" && o.noStop:
		return usageError{errors.New("--source delve stops the target, which --no-stop forbids")}
	case o.sigquitLog != "" && !o.sigquit:
		return usageError{errors.New("--sigquit-log needs --sigquit")}
	case o.maxStop <= 0:
		return usageError{fmt.Errorf("--max-stop %v: want a positive duration, like 2s", o.maxStop)}
	case o.pprof != "" && !strings.HasPrefix(o.pprof, "http://") && !strings.HasPrefix(o.pprof, "https://"):
		return usageError{fmt.Errorf("--pprof %q: want an http:// URL, like http://127.0.0.1:6060", o.pprof)}
	}
	return nil
}

// runDiagnose diagnoses pid, writes the report (and the recording, if
// asked) and returns it. `hangdoc PID` and `hangdoc demo` both end here.
func runDiagnose(pid int, opts *diagnoseOptions, ios *IO) (*report.Report, error) {
	defer membudget.Set(int64(opts.maxMemory))()
	sig, stop := interruptible(context.Background())
	defer stop()
	ctx, cancel := context.WithTimeout(sig, opts.timeout)
	defer cancel()

	run := diagnose.Options{
		PID:       pid,
		Samples:   opts.samples,
		Interval:  opts.interval,
		ProcRoot:  opts.proc,
		Classify:  classify.DefaultOptions(),
		MaxMemory: int64(opts.maxMemory),
		Notes:     startNotes,
		NoOnCPU:   opts.noOnCPU,
		OnCPUHz:   opts.onCPUHz,
		Sources: sources.Options{
			PySpy:      opts.pyspy,
			NoStop:     opts.noStop,
			Pprof:      opts.pprof,
			Sigquit:    opts.sigquit,
			SigquitLog: opts.sigquitLog,
			Only:       stackSource(opts.source),
			MaxStop:    opts.maxStop,
		},
	}
	if ios.ErrTTY {
		run.Progress = ios.Err
	}
	r, rec, err := diagnose.RunBounded(ctx, run)
	if err != nil {
		if in := interruption(sig); in != nil && !errors.Is(err, in) {
			return nil, fmt.Errorf("%w: %v", in, err)
		}
		return nil, err
	}
	if opts.record != "" {
		if b, err := replay.Marshal(rec); err != nil {
			fmt.Fprintf(ios.Err, "hangdoc: writing the recording: %v\n", err)
		} else if err := writeFileWithin(opts.record, b, outputGrace); err != nil {
			fmt.Fprintf(ios.Err, "hangdoc: writing the recording to %s: %v\n", opts.record, err)
		}
	}
	if err := opts.out.write(r, ios); err != nil {
		return r, err
	}
	return r, reported(sig)
}

// stackSource is --source as a stack source.
func stackSource(name string) model.Format {
	switch name {
	case "py-spy":
		return model.SourcePySpy
	case "pprof":
		return model.SourcePprof
	case "memory":
		return model.SourceMemory
	case "delve":
		return model.SourceDelve
	}
	return model.FormatNone
}
