package reportcheck

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const head = "BLOCKED  (high confidence)\n"
	const md = "### hangdoc: **BLOCKED** (high confidence)\n"
	lock := `"locks":[{"id":"m","holder":{"pid":1,"tid":7},"basis":"b","basis_kind":"probable"}]`
	for _, c := range []struct {
		name, text, json string
		want             []string // a part of each problem's What, in any order
	}{
		{"clean", head, `{"verdict":"blocked","confidence":"high","summary":"tid 7 (w) is blocked in read(3) on pipe:[1]","hint":"Look at the writer.","hint_basis":"k"}`, nil},
		{"empty slot", head, `{"verdict":"blocked","confidence":"high","summary":"goroutine 7 (main.a) is blocked in ; goroutine 8 (main.b) is blocked in ","hint":"h.","hint_basis":"k"}`,
			[]string{"separator", "ends where a fact"}},
		{"held by comma", head, `{"verdict":"blocked","confidence":"high","summary":"s","hint":"h.","hint_basis":"k","evidence":["waits for a lock held by , of pid 3"]}`, []string{"separator"}},
		{"empty parens", head, `{"verdict":"blocked","confidence":"high","summary":"waits in ()","hint":"h.","hint_basis":"k"}`, []string{"parentheses"}},
		{"verb", head + "%!d(string=x)\n", `{"verdict":"blocked","confidence":"high","summary":"s","hint":"h.","hint_basis":"k"}`, []string{"formatting verb"}},
		{"nil", head, `{"verdict":"blocked","confidence":"high","summary":"s <nil>","hint":"h.","hint_basis":"k"}`, []string{"nil", "nil"}},
		{"trailing", head, `{"verdict":"blocked","confidence":"high","summary":"s;","hint":"h —","hint_basis":"k"}`, []string{"trailing", "trailing"}},
		{"verdict word", "IDLE  (high confidence)\n", `{"verdict":"blocked","confidence":"high","summary":"s","hint":"h.","hint_basis":"k"}`, []string{"the verdict IDLE", "the verdict IDLE"}},
		{"deadlock words", head, `{"verdict":"blocked","confidence":"high","summary":"deadlock between 2 threads: a; b","hint":"h.","hint_basis":"k"}`, []string{"deadlock verdict", "no cycle"}},
		{"more cycles than the JSON", "DEADLOCK  (high confidence)\n", `{"verdict":"deadlock","confidence":"high","summary":"deadlock between 2 threads: a; b (and 4 more cycles)","hint":"h.","hint_basis":"lock-order","cycles":[[{"pid":1,"tid":2},{"pid":1,"tid":3}]]}`, []string{"and 4 more cycles", "no wait-for graph"}},
		{"a cycle's hint without a cycle", head, `{"verdict":"blocked","confidence":"high","summary":"s","hint":"Threads take the same locks in opposite orders.","hint_basis":"lock-order"}`, []string{"chosen by a cycle"}},
		{"sure holder, probable basis", head, `{"verdict":"blocked","confidence":"high","summary":"tid 7 (w) holds mutex 0x1 and is blocked","hint":"h.","hint_basis":"k",` + lock + `}`, []string{"not exact"}},
		{"probable holder said so", head, `{"verdict":"blocked","confidence":"high","summary":"goroutine 9 waits for m, probably held by tid 7","hint":"h.","hint_basis":"k",` + lock + `}`, nil},
		{"holder not in locks", head, `{"verdict":"blocked","confidence":"high","summary":"x; held by goroutine 4","hint":"h.","hint_basis":"k"}`, []string{"no lock in the JSON"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Check([]byte(c.text), []byte(strings.Replace(md, "BLOCKED", strings.Fields(c.text)[0], 1)), []byte(c.json))
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
}
