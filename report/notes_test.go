package report

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

// hangdocSources parses the non-test Go files of every hangdoc package
// the binary is built from, report's own left out.
func hangdocSources(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{.Dir}}{{end}}", "../cmd/hangdoc").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset, files := token.NewFileSet(), map[string]*ast.File{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(path, "github.com/hangdoc/hangdoc/") || path == "github.com/hangdoc/hangdoc/report" {
			continue
		}
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = f
		}
	}
	if len(files) < 50 {
		t.Fatalf("%d files parsed: go list found too few packages", len(files))
	}
	return fset, files
}

// noteKinds is model's NoteKind constants, by name, with their values.
func noteKinds(t *testing.T) map[string]model.NoteKind {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../model/note.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]model.NoteKind{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "NoteKind" {
				continue
			}
			lit := v.Values[0].(*ast.BasicLit)
			val, _ := strconv.Unquote(lit.Value)
			kinds[v.Names[0].Name] = model.NoteKind(val)
		}
	}
	return kinds
}

// TestNoteWords: every kind of note has words, and every note made
// outside report (model.NewNote, or a helper taking the kind first: the
// memory reader's r.note) passes as many values as its words take.
func TestNoteWords(t *testing.T) {
	kinds := noteKinds(t)
	if len(kinds) < 60 {
		t.Fatalf("%d note kinds found in model/note.go", len(kinds))
	}
	for name, k := range kinds {
		if f, ok := noteWords[k]; !ok || noteArity(f) < 0 {
			t.Errorf("model.%s (%q) has no words, or words with a bad verb", name, k)
		}
	}
	fset, files := hangdocSources(t)
	calls := 0
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) == 0 || c.Ellipsis.IsValid() {
				return true
			}
			sel, ok := c.Args[0].(*ast.SelectorExpr)
			if !ok {
				return true
			}
			k, ok := kinds[sel.Sel.Name]
			if !ok {
				return true
			}
			calls++
			if got, want := len(c.Args)-1, noteArity(noteWords[k]); got != want {
				t.Errorf("%s: a note of kind %s with %d values; its words take %d", fset.Position(c.Pos()), sel.Sel.Name, got, want)
			}
			return true
		})
	}
	if calls < 60 {
		t.Errorf("%d notes made: the walk found too few", calls)
	}
}

func TestNoteText(t *testing.T) {
	for _, tc := range []struct {
		n    model.Note
		want string
	}{
		{model.NewNote(model.NoteThreadOf, 12, 10), "12 is a thread of pid 10: diagnosing pid 10"},
		{model.NewNote(model.NoteDumpTooBig, "d.txt", 64), "d.txt: larger than 64 MiB: only its first 64 MiB were read"},
		{model.NewNote(model.NoteStdSources, "sync/once.go", "go1.26.8", "linux", "amd64"),
			"the standard library's sources (sync/once.go) were not read: no toolchain of go1.26.8 on this machine (GOROOT, ~/sdk/go1.26.8, or the module cache's golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64); their frames are named by where they lock"},
		{model.NewNote(model.NotePerfUserOnly), "on-CPU sampling sees user code only (kernel profiling refused): time in system calls is not caught"},
		// A newer recording's kind, or values that do not fit: said as
		// they are, never a format error.
		{model.Note{Kind: "from_the_future", Args: []string{"a", "b"}}, "from_the_future: a; b"},
		{model.Note{Kind: model.NoteThreadOf, Args: []string{"12"}}, "thread_of: 12"},
		{model.Note{Kind: model.NoteText, Args: []string{"100% done"}}, "100% done"},
	} {
		if got := NoteText(tc.n); got != tc.want {
			t.Errorf("NoteText(%v) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// sentenceWord is a word of English in a format string: two letters or
// more, its verbs taken out first.
var (
	sentenceWord = regexp.MustCompile(`\b[A-Za-z]{2,}\b`)
	fmtVerb      = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[a-zA-Z]`)
)

// sentenceAllowed are the places outside report that may still build a
// sentence with fmt.Sprintf, each with why: the functions, as FILE:FUNC.
var sentenceAllowed = map[string]string{
	// The victim the demo runs is a program of its own: what it prints
	// is its output, not hangdoc's report.
	"internal/victim/victim.go:*": "the demo victim's own output",
	// A Go dump's partial read says why it stopped, and the file; a
	// recording keeps it as the report's partial_reason.
	"sampler/replay/dumps.go:timedOut": "partial_reason",
	"sampler/record.go:Record":         "partial_reason",
	"sampler/replay/dumps.go:binary":   "why a file is not text, said in the error that refuses it",
	"sampler/paths.go:readSockaddr":    "an error's text, kept in a thread's PathErr",
}

// TestNoSentencesOutsideReport: the gathering side returns facts, report
// words them. No fmt.Sprintf outside report builds a sentence — a format
// of three words or more, paths not counted — except to make an error (in
// an Error method, into an Err field, wrapped by fmt.Errorf or errors.New,
// or as the label of an internal/deadline call, which its error says), or
// where sentenceAllowed says why.
func TestNoSentencesOutsideReport(t *testing.T) {
	fset, files := hangdocSources(t)
	root, _ := filepath.Abs("..")
	seen := map[string]bool{}
	for name, f := range files {
		rel, _ := filepath.Rel(root, name)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if fn.Name.Name == "Error" {
				continue
			}
			key := rel + ":" + fn.Name.Name
			if _, ok := sentenceAllowed[key]; ok {
				seen[key] = true
				continue
			}
			if _, ok := sentenceAllowed[rel+":*"]; ok {
				seen[rel+":*"] = true
				continue
			}
			// Calls whose result becomes an error: their arguments may be
			// sentences.
			inError := map[ast.Node]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
						// internal/deadline's label is its error's text.
						if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "fmt" && sel.Sel.Name == "Errorf" || x.Name == "errors" && sel.Sel.Name == "New" || x.Name == "deadline") {
							for _, a := range n.Args {
								inError[a] = true
							}
						}
					}
				case *ast.AssignStmt:
					for i, l := range n.Lhs {
						if sel, ok := l.(*ast.SelectorExpr); ok && strings.HasSuffix(sel.Sel.Name, "Err") && i < len(n.Rhs) {
							inError[n.Rhs[i]] = true
						}
					}
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && strings.HasSuffix(k.Name, "Err") {
						inError[n.Value] = true
					}
				}
				return true
			})
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if inError[n] {
					return false
				}
				c, ok := n.(*ast.CallExpr)
				if !ok || len(c.Args) == 0 {
					return true
				}
				sel, ok := c.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "fmt" || sel.Sel.Name != "Sprintf" {
					return true
				}
				lit, ok := c.Args[0].(*ast.BasicLit)
				if !ok {
					return true
				}
				format, _ := strconv.Unquote(lit.Value)
				var kept []string
				for _, w := range strings.Fields(fmtVerb.ReplaceAllString(format, " ")) {
					if !strings.Contains(w, "/") { // a path is no word
						kept = append(kept, w)
					}
				}
				words := sentenceWord.FindAllString(strings.Join(kept, " "), -1)
				if strings.Contains(format, " ") && len(words) >= 3 {
					t.Errorf("%s (%s): a sentence built outside report: %q; return a fact (model.Note, a typed field) and word it in report", fset.Position(c.Pos()), key, format)
				}
				return true
			})
		}
	}
	for key := range sentenceAllowed {
		if !seen[key] {
			t.Errorf("sentenceAllowed has %s, which no longer exists: take it out", key)
		}
	}
}
