package report

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// hintLiterals are the string literals that start a hint's words, in the
// functions of the package whose names end in "hint" or "Hint".
func hintLiterals(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		out = append(out, hintLiteralsOf(t, name)...)
	}
	return out
}

func hintLiteralsOf(t *testing.T, name string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || !strings.HasSuffix(strings.ToLower(fn.Name.Name), "hint") {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || len(s) < 20 || !unicode.IsLetter([]rune(s)[0]) {
				return true // a piece of a sentence: ": never hold…", " For Go, …"
			}
			out = append(out, s)
			return true
		})
	}
	return out
}

// TestHintsDocumented: every hint in report/ (a string that starts a
// sentence, in a function whose name ends in "hint") has a row in hintRows
// (so the JSON names its basis), every row a hint, and every key a row of
// docs/hints.md.
func TestHintsDocumented(t *testing.T) {
	lits := hintLiterals(t)
	if len(lits) < 30 {
		t.Fatalf("%d hints found in report/, want them all", len(lits))
	}
	used := map[string]bool{}
	byKey := map[string]string{}
	for _, s := range lits {
		key := hintKey(s)
		if other, ok := byKey[key]; ok && key != "" {
			t.Errorf("two hints have the key %q: %q and %q: make its start longer", key, other, s)
		}
		byKey[key] = s
		// A literal with a verb has its constant start only.
		if key == "" {
			t.Errorf("no hintRows row for the hint %q: add one (its key, how it starts) and a row to docs/hints.md", s)
			continue
		}
		used[key] = true
	}
	doc, err := os.ReadFile("../docs/hints.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, r := range hintRows {
		if keys[r.key] {
			t.Errorf("the key %q is in hintRows twice", r.key)
		}
		keys[r.key] = true
		if !used[r.key] {
			t.Errorf("hintRows has %q, which no hint in report/ starts as %q: delete it", r.key, r.starts)
		}
		if !regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(r.key) + "` \\|").Match(doc) {
			t.Errorf("docs/hints.md has no row for the hint %q", r.key)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\|").FindAllSubmatch(doc, -1) {
		if !keys[string(m[1])] {
			t.Errorf("docs/hints.md has a row for %q, which no hint has", m[1])
		}
	}
}
