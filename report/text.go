package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Text writes the report for a terminal or a ticket: the verdict first, then
// the threads that matter, the locks, the evidence and a hint.
func Text(w io.Writer, r *Report, p Palette) error {
	var b strings.Builder
	fmt.Fprintln(&b, paint(p.Dim, hostText(r)))
	fmt.Fprintf(&b, "target   %s\n", targetText(r))
	fmt.Fprintf(&b, "sampled  %s\n", samplingText(r))
	if r.Sampling.Partial {
		fmt.Fprintf(&b, "%s\n", paint(p.Warn, "PARTIAL: "+r.Sampling.PartialReason))
	}
	fmt.Fprintln(&b)
	verdict := paint(p.Bold, paint(p.class(r.Verdict), strings.ToUpper(r.Verdict)))
	fmt.Fprintf(&b, "%s  (%s confidence)\n", verdict, r.Confidence)
	fmt.Fprintf(&b, "%s\n", r.Summary)

	if len(r.Goroutines) > 0 {
		goText(&b, r, p)
	}
	rows, hidden := threadRows(r)
	if len(r.Threads) > 0 || len(r.Goroutines) == 0 {
		threadText(&b, r, p, rows, hidden)
	}
	if len(r.Tasks) > 0 {
		taskText(&b, r)
	}
	if len(r.Locks) > 0 {
		fmt.Fprintf(&b, "\nLOCKS\n")
		for _, l := range r.Locks {
			holder := "holder unknown"
			if l.Holder != nil {
				holder = heldBy(l) + " " + paint(p.Bold, threadLabel(r, *l.Holder))
			}
			fmt.Fprintf(&b, "  %s %s  %s; %d waiting: %s\n", lockKindWord(l.Kind), l.Address, holder, len(l.Waiters), refList(l.Waiters))
			fmt.Fprintf(&b, "    %s\n", paint(p.Dim, "basis: "+l.Basis))
		}
	}
	if len(r.Cycles) > 0 {
		fmt.Fprintf(&b, "\nCYCLES\n")
		for _, c := range r.Cycles {
			fmt.Fprintf(&b, "  %s\n", paint(p.Bad, cycleText(r, c)))
		}
	}
	if rows := chainRows(r); len(rows) > 0 {
		fmt.Fprintf(&b, "\nWAITS\n")
		for _, c := range rows {
			fmt.Fprintf(&b, "  %s\n", strings.TrimSpace(chainLabel(c.TIDs)+" "+c.Text))
		}
	}
	if len(r.Orphans) > 0 {
		fmt.Fprintf(&b, "\nLEFT BEHIND  %s\n", paint(p.Dim, orphanWhy))
		for _, o := range r.Orphans {
			fmt.Fprintf(&b, "  %s\n", orphanText(o))
		}
	}
	fmt.Fprintf(&b, "\nEVIDENCE\n")
	for _, e := range r.Evidence {
		fmt.Fprintf(&b, "  - %s\n", e)
	}
	for _, n := range r.Sampling.Notes {
		fmt.Fprintf(&b, "  - note: %s\n", n)
	}
	fmt.Fprintf(&b, "\nMEMORY   %s\n", memoryView(r))
	fmt.Fprintf(&b, "\nHINT     %s\n", r.Hint)
	_, err := io.WriteString(w, trimLines(b.String()))
	return err
}

// trimLines drops the trailing blanks tabwriter pads the last column with.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// threadText writes the thread table and the threads' stacks.
func threadText(b *strings.Builder, r *Report, p Palette, rows []row, hidden int) {
	fmt.Fprintf(b, "\nTHREADS  %d: %s\n", len(r.Threads), classCounts(r))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	stacks := hasWhere(rows)
	if r.Sampling.FromDumps {
		// A dump has no CPU, state, wchan or syscall: no columns for them.
		fmt.Fprintln(tw, "  TID\tNAME\tCLASS\tWHERE\t")
		for _, x := range rows {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", tidCell(x.TIDs), x.Name, paint(p.class(x.Class), x.Class), dash(x.Where), x.Note)
		}
		tw.Flush()
		fmt.Fprintf(b, "  %s\n", paint(p.Dim, "(CPU, scheduling state, wchan and syscalls: not in a dump)"))
	} else if stacks {
		fmt.Fprintln(tw, "  TID\tNAME\tCLASS\tCPU%\tST\tWHERE\tWCHAN\tSYSCALL\t")
	} else {
		fmt.Fprintln(tw, "  TID\tNAME\tCLASS\tCPU%\tST\tWCHAN\tSYSCALL\t")
	}
	for _, x := range rows {
		if r.Sampling.FromDumps {
			break
		}
		where := ""
		if stacks {
			where = dash(x.Where) + "\t"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.1f\t%s\t%s%s\t%s\t%s\n", tidCell(x.TIDs), x.Name, paint(p.class(x.Class), x.Class),
			x.CPU, x.State, where, dash(x.Wchan), dash(x.Syscall), x.Note)
	}
	tw.Flush()
	if hidden > 0 {
		fmt.Fprintf(b, "  … and %d more threads in smaller groups (all are in --json)\n", hidden)
	}

	if ts := stackRows(r, rows); len(ts) > 0 {
		fmt.Fprintf(b, "\nSTACKS  (%s, innermost first)\n", r.Sampling.StackSource)
		for _, t := range ts {
			fmt.Fprintf(b, "  tid %d (%s):\n", t.TID, nsName(t))
			for _, l := range stackLines(append(slices.Clone(t.NativeStack), t.Stack...)) {
				fmt.Fprintf(b, "      %s\n", l)
			}
		}
	}
}

// goText writes the goroutine table, biggest groups first, and the stacks
// of the groups that are not idle.
func goText(b *strings.Builder, r *Report, p Palette) {
	rows, hidden, system := goroutineRows(r)
	fmt.Fprintf(b, "\nGOROUTINES  %d in %d groups: %s\n", r.Goroutines.Count(), len(r.Groups), goClassCounts(r))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  COUNT\tIDS\tCLASS\tSTATE\tWAITED\tWHERE\t")
	for _, x := range rows {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", x.Count, shorten(goIDCell(x), 24), paint(p.class(x.Class), x.Class), x.State, dash(x.Wait), x.Where, x.Note)
	}
	tw.Flush()
	if hidden > 0 {
		fmt.Fprintf(b, "  … and %d more goroutines in smaller groups (all are in --json)\n", hidden)
	}
	if system > 0 {
		fmt.Fprintf(b, "  %s\n", paint(p.Dim, fmt.Sprintf("(and %s of the runtime's, the profiler's or an HTTP server's machinery: in --json)", plural(system, "goroutine", "goroutines"))))
	}
	if st := goStackRows(rows); len(st) > 0 {
		fmt.Fprintf(b, "\nGOROUTINE STACKS  (%s, innermost first)\n", r.Sampling.StackSource)
		for _, x := range st {
			fmt.Fprintf(b, "  %s:\n", goStackHeader(x))
			for i, f := range x.First.Stack {
				if i == maxFrames {
					fmt.Fprintf(b, "      … %d more\n", len(x.First.Stack)-maxFrames)
					break
				}
				fmt.Fprintf(b, "      %s\n", frameText(f))
			}
		}
	}
}

// heldBy words a named holder as sure as its basis: "held by" where an
// owner is recorded, "probably held by" where the source or the one
// candidate left says so.
func heldBy(l Lock) string {
	if l.BasisKind == "" || l.BasisKind == "exact" {
		return "held by"
	}
	return "probably held by"
}

// maxNative bounds the native frames shown above a Python thread's
// stack; its Python frames are shown up to maxFrames whatever they are.
const maxNative = 8

// stackLines are a thread's stack as the text and Markdown reports show
// it, innermost first: a Python thread's native frames (marked, at most
// maxNative, those nearest its Python frames kept), then its frames (at
// most maxFrames).
func stackLines(stack []Frame) []string {
	var lines []string
	n := 0
	for n < len(stack) && stack[n].Native {
		n++
	}
	native, rest := stack[:n], stack[n:]
	if len(native) > maxNative {
		lines = append(lines, fmt.Sprintf("… %d native frames further in", len(native)-maxNative))
		native = native[len(native)-maxNative:]
	}
	for _, f := range native {
		lines = append(lines, stackFrameText(f)+"  [native]")
	}
	for i, f := range rest {
		if i == maxFrames {
			lines = append(lines, fmt.Sprintf("… %d more", len(rest)-maxFrames))
			break
		}
		lines = append(lines, stackFrameText(f))
	}
	return lines
}

// stackFrameText is one frame of a thread's stack: "func (file:line)", or
// for native code without line tables "func (the mapped file)".
func stackFrameText(f Frame) string {
	if f.File == "" {
		return f.Func
	}
	if f.Line == 0 {
		return fmt.Sprintf("%s (%s)", f.Func, f.File)
	}
	return fmt.Sprintf("%s (%s:%d)", f.Func, f.File, f.Line)
}
