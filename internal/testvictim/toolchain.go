package testvictim

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ModuleBuild says how BuildModule builds a victim module.
type ModuleBuild struct {
	// Toolchain is a GOTOOLCHAIN value ("go1.22.0"); "" or "local" is the
	// go on PATH.
	Toolchain string
	// GOARCH, "" for the host's.
	GOARCH string
	// LDFlags are passed as -ldflags ("-s -w" strips the binary).
	LDFlags string
	// BuildMode is passed as -buildmode ("pie"), "" for the default.
	BuildMode string
	// Env is added to the build's environment ("CGO_ENABLED=0").
	Env []string
}

func (b ModuleBuild) key(dir string) string {
	return strings.Join(append([]string{dir, b.Toolchain, b.GOARCH, b.LDFlags, b.BuildMode}, b.Env...), "|")
}

// Name is a file name for the build's binary.
func (b ModuleBuild) Name(dir string) string {
	tc := b.Toolchain
	if tc == "" || tc == "local" {
		tc = runtime.Version() + "-host"
	}
	n := filepath.Base(dir) + "-" + tc
	if b.GOARCH != "" {
		n += "-" + b.GOARCH
	}
	if b.LDFlags != "" {
		n += "-" + strings.NewReplacer(" ", "", "-", "", "=", "").Replace(b.LDFlags)
	}
	if b.BuildMode != "" {
		n += "-" + b.BuildMode
	}
	for _, e := range b.Env {
		n += "-" + strings.NewReplacer("=", "", "_", "").Replace(e)
	}
	return n
}

var moduleBuilds = map[string]*build{}

// BuildModule builds the victim module testdata/victims/NAME, which has a
// go.mod of its own (so that older toolchains, which refuse the
// repository's go version, can build it), with the toolchain, GOARCH,
// -ldflags and -buildmode of b, and returns the binary's path. Each build
// is made at most once per test binary, into the directory Build uses.
// GOTOOLCHAIN=goX fetches toolchain X through the module proxy the first
// time; a build that fails fails the test.
func BuildModule(t testing.TB, name string, b ModuleBuild) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found in PATH: install Go (https://go.dev/dl/): %v", err)
	}
	if err := checkName(name); err != nil {
		t.Fatal(err)
	}
	bb := buildOf(moduleBuilds, b.key(name))
	bb.once.Do(func() { bb.path, bb.err = moduleBuild(gobin, name, b) })
	if bb.err != nil {
		t.Fatalf("building victim module %s (%s): %v", name, b.Name(name), bb.err)
	}
	return bb.path
}

func moduleBuild(gobin, name string, b ModuleBuild) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "testdata", "victims", name)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		return "", fmt.Errorf("%s is not a module of its own: %v", src, err)
	}
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, b.Name(name))
	args := []string{"build", "-o", out}
	if b.LDFlags != "" {
		args = append(args, "-ldflags="+b.LDFlags)
	}
	if b.BuildMode != "" {
		args = append(args, "-buildmode="+b.BuildMode)
	}
	cmd := exec.Command(gobin, append(args, ".")...)
	cmd.Dir = src
	tc := b.Toolchain
	if tc == "" {
		tc = "local"
	}
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+tc, "GOFLAGS=-buildvcs=false")
	cmd.Env = append(cmd.Env, b.Env...)
	if b.GOARCH != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+b.GOARCH)
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s (GOTOOLCHAIN=%s): %v\n%s", strings.Join(cmd.Args, " "), tc, err, msg)
	}
	return out, nil
}
