// Package reportcheck checks a rendered report for the marks of a sentence
// built from missing facts: an empty slot ("is blocked in ;", "held by ,"),
// a dangling separator, a formatting verb that found no argument, a nil
// printed; and for words in the text that the JSON does not carry (a
// verdict, a holder named more surely than its lock's basis). The tests
// run it on every corpus case and every recording, in all three formats.
package reportcheck

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Problem is one thing wrong with a report: where (a format and a field),
// what, and the text it was found in.
type Problem struct {
	Where string
	What  string
	Text  string
}

func (p Problem) String() string { return fmt.Sprintf("%s: %s: %q", p.Where, p.What, p.Text) }

// report is the part of the JSON report the check reads: its sentences,
// and the facts the text must not contradict.
type report struct {
	Verdict    string   `json:"verdict"`
	Confidence string   `json:"confidence"`
	Summary    string   `json:"summary"`
	Hint       string   `json:"hint"`
	HintBasis  string   `json:"hint_basis"`
	Evidence   []string `json:"evidence"`
	Sampling   struct {
		Notes []string `json:"notes"`
	} `json:"sampling"`
	Threads []struct {
		TID int    `json:"tid"`
		Why string `json:"why"`
	} `json:"threads"`
	Goroutines []struct {
		ID  int64  `json:"id"`
		Why string `json:"why"`
	} `json:"goroutines"`
	Locks []struct {
		ID        string `json:"id"`
		Holder    *ref   `json:"holder"`
		Readers   []ref  `json:"readers"`
		Basis     string `json:"basis"`
		BasisKind string `json:"basis_kind"`
	} `json:"locks"`
	Waits []struct {
		Detail string `json:"detail"`
		Chain  string `json:"chain"`
	} `json:"waits"`
	Cycles [][]ref `json:"cycles"`
	// Tasks are asyncio tasks; a cycle of them is marked on each one.
	Tasks []struct {
		Name       string `json:"name"`
		Deadlocked bool   `json:"deadlocked"`
	} `json:"tasks"`
}

// taskCycle counts the tasks marked deadlocked: a cycle of asyncio tasks
// is in the JSON that way, not in cycles.
func (r *report) taskCycle() int {
	n := 0
	for _, t := range r.Tasks {
		if t.Deadlocked {
			n++
		}
	}
	return n
}

type ref struct {
	PID       int   `json:"pid"`
	TID       int   `json:"tid"`
	Goroutine int64 `json:"goroutine"`
}

// slot is one mark of a missing fact in a sentence.
type slot struct {
	re   *regexp.Regexp
	what string
}

// little words that a fact always follows in hangdoc's sentences ("is"
// and "are" may end a clause: "whose job it is, or …").
const (
	lead   = `(?:in|on|by|of|at|from|held by|waits for|wait for|through)`
	leadIs = `(?:in|on|by|of|at|from|is|are|held by|waits for|wait for|through)`
)

var slots = []slot{
	{regexp.MustCompile(`\b` + lead + ` ?[;,)](?:\s|$)`), "a word that a fact should follow, followed by a separator"},
	{regexp.MustCompile(`\b` + leadIs + `  `), "a word followed by an empty slot (two spaces)"},
	{regexp.MustCompile(`\b` + lead + `\s*$`), "a sentence that ends where a fact should follow"},
	{regexp.MustCompile(`(?:^|[\s,;:(])\(\)`), "empty parentheses"},
	{regexp.MustCompile(`[;,] *[;,]`), "two separators with nothing between"},
	{regexp.MustCompile(`(?:[;,:(→—]|\s-)\s*$`), "a trailing separator"},
	{regexp.MustCompile(`(?:^|\s)\?(?:[\s;,.:)]|$)`), "an unknown actor or place (?) where a name should be"},
	{regexp.MustCompile(`^\s*(?:[;,:]|\.\s)`), "a sentence that starts with a separator"},
}

// verbs are the marks of a formatting slip, in any output.
var verbs = []slot{
	{regexp.MustCompile(`%!`), "a formatting verb with a missing or wrong argument"},
	{regexp.MustCompile(`<nil>`), "a nil printed"},
}

// whole are phrases that end in a little word and are whole: the word is
// dropped before the slots are looked for.
var whole = strings.NewReplacer("was seen in", "was seen", "refers to", "refers", "is named for", "is named", "each waits on", "each waits")

// sentence checks one sentence of the report.
func sentence(where, s string) []Problem {
	var out []Problem
	if strings.TrimSpace(s) == "" {
		return nil
	}
	s = whole.Replace(s)
	for _, sl := range append(slots, verbs...) {
		if sl.re.MatchString(s) {
			out = append(out, Problem{Where: where, What: sl.what, Text: excerpt(s, sl.re)})
		}
	}
	return out
}

// excerpt is the part of s around re's first match.
func excerpt(s string, re *regexp.Regexp) string {
	loc := re.FindStringIndex(s)
	if loc == nil {
		return s
	}
	from, to := max(0, loc[0]-60), min(len(s), loc[1]+60)
	for from > 0 && !utf8Start(s[from]) {
		from--
	}
	for to < len(s) && !utf8Start(s[to]) {
		to++
	}
	return s[from:to]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Check checks a report rendered as text, Markdown and JSON (any may be
// nil, but the contradictions need the JSON).
func Check(text, markdown, jsonDoc []byte) []Problem {
	var out []Problem
	for _, f := range []struct {
		name string
		b    []byte
	}{{"text", text}, {"markdown", markdown}, {"json", jsonDoc}} {
		for _, v := range verbs {
			if loc := v.re.FindIndex(f.b); loc != nil {
				out = append(out, Problem{Where: f.name, What: v.what, Text: excerpt(string(f.b), v.re)})
			}
		}
	}
	if jsonDoc == nil {
		return out
	}
	var r report
	if err := json.Unmarshal(jsonDoc, &r); err != nil {
		return append(out, Problem{Where: "json", What: "not a report: " + err.Error()})
	}
	out = append(out, sentence("summary", r.Summary)...)
	out = append(out, sentence("hint", r.Hint)...)
	if strings.TrimSpace(r.Summary) == "" {
		out = append(out, Problem{Where: "summary", What: "no summary"})
	}
	if strings.TrimSpace(r.Hint) == "" {
		out = append(out, Problem{Where: "hint", What: "no hint"})
	} else if r.HintBasis == "" {
		out = append(out, Problem{Where: "hint_basis", What: "a hint with no fact named for it (report/hints.go, docs/hints.md)", Text: r.Hint})
	}
	for i, e := range r.Evidence {
		out = append(out, sentence(fmt.Sprintf("evidence[%d]", i), e)...)
	}
	for i, n := range r.Sampling.Notes {
		out = append(out, sentence(fmt.Sprintf("sampling.notes[%d]", i), n)...)
	}
	for _, t := range r.Threads {
		out = append(out, sentence(fmt.Sprintf("threads[tid %d].why", t.TID), t.Why)...)
	}
	for _, g := range r.Goroutines {
		out = append(out, sentence(fmt.Sprintf("goroutines[%d].why", g.ID), g.Why)...)
	}
	for _, l := range r.Locks {
		out = append(out, sentence(fmt.Sprintf("locks[%s].basis", l.ID), l.Basis)...)
	}
	for i, wt := range r.Waits {
		out = append(out, sentence(fmt.Sprintf("waits[%d].detail", i), wt.Detail)...)
		out = append(out, sentence(fmt.Sprintf("waits[%d].chain", i), wt.Chain)...)
	}
	out = append(out, verdictWords(text, markdown, &r)...)
	out = append(out, holderWords(&r)...)
	out = append(out, cycleWords(&r)...)
	out = append(out, graphWords(markdown, jsonDoc)...)
	return out
}

var moreCycles = regexp.MustCompile(`\(and (\d+) more cycles\)`)

// cycleHints are the hints that rest on a wait-for cycle (docs/hints.md).
var cycleHints = []string{"go-self-deadlock", "go-cycle", "python-self-deadlock", "self-deadlock", "lock-order", "wait-cycle", "executor-cycle", "join-cycle", "wakeup-cycle"}

// taskCycleHints are the hints that rest on a cycle of asyncio tasks.
var taskCycleHints = []string{"asyncio-lock-order", "asyncio-self-deadlock", "asyncio-await-cycle"}

// cycleWords checks the words that rest on cycles against the JSON's
// cycles: a deadlock named in the summary, "(and N more cycles)", a
// hint chosen by a cycle.
func cycleWords(r *report) []Problem {
	var out []Problem
	if regexp.MustCompile(`^(?:self-deadlock:|deadlock between)`).MatchString(r.Summary) && len(r.Cycles) == 0 && r.taskCycle() == 0 {
		out = append(out, Problem{Where: "summary", What: "a deadlock named, but the JSON has no cycle", Text: r.Summary})
	}
	if strings.HasPrefix(r.Summary, "deadlock between") && strings.Contains(r.Summary, "asyncio tasks") && r.taskCycle() < 2 {
		out = append(out, Problem{Where: "summary", What: "a deadlock of asyncio tasks named, but fewer than two tasks are marked deadlocked", Text: r.Summary})
	}
	if m := moreCycles.FindStringSubmatch(r.Summary); m != nil {
		var n int
		fmt.Sscan(m[1], &n)
		if len(r.Cycles) < n+1 {
			out = append(out, Problem{Where: "summary", What: fmt.Sprintf("%s, but the JSON has %d cycles", m[0], len(r.Cycles)), Text: r.Summary})
		}
	}
	if contains(taskCycleHints, r.HintBasis) && r.taskCycle() == 0 {
		out = append(out, Problem{Where: "hint", What: "a hint chosen by a cycle of asyncio tasks (" + r.HintBasis + "), but no task is marked deadlocked", Text: r.Hint})
	}
	if contains(cycleHints, r.HintBasis) && len(r.Cycles) == 0 {
		out = append(out, Problem{Where: "hint", What: "a hint chosen by a cycle (" + r.HintBasis + "), but the JSON has no cycle", Text: r.Hint})
	}
	return out
}

var (
	textVerdict = regexp.MustCompile(`(?m)^(?:\{[A-Z])*([A-Z]+)\}*  \((\w+) confidence\)$`)
	mdVerdict   = regexp.MustCompile(`(?m)^### hangdoc: \*\*([A-Z]+)\*\* \((\w+) confidence\)$`)
)

// summaryVerdicts are the phrases of a summary that say a verdict, and the
// verdicts they may stand under.
var summaryVerdicts = []struct {
	re       *regexp.Regexp
	verdicts []string
}{
	{regexp.MustCompile(`^(?:self-deadlock:|deadlock (?:between|across))`), []string{"deadlock"}},
	{regexp.MustCompile(`^starved, not hung`), []string{"working"}},
	{regexp.MustCompile(`working: their stacks move`), []string{"working"}},
	{regexp.MustCompile(`^all .* (?:are )?parked waiting for work`), []string{"idle"}},
	{regexp.MustCompile(`the feeder (?:goroutine|thread) is gone`), []string{"idle", "blocked"}},
	{regexp.MustCompile(`^\S+ \d+ (?:\(.*\) )?spins\b|^\d+ (?:threads|goroutines) spin\b`), []string{"spinning"}},
}

// verdictWords finds the verdict the text and Markdown print, and the
// summary's verdict words, against the JSON's verdict.
func verdictWords(text, markdown []byte, r *report) []Problem {
	var out []Problem
	for _, f := range []struct {
		name string
		b    []byte
		re   *regexp.Regexp
	}{{"text", text, textVerdict}, {"markdown", markdown, mdVerdict}} {
		if f.b == nil {
			continue
		}
		m := f.re.FindSubmatch(f.b)
		switch {
		case m == nil:
			out = append(out, Problem{Where: f.name, What: "no verdict line"})
		case !strings.EqualFold(string(m[1]), r.Verdict):
			out = append(out, Problem{Where: f.name, What: fmt.Sprintf("the verdict %s, but the JSON says %s", m[1], r.Verdict), Text: string(m[0])})
		case string(m[2]) != r.Confidence:
			out = append(out, Problem{Where: f.name, What: fmt.Sprintf("%s confidence, but the JSON says %s", m[2], r.Confidence), Text: string(m[0])})
		}
	}
	for _, sv := range summaryVerdicts {
		if sv.re.MatchString(r.Summary) && !contains(sv.verdicts, r.Verdict) {
			out = append(out, Problem{Where: "summary", What: fmt.Sprintf("words of a %s verdict under the verdict %s", strings.Join(sv.verdicts, " or "), r.Verdict), Text: r.Summary})
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// holderRE finds a holder the summary names without a doubt: "tid 7
// (worker) holds", "goroutine 9 holds"; "probably holds" is not it.
var holderRE = regexp.MustCompile(`(?:^|[;:,] )(tid (\d+)(?: \([^)]*\))?|goroutine (\d+)(?: \([^)]*\))?) holds\b|held by (tid (\d+)|goroutine (\d+))`)

// holderWords checks each holder the summary states as a fact against the
// JSON's locks: some lock must name it as holder (or reader) on an exact
// basis. A holder the JSON has only as probable or inferred is to be said
// so ("probably holds").
func holderWords(r *report) []Problem {
	var out []Problem
	for _, m := range holderRE.FindAllStringSubmatchIndex(r.Summary, -1) {
		// "probably held by": the doubt is said.
		if strings.HasSuffix(r.Summary[:m[0]], "probably ") {
			continue
		}
		var tid, gid string
		switch {
		case m[4] >= 0:
			tid = r.Summary[m[4]:m[5]]
		case m[6] >= 0:
			gid = r.Summary[m[6]:m[7]]
		case m[10] >= 0:
			tid = r.Summary[m[10]:m[11]]
		case m[12] >= 0:
			gid = r.Summary[m[12]:m[13]]
		}
		who := "tid " + tid
		if gid != "" {
			who = "goroutine " + gid
		}
		found, exact := false, false
		for _, l := range r.Locks {
			held := append([]ref{}, l.Readers...)
			if l.Holder != nil {
				held = append(held, *l.Holder)
			}
			for _, h := range held {
				if tid != "" && fmt.Sprint(h.TID) == tid && h.Goroutine == 0 || gid != "" && fmt.Sprint(h.Goroutine) == gid {
					found = true
					exact = exact || l.BasisKind == "exact"
				}
			}
		}
		switch {
		case !found:
			out = append(out, Problem{Where: "summary", What: who + " is named a holder, but no lock in the JSON has it as holder", Text: r.Summary[m[0]:m[1]]})
		case !exact:
			out = append(out, Problem{Where: "summary", What: who + " is said to hold a lock without doubt, but the JSON's basis for it is not exact", Text: r.Summary[m[0]:m[1]]})
		}
	}
	return out
}
