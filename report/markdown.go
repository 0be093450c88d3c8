package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Markdown writes the report for an incident ticket.
func Markdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### hangdoc: **%s** (%s confidence)\n\n", strings.ToUpper(r.Verdict), r.Confidence)
	fmt.Fprintf(&b, "%s\n\n", mdText(r.Summary))
	if r.Sampling.Partial {
		fmt.Fprintf(&b, "> **Partial:** %s\n\n", mdText(r.Sampling.PartialReason))
	}
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Target | %s |\n", cell(targetText(r)))
	fmt.Fprintf(&b, "| Sampled | %s |\n", cell(samplingText(r)))
	fmt.Fprintf(&b, "| Host | %s |\n\n", cell(hostText(r)))
	graphMarkdown(&b, r)

	if len(r.Goroutines) > 0 {
		goMarkdown(&b, r)
	}
	rows, hidden := threadRows(r)
	if len(r.Threads) > 0 || len(r.Goroutines) == 0 {
		threadMarkdown(&b, r, rows, hidden)
	}
	if len(r.Tasks) > 0 {
		taskMarkdown(&b, r)
	}
	if len(r.Locks) > 0 {
		fmt.Fprintf(&b, "\n#### Locks\n\n")
		for _, l := range r.Locks {
			holder := "holder unknown"
			if l.Holder != nil {
				holder = heldBy(l) + " **" + threadLabel(r, *l.Holder) + "**"
			}
			fmt.Fprintf(&b, "- %s `%s` %s; %d waiting: %s  \n  basis: %s\n", lockKindWord(l.Kind), l.Address, holder, len(l.Waiters), refList(l.Waiters), mdText(l.Basis))
		}
	}
	if len(r.Cycles) > 0 {
		fmt.Fprintf(&b, "\n#### Cycles\n\n")
		for _, c := range r.Cycles {
			fmt.Fprintf(&b, "- %s\n", mdText(cycleText(r, c)))
		}
	}
	if rows := chainRows(r); len(rows) > 0 {
		fmt.Fprintf(&b, "\n#### Waits\n\n")
		for _, c := range rows {
			fmt.Fprintf(&b, "- %s\n", strings.TrimSpace(chainLabel(c.TIDs)+" "+mdText(c.Text)))
		}
	}
	if len(r.Orphans) > 0 {
		fmt.Fprintf(&b, "\n#### Left behind\n\n%s.\n\n", mdText(orphanWhy))
		for _, o := range r.Orphans {
			fmt.Fprintf(&b, "- %s\n", mdText(orphanText(o)))
		}
	}
	fmt.Fprintf(&b, "\n#### Evidence\n\n")
	for _, e := range r.Evidence {
		fmt.Fprintf(&b, "- %s\n", mdText(e))
	}
	for _, n := range r.Sampling.Notes {
		fmt.Fprintf(&b, "- note: %s\n", mdText(n))
	}
	fmt.Fprintf(&b, "\n**Memory:** %s\n\n**Hint:** %s\n", memoryView(r), mdText(r.Hint))
	_, err := io.WriteString(w, b.String())
	return err
}

// threadMarkdown writes the thread table and the threads' stacks.
func threadMarkdown(b *strings.Builder, r *Report, rows []row, hidden int) {
	fmt.Fprintf(b, "#### Threads (%d: %s)\n\n", len(r.Threads), classCounts(r))
	if !r.Sampling.FromDumps {
		fmt.Fprintf(b, "| TID | Name | Class | CPU %% | State | Where | wchan | Syscall | |\n|---|---|---|--:|---|---|---|---|---|\n")
	} else {
		fmt.Fprintf(b, "CPU, scheduling state, wchan and syscalls: not in a dump.\n\n| TID | Name | Class | Where | |\n|---|---|---|---|---|\n")
		for _, x := range rows {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", cell(tidCell(x.TIDs)), cell(x.Name), x.Class, code(x.Where), cell(x.Note))
		}
	}
	for _, x := range rows {
		if r.Sampling.FromDumps {
			break
		}
		tids := tidCell(x.TIDs)
		fmt.Fprintf(b, "| %s | %s | %s | %.1f | %s | %s | %s | %s | %s |\n", cell(tids), cell(x.Name), x.Class, x.CPU, x.State,
			code(x.Where), code(x.Wchan), code(x.Syscall), cell(x.Note))
	}
	if ts := stackRows(r, rows); len(ts) > 0 {
		fmt.Fprintf(b, "\n#### Stacks (%s, innermost first)\n", r.Sampling.StackSource)
		for _, t := range ts {
			fmt.Fprintf(b, "\ntid %d (%s):\n\n```\n", t.TID, mdText(nsName(t)))
			for _, l := range stackLines(append(slices.Clone(t.NativeStack), t.Stack...)) {
				fmt.Fprintf(b, "%s\n", l)
			}
			fmt.Fprintf(b, "```\n")
		}
	}
	if hidden > 0 {
		fmt.Fprintf(b, "\n… and %d more threads in smaller groups.\n", hidden)
	}
}

// goMarkdown writes the goroutine table and the stacks of the groups that
// are not idle.
func goMarkdown(b *strings.Builder, r *Report) {
	rows, hidden, system := goroutineRows(r)
	fmt.Fprintf(b, "#### Goroutines (%d in %d groups: %s)\n\n", r.Goroutines.Count(), len(r.Groups), goClassCounts(r))
	fmt.Fprintf(b, "| Count | IDs | Class | State | Waited | Where | |\n|--:|---|---|---|---|---|---|\n")
	for _, x := range rows {
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s |\n", x.Count, cell(shorten(goIDCell(x), 24)), x.Class, cell(x.State), dash(x.Wait), code(x.Where), cell(x.Note))
	}
	if hidden > 0 {
		fmt.Fprintf(b, "\n… and %d more goroutines in smaller groups.\n", hidden)
	}
	if system > 0 {
		fmt.Fprintf(b, "\n(and %s of the runtime's, the profiler's or an HTTP server's machinery: in the JSON report)\n", plural(system, "goroutine", "goroutines"))
	}
	if st := goStackRows(rows); len(st) > 0 {
		fmt.Fprintf(b, "\n#### Goroutine stacks (%s, innermost first)\n", mdText(r.Sampling.StackSource))
		for _, x := range st {
			fmt.Fprintf(b, "\n%s:\n\n```\n", mdText(goStackHeader(x)))
			for i, f := range x.First.Stack {
				if i == maxFrames {
					fmt.Fprintf(b, "… %d more\n", len(x.First.Stack)-maxFrames)
					break
				}
				fmt.Fprintf(b, "%s\n", frameText(f))
			}
			fmt.Fprintf(b, "```\n")
		}
	}
	fmt.Fprintln(b)
}

var mdEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)

// mdText escapes prose so thread names and paths print as they are.
func mdText(s string) string { return mdEscaper.Replace(s) }

func cell(s string) string { return strings.ReplaceAll(mdText(s), "|", `\|`) }

func code(s string) string {
	if s == "" {
		return "-"
	}
	return "`" + strings.NewReplacer("`", "'", "|", `\|`).Replace(s) + "`"
}
