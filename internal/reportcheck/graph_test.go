package reportcheck

import (
	"strings"
	"testing"
)

// TestGraphWords checks the checks of the Markdown's wait-for graph
// against the JSON: a drawing that says what the JSON says passes; one
// that draws a candidate, an edge nothing backs, or leaves a cycle's step
// undrawn or unmarked does not.
func TestGraphWords(t *testing.T) {
	js := `{"target":{"pid":1},
	"waits":[{"from":{"pid":1,"tid":2},"to":{"pid":1,"tid":3},"resource":"futex:0x10","basis":"proven"},
	         {"from":{"pid":1,"tid":3},"to":{"pid":1,"tid":2},"resource":"futex:0x20","basis":"proven"},
	         {"from":{"pid":1,"tid":4},"basis":"candidate"}],
	"locks":[{"id":"futex:0x10","holder":{"pid":1,"tid":3},"waiters":[{"pid":1,"tid":2}]},
	         {"id":"futex:0x20","holder":{"pid":1,"tid":2},"waiters":[{"pid":1,"tid":3}]}],
	"cycles":[[{"pid":1,"tid":2},{"pid":1,"tid":3}]]}`
	const good = "flowchart LR\n" +
		"  t_1_2[\"tid 2\"]\n" +
		"  t_1_3[\"tid 3\"]\n" +
		"  lock_2{{\"mutex 0x10\"}}\n" +
		"  lock_3{{\"mutex 0x20\"}}\n" +
		"  t_1_2 -->|\"waits to take it\"| lock_2\n" +
		"  lock_2 -->|\"held by · exact\"| t_1_3\n" +
		"  t_1_3 -->|\"waits to take it\"| lock_3\n" +
		"  lock_3 -->|\"held by · exact\"| t_1_2\n" +
		"  classDef hot stroke:#d62728,stroke-width:3px\n" +
		"  class t_1_2,t_1_3,lock_2,lock_3 hot\n" +
		"  linkStyle 0,1,2,3 stroke:#d62728,stroke-width:3px\n"
	md := func(flow string) []byte { return []byte("### hangdoc\n\n```mermaid\n" + flow + "```\n") }
	for _, c := range []struct {
		name string
		flow string
		want []string
	}{
		{"as the JSON has it", good, nil},
		{"a candidate drawn", strings.Replace(good, "  classDef", "  t_1_4[\"tid 4\"]\n  t_1_4 -->|\"waits · candidate\"| t_1_3\n  classDef", 1),
			[]string{"a candidate drawn", "no proven or inferred wait"}},
		{"an edge nothing backs", strings.Replace(good, "  classDef", "  t_1_3 -->|\"waits\"| t_1_3\n  classDef", 1), []string{"no proven or inferred wait"}},
		{"a step not marked", strings.Replace(good, "linkStyle 0,1,2,3", "linkStyle 0,1,2", 1), []string{"not marked"}},
		{"a step not drawn", strings.Replace(good, "  lock_3 -->|\"held by · exact\"| t_1_2\n", "", 1), []string{"step not drawn", "proven wait not drawn"}},
		{"a stray line", good + "  click t_1_2 call x()\n", []string{"should not have"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := graphWords(md(c.flow), []byte(js))
			if len(got) != len(c.want) {
				t.Fatalf("%d problems, want %d: %v", len(got), len(c.want), got)
			}
			for _, w := range c.want {
				found := false
				for _, p := range got {
					found = found || strings.Contains(p.What, w)
				}
				if !found {
					t.Errorf("no problem says %q: %v", w, got)
				}
			}
		})
	}
	if got := graphWords([]byte("### hangdoc\n"), []byte(js)); len(got) != 1 {
		t.Errorf("no drawing: %v, want one problem", got)
	}
	if got := graphWords([]byte("### hangdoc\n"), []byte(`{"target":{"pid":1}}`)); len(got) != 0 {
		t.Errorf("no drawing of no waits: %v", got)
	}
}
