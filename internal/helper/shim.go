package helper

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hangdoc/hangdoc/internal/deadline"
)

// A version manager's shim (pyenv's, asdf's) is a script that finds the
// binary for the version in force and runs it. Run through the shim, the
// helper is the shim's descendant, not hangdoc's child: a shim that forks
// on the way (asdf's plugins, a shell that does not exec) leaves the real
// binary without a parent-death signal, and one killed hangdoc leaves it
// running. Resolve finds the real binary, so that hangdoc runs it itself.

// whichTimeout bounds a version manager's `which`.
const whichTimeout = 5 * time.Second

// shimHead is how much of a file is read to tell a shim.
const shimHead = 4 << 10

var (
	resolved sync.Map // path → its real binary

	pyenvRootRE = regexp.MustCompile(`(?m)^export PYENV_ROOT="([^"]+)"`)
	asdfExecRE  = regexp.MustCompile(`(?m)^\s*exec\s+"?([^"\s]+)"?\s+exec\s`)
)

// Resolve is the real binary that the version manager's shim at path
// runs; path itself when path is no shim, or when the binary is not found
// (then the shim is run: it works, only less safely).
func Resolve(path string) string {
	if p, ok := resolved.Load(path); ok {
		return p.(string)
	}
	real := resolve(path)
	resolved.Store(path, real)
	return real
}

func resolve(path string) string {
	head, err := deadline.Within(context.Background(), time.Second, "reading "+path, func() ([]byte, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b := make([]byte, shimHead)
		n, err := io.ReadFull(f, b)
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = nil
		}
		return b[:n], err
	})
	if err != nil || !bytes.HasPrefix(head, []byte("#!")) {
		return path
	}
	name := filepath.Base(path)
	var real string
	switch {
	case bytes.Contains(bytes.ToLower(head), []byte("pyenv")):
		real = pyenvBinary(path, name, head)
	case bytes.Contains(head, []byte("asdf exec")):
		real = asdfBinary(name, head)
	}
	if real == "" || real == path || !executable(real) {
		return path
	}
	return real
}

// pyenvBinary is the binary a pyenv shim runs: that of the version in
// force in the versions directory (PYENV_VERSION, a .python-version file
// from the working directory up, PYENV_ROOT/version), or else what
// `pyenv which` says (the system's, a plugin's).
func pyenvBinary(path, name string, head []byte) string {
	root := ""
	if m := pyenvRootRE.FindSubmatch(head); m != nil {
		root = string(m[1])
	} else if dir := filepath.Dir(path); filepath.Base(dir) == "shims" {
		root = filepath.Dir(dir)
	}
	if root == "" {
		return ""
	}
	// The files first: no process to run, so no time lost to a loaded
	// machine on the way to the dump.
	for _, v := range pyenvVersions(root) {
		if v == "system" {
			continue
		}
		if p := filepath.Join(root, "versions", v, "bin", name); executable(p) {
			return p
		}
	}
	if pyenv := filepath.Join(root, "libexec", "pyenv"); executable(pyenv) {
		return which(pyenv, name, "PYENV_ROOT="+root)
	}
	return ""
}

// pyenvVersions are the versions in force, as pyenv finds them.
func pyenvVersions(root string) []string {
	if v := os.Getenv("PYENV_VERSION"); v != "" {
		return strings.Split(v, ":")
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if vs := versionFile(filepath.Join(dir, ".python-version")); len(vs) > 0 {
				return vs
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return versionFile(filepath.Join(root, "version"))
}

// versionFile reads a pyenv version file: one version a line (or a word),
// # for comments.
func versionFile(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(io.LimitReader(f, shimHead))
	for sc.Scan() {
		for _, w := range strings.Fields(sc.Text()) {
			if strings.HasPrefix(w, "#") {
				break
			}
			out = append(out, w)
		}
	}
	return out
}

// asdfBinary is the binary an asdf shim runs: what `asdf which` says.
func asdfBinary(name string, head []byte) string {
	asdf := ""
	if m := asdfExecRE.FindSubmatch(head); m != nil {
		asdf = string(m[1])
	}
	if !filepath.IsAbs(asdf) {
		p, err := exec.LookPath("asdf")
		if err != nil {
			return ""
		}
		asdf = p
	}
	return which(asdf, name)
}

// which runs a version manager's `which NAME` as a helper, bounded, and
// returns the path it prints.
func which(manager, name string, env ...string) string {
	var environ []string
	if len(env) > 0 {
		environ = append(os.Environ(), env...)
	}
	out, err := outputWith(context.Background(), whichTimeout, environ, manager, "which", name)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if !filepath.IsAbs(line) {
		return ""
	}
	return line
}

// executable reports a regular file someone may execute.
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
