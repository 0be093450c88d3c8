package syscalls

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestKnownSyscalls(t *testing.T) {
	tests := []struct {
		name string
		arch string
		nr   int
		call string
	}{
		{"x86_64/read", "x86_64", 0, "read"},
		{"x86_64/write", "x86_64", 1, "write"},
		{"x86_64/poll", "x86_64", 7, "poll"},
		{"x86_64/nanosleep", "x86_64", 35, "nanosleep"},
		{"x86_64/wait4", "x86_64", 61, "wait4"},
		{"x86_64/futex", "x86_64", 202, "futex"},
		{"x86_64/clock_nanosleep", "x86_64", 230, "clock_nanosleep"},
		{"x86_64/epoll_wait", "x86_64", 232, "epoll_wait"},
		{"x86_64/epoll_pwait", "x86_64", 281, "epoll_pwait"},
		{"x86_64/newfstatat", "x86_64", 262, "newfstatat"},
		{"x86_64/pread64", "x86_64", 17, "pread64"},
		{"amd64-alias/futex", "amd64", 202, "futex"},
		{"aarch64/read", "aarch64", 63, "read"},
		{"aarch64/write", "aarch64", 64, "write"},
		{"aarch64/epoll_pwait", "aarch64", 22, "epoll_pwait"},
		{"aarch64/futex", "aarch64", 98, "futex"},
		{"aarch64/nanosleep", "aarch64", 101, "nanosleep"},
		{"aarch64/clock_nanosleep", "aarch64", 115, "clock_nanosleep"},
		{"aarch64/wait4", "aarch64", 260, "wait4"},
		{"aarch64/newfstatat", "aarch64", 79, "newfstatat"},
		{"arm64-alias/futex", "arm64", 98, "futex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Name(tt.arch, tt.nr); got != tt.call {
				t.Errorf("Name(%q, %d) = %q, want %q", tt.arch, tt.nr, got, tt.call)
			}
			if got, ok := Number(tt.arch, tt.call); !ok || got != tt.nr {
				t.Errorf("Number(%q, %q) = %d, %v; want %d, true", tt.arch, tt.call, got, ok, tt.nr)
			}
		})
	}
}

func TestUnknown(t *testing.T) {
	names := []struct {
		name string
		arch string
		nr   int
	}{
		{"x86_64/negative", "x86_64", -1},
		{"x86_64/gap", "x86_64", 400},             // 337..423 unassigned
		{"x86_64/x32", "x86_64", 512},             // x32 ABI range, not covered
		{"x86_64/huge", "x86_64", 1 << 30},        // beyond table
		{"aarch64/arch_specific", "aarch64", 244}, // asm-generic placeholder, not a syscall
		{"aarch64/gap", "aarch64", 250},
		{"aarch64/huge", "aarch64", 100000},
		{"unknown-arch", "riscv64", 63},
		{"empty-arch", "", 1},
		{"wrong-case-arch", "X86_64", 1},
	}
	for _, tt := range names {
		t.Run("Name/"+tt.name, func(t *testing.T) {
			if got := Name(tt.arch, tt.nr); got != "" {
				t.Errorf("Name(%q, %d) = %q, want \"\"", tt.arch, tt.nr, got)
			}
		})
	}

	numbers := []struct {
		name string
		arch string
		call string
	}{
		{"x86_64/unknown-name", "x86_64", "no_such_syscall"},
		{"x86_64/empty-name", "x86_64", ""},
		{"x86_64/prefixed", "x86_64", "SYS_WRITE"},
		{"x86_64/uppercase", "x86_64", "WRITE"},
		{"aarch64/not-on-arm64", "aarch64", "epoll_wait"}, // arm64 only has epoll_pwait
		{"aarch64/placeholder", "aarch64", "arch_specific_syscall"},
		{"unknown-arch", "riscv64", "write"},
		{"empty-arch", "", "write"},
	}
	for _, tt := range numbers {
		t.Run("Number/"+tt.name, func(t *testing.T) {
			if got, ok := Number(tt.arch, tt.call); ok {
				t.Errorf("Number(%q, %q) = %d, true; want false", tt.arch, tt.call, got)
			}
		})
	}
}

// TestRoundTrip checks every table entry maps back to its number, and that
// the names look like kernel syscall names.
func TestRoundTrip(t *testing.T) {
	for _, arch := range []string{"x86_64", "aarch64"} {
		t.Run(arch, func(t *testing.T) {
			n := 0
			for nr, name := range table(arch) {
				if name == "" {
					continue
				}
				n++
				if name != strings.ToLower(name) || strings.HasPrefix(name, "sys_") {
					t.Errorf("%s %d: malformed name %q", arch, nr, name)
				}
				if got, ok := Number(arch, name); !ok || got != nr {
					t.Errorf("Number(%q, %q) = %d, %v; want %d, true", arch, name, got, ok, nr)
				}
			}
			if n < 300 {
				t.Errorf("%s table has only %d syscalls", arch, n)
			}
		})
	}
}

func TestHostArch(t *testing.T) {
	tests := []struct {
		goarch, want string
	}{
		{"amd64", "x86_64"},
		{"arm64", "aarch64"},
		{"riscv64", "riscv64"},
	}
	for _, tt := range tests {
		t.Run(tt.goarch, func(t *testing.T) {
			if got := unameArch(tt.goarch); got != tt.want {
				t.Errorf("unameArch(%q) = %q, want %q", tt.goarch, got, tt.want)
			}
		})
	}
	if got, want := HostArch(), unameArch(runtime.GOARCH); got != want {
		t.Errorf("HostArch() = %q, want %q", got, want)
	}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		if Name(HostArch(), mustNumber(t, HostArch(), "write")) != "write" {
			t.Errorf("host arch %q has no usable table", HostArch())
		}
	}
}

func mustNumber(t *testing.T, arch, name string) int {
	t.Helper()
	nr, ok := Number(arch, name)
	if !ok {
		t.Fatalf("Number(%q, %q) not found", arch, name)
	}
	return nr
}

// TestGeneratedUpToDate reruns the generator into a temporary directory and
// compares its output with the checked-in files.
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go run ./gen; skipped in -short mode")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not found: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), goTool, "run", "./gen", "-out", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./gen -out %s: %v\n%s", dir, err, out)
	}
	for _, file := range []string{"zsyscalls_x86_64.go", "zsyscalls_aarch64.go"} {
		want, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("generator did not write %s: %v", file, err)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run go generate ./internal/syscalls", file)
		}
	}
}
