package sources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/java"
	"golang.org/x/sys/unix"
)

// attachTimeout bounds one thread dump through the attach socket.
const attachTimeout = 10 * time.Second

func javaStacks(fs sampler.FS, t *sampler.Target, opts Options) sampler.Stacks {
	s := sampler.Stacks{What: "Java threads"}
	nspid := t.PID
	if t.Desc.NSPID > 0 {
		nspid = t.Desc.NSPID
	}
	// The JVM's counters: a file read each sample, never a stop.
	if path, err := java.HsperfPath(fs.Path(strconv.Itoa(t.PID), "root"), nspid); err != nil {
		s.Notes = append(s.Notes, "no JVM counters (GC and safepoint time): "+err.Error())
	} else {
		s.Each = func(sample *model.Sample) {
			if c, err := java.ReadHsperf(path); err == nil {
				sample.JVM = &c
			}
		}
	}
	if opts.NoStop {
		// A thread dump is a safepoint: every Java thread stops for it.
		s.Notes = append(s.Notes, "no Java stacks: a JVM's thread dump is a safepoint, which stops every Java thread, and this run may not stop the target; the diagnosis is from kernel evidence only")
		return s
	}
	pid := strconv.Itoa(t.PID)
	status, _ := os.ReadFile(fs.Path(pid, "status"))
	cmdline, _ := os.ReadFile(fs.Path(pid, "cmdline"))
	environ, _ := os.ReadFile(fs.Path(pid, "environ"))
	a := java.AttachTarget{
		Root: fs.Path(pid, "root"), Cwd: fs.Path(pid, "cwd"),
		NSPID:          t.PID,
		CatchesQuit:    java.CatchesSignal(status, int(unix.SIGQUIT)),
		AttachDisabled: java.AttachDisabledIn(cmdline, environ),
	}
	if t.Desc.NSPID > 0 {
		a.NSPID = t.Desc.NSPID
	}
	if t.Local > 0 {
		a.Quit = func() error { return t.Signal(unix.SIGQUIT) }
	}
	s.Sources = []sampler.StackSource{&attachSource{t: a}}
	s.None = func(why []string) string {
		return fmt.Sprintf("no Java stacks: %s; the diagnosis is from kernel evidence only (a dump taken by hand, jcmd PID Thread.print -l > FILE, reads with hangdoc analyze FILE)", why[0])
	}
	return s
}

// attachSource dumps a live JVM's threads through its attach socket each
// sample and joins them to the threads read from /proc by their nid. Each
// dump is a safepoint: the JVM's threads stop while it is taken; the
// longest is said in a note.
type attachSource struct {
	t        java.AttachTarget
	last     bool          // the run's last sample: its virtual threads are read too
	noVirt   bool          // the JVM has no JSON thread dump (before JDK 21)
	virtual  int           // virtual threads read
	started  bool          // this run's SIGQUIT started the attach listener
	longest  time.Duration // the longest dump, an upper bound of its pause
	unjoined int           // dumps that joined no thread
}

func (a *attachSource) Name() model.Format { return model.SourceAttach }

func (a *attachSource) Stacks(ctx context.Context, s *model.Sample) error {
	ctx, cancel := context.WithTimeout(ctx, attachTimeout)
	defer cancel()
	start := time.Now()
	b, started, err := java.ThreadDump(ctx, a.t)
	a.started = a.started || started
	if err != nil {
		return err
	}
	a.longest = max(a.longest, time.Since(start))
	dumps, err := java.ParseBytes(b)
	if err != nil {
		return fmt.Errorf("reading the JVM's thread dump: %w", err)
	}
	if len(dumps) == 0 {
		return errors.New("the JVM's reply holds no thread dump")
	}
	if java.Merge(s, dumps[0]) == 0 {
		a.unjoined++
	}
	if a.last && !a.noVirt {
		// Virtual threads are in no text dump: on the last sample, the
		// JSON one (a second safepoint, once a run).
		if b, err := java.VirtualThreadDump(ctx, a.t); err != nil {
			a.noVirt = true
		} else if d, err := java.ParseBytes(b); err == nil && len(d) > 0 {
			a.virtual += java.MergeVirtual(s, d[0])
		}
	}
	s.StackSource = model.SourceAttach
	// A safepoint stops every Java thread and wakes the blocked ones to
	// check in: switches it explains are not progress.
	s.Paused = true
	return nil
}

// Last marks the next sample as the run's last.
func (a *attachSource) Last() { a.last = true }

func (a *attachSource) Notes() []string {
	var notes []string
	if a.virtual > 0 {
		notes = append(notes, fmt.Sprintf("%d virtual threads read from the JVM's JSON thread dump on the last sample (they are in no text dump, and no OS thread is theirs: their tids are stand-ins, and they have no kernel evidence)", a.virtual))
	}
	if a.started {
		notes = append(notes, "the JVM's attach listener was started for this run (an attach file and a SIGQUIT, which this JVM catches)")
	}
	if a.longest > 0 {
		notes = append(notes, fmt.Sprintf("each Java thread dump is a safepoint: the longest took %d ms, an upper bound of the JVM's pause", a.longest.Milliseconds()))
	}
	if a.unjoined > 0 {
		notes = append(notes, fmt.Sprintf("%d Java thread dumps gave no thread a Linux tid that matched", a.unjoined))
	}
	return notes
}
