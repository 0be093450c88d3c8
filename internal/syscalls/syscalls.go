// Package syscalls names Linux syscall numbers for x86_64 and aarch64,
// independently of the architecture hangdoc is built for, so that samples
// recorded on other machines can be decoded.
//
// Only the native 64-bit syscall ABIs are covered: 32-bit compat processes
// (i386 on x86_64, arm32 on aarch64) and x32 use different numbers and are
// not handled.
//
// The tables are generated from golang.org/x/sys/unix by ./gen.
package syscalls

//go:generate go run ./gen

import (
	"runtime"
	"sync"
)

// table returns the number-indexed name table for arch, or nil.
func table(arch string) []string {
	switch arch {
	case "x86_64", "amd64":
		return amd64Names
	case "aarch64", "arm64":
		return arm64Names
	}
	return nil
}

// Name returns the name of syscall nr on arch ("x86_64" or "aarch64", as
// printed by uname -m; "amd64" and "arm64" are accepted too), e.g. "futex".
// It returns "" for an unknown arch or number.
func Name(arch string, nr int) string {
	t := table(arch)
	if nr < 0 || nr >= len(t) {
		return ""
	}
	return t[nr]
}

var reverse = sync.OnceValue(func() map[string]map[string]int {
	m := map[string]map[string]int{}
	for _, arch := range []string{"x86_64", "aarch64"} {
		t := table(arch)
		r := make(map[string]int, len(t))
		for nr, name := range t {
			if name != "" {
				r[name] = nr
			}
		}
		m[arch] = r
	}
	return m
})

// Number returns the number of the syscall called name on arch, the reverse
// of Name. It reports false for an unknown arch or name.
func Number(arch, name string) (int, bool) {
	switch arch {
	case "amd64":
		arch = "x86_64"
	case "arm64":
		arch = "aarch64"
	}
	nr, ok := reverse()[arch][name]
	return nr, ok
}

// HostArch returns the running binary's architecture in uname -m spelling
// ("x86_64", "aarch64", ...). Architectures without a table here are still
// named, but Name and Number know nothing about them.
func HostArch() string {
	return unameArch(runtime.GOARCH)
}

func unameArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "i686"
	case "arm":
		return "armv7l"
	case "loong64":
		return "loongarch64"
	}
	return goarch // riscv64, ppc64le, s390x, mips64, ... match uname -m
}
