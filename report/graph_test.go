package report

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/sampler/replay"
)

// TestGraphGolden writes every recording's wait-for graph as Mermaid and as
// DOT, against golden files (go test ./report -update), and has Graphviz
// draw the DOT.
func TestGraphGolden(t *testing.T) {
	recs, err := filepath.Glob("testdata/*.recording.json")
	if err != nil || len(recs) == 0 {
		t.Fatalf("no recordings in testdata: %v", err)
	}
	for _, path := range recs {
		name := strings.TrimSuffix(filepath.Base(path), ".recording.json")
		t.Run(name, func(t *testing.T) {
			rec, err := replay.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			r := New(rec, classify.Classify(rec, classify.DefaultOptions()))
			for _, f := range []struct {
				ext    string
				render func(*bytes.Buffer) error
			}{
				{"mmd", func(b *bytes.Buffer) error { return Mermaid(b, r) }},
				{"dot", func(b *bytes.Buffer) error { return DOT(b, r) }},
			} {
				var b bytes.Buffer
				if err := f.render(&b); err != nil {
					t.Fatalf("%s: %v", f.ext, err)
				}
				if f.ext == "dot" {
					drawDOT(t, b.Bytes())
				}
				golden := filepath.Join("testdata", "golden", name+"."+f.ext+".golden")
				if *update {
					if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./report -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), b.String()); diff != "" {
					t.Errorf("%s differs from %s (-want +got):\n%s", f.ext, golden, diff)
				}
			}
		})
	}
}

// drawDOT has Graphviz's dot draw a DOT graph as SVG, and fails on any
// error or warning. .ci/run installs graphviz.
func drawDOT(t *testing.T, src []byte) {
	t.Helper()
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Fatalf("Graphviz's dot is not installed (.ci/run installs graphviz): %v", err)
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = bytes.NewReader(src)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 || !bytes.Contains(out.Bytes(), []byte("</svg>")) {
		t.Fatalf("dot -Tsvg: %v\n%s\n%s", err, stderr.String(), src)
	}
}

// TestGraphBounded: a report with thousands of distinct waits draws at
// most maxGraphNodes nodes, one of which says how many more there are;
// thousands of goroutines at one lock are one node; and the drawing's
// cost grows with its input, not faster.
func TestGraphBounded(t *testing.T) {
	mk := func(n int) *Report {
		r := &Report{Target: Target{PID: 1, Cmdline: "app"}, Verdict: "blocked"}
		for i := range n {
			waiter, holder := 1000+2*i, 1001+2*i
			r.Threads = append(r.Threads, Thread{TID: waiter, Name: "w", Class: "blocked"}, Thread{TID: holder, Name: "h", Class: "blocked"})
			id := "futex:0x" + strconv.Itoa(i)
			r.Locks = append(r.Locks, Lock{ID: id, Kind: "mutex", Address: id[6:], Holder: &Ref{PID: 1, TID: holder}, Waiters: []Ref{{PID: 1, TID: waiter}}, BasisKind: "exact"})
			r.Waits = append(r.Waits, Wait{From: Ref{PID: 1, TID: waiter}, To: &Ref{PID: 1, TID: holder}, Resource: id, Kind: "lock", Basis: "proven"})
		}
		gl := Lock{ID: "sync.Mutex 0x9", Kind: "sync.Mutex", Address: "0x9", Holder: &Ref{PID: 1, Goroutine: 1}, BasisKind: "probable"}
		r.Goroutines = append(r.Goroutines, Goroutine{ID: 1, State: "IO wait", Class: "blocked"})
		for i := range n {
			id := int64(2 + i)
			r.Goroutines = append(r.Goroutines, Goroutine{ID: id, State: "sync.Mutex.Lock", Class: "blocked", where: "main.put"})
			gl.Waiters = append(gl.Waiters, Ref{PID: 1, Goroutine: id})
		}
		r.Locks = append(r.Locks, gl)
		return r
	}
	for _, n := range []int{10, 5000} {
		g := newGraph(mk(n))
		if len(g.nodes) > maxGraphNodes {
			t.Errorf("%d waits: %d nodes, want at most %d", n, len(g.nodes), maxGraphNodes)
		}
		var b bytes.Buffer
		if err := Mermaid(&b, mk(n)); err != nil {
			t.Fatal(err)
		}
		if n > maxGraphNodes && !strings.Contains(b.String(), "more>") {
			t.Errorf("%d waits: no \"+K more\" node:\n%s", n, b.String())
		}
		if want := fmt.Sprintf("%d goroutines in main.put", n); !strings.Contains(b.String(), want) {
			t.Errorf("%d waits: no node %q:\n%s", n, want, b.String())
		}
		if n > maxGraphNodes {
			var d bytes.Buffer
			if err := DOT(&d, mk(n)); err != nil {
				t.Fatal(err)
			}
			drawDOT(t, d.Bytes())
		}
	}
	// Allocations, not time: ten times the waits cost at most about ten
	// times as much.
	small, big := mk(500), mk(5000)
	a := testing.AllocsPerRun(3, func() { newGraph(small) })
	z := testing.AllocsPerRun(3, func() { newGraph(big) })
	if z > 15*a {
		t.Errorf("allocations: %.0f for 500 waits, %.0f for 5000 (want at most 15×)", a, z)
	}
}

// TestGraphTasks: asyncio tasks are drawn where their waits lead — to
// the task that holds the lock they wait for, to a task they await, to
// the process at the other end of their socket, to the thread that runs
// their thread-pool call — a deadlock's tasks hot; a task whose wait
// leads nowhere known is not drawn, and ten thousand such tasks cost no
// node.
func TestGraphTasks(t *testing.T) {
	fd := 6
	r := &Report{Target: Target{PID: 1, Cmdline: "app"}, Verdict: "deadlock",
		Threads:   []Thread{{TID: 1, Name: "MainThread", Class: "idle"}, {TID: 7, Name: "asyncio_0", Class: "blocked"}},
		Processes: []Process{{PID: 9, Cmdline: "server", Verdict: "idle"}},
		Tasks: []Task{
			{Name: "first", Addr: "0xa", State: "waiting", Waits: "asyncio.Lock", Object: "0x2", Holds: []string{"0x1"}, Deadlocked: true},
			{Name: "second", Addr: "0xb", State: "waiting", Waits: "asyncio.Lock", Object: "0x1", Holds: []string{"0x2"}, Deadlocked: true},
			{Name: "caller", Addr: "0xc", State: "waiting", Waits: "socket read", FD: &fd, Resource: "socket:[5]", Peers: []int{9}},
			{Name: "handler", Addr: "0xd", State: "waiting", Waits: "thread-pool call", Thread: 7},
			{Name: "sleeper", Addr: "0xe", State: "waiting", Waits: "sleep"},
		}}
	var b bytes.Buffer
	if err := Mermaid(&b, r); err != nil {
		t.Fatal(err)
	}
	m := b.String()
	for _, want := range []string{
		`task_1 -->|"waits to take it"| lock_0`, `lock_0 -->|"held by · probable"| task_2`,
		`task_2 -->|"waits to take it"| lock_3`, `lock_3 -->|"held by · probable"| task_1`,
		`-->|"socket read · proven"| res_`, `-->|"other end · proven"| p_9`,
		`-->|"thread-pool call · exact"| t_1_7`,
		"class lock_0,task_1,task_2,lock_3 hot",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("drawing lacks %q:\n%s", want, m)
		}
	}
	if strings.Contains(m, "sleeper") {
		t.Errorf("a sleeping task drawn:\n%s", m)
	}
	for i, line := range strings.Split(strings.TrimSpace(m), "\n") {
		if !mermaidLine.MatchString(line) {
			t.Errorf("line %d %q is no line of a flowchart", i, line)
		}
	}
	many := &Report{Target: Target{PID: 1}, Verdict: "idle"}
	for i := range 10000 {
		many.Tasks = append(many.Tasks, Task{Name: "t", Addr: "0x" + strconv.Itoa(i), State: "waiting", Waits: "future"})
	}
	if g := newGraph(many); len(g.nodes) != 0 {
		t.Errorf("tasks whose waits lead nowhere: %d nodes", len(g.nodes))
	}
}

// TestGraphCandidatesNotDrawn: a wait that only has candidates to end it
// is no edge; its waiter is not drawn on its account.
func TestGraphCandidatesNotDrawn(t *testing.T) {
	r := &Report{Target: Target{PID: 1}, Verdict: "blocked",
		Threads: []Thread{{TID: 1, Name: "main", Class: "blocked"}, {TID: 2, Name: "w", Class: "blocked"}},
		Waits:   []Wait{{From: Ref{PID: 1, TID: 1}, Kind: "futex", Basis: "candidate", Candidates: []Ref{{PID: 1, TID: 2}}, CandidateCount: 1}}}
	g := newGraph(r)
	if len(g.edges) != 0 || len(g.nodes) != 0 {
		t.Errorf("a candidate drawn: %+v", g)
	}
	var md strings.Builder
	graphMarkdown(&md, r)
	if md.Len() != 0 {
		t.Errorf("a drawing with nothing in it:\n%s", md.String())
	}
}

var (
	mermaidLine = regexp.MustCompile(`^(?:flowchart LR` +
		`|  [A-Za-z0-9_]+(?:\["[^"]*"\]|\[\["[^"]*"\]\]|\[\("[^"]*"\)\]|\{\{"[^"]*"\}\}|\[/"[^"]*"/\]|\(\["[^"]*"\]\)|>"[^"]*"\])` +
		`|  %% grp_\d+ = [a-z]_[0-9_]+ \+\d+` +
		`|  [A-Za-z0-9_]+ (?:-->|-\.->)\|"[^"|]*"\| [A-Za-z0-9_]+` +
		`|  classDef [a-z]+ [a-z:#0-9,-]+` +
		`|  class [A-Za-z0-9_,]+ [a-z]+` +
		`|  linkStyle [0-9,]+ [a-z:#0-9,-]+)$`)
	// Inside a label: entity codes, <br/>, and nothing else of markup.
	quoted        = regexp.MustCompile(`"([^"]*)"`)
	mermaidEntity = regexp.MustCompile(`#(?:quot|lt|gt|amp|35|124|96|37|92);|<br/>`)
	dotLine       = regexp.MustCompile(`^(?:digraph hangdoc \{|\}|  rankdir=LR;|  labelloc=t;|  label="(?:[^"\\]|\\.)*";` +
		`|  (?:node|edge|[A-Za-z0-9_]+|[A-Za-z0-9_]+ -> [A-Za-z0-9_]+) \[(?:[a-z]+=(?:"(?:[^"\\]|\\.)*"|[a-z0-9]+)(?:, )?)+\];)$`)
)

// FuzzGraphLabels: whatever a thread, a goroutine's function or a process's
// command line is called (quotes, brackets, newlines, markdown, Mermaid's
// and DOT's own syntax), each line of the Mermaid and the DOT is one of
// the lines they are made of, a label cannot end early or carry markup,
// and Graphviz draws the DOT.
func FuzzGraphLabels(f *testing.F) {
	for _, s := range []string{"worker-1", `a"b`, "x]\ny", "**bold** _it_ `code`", "a|b", `#quot; &amp; <br/> %% end`, "{{x}} [(y)] [/z/]", `back\slash \" \n`, "\x00\x1b[31m\xff", "graph TD; A-->B", "-->|\"x\"| y", "\u2028line"} {
		f.Add(s)
	}
	dot, dotErr := exec.LookPath("dot")
	f.Fuzz(func(t *testing.T, s string) {
		r := &Report{Target: Target{PID: 1, Cmdline: s}, Verdict: "deadlock",
			Threads:    []Thread{{TID: 2, Name: s, Class: "blocked"}, {TID: 3, Name: s + s, Class: "blocked"}},
			Goroutines: GoroutineList{{ID: 7, State: s, Class: "blocked", where: s}},
			Processes:  []Process{{PID: 9, Cmdline: s, Verdict: s, State: s}},
			Locks: []Lock{{ID: s, Kind: s, Address: s, Holder: &Ref{PID: 1, TID: 3}, Waiters: []Ref{{PID: 1, TID: 2}}, BasisKind: "exact"},
				{ID: "2" + s, Kind: s, Address: s, Holder: &Ref{PID: 1, TID: 2}, Waiters: []Ref{{PID: 1, TID: 3}}, BasisKind: "exact"}},
			Waits:  []Wait{{From: Ref{PID: 1, Goroutine: 7}, To: &Ref{PID: 9}, Resource: "pipe:" + s, Kind: s, Basis: "proven"}},
			Cycles: [][]Ref{{{PID: 1, TID: 2}, {PID: 1, TID: 3}}, {{PID: 1, Goroutine: 7}, {PID: 9, TID: 9}}},
		}
		var m, d bytes.Buffer
		if err := Mermaid(&m, r); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(m.String(), "\n"), "\n") {
			if !mermaidLine.MatchString(l) {
				t.Fatalf("a Mermaid line out of its grammar: %q", l)
			}
			for _, q := range quoted.FindAllStringSubmatch(l, -1) {
				if rest := mermaidEntity.ReplaceAllString(q[1], ""); strings.ContainsAny(rest, "<>`#&\\%") {
					t.Fatalf("markup in a Mermaid label: %q", l)
				}
			}
		}
		if err := DOT(&d, r); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(d.String(), "\n"), "\n") {
			if !dotLine.MatchString(l) {
				t.Fatalf("a DOT line out of its grammar: %q", l)
			}
		}
		if dotErr == nil {
			cmd := exec.Command(dot, "-Tsvg", "-o", os.DevNull)
			cmd.Stdin = bytes.NewReader(d.Bytes())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Fatalf("dot -Tsvg: %v\n%s\n%s", err, stderr.String(), d.String())
			}
		}
	})
}
