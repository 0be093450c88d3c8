package sampler

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// The Go standard library's sources, read from the toolchain of the
// program's own Go version: a frame of sync.(*Once).doSlow is only
// understood against the once.go it was built from, and another version's
// file may have other lines. Without that toolchain they are not read, and
// the report says so: never "edited since the build" for a file of the
// standard library.

// GoToolchainRoots are the places a Go toolchain of version (go1.26.8)
// may be on this machine: $GOROOT, /usr/local/go, /usr/lib/go, ~/sdk/go1.26.8,
// and the module cache's golang.org/toolchain@v0.0.1-go1.26.8.GOOS-GOARCH
// (where `go` puts a toolchain that GOTOOLCHAIN fetched). Each is taken
// only if its VERSION file says that version (GoToolchainSrc).
func GoToolchainRoots(version string) []string {
	var roots []string
	if r := os.Getenv("GOROOT"); r != "" {
		roots = append(roots, r)
	}
	roots = append(roots, "/usr/local/go", "/usr/lib/go", "/usr/lib/golang")
	home, _ := os.UserHomeDir()
	if home != "" {
		roots = append(roots, filepath.Join(home, "sdk", version))
	}
	var caches []string
	if c := os.Getenv("GOMODCACHE"); c != "" {
		caches = append(caches, c)
	}
	for _, p := range filepath.SplitList(os.Getenv("GOPATH")) {
		if p != "" {
			caches = append(caches, filepath.Join(p, "pkg", "mod"))
		}
	}
	if home != "" {
		caches = append(caches, filepath.Join(home, "go", "pkg", "mod"))
	}
	for _, c := range caches {
		roots = append(roots, filepath.Join(c, "golang.org", "toolchain@v0.0.1-"+version+"."+runtime.GOOS+"-"+runtime.GOARCH))
	}
	return roots
}

// GoToolchainSrc is the src directory of the first root whose VERSION
// file names version exactly, "" when none does.
func GoToolchainSrc(version string, roots []string) string {
	if version == "" {
		return ""
	}
	for _, r := range roots {
		if goRootVersion(r) == version {
			return filepath.Join(r, "src")
		}
	}
	return ""
}

// goRootVersion is the first line of a Go root's VERSION file ("go1.26.8").
func goRootVersion(root string) string {
	f, err := os.Open(filepath.Join(root, "VERSION"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		return strings.TrimSpace(sc.Text())
	}
	return ""
}

// goLockStates are the goroutine states of a wait for a sync lock.
var goLockStates = []string{"sync.Mutex.Lock", "sync.RWMutex.Lock", "sync.RWMutex.RLock"}

// GoStdSources reads the standard library's files in which goroutines of
// the last sample take the sync lock they wait for (sync/once.go for
// sync.(*Once).doSlow), from the toolchain of the program's Go version
// (version, "go1.26.8"; "" when not known) found in roots. The result is
// keyed by the paths the frames name, as Recording.Sources is. The note
// says which files were not read, and why; nil when none was left out.
func GoStdSources(samples []model.Sample, version string, roots []string) (map[string][]string, *model.Note) {
	out := map[string][]string{}
	if len(samples) == 0 {
		return out, nil
	}
	var files, rels []string
	for _, g := range samples[len(samples)-1].Goroutines {
		if !slices.Contains(goLockStates, g.State) {
			continue
		}
		lc := model.GoLockCaller(g.Stack)
		if lc < 0 || !model.GoStd(g.Stack[lc].Func) {
			continue
		}
		f := g.Stack[lc]
		rel := stdRel(f.Func, f.File)
		if rel == "" || slices.Contains(files, f.File) {
			continue
		}
		files, rels = append(files, f.File), append(rels, rel)
		if len(files) == 16 {
			break
		}
	}
	if len(files) == 0 {
		return out, nil
	}
	src := GoToolchainSrc(version, roots)
	var missed []string
	for i, f := range files {
		if src == "" {
			missed = append(missed, rels[i])
			continue
		}
		lines, err := readLines(filepath.Join(src, rels[i]))
		if err != nil {
			missed = append(missed, rels[i])
			continue
		}
		out[f] = lines
	}
	if len(missed) == 0 {
		return out, nil
	}
	list := strings.Join(missed, ", ")
	n := model.NewNote(model.NoteStdSources, list, version, runtime.GOOS, runtime.GOARCH)
	switch {
	case version == "":
		n = model.NewNote(model.NoteStdNoVersion, list)
	case src != "":
		n = model.NewNote(model.NoteStdNotIn, list, src)
	}
	return out, &n
}

// stdRel is a standard-library frame's file relative to a toolchain's src
// directory ("sync/once.go"), from the frame's package and the path the
// binary recorded (/usr/local/go/src/sync/once.go); "" when the path
// does not end in the package's directory.
func stdRel(fn, file string) string {
	slash := strings.LastIndexByte(fn, '/')
	pkg := fn
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		pkg = fn[:slash+1+dot]
	}
	i := strings.LastIndex(file, "/src/"+pkg+"/")
	if i < 0 {
		return ""
	}
	rel := file[i+len("/src/"):]
	if strings.Contains(rel[len(pkg)+1:], "/") || !strings.HasSuffix(rel, ".go") {
		return ""
	}
	return rel
}

// AddGoStdSources adds to a Go recording the standard library's sources
// its lock waits need (GoStdSources), from the toolchain of its target's
// Go version, and a note for those not read.
func AddGoStdSources(rec *model.Recording) {
	version, _, _ := strings.Cut(rec.Target.RuntimeVersion, " ") // "go1.26.8 X:jsonv2"
	if rec.Target.Runtime == model.RuntimePython {
		return
	}
	std, note := GoStdSources(rec.Samples, version, GoToolchainRoots(version))
	if len(std) > 0 && rec.Sources == nil {
		rec.Sources = map[string][]string{}
	}
	for f, lines := range std {
		rec.Sources[f] = lines
	}
	if note != nil {
		rec.Notes = append(rec.Notes, *note)
	}
}
