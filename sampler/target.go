package sampler

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/model"
	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"
)

// Describe gathers the portable facts about a process through gopsutil and
// names its runtime from its executable and mappings. Facts it cannot read
// stay empty: the diagnosis does not depend on them.
func Describe(fs FS, pid int) model.Target {
	ctx := fs.context()
	t := model.Target{PID: pid, Cmdline: Cmdline(fs, pid)}
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return t
	}
	if ppid, err := p.PpidWithContext(ctx); err == nil {
		t.PPID = int(ppid)
	}
	if user, err := p.UsernameWithContext(ctx); err == nil {
		t.User = user
	}
	if ms, err := p.CreateTimeWithContext(ctx); err == nil {
		t.Started = time.UnixMilli(ms).UTC()
	}
	t.Exe, _ = os.Readlink(fs.pidPath(pid, "exe"))
	t.Runtime, t.RuntimeVersion = detectRuntime(fs, pid, t.Exe)
	if t.Runtime == model.RuntimeGo {
		t.GoMaxProcsEnv = environVar(fs, pid, "GOMAXPROCS")
	}
	return t
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

// detectRuntime names the language runtime: Go from the build information
// every Go binary carries, the others from the executable's name and the
// libraries mapped into the process.
func detectRuntime(fs FS, pid int, exe string) (rt model.Runtime, version string) {
	if bi, err := buildinfo.ReadFile(fs.pidPath(pid, "exe")); err == nil {
		return model.RuntimeGo, bi.GoVersion
	}
	base := filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	maps, _ := readFile(fs.pidPath(pid, "maps"), make([]byte, 64<<10))
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
