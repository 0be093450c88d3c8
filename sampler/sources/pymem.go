package sources

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/pymem"
)

// pyMemSource reads a Python target's threads from the interpreter's
// memory while it runs (sampler/pymem): no py-spy, no stop. The last
// sample's read takes the frames' variables too (the lock rules read
// only that sample's).
type pyMemSource struct {
	fs       sampler.FS
	t        *sampler.Target
	r        *pymem.Reader
	broken   error // an open given up: its read may still be blocked
	torn     int   // stacks left out because they changed on every read
	last     bool  // the next read is the run's last
	tasksErr error // why the asyncio tasks were not all read
	// tornTasks are the asyncio tasks left out because they changed
	// between the last two reads while their loop ran.
	tornTasks int
}

func hexAddr(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// Last asks the next read for the frames' variables.
func (m *pyMemSource) Last() { m.last = true }

func (m *pyMemSource) Name() model.Format { return model.SourceMemory }

func (m *pyMemSource) Stacks(ctx context.Context, s *model.Sample) error {
	if m.broken != nil {
		return m.broken
	}
	if m.r == nil {
		// The runtime's file is read through /proc/PID/root, which blocks
		// on a hung filesystem: given up at exeTimeout, and not tried
		// again.
		r, err := deadline.Within(ctx, exeTimeout, "reading the interpreter's symbols", func() (*pymem.Reader, error) {
			return pymem.Open(m.fs, m.t.PID)
		})
		if errors.Is(err, deadline.ErrAbandoned) {
			m.broken = err
		}
		if err != nil {
			return err
		}
		m.r = r
	}
	m.r.ReadVars(m.last)
	known := make([]int, len(s.Threads))
	for i, t := range s.Threads {
		known[i] = cmp.Or(t.NSTID, t.TID)
	}
	m.r.KnownThreads(known)
	threads, err := m.r.Threads(ctx)
	if err != nil {
		return err
	}
	if m.last {
		// asyncio's tasks, once a run: what the last sample's waits are,
		// as the loop's thread left them (stillTasks).
		for _, t := range m.stillTasks(ctx, threads, s) {
			mt := model.Task{Addr: hexAddr(t.Addr), Name: t.Name, Done: t.Done, Failed: t.Failed, Stack: t.Stack, Vars: t.Vars, AwaitsType: t.AwaitsType}
			if t.Awaits != 0 {
				mt.Awaits = hexAddr(t.Awaits)
			}
			for _, a := range t.AwaitsAll {
				mt.AwaitsAll = append(mt.AwaitsAll, hexAddr(a))
			}
			if t.FD >= 0 {
				mt.FD = &t.FD
			}
			s.Tasks = append(s.Tasks, mt)
		}
	}
	// The interpreter's thread ids are the target's own: in a container,
	// its threads' NSTIDs.
	byTID := make(map[int]int, len(s.Threads))
	byNS := map[int]int{}
	for i, t := range s.Threads {
		byTID[t.TID] = i
		if t.NSTID != 0 {
			byNS[t.NSTID] = i
		}
	}
	var awaiting map[string][]int // tasks by the object they await
	for _, t := range threads {
		i, ok := byNS[t.TID]
		if !ok {
			i, ok = byTID[t.TID]
		}
		if !ok || t.TID == 0 {
			continue
		}
		s.Threads[i].Python = &model.PythonThread{ThreadName: t.Name, OwnsGIL: t.HoldsGIL, Ident: t.Ident}
		if t.Torn {
			// A stack that changed under every read is no evidence of a
			// wait: the thread keeps its kernel evidence alone.
			m.torn++
			continue
		}
		s.Threads[i].Stack, s.Threads[i].Vars = t.Frames, t.Vars
		if len(s.Tasks) > 0 {
			// A thread-pool thread whose work item resolves the future a
			// task awaits: the task waits for that thread.
			for _, a := range m.r.WorkItemResolves(t.Frames, t.Vars) {
				if awaiting == nil {
					awaiting = make(map[string][]int, len(s.Tasks))
					for k, tk := range s.Tasks {
						if tk.Awaits != "" {
							awaiting[tk.Awaits] = append(awaiting[tk.Awaits], k)
						}
					}
				}
				for _, k := range awaiting[hexAddr(a)] {
					s.Tasks[k].Thread = s.Threads[i].TID
				}
			}
		}
	}
	return nil
}

// maxTaskReads bounds the reads of the tasks while their loop runs.
const maxTaskReads = 3

// stillTasks reads the asyncio tasks as the loop's thread — the one that
// runs them, whose stack runs BaseEventLoop._run_once — left them: read
// while the kernel shows it was not scheduled once (its schedstat's run
// count the same before and after), they are whole. A loop that ran
// during the read has its tasks read again, up to maxTaskReads times; of
// the last two reads, a task whose stack or await changed between them is
// left out (counted in a note): a half-written task is no wait. With no
// loop's thread found, nothing runs the tasks.
func (m *pyMemSource) stillTasks(ctx context.Context, threads []pymem.Thread, s *model.Sample) []pymem.Task {
	loop := 0
	for _, t := range threads {
		if model.RunsAsyncioLoop(t.Frames) {
			loop = t.TID
		}
	}
	// The reader's thread ids are the target's own: its /proc's, by NSTID.
	for _, t := range s.Threads {
		if loop != 0 && t.NSTID == loop {
			loop = t.TID
			break
		}
	}
	runs := func() (uint64, bool) {
		if loop == 0 {
			return 0, true
		}
		return sampler.TimesScheduled(m.fs, m.t.PID, loop)
	}
	var prev []pymem.Task
	for try := 1; ; try++ {
		before, ok1 := runs()
		tasks, err := m.r.Tasks(ctx)
		after, ok2 := runs()
		if err != nil {
			m.tasksErr = err
		}
		if ok1 && ok2 && before == after || err != nil {
			return tasks
		}
		if try > 1 {
			same := sameTasks(prev, tasks)
			if len(same) == len(tasks) || try == maxTaskReads {
				m.tornTasks = len(tasks) - len(same)
				return same
			}
		}
		prev = tasks
	}
}

// sameTasks are the tasks of b that a read just before it, a, saw the
// same: the same frames at the same lines, awaiting the same object.
func sameTasks(a, b []pymem.Task) []pymem.Task {
	was := make(map[uint64]*pymem.Task, len(a))
	for i := range a {
		was[a[i].Addr] = &a[i]
	}
	var out []pymem.Task
	for _, t := range b {
		p := was[t.Addr]
		if p != nil && p.Awaits == t.Awaits && p.Done == t.Done && slices.Equal(p.Stack, t.Stack) {
			out = append(out, t)
		}
	}
	return out
}

func (m *pyMemSource) Notes() []model.Note {
	if m.r == nil {
		return nil
	}
	how := "its layouts table"
	if m.r.DebugOffsets() {
		how = "its debug offsets"
	}
	out := []model.Note{model.NewNote(model.NotePyMemoryRead, m.r.Version(), how)}
	if m.torn > 0 {
		out = append(out, model.NewNote(model.NotePyTornLeft, m.torn))
	}
	if m.tasksErr != nil {
		out = append(out, model.NewNote(model.NotePyTasksUnread, m.tasksErr))
	}
	if m.tornTasks > 0 {
		out = append(out, model.NewNote(model.NotePyTasksTorn, m.tornTasks, maxTaskReads))
	}
	return out
}
