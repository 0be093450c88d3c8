package goroutines

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	corpus, _ := filepath.Glob("testdata/corpus/*.txt")
	for _, name := range append(files, corpus...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dumps, err := Parse(bytes.NewReader(b))
		if err != nil {
			if dumps != nil {
				t.Fatalf("error %v with dumps", err)
			}
			return
		}
		n := 0
		for _, d := range dumps {
			for _, g := range d.Goroutines {
				n++
				// Goroutine 0 (an M's g0) is real, but only from a header
				// that says so; any other zero id is a parser bug.
				if g.ID < 0 || g.ID == 0 && !d.Truncated && !bytes.Contains(b, []byte("goroutine 0")) {
					t.Fatalf("goroutine id %d", g.ID)
				}
				if g.State == "" {
					t.Fatalf("goroutine %d has no state", g.ID)
				}
				for _, fr := range g.Frames {
					if fr.Func == "" {
						t.Fatalf("goroutine %d has a frame without a function", g.ID)
					}
				}
			}
		}
		// Parse is ParseFunc keeping everything; ParseView hands out the
		// same goroutines without copying them.
		m := 0
		if _, err := ParseFunc(bytes.NewReader(b), func(int, Goroutine) { m++ }); err != nil || m != n {
			t.Fatalf("ParseFunc: %d goroutines, %v; Parse: %d", m, err, n)
		}
		i := 0
		all := make([]Goroutine, 0, n)
		for _, d := range dumps {
			all = append(all, d.Goroutines...)
		}
		if _, err := ParseView(bytes.NewReader(b), func(_ int, g *Goroutine) {
			if i >= len(all) || !reflect.DeepEqual(*g, all[i]) {
				t.Fatalf("ParseView's goroutine %d differs from Parse's", i)
			}
			i++
		}); err != nil || i != n {
			t.Fatalf("ParseView: %d goroutines, %v; Parse: %d", i, err, n)
		}
	})
}
