package sampler

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/deadline"
)

// DescribeTimeout bounds Describe, which has no context of its own.
const DescribeTimeout = 2 * time.Second

// Describe is DescribeContext bounded by DescribeTimeout, without its
// error.
func Describe(fs FS, pid int) model.Target {
	ctx, cancel := context.WithTimeout(context.Background(), DescribeTimeout)
	defer cancel()
	t, _ := DescribeContext(ctx, fs, pid)
	return t
}

// DescribeContext gathers the portable facts about a process through
// gopsutil and names its runtime from its executable and mappings. Facts it
// cannot read stay empty: the diagnosis does not depend on them. Reading
// the executable (through /proc/PID/exe) blocks on a hung filesystem, and
// reading the command line or mappings waits for the process's
// memory-map lock, which a thread stuck in a page fault may hold: each is
// given up when ctx ends (internal/deadline), and the error names those
// that were.
//
// A runtime that could not be read in time stays model.RuntimeUnknown: not
// native, which would be a guess.
func DescribeContext(ctx context.Context, fs FS, pid int) (model.Target, error) {
	var errs []error
	bounded := func(what string, f func() (string, error)) string {
		v, err := deadline.Run(ctx, what, f)
		if err != nil && (errors.Is(err, deadline.ErrAbandoned) || errors.Is(err, deadline.ErrTooManyStuck)) {
			errs = append(errs, err)
		}
		return v
	}
	t := model.Target{PID: pid}
	if st, err := ReadStatus(fs, pid); err == nil {
		t.NSPID = innerPID(st.NSpid, pid)
	}
	t.Cmdline = bounded(fmt.Sprintf("reading /proc/%d/cmdline", pid), func() (string, error) { return Cmdline(fs, pid), nil })
	gctx := fs.context()
	p, err := process.NewProcessWithContext(gctx, int32(pid))
	if err != nil {
		return t, errors.Join(errs...)
	}
	if ppid, err := p.PpidWithContext(gctx); err == nil {
		t.PPID = int(ppid)
	}
	if user, err := p.UsernameWithContext(gctx); err == nil {
		t.User = user
	}
	if ms, err := p.CreateTimeWithContext(gctx); err == nil {
		t.Started = time.UnixMilli(ms).UTC()
	}
	t.Exe, _ = os.Readlink(fs.pidPath(pid, "exe"))
	goVersion, err := deadline.Run(ctx, fmt.Sprintf("reading %s (/proc/%d/exe)", orExe(t.Exe), pid), func() (string, error) {
		bi, err := buildinfo.ReadFile(fs.pidPath(pid, "exe"))
		if err != nil {
			return "", nil // not a Go program (or unreadable: the others decide)
		}
		return bi.GoVersion, nil
	})
	if err != nil {
		errs = append(errs, err)
		t.Runtime = model.RuntimeUnknown
		return t, errors.Join(errs...)
	}
	if goVersion != "" {
		t.Runtime, t.RuntimeVersion = model.RuntimeGo, goVersion
		t.GoMaxProcsEnv = environVar(fs, pid, "GOMAXPROCS")
		return t, errors.Join(errs...)
	}
	maps := bounded(fmt.Sprintf("reading /proc/%d/maps", pid), func() (string, error) {
		b, _ := readFile(fs.pidPath(pid, "maps"), make([]byte, 64<<10))
		return string(b), nil
	})
	t.Runtime, t.RuntimeVersion = detectRuntime(t.Exe, []byte(maps))
	return t, errors.Join(errs...)
}

func orExe(exe string) string {
	if exe == "" {
		return "the executable"
	}
	return exe
}

// Cmdline is a process's arguments joined by spaces, or "[name]" when it
// has none; "" when it cannot be read. It is the cheap part of Describe,
// for processes that need no more than naming.
func Cmdline(fs FS, pid int) string {
	ctx := fs.context()
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return ""
	}
	if argv, err := p.CmdlineSliceWithContext(ctx); err == nil && len(argv) > 0 {
		return strings.Join(argv, " ")
	}
	if name, err := p.NameWithContext(ctx); err == nil {
		return "[" + name + "]"
	}
	return ""
}

// context points gopsutil at the FS's /proc.
func (p FS) context() context.Context {
	return context.WithValue(context.Background(), common.EnvKey, common.EnvMap{common.HostProcEnvKey: p.root})
}

// detectRuntime names a runtime other than Go's (which the build
// information every Go binary carries names) from the executable's name
// and the libraries mapped into the process.
func detectRuntime(exe string, maps []byte) (model.Runtime, string) {
	base := filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	switch {
	case strings.HasPrefix(base, "python") || bytes.Contains(maps, []byte("/libpython")):
		return model.RuntimePython, strings.TrimPrefix(base, "python")
	case base == "java" || bytes.Contains(maps, []byte("/libjvm.so")):
		return model.RuntimeJava, ""
	case base == "node":
		return model.RuntimeNode, ""
	}
	return model.RuntimeNative, ""
}

// environVar reads one variable of a process's environment as it started.
// The rest is never kept: an environment holds secrets.
func environVar(fs FS, pid int, name string) string {
	b, err := readFile(fs.pidPath(pid, "environ"), nil)
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(name+"=")); ok {
			return string(v)
		}
	}
	return ""
}

// DescribeHost names the machine hangdoc runs on.
func DescribeHost() model.Host {
	h := model.Host{Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	h.Name, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
		h.Arch = unix.ByteSliceToString(u.Machine[:])
	}
	return h
}
