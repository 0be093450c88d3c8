package helper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// pyenvShim is pyenv's shim as `pyenv rehash` writes it.
func pyenvShim(root string) string {
	return fmt.Sprintf("#!/usr/bin/env bash\nset -e\n[ -n \"$PYENV_DEBUG\" ] && set -x\n\nprogram=\"${0##*/}\"\n\nexport PYENV_ROOT=%q\nexec %q exec \"$program\" \"$@\"\n",
		root, filepath.Join(root, "libexec", "pyenv"))
}

// TestResolve: a pyenv shim resolves to its binary through `pyenv which`,
// or, without pyenv's scripts, through the version in force; an asdf shim
// through `asdf which`; anything else, and a shim whose binary is not
// found, is itself.
func TestResolve(t *testing.T) {
	t.Run("pyenv which", func(t *testing.T) {
		root := t.TempDir()
		bin := filepath.Join(root, "versions", "3.12.1", "bin", "py-spy")
		write(t, bin, "#!/bin/sh\n")
		// pyenv's own script, answering which with PYENV_ROOT set.
		write(t, filepath.Join(root, "libexec", "pyenv"), "#!/bin/sh\n[ \"$1\" = which ] && [ \"$2\" = py-spy ] && echo \"$PYENV_ROOT/versions/3.12.1/bin/py-spy\"\n")
		shim := filepath.Join(root, "shims", "py-spy")
		write(t, shim, pyenvShim(root))
		t.Setenv("PYENV_VERSION", "3.0.0") // not in versions/: pyenv which decides
		if got := Resolve(shim); got != bin {
			t.Errorf("Resolve(%s) = %s, want %s", shim, got, bin)
		}
	})
	t.Run("pyenv version", func(t *testing.T) {
		root := t.TempDir()
		bin := filepath.Join(root, "versions", "3.11.7", "bin", "py-spy")
		write(t, bin, "#!/bin/sh\n")
		write(t, filepath.Join(root, "version"), "# global\n3.11.7\n")
		shim := filepath.Join(root, "shims", "py-spy")
		write(t, shim, pyenvShim(root))
		t.Setenv("PYENV_VERSION", "")
		t.Chdir(t.TempDir()) // no .python-version up from here
		if got := Resolve(shim); got != bin {
			t.Errorf("Resolve(%s) = %s, want %s (PYENV_ROOT/version)", shim, got, bin)
		}
	})
	t.Run("PYENV_VERSION", func(t *testing.T) {
		root := t.TempDir()
		bin := filepath.Join(root, "versions", "3.9.18", "bin", "py-spy")
		write(t, bin, "#!/bin/sh\n")
		shim := filepath.Join(root, "shims", "py-spy")
		write(t, shim, pyenvShim(root))
		t.Setenv("PYENV_VERSION", "system:3.9.18")
		if got := Resolve(shim); got != bin {
			t.Errorf("Resolve(%s) = %s, want %s", shim, got, bin)
		}
	})
	t.Run("pyenv, not installed", func(t *testing.T) {
		root := t.TempDir()
		shim := filepath.Join(root, "shims", "py-spy")
		write(t, shim, pyenvShim(root))
		t.Setenv("PYENV_VERSION", "3.13.0")
		if got := Resolve(shim); got != shim {
			t.Errorf("Resolve(%s) = %s, want the shim itself", shim, got)
		}
	})
	t.Run("asdf", func(t *testing.T) {
		dir := t.TempDir()
		bin := filepath.Join(dir, "installs", "python", "3.12.1", "bin", "py-spy")
		write(t, bin, "#!/bin/sh\n")
		asdf := filepath.Join(dir, "bin", "asdf")
		write(t, asdf, fmt.Sprintf("#!/bin/sh\n[ \"$1\" = which ] && echo %q\n", bin))
		shim := filepath.Join(dir, "shims", "py-spy")
		write(t, shim, fmt.Sprintf("#!/usr/bin/env bash\n# asdf-plugin: python 3.12.1\nexec %s exec \"py-spy\" \"$@\" # asdf_allow: ' asdf '\n", asdf))
		if got := Resolve(shim); got != bin {
			t.Errorf("Resolve(%s) = %s, want %s", shim, got, bin)
		}
	})
	t.Run("no shim", func(t *testing.T) {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(t.TempDir(), "py-spy")
		write(t, script, "#!/bin/sh\nexec sleep 1\n")
		for _, p := range []string{self, script, filepath.Join(t.TempDir(), "missing")} {
			if got := Resolve(p); got != p {
				t.Errorf("Resolve(%s) = %s, want itself", p, got)
			}
		}
	})
}

// TestResolveRealShim: where py-spy on PATH is pyenv's or asdf's shim (as
// .ci/run installs it under pyenv), it resolves to a binary, not a script.
func TestResolveRealShim(t *testing.T) {
	p, err := exec.LookPath("py-spy")
	if err != nil {
		t.Skip("no py-spy on PATH") // the Python tests insist on it
	}
	head := make([]byte, 2)
	if f, err := os.Open(p); err == nil {
		f.Read(head)
		f.Close()
	}
	if string(head) != "#!" {
		t.Logf("py-spy on PATH (%s) is no shim", p)
		return
	}
	got := Resolve(p)
	b, err := os.ReadFile(got)
	if err != nil || !bytes.HasPrefix(b, []byte("\x7fELF")) {
		t.Errorf("Resolve(%s) = %s, not a binary (%v)", p, got, err)
	}
}

// TestStart: a helper runs in a process group of its own, with stdin from
// /dev/null, and KillGroup ends what it started too.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "readlink /proc/self/fd/0 > "+filepath.Join(dir, "stdin")+"; sleep 1000 & echo $! > "+filepath.Join(dir, "child")+"; wait")
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer KillGroup(cmd)
	if pgid, err := syscall.Getpgid(cmd.Process.Pid); err != nil || pgid != cmd.Process.Pid {
		t.Errorf("process group %d (%v), want its own, %d", pgid, err, cmd.Process.Pid)
	}
	var child int
	for end := time.Now().Add(60 * time.Second); child == 0 && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "child"))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if child == 0 {
		t.Fatal("the helper never started its child")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "stdin")); strings.TrimSpace(string(b)) != os.DevNull {
		t.Errorf("stdin %q, want %s", b, os.DevNull)
	}
	KillGroup(cmd)
	if err := cmd.Wait(); err == nil {
		t.Error("the helper was not killed")
	}
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			break // gone, or a zombie for init to reap
		}
		if time.Now().After(end) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the helper's child %d outlived KillGroup", child)
		}
	}
}

// TestOutputTimeout: a helper that does not finish in time is killed,
// with what it started.
func TestOutputTimeout(t *testing.T) {
	out, err := Output(context.Background(), 100*time.Millisecond, "sh", "-c", "echo hi; sleep 1000")
	if !errors.Is(err, ErrTimeout) || out != nil {
		t.Errorf("Output = %q, %v; want ErrTimeout", out, err)
	}
	out, err = Output(context.Background(), time.Minute, "sh", "-c", "echo hi")
	if err != nil || string(out) != "hi\n" {
		t.Errorf("Output = %q, %v; want hi", out, err)
	}
}
