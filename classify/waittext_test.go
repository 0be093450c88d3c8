package classify_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The runtime's wait-reason text is read in one place, model.ParseGoWait:
// rules match its kinds. No string literal of classify's or report's code
// (comments and tests aside) is a wait reason, or a remark the runtime
// adds to one.
func TestNoWaitReasonText(t *testing.T) {
	reasons := map[string]bool{
		"chan receive": true, "chan send": true, "select": true, "select (no cases)": true,
		"sync.Mutex.Lock": true, "sync.RWMutex.RLock": true, "sync.RWMutex.Lock": true,
		"sync.WaitGroup.Wait": true, "sync.Cond.Wait": true, "semacquire": true, "IO wait": true,
		"running": true, "runnable": true, "(leaked)": true, "(nil chan)": true, "(durable)": true,
		"chan receive (nil chan)": true, "chan send (nil chan)": true,
	}
	// Where "select" is a C or Python function's name and "running" a
	// thread's state in words, not a wait reason.
	allowed := map[string]bool{"dumpthreads.go select": true, "threads.go select": true, "python.go select": true, "words.go running": true}
	checked := 0
	for _, dir := range []string{".", "../report"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil && reasons[s] && !allowed[filepath.Base(path)+" "+s] {
					t.Errorf("%s: the wait reason %q as text: match model.ParseGoWait's kinds", fset.Position(lit.Pos()), s)
				}
				return true
			})
		}
	}
	if checked < 20 {
		t.Fatalf("%d files checked: the test no longer finds the code", checked)
	}
}
