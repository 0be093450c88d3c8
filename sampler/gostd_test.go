package sampler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

func TestStdRel(t *testing.T) {
	for _, c := range []struct{ fn, file, want string }{
		{"sync.(*Once).doSlow", "/usr/local/go/src/sync/once.go", "sync/once.go"},
		{"sync.(*Once).doSlow", "/home/u/src/go/src/sync/once.go", "sync/once.go"},
		{"net/http.(*Transport).getConn", "/root/go/pkg/mod/golang.org/toolchain@v0.0.1-go1.26.0.linux-amd64/src/net/http/transport.go", "net/http/transport.go"},
		{"database/sql.(*DB).conn", "/opt/go/src/database/sql/sql.go", "database/sql/sql.go"},
		{"sync.(*Once).doSlow", "/usr/local/go/src/other/once.go", ""},
		{"sync.(*Once).doSlow", "once.go", ""},
	} {
		if got := stdRel(c.fn, c.file); got != c.want {
			t.Errorf("stdRel(%q, %q) = %q, want %q", c.fn, c.file, got, c.want)
		}
	}
}

// The standard library's files are read from a toolchain whose VERSION is
// the program's, never another's.
func TestGoStdSources(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "src", "sync"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "VERSION"), []byte("go1.26.8\ntime 2026-11-01\n"), 0o644)
	os.WriteFile(filepath.Join(root, "src", "sync", "once.go"), []byte("package sync\n"), 0o644)
	waiter := model.Goroutine{ID: 6, State: "sync.Mutex.Lock", Stack: []model.Frame{
		{Func: "internal/sync.runtime_SemacquireMutex", File: "/b/go/src/runtime/sema.go", Line: 95},
		{Func: "sync.(*Mutex).Lock", File: "/b/go/src/sync/mutex.go", Line: 46},
		{Func: "sync.(*Once).doSlow", File: "/b/go/src/sync/once.go", Line: 74},
		{Func: "main.(*Config).Get", File: "/app/main.go", Line: 25},
	}}
	other := model.Goroutine{ID: 7, State: "chan receive", Stack: []model.Frame{{Func: "net/http.(*conn).serve", File: "/b/go/src/net/http/server.go", Line: 9}}}
	samples := []model.Sample{{Goroutines: []model.Goroutine{waiter, other}}}

	got, note := GoStdSources(samples, "go1.26.8", []string{filepath.Join(root, "nothing"), root})
	if note != nil || len(got) != 1 || strings.Join(got["/b/go/src/sync/once.go"], "") != "package sync" {
		t.Errorf("go1.26.8: %v, note %q; want once.go read from %s", got, note, root)
	}
	for _, v := range []string{"go1.26.7", ""} {
		got, note = GoStdSources(samples, v, []string{root})
		if len(got) != 0 || note == nil || note.Args[0] != "sync/once.go" {
			t.Errorf("%q: %v, note %q; want nothing read, and why", v, got, note)
		}
	}
	if got, note := GoStdSources([]model.Sample{{Goroutines: []model.Goroutine{other}}}, "go1.26.8", []string{root}); len(got) != 0 || note != nil {
		t.Errorf("no lock waits: %v, note %q; want nothing read and nothing said", got, note)
	}
}
