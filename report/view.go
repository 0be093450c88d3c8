package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Palette colours the text view. Its zero value prints no colour; each field
// wraps a string in one colour.
type Palette struct {
	Bad, Warn, Good, Dim, Bold func(string) string
}

func paint(f func(string) string, s string) string {
	if f == nil {
		return s
	}
	return f(s)
}

func (p Palette) class(c string) func(string) string {
	switch c {
	case "blocked", "deadlock", "exited":
		return p.Bad
	case "spinning":
		return p.Warn
	case "working":
		return p.Good
	}
	return p.Dim
}

// row is one line of the thread table: a thread, or a group of threads
// with the same class, name pattern and wait.
type row struct {
	TIDs    []int
	Where   string // innermost stack frame, when a stack source gave one
	Name    string
	Class   string
	CPU     float64 // the group's highest
	State   string
	Wchan   string
	Syscall string
	Note    string
}

// rowKey is what the threads of one table row share.
type rowKey struct {
	class, name, state, wchan, call, waits, where, callName string
	tid                                                     int
}

// maxRows bounds the thread table; the rest is counted in one line.
const maxRows = 20

// threadRows groups the threads that share a wait, so 400 workers parked on
// one lock are one line. Holders, spinners and cycle members stay alone.
// Rows come in the order an on-call reads them: holders, spinning, working,
// blocked, idle.
func threadRows(r *Report) (rows []row, hidden int) {
	alone := map[int]bool{}
	for _, c := range r.Cycles {
		for _, ref := range c {
			alone[ref.TID] = true
		}
	}
	index := map[rowKey]int{}
	for _, t := range r.Threads {
		call, note := "", ""
		if t.Syscall != nil {
			call = t.Syscall.Text
		}
		if t.FD != "" {
			call += " → " + t.FD
		}
		if len(t.Holds) > 0 {
			note = "holds " + strings.Join(t.Holds, ", ")
		}
		key := rowKey{t.Class, namePattern(t.Name), t.State, t.Wchan, call, t.Waits, t.where, "", 0}
		if t.Class == "idle" && t.Syscall != nil {
			// Parked threads group by call, whatever their futex: a runtime's
			// idle threads each sleep on a word of their own.
			key = rowKey{class: t.Class, name: namePattern(t.Name), state: t.State, wchan: t.Wchan, callName: t.Syscall.Name}
		}
		if len(t.Holds) > 0 || t.Class == "spinning" || alone[t.TID] {
			key = rowKey{tid: t.TID}
		}
		if i, ok := index[key]; ok {
			g := &rows[i]
			g.TIDs = append(g.TIDs, t.TID)
			g.CPU = max(g.CPU, t.CPUPercent)
			g.Name = namePattern(t.Name)
			continue
		}
		index[key] = len(rows)
		if t.Waits != "" {
			note = strings.TrimPrefix(note+"; waits for "+t.Waits, "; ")
		}
		rows = append(rows, row{
			TIDs: []int{t.TID}, Where: t.where, Name: t.Name, Class: t.Class, CPU: t.CPUPercent,
			State: t.State, Wchan: t.Wchan, Syscall: call, Note: note,
		})
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(rank(a.Note, a.Class), rank(b.Note, b.Class)), cmp.Compare(len(b.TIDs), len(a.TIDs)))
	})
	if len(rows) > maxRows {
		for _, x := range rows[maxRows:] {
			hidden += len(x.TIDs)
		}
		rows = rows[:maxRows]
	}
	return rows, hidden
}

// rank orders table rows as an on-call reads them: lock holders,
// spinning, working, blocked, idle.
func rank(note, class string) int {
	switch {
	case strings.HasPrefix(note, "holds"), strings.HasPrefix(note, "probably holds"):
		return 0
	case class == "spinning":
		return 1
	case class == "working":
		return 2
	case class == "blocked":
		return 3
	}
	return 4
}

// namePattern folds each run of digits in a thread name into one '*', so
// worker-1 … worker-12 group.
func namePattern(name string) string {
	var b strings.Builder
	digits := false
	for _, r := range name {
		if unicode.IsDigit(r) {
			if !digits {
				b.WriteByte('*')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	return b.String()
}

// tidCell is the TID column: one TID, or the first of a group and its size.
func tidCell(tids []int) string {
	if len(tids) == 1 {
		return strconv.Itoa(tids[0])
	}
	return fmt.Sprintf("%d… ×%d", slices.Min(tids), len(tids))
}

// tidList prints TIDs compactly: "4191", "4191-4197", "12 threads: 4191, 4192, …".
func tidList(tids []int) string {
	if len(tids) == 1 {
		return strconv.Itoa(tids[0])
	}
	s := slices.Sorted(slices.Values(tids))
	if s[len(s)-1]-s[0] == len(s)-1 {
		return fmt.Sprintf("%d-%d", s[0], s[len(s)-1])
	}
	var parts []string
	for i, t := range s {
		if i == 12 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, strconv.Itoa(t))
	}
	return strings.Join(parts, ", ")
}

func refList(refs []Ref) string {
	tids := make([]int, 0, len(refs))
	goroutines := false
	for _, r := range refs {
		tids = append(tids, r.TID)
		if r.Goroutine != 0 {
			tids[len(tids)-1], goroutines = int(r.Goroutine), true
		}
	}
	if len(tids) == 0 {
		return "none"
	}
	if goroutines {
		return "goroutines " + tidList(tids)
	}
	return tidList(tids)
}

// threadLabel names a thread by tid and name, from the report's table; a
// thread of another process by its pid too.
func threadLabel(r *Report, ref Ref) string {
	if ref.Goroutine != 0 {
		if g := r.goroutine(ref.Goroutine); g != nil && len(g.Stack) > 0 {
			return fmt.Sprintf("goroutine %d (%s)", ref.Goroutine, g.where)
		}
		return fmt.Sprintf("goroutine %d", ref.Goroutine)
	}
	if ref.TID == 0 {
		// A process: the holder of a file lock, the end of a pipe.
		for _, p := range r.Processes {
			if p.PID == ref.PID {
				return fmt.Sprintf("pid %d (%s)", p.PID, shortCmd(p.Cmdline))
			}
		}
		return fmt.Sprintf("pid %d", ref.PID)
	}
	if ref.PID != r.Target.PID && ref.PID != 0 {
		return fmt.Sprintf("pid %d tid %d", ref.PID, ref.TID)
	}
	if t := r.thread(ref.TID); t != nil {
		return fmt.Sprintf("tid %d (%s)", t.TID, t.Name)
	}
	return fmt.Sprintf("tid %d", ref.TID)
}

func cycleText(r *Report, c []Ref) string {
	var parts []string
	for _, ref := range c {
		parts = append(parts, threadLabel(r, ref))
	}
	return strings.Join(append(parts, threadLabel(r, c[0])), " → ")
}

func samplingText(r *Report) string {
	if r.Sampling.FromDumps || r.Sampling.IntervalMS == 0 && r.Sampling.Samples > 0 {
		return fmt.Sprintf("%s read from files (%s): stacks only, no CPU or kernel evidence", plural(r.Sampling.Samples, "snapshot", "snapshots"), r.Sampling.StackSource)
	}
	s := fmt.Sprintf("%d samples, %s apart, over %.1fs", r.Sampling.Samples, msText(r.Sampling.IntervalMS), float64(r.Sampling.DurationMS)/1000)
	if r.Sampling.Samples == 1 {
		s = "1 sample"
	}
	if r.Sampling.Requested != r.Sampling.Samples {
		s += fmt.Sprintf(" (%d requested)", r.Sampling.Requested)
	}
	return s
}

func msText(ms int64) string {
	if ms%1000 == 0 {
		return fmt.Sprintf("%ds", ms/1000)
	}
	return fmt.Sprintf("%dms", ms)
}

// nsName is a thread's name, with its id in the target's own PID
// namespace where that differs: "t1; 42 in its own PID namespace".
func nsName(t Thread) string {
	if t.NSTID == 0 {
		return t.Name
	}
	return fmt.Sprintf("%s; %d in its own PID namespace", t.Name, t.NSTID)
}

func targetText(r *Report) string {
	t := r.Target
	var parts []string
	if t.PID != 0 && t.NSPID != 0 {
		parts = append(parts, fmt.Sprintf("pid %d (%d in its own PID namespace)", t.PID, t.NSPID))
	} else if t.PID != 0 {
		parts = append(parts, fmt.Sprintf("pid %d", t.PID))
	}
	if t.Cmdline != "" {
		parts = append(parts, shorten(strings.Join(strings.Fields(t.Cmdline), " "), 100))
	}
	s := strings.Join(parts, " · ")
	rt := t.Runtime
	if t.RuntimeVersion != "" {
		rt += " " + t.RuntimeVersion
	}
	if rt != "" {
		s += " · " + rt
	}
	if t.User != "" {
		s += " · user " + t.User
	}
	if !t.Started.IsZero() {
		s += " · started " + t.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return s
}

func hostText(r *Report) string {
	return fmt.Sprintf("hangdoc %s · host %s · Linux %s %s · %s", r.HangdocVersion, r.Host.Name, r.Host.Kernel, r.Host.Arch,
		r.Time.UTC().Format("2006-01-02 15:04:05 UTC"))
}

// memoryView is the memory line of a report: what a dump cannot have is
// said so.
func memoryView(r *Report) string {
	if r.Sampling.FromDumps {
		return "not in a dump"
	}
	return memoryText(r.Memory)
}

func memoryText(m Memory) string {
	if len(m.RSSBytes) == 0 || slices.Max(m.RSSBytes) == 0 {
		return "not read"
	}
	var parts []string
	for _, b := range m.RSSBytes {
		parts = append(parts, Bytes(b))
	}
	if len(parts) > 6 {
		parts = append(parts[:2], "…", parts[len(parts)-1])
	}
	return fmt.Sprintf("RSS %s (%s)", strings.Join(parts, " → "), m.Trend)
}

func shorten(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func classCounts(r *Report) string {
	count := map[string]int{}
	for _, t := range r.Threads {
		count[t.Class]++
	}
	return countText(count)
}

// countText says how many are in each class, spinning first: "1
// spinning, 8 blocked".
func countText(count map[string]int) string {
	var parts []string
	for _, c := range []string{"spinning", "working", "blocked", "waiting", "idle"} {
		if count[c] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[c], c))
		}
	}
	return strings.Join(parts, ", ")
}

// chainRow is one chain of waits and the threads that share it.
type chainRow struct {
	TIDs []int
	Text string // without the leading "tid N"
}

// chainRows groups the waits' chains: eight workers blocked on one pipe
// are one line.
func chainRows(r *Report) []chainRow {
	var rows []chainRow
	index := map[string]int{}
	for _, w := range r.Waits {
		if w.Chain == "" {
			continue
		}
		if w.From.Goroutine != 0 {
			// A goroutine's chain names it in its own words.
			rows = append(rows, chainRow{Text: w.Chain})
			continue
		}
		text := strings.TrimPrefix(w.Chain, fmt.Sprintf("tid %d", w.From.TID))
		if i, ok := index[text]; ok {
			rows[i].TIDs = append(rows[i].TIDs, w.From.TID)
			continue
		}
		index[text] = len(rows)
		rows = append(rows, chainRow{TIDs: []int{w.From.TID}, Text: strings.TrimSpace(text)})
	}
	return rows
}

func chainLabel(tids []int) string {
	switch len(tids) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("tid %d", tids[0])
	}
	return fmt.Sprintf("tids %s", tidList(tids))
}

func orphanText(o Orphan) string {
	return fmt.Sprintf("pid %d (%s), state %s, %.0fs old, %.0f%% CPU, parent now pid %d", o.PID, o.Command, o.State, o.AgeSeconds, o.CPUPercent, o.PPID)
}

const orphanWhy = "their parent exited (a timeout that killed a shell but not its children?); they may hold pipe ends others wait on, and burn CPU"

// maxFrames bounds each stack the text views print.
const maxFrames = 10

// stackRows picks the stacks worth printing: one per table row (a group's
// first thread), for rows that are not idle.
func stackRows(r *Report, rows []row) []Thread {
	byTID := make(map[int]int, len(r.Threads)) // an index: a Thread is large
	for i, t := range r.Threads {
		byTID[t.TID] = i
	}
	var out []Thread
	for _, x := range rows {
		i, ok := byTID[x.TIDs[0]]
		if !ok {
			continue
		}
		if t := r.Threads[i]; len(t.Stack)+len(t.NativeStack) > 0 && x.Class != "idle" {
			out = append(out, t)
		}
	}
	return out
}

func hasWhere(rows []row) bool {
	for _, x := range rows {
		if x.Where != "" {
			return true
		}
	}
	return false
}

// goRow is one row of the goroutine table: a group of goroutines with the
// same state and stack.
type goRow struct {
	IDs   []int
	Count int
	Class string
	State string
	Wait  string // the longest wait the runtime stamped, "" for none
	Where string
	Note  string
	First Goroutine // the group's first goroutine: its stack and id
}

// maxRowLocks bounds the locks a group's row says it holds, and those it
// waits for: the rest are counted.
const maxRowLocks = 5

// goroutineRows turns the groups into table rows in the order an on-call
// reads them: holders, spinning, working, blocked, idle; biggest first
// within each. The runtime's, the profiler's and an HTTP server's own
// goroutines are counted in system, not shown.
func goroutineRows(r *Report) (rows []goRow, hidden, system int) {
	// One pass over the goroutines gathers what each group's row says.
	type agg struct {
		first        *Goroutine
		wait         int
		holds, waits []string
		// has are the holds and waits listed, and more how many more
		// there are than a row lists.
		has                  map[string]bool
		moreHolds, moreWaits int
	}
	groups := make([]agg, len(r.Groups))
	add := func(a *agg, list *[]string, more *int, s string) {
		if a.has[s] {
			return
		}
		if a.has == nil {
			a.has = map[string]bool{}
		}
		a.has[s] = true
		if len(*list) == maxRowLocks {
			*more++
			return
		}
		*list = append(*list, s)
	}
	for i := range r.Goroutines {
		g := &r.Goroutines[i]
		a := &groups[g.Group]
		if a.first == nil {
			a.first = g
		}
		a.wait = max(a.wait, g.WaitMinutes)
		for _, h := range g.Holds {
			add(a, &a.holds, &a.moreHolds, "h"+h)
		}
		if g.Waits != "" {
			add(a, &a.waits, &a.moreWaits, "w"+g.Waits)
		}
	}
	// The lists were kept with their kind's letter in front, so that a
	// lock both held and waited for by a group is in both.
	words := func(list []string, more int) string {
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = s[1:]
		}
		s := strings.Join(out, ", ")
		if more > 0 {
			s += fmt.Sprintf(" and %d more", more)
		}
		return s
	}
	for i, g := range r.Groups {
		a := groups[i]
		if a.first == nil {
			continue
		}
		if a.first.System {
			system += g.Count
			continue
		}
		x := goRow{Count: g.Count, Class: g.Class, State: g.State, First: *a.first, Where: a.first.where}
		for _, id := range g.IDs {
			x.IDs = append(x.IDs, int(id))
		}
		if a.wait > 0 {
			x.Wait = fmt.Sprintf("%dm", a.wait)
		}
		var notes []string
		if len(a.holds) > 0 {
			notes = append(notes, "probably holds "+words(a.holds, a.moreHolds))
		}
		if len(a.waits) > 0 {
			notes = append(notes, "waits for "+words(a.waits, a.moreWaits))
		}
		if g.Grew {
			notes = append(notes, fmt.Sprintf("grew %d → %d", g.Counts[0], g.Counts[len(g.Counts)-1]))
		}
		x.Note = strings.Join(notes, "; ")
		rows = append(rows, x)
	}
	slices.SortStableFunc(rows, func(a, b goRow) int {
		return cmp.Or(cmp.Compare(rank(a.Note, a.Class), rank(b.Note, b.Class)), cmp.Compare(b.Count, a.Count))
	})
	if len(rows) > maxRows {
		for _, x := range rows[maxRows:] {
			hidden += x.Count
		}
		rows = rows[:maxRows]
	}
	return rows, hidden, system
}

// goIDCell is the IDS column: the group's ids, compactly.
func goIDCell(x goRow) string {
	s := tidList(x.IDs)
	if x.Count > len(x.IDs) {
		s += ", …"
	}
	return s
}

// goClassCounts says how many goroutines are in each class.
func goClassCounts(r *Report) string {
	count := map[string]int{}
	for _, g := range r.Goroutines {
		count[g.Class] += 1 + len(g.Twins)
	}
	return countText(count)
}

// goStackRows picks the goroutine stacks worth printing: one per row that
// is not idle, at most maxGoStacks.
func goStackRows(rows []goRow) []goRow {
	var out []goRow
	for _, x := range rows {
		if x.Class != "idle" && len(out) < maxGoStacks {
			out = append(out, x)
		}
	}
	return out
}

const maxGoStacks = 6

func goStackHeader(x goRow) string {
	s := fmt.Sprintf("goroutine %d [%s]", x.First.ID, x.State)
	if l := labelText(x.First.Labels); l != "" {
		s += " " + l
	}
	if x.Count > 1 {
		s += fmt.Sprintf(" and %d more like it", x.Count-1)
	}
	return s
}

// frameText prints a frame as a traceback does, arguments included.
func frameText(f Frame) string {
	if f.File == "" {
		return f.Func + f.Args
	}
	return fmt.Sprintf("%s%s (%s:%d)", f.Func, f.Args, f.File, f.Line)
}
