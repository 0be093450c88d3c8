package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hangdoc/hangdoc/internal/victim"
)

func newDemo(ios *IO) *cobra.Command {
	stdout := ios.Out
	opts := &diagnoseOptions{}
	var list bool
	cmd := &cobra.Command{
		Use:   "demo [SCENARIO]",
		Short: "Start a process that hangs in a classic way and diagnose it",
		Long: `demo starts a victim process (hangdoc itself, in a hidden mode) that
reproduces a classic hang, diagnoses it as 'hangdoc PID' would, prints the
report and stops the victim. Without SCENARIO it shows ` + victim.Scenarios[0].Name + `.
'hangdoc demo --list' names the scenarios.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{errors.New("one scenario at a time; 'hangdoc demo --list' names them")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				for _, s := range victim.Scenarios {
					fmt.Fprintf(stdout, "%-12s %-9s %s\n", s.Name, s.Expect, s.About)
				}
				return nil
			}
			name := victim.Scenarios[0].Name
			if len(args) == 1 {
				name = args[0]
			}
			s, ok := victim.Find(name)
			if !ok {
				return usageError{fmt.Errorf("no demo scenario %q; 'hangdoc demo --list' names them", name)}
			}
			if err := opts.validate(); err != nil {
				return err
			}
			return runDemo(s, opts, ios)
		},
	}
	opts.register(cmd)
	cmd.Flags().MarkHidden("proc") // the victim is always a local child
	cmd.Flags().BoolVar(&list, "list", false, "list the scenarios")
	return cmd
}

func runDemo(s victim.Scenario, opts *diagnoseOptions, ios *IO) error {
	stderr := ios.Err
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding hangdoc's own executable to start the victim: %w", err)
	}
	v := exec.Command(exe, victimCommand, s.Name)
	v.Env = append(os.Environ(), s.Env...)
	v.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var victimErr strings.Builder
	v.Stderr = &victimErr
	out, err := v.StdoutPipe()
	if err != nil {
		return err
	}
	if err := v.Start(); err != nil {
		return fmt.Errorf("starting the victim: %w", err)
	}
	defer func() {
		syscall.Kill(-v.Process.Pid, syscall.SIGKILL)
		v.Wait()
	}()

	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				line <- sc.Text()
				break
			}
		}
		close(line)
		io.Copy(io.Discard, out)
	}()
	var ready string
	select {
	case ready = <-line:
	case <-time.After(20 * time.Second):
	}
	if ready == "" {
		return fmt.Errorf("the %s victim did not set up its hang: %s", s.Name, strings.TrimSpace(victimErr.String()))
	}
	fmt.Fprintf(stderr, "demo: %s: %s\n", s.Name, s.About)
	fmt.Fprintf(stderr, "demo: victim %s\n", strings.TrimPrefix(ready, "ready "))
	fmt.Fprintf(stderr, "demo: running 'hangdoc %d'\n\n", v.Process.Pid)

	r, err := runDiagnose(v.Process.Pid, opts, ios)
	if err != nil {
		return err
	}
	if string(r.Verdict) != s.Expect {
		return errors.New("demo: expected " + s.Expect + ", got " + string(r.Verdict) + ": please report this with the output of --record")
	}
	return nil
}

// victimCommand is the hidden command the demo re-executes hangdoc with.
const victimCommand = "__victim"

func newVictim(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:    victimCommand + " SCENARIO",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if args[0] == victim.SlowReader {
				return victim.ReadSlowly()
			}
			s, ok := victim.Find(args[0])
			if !ok {
				return usageError{fmt.Errorf("no scenario %q", args[0])}
			}
			return s.Run(stdout)
		},
	}
}
