package sources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/internal/helper"
	"github.com/hangdoc/hangdoc/internal/procstatus"

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
		s.Notes = append(s.Notes, model.NewNote(model.NoteJavaNoCounters, err))
	} else {
		s.Each = func(sample *model.Sample) {
			if c, err := java.ReadHsperf(path); err == nil {
				sample.JVM = &c
			}
		}
	}
	if opts.NoStop {
		// A thread dump is a safepoint: every Java thread stops for it.
		s.Notes = append(s.Notes, model.NewNote(model.NoteJavaNoStop))
		return s
	}
	pid := strconv.Itoa(t.PID)
	status, _ := sampler.ReadStatus(fs, t.PID)
	cmdline, _ := os.ReadFile(fs.Path(pid, "cmdline"))
	environ, _ := os.ReadFile(fs.Path(pid, "environ"))
	a := java.AttachTarget{
		Root: fs.Path(pid, "root"), Cwd: fs.Path(pid, "cwd"),
		NSPID:          t.PID,
		CatchesQuit:    status.Catches(int(unix.SIGQUIT)),
		AttachDisabled: java.AttachDisabledIn(cmdline, environ),
		UID:            status.Uid[1], GID: status.Gid[1],
		OwnerKnown: status.Has&procstatus.HasUid != 0 && status.Has&procstatus.HasGid != 0,
	}
	if t.Desc.NSPID > 0 {
		a.NSPID = t.Desc.NSPID
	}
	if t.Local > 0 {
		a.Quit = func() error { return t.Signal(unix.SIGQUIT) }
	}
	attach := &dumpSource{name: model.SourceAttach, t: a}
	attach.take = func(ctx context.Context) (java.Reply, error) { return java.ThreadDump(ctx, a) }
	jc := jcmdSource(attach, func(ctx context.Context) (java.Reply, error) { return jcmdDump(ctx, fs, t, a) })
	s.Sources = []sampler.StackSource{attach, jc}
	if opts.Sigquit {
		q := &dumpSource{name: model.SourceSigquit, t: a}
		q.take = func(ctx context.Context) (java.Reply, error) { return quitDump(ctx, fs, t.PID, a, opts.SigquitLog) }
		s.Sources = append(s.Sources, q)
	}
	s.None = func(why []string) model.Note {
		return model.NewNote(model.NoteNoJavaStacks, why[0])
	}
	return s
}

// jcmdSource is the fallback after attach: run, unless attach asked for a
// dump the JVM did not answer in time (stuck before a safepoint), which
// would keep jcmd waiting the same way.
func jcmdSource(attach *dumpSource, run func(ctx context.Context) (java.Reply, error)) *dumpSource {
	jc := &dumpSource{name: model.SourceJcmd, t: attach.t}
	jc.take = func(ctx context.Context) (java.Reply, error) {
		if attach.unanswered {
			return java.Reply{}, errors.New("not run: the JVM did not answer hangdoc's own request for a thread dump in time, and would keep jcmd waiting the same way")
		}
		return run(ctx)
	}
	return jc
}

// jcmdTimeout bounds one run of jcmd or jstack: a JVM of its own starts
// first (about half a second).
const jcmdTimeout = 10 * time.Second

// jcmdDump runs the JDK's own tool for a thread dump: the target's jcmd
// (in its java's directory, through its root), else jcmd or jstack on
// PATH. It is the fallback for a JVM whose attach socket hangdoc's own
// client could not use; it runs only while the JVM's attach listener has
// its socket, since either tool would otherwise start the listener with
// a SIGQUIT without asking whether the JVM catches it. It runs as a
// helper (bounded, its own process group, stdin from /dev/null), with
// the JVM's uid and gid when hangdoc is root (JDK 8 answers no other
// user), and without a counters file of its own (-XX:-UsePerfData).
func jcmdDump(ctx context.Context, fs sampler.FS, t *sampler.Target, a java.AttachTarget) (java.Reply, error) {
	if !a.Listening() {
		return java.Reply{}, errors.New("not run: the JVM's attach listener has no socket, and jcmd or jstack would start it with a SIGQUIT without asking whether the JVM catches it")
	}
	if t.Local <= 0 {
		return java.Reply{}, errors.New("not run: the JVM has no pid in hangdoc's PID namespace")
	}
	tools := jdkTools(fs, t.PID)
	if len(tools) == 0 {
		return java.Reply{}, errors.New("no jcmd or jstack: none beside the JVM's java, none on PATH")
	}
	pid := strconv.Itoa(t.Local)
	var why []string
	for _, tool := range tools {
		args := []string{"-J-XX:-UsePerfData", pid, "Thread.print", "-l"}
		if filepath.Base(tool) == "jstack" {
			args = []string{"-J-XX:-UsePerfData", "-l", pid}
		}
		cmd := exec.Command(tool, args...)
		cmd.Dir = "/"
		if os.Geteuid() == 0 && a.OwnerKnown && a.UID != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: []uint32{}}}
		}
		out, err := helper.Run(ctx, jcmdTimeout, cmd, java.MaxDump)
		if err == nil {
			return java.Reply{Dump: out}, nil
		}
		why = append(why, fmt.Sprintf("%s: %v", tool, err))
		if ctx.Err() != nil {
			break
		}
	}
	return java.Reply{}, errors.New(strings.Join(why, "; "))
}

// quitDump is --sigquit for a JVM: SIGQUIT makes a JVM that catches it
// print a thread dump on its standard output, and go on (a JVM that does
// not, one run with -Xrs, would die of it, and is never sent it). The
// dump is read back from that output: logPath, or the JVM's fd 1 when it
// is a regular file; only what the JVM wrote after the signal, once it
// has printed the dump's end ("JNI global refs") and stopped writing.
func quitDump(ctx context.Context, fs sampler.FS, pid int, a java.AttachTarget, logPath string) (java.Reply, error) {
	switch {
	case !a.CatchesQuit:
		return java.Reply{}, fmt.Errorf("%w: --sigquit: the JVM does not catch SIGQUIT (it runs with -Xrs): the signal would kill it", java.ErrAttachRefused)
	case a.Quit == nil:
		return java.Reply{}, fmt.Errorf("%w: --sigquit: hangdoc cannot signal the JVM from its PID namespace", java.ErrAttachRefused)
	}
	f, where, err := sampler.OpenOutput(fs, pid, 1, logPath)
	if err != nil {
		return java.Reply{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return java.Reply{}, err
	}
	start := st.Size()
	if err := a.Quit(); err != nil {
		return java.Reply{}, fmt.Errorf("sending the JVM SIGQUIT: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, quitWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	// What the JVM writes after the signal is read as it comes, once:
	// a dump of many threads is written in many pieces.
	var b []byte
	stable, end := 0, false
	for {
		if st, err := f.Stat(); err == nil && st.Size() >= start {
			if st.Size() == start+int64(len(b)) {
				stable++
			} else if len(b) >= java.MaxDump {
				return java.Reply{}, fmt.Errorf("the JVM wrote over %d MiB to %s after SIGQUIT", java.MaxDump>>20, where)
			} else {
				stable = 0
				more := make([]byte, min(st.Size()-start-int64(len(b)), int64(java.MaxDump-len(b))))
				n, _ := f.ReadAt(more, start+int64(len(b)))
				// The end's line may straddle two reads: look from just
				// before the new bytes.
				from := max(len(b)-len(jniRefs), 0)
				b = append(b, more[:n]...)
				end = end || bytes.Contains(b[from:], jniRefs)
			}
			// The JVM prints the dump's end, then its deadlocks and heap
			// within milliseconds: whole once 100 ms pass unwritten.
			if end && stable >= 5 {
				return java.Reply{Dump: b}, nil
			}
		}
		select {
		case <-ctx.Done():
			return java.Reply{}, fmt.Errorf("the JVM wrote no whole thread dump to %s within %s of SIGQUIT: is that where its standard output goes? (--sigquit-log FILE names it)", where, quitWait)
		case <-tick.C:
		}
	}
}

// jniRefs begins the line that ends a HotSpot thread dump's threads
// ("JNI global refs: 24, weak refs: 0"; JDK 8: "JNI global references").
var jniRefs = []byte("\nJNI global ref")

// quitWait bounds the wait for a JVM's SIGQUIT dump to be written.
const quitWait = 5 * time.Second

// jdkTools are the JDK tools that can dump a JVM's threads, best first:
// the jcmd beside the target's own java (the same JDK), then jcmd and
// jstack on PATH. The target's own is used only when the target's root is
// hangdoc's: a container's files are the container's to write, and
// hangdoc, often root, must not run them on the host.
func jdkTools(fs sampler.FS, pid int) []string {
	var tools []string
	p := strconv.Itoa(pid)
	if exe, err := os.Readlink(fs.Path(p, "exe")); err == nil && filepath.IsAbs(exe) && sameRoot(fs.Path(p, "root")) {
		own := fs.Path(p, "root") + filepath.Join(filepath.Dir(exe), "jcmd")
		if st, err := os.Stat(own); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			tools = append(tools, own)
		}
	}
	for _, name := range []string{"jcmd", "jstack"} {
		if path, err := exec.LookPath(name); err == nil && !slices.Contains(tools, path) {
			tools = append(tools, path)
		}
	}
	return tools
}

// sameRoot reports whether root (a /proc/PID/root) is this process's root
// directory.
func sameRoot(root string) bool {
	theirs, err1 := os.Stat(root + "/")
	ours, err2 := os.Stat("/")
	return err1 == nil && err2 == nil && os.SameFile(theirs, ours)
}

// dumpSource dumps a live JVM's threads each sample (through its attach
// socket, or with jcmd) and joins them to the threads read from /proc by
// their nid. Each dump is a safepoint: the JVM's threads stop while it is
// taken; the longest is said in a note. Once two dumps in a row agree (one
// dump cannot tell stopped from slow, and one taken as a thread settles
// into its wait may catch it half-way), a sample for which no thread with
// a Java stack has run since the last dump takes none: its stacks are
// that dump's.
type dumpSource struct {
	name model.Format
	t    java.AttachTarget
	take func(ctx context.Context) (java.Reply, error)

	last       bool          // the run's last sample: its virtual threads are read too
	noVirt     bool          // the JVM has no JSON thread dump (before JDK 21)
	virtual    int           // virtual threads read
	started    bool          // this run's SIGQUIT started the attach listener
	asOwner    bool          // the JVM answered only its own uid and gid
	unanswered bool          // a dump was asked for and not answered in time
	longest    time.Duration // the longest dump, an upper bound of its pause
	unjoined   int           // dumps that joined no thread
	taken      int           // dumps taken
	reused     int           // samples whose stacks are the previous dump's
	prev       *model.Sample // the previous sample with stacks
	agreed     bool          // the last two dumps gave every thread the same stack and locks
}

func (d *dumpSource) Name() model.Format { return d.name }

func (d *dumpSource) Stacks(ctx context.Context, s *model.Sample) error {
	if d.agreed && still(d.prev, s) {
		reuse(d.prev, s)
		d.reused++
	} else if err := d.dump(ctx, s); err != nil {
		return err
	}
	if d.last && !d.noVirt {
		// Virtual threads are in no text dump: on the last sample, the
		// JSON one (a safepoint, once a run).
		ctx, cancel := context.WithTimeout(ctx, attachTimeout)
		defer cancel()
		if b, err := java.VirtualThreadDump(ctx, d.t); err != nil {
			d.noVirt = true
		} else if vd, err := java.ParseBytes(b); err == nil && len(vd) > 0 {
			d.virtual += java.MergeVirtual(s, vd[0])
			s.Paused = true
		}
	}
	s.StackSource = d.name
	return nil
}

// dump takes a thread dump for s.
func (d *dumpSource) dump(ctx context.Context, s *model.Sample) error {
	ctx, cancel := context.WithTimeout(ctx, max(attachTimeout, jcmdTimeout))
	defer cancel()
	start := time.Now()
	r, err := d.take(ctx)
	if err != nil {
		// Said only of a dump that came: a SIGQUIT whose listener never
		// started, or a retry as the JVM's user that got no answer
		// either, is in the error.
		d.unanswered = d.unanswered || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
		return err
	}
	d.started = d.started || r.Started
	d.asOwner = d.asOwner || r.AsOwner
	d.longest = max(d.longest, time.Since(start))
	d.taken++
	dumps, err := java.ParseBytes(r.Dump)
	if err != nil {
		return fmt.Errorf("reading the JVM's thread dump: %w", err)
	}
	if len(dumps) == 0 {
		return errors.New("the JVM's reply holds no thread dump")
	}
	if java.Merge(s, dumps[0]) == 0 {
		d.unjoined++
	}
	// A safepoint stops every Java thread and wakes the blocked ones to
	// check in: switches it explains are not progress.
	s.Paused = true
	d.agreed = d.prev != nil && sameDump(d.prev, s)
	d.prev = s
	return nil
}

// sameDump reports whether two dumped samples give every thread they
// share the same Java stack, state and locks, and the same deadlocks.
func sameDump(a, b *model.Sample) bool {
	if len(a.JavaDeadlocks) != len(b.JavaDeadlocks) {
		return false
	}
	was := byTID(a)
	for i := range b.Threads {
		now := &b.Threads[i]
		w, ok := was[now.TID]
		if !ok {
			continue
		}
		if (w.Java == nil) != (now.Java == nil) || !slices.Equal(w.Stack, now.Stack) {
			return false
		}
		if w.Java != nil && (w.Java.State != now.Java.State || !slices.Equal(w.Java.Locks, now.Java.Locks) || !slices.Equal(w.Java.Ownable, now.Java.Ownable)) {
			return false
		}
	}
	return true
}

// still reports whether no thread that prev's dump gave a Java stack can
// have moved by s, so that another safepoint would only read the same
// stacks again. Each such thread is still when it has the same CPU time
// and context switches and is not running, or when the JVM found it in a
// deadlock or waiting for a lock held by one (a monitor's waiter wakes to
// recheck now and then, so its switches count on). No thread came or
// went, except the JVM's attach listener, which the dump itself starts.
func still(prev, s *model.Sample) bool {
	if prev == nil {
		return false
	}
	stuck := deadlocked(prev)
	was := byTID(prev)
	seen := 0
	for i := range s.Threads {
		now := &s.Threads[i]
		w, ok := was[now.TID]
		if !ok {
			if now.Name == "Attach Listener" {
				continue
			}
			return false
		}
		seen++
		switch {
		case w.Java == nil || len(w.Stack) == 0:
			// No Java stack to keep: the JVM's own machinery.
		case stuck[now.TID]:
		case now.State == model.StateRunning || now.State == model.StateUnknown || w.CPUTime != now.CPUTime ||
			w.Voluntary != now.Voluntary || w.Involuntary != now.Involuntary:
			return false
		}
	}
	return seen == len(prev.Threads)
}

// deadlocked are the threads of a sample's dump that can never move: those
// the JVM's own deadlock report names, and those waiting for a lock one of
// them (or of these) holds. A walk from the named threads through the
// locks they hold to those locks' waiters: linear in threads and locks.
func deadlocked(s *model.Sample) map[int]bool {
	stuck := map[int]bool{}
	var todo []int
	for _, dl := range s.JavaDeadlocks {
		for _, l := range dl.Links {
			if !stuck[l.TID] {
				stuck[l.TID] = true
				todo = append(todo, l.TID)
			}
		}
	}
	if len(todo) == 0 {
		return stuck
	}
	held := map[int][]string{}      // a thread → the locks it holds
	waitersOf := map[string][]int{} // a lock's address → who waits to take it
	for _, t := range s.Threads {
		if t.Java == nil {
			continue
		}
		for _, l := range t.Java.Locks {
			switch {
			case l.Addr == "":
			case l.Kind == java.Locked.String():
				held[t.TID] = append(held[t.TID], l.Addr)
			case l.Kind == java.WaitingToLock.String() || l.Kind == java.Parking.String():
				waitersOf[l.Addr] = append(waitersOf[l.Addr], t.TID)
			}
		}
		for _, o := range t.Java.Ownable {
			if o.Addr != "" {
				held[t.TID] = append(held[t.TID], o.Addr)
			}
		}
	}
	for len(todo) > 0 {
		tid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, addr := range held[tid] {
			for _, w := range waitersOf[addr] {
				if !stuck[w] {
					stuck[w] = true
					todo = append(todo, w)
				}
			}
			delete(waitersOf, addr) // each lock's waiters once
		}
	}
	return stuck
}

// byTID indexes a sample's threads by tid.
func byTID(s *model.Sample) map[int]*model.Thread {
	m := make(map[int]*model.Thread, len(s.Threads))
	for i := range s.Threads {
		m[s.Threads[i].TID] = &s.Threads[i]
	}
	return m
}

// reuse gives s the stacks and Java facts of prev's dump, for threads
// that proved still.
func reuse(prev, s *model.Sample) {
	was := byTID(prev)
	for i := range s.Threads {
		w, ok := was[s.Threads[i].TID]
		if !ok || w.Java == nil {
			continue
		}
		s.Threads[i].Java = w.Java
		if len(s.Threads[i].Stack) == 0 {
			s.Threads[i].Stack = w.Stack
		}
	}
	s.JavaDeadlocks = append(s.JavaDeadlocks, prev.JavaDeadlocks...)
}

// Last marks the next sample as the run's last.
func (d *dumpSource) Last() { d.last = true }

func (d *dumpSource) Notes() []model.Note {
	var notes []model.Note
	if d.taken == 0 && d.reused == 0 {
		return nil
	}
	if d.virtual > 0 {
		notes = append(notes, model.NewNote(model.NoteJavaVirtual, d.virtual))
	}
	if d.started {
		notes = append(notes, model.NewNote(model.NoteJavaAttachStart))
	}
	if d.asOwner {
		notes = append(notes, model.NewNote(model.NoteJavaAttachAsUser, d.t.UID, d.t.GID))
	}
	if d.reused > 0 {
		notes = append(notes, model.NewNote(model.NoteJavaReused, d.reused, d.reused+d.taken))
	}
	if d.longest > 0 {
		if d.longest < time.Millisecond {
			notes = append(notes, model.NewNote(model.NoteJavaSafepointShort))
		} else {
			notes = append(notes, model.NewNote(model.NoteJavaSafepoint, d.longest.Milliseconds()))
		}
	}
	if d.unjoined > 0 {
		notes = append(notes, model.NewNote(model.NoteJavaUnjoined, d.unjoined))
	}
	return notes
}
