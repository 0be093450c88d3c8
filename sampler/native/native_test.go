package native

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
)

// syscallOf reads a thread's stack pointer and program counter as the
// kernel shows them with its system call.
func syscallOf(t *testing.T, pid, tid int) (sp, pc uint64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		t.Fatalf("tid %d: syscall %q: not blocked in a call", tid, b)
	}
	fmt.Sscanf(f[len(f)-2], "0x%x", &sp)
	fmt.Sscanf(f[len(f)-1], "0x%x", &pc)
	return sp, pc
}

func funcs(frames []model.Frame) []string {
	var out []string
	for _, f := range frames {
		out = append(out, f.Func)
	}
	return out
}

// Blocked threads of a C program (built -O0 -g: libc's frames by its
// .eh_frame, the program's by its own) unwound from memory while they
// wait: each waiter in pthread_mutex_lock called by renderer, the main
// thread in pthread_join's futex called by main, every frame named.
func TestUnwindBlocked(t *testing.T) {
	v := testvictim.Start(t, testvictim.Build(t, "spinholder"))
	s := NewSymbolizer(sampler.NewFS(""), v.PID)
	defer s.Close()
	for _, tid := range v.TIDs("waiters") {
		frames, err := s.Unwind(syscallOf(t, v.PID, tid))
		names := funcs(frames)
		i := slices.IndexFunc(names, func(n string) bool { return strings.Contains(n, "pthread_mutex_lock") })
		if i < 0 || i+1 >= len(names) || names[i+1] != "renderer" {
			t.Errorf("tid %d: stack %v (%v), want pthread_mutex_lock called by renderer", tid, names, err)
		}
		if !strings.HasSuffix(frames[i+1].File, "/spinholder.c") || frames[i+1].Line <= 0 {
			t.Errorf("tid %d: renderer's frame %+v, want its source line (built with -g)", tid, frames[i+1])
		}
		// Unwound twice, the same: a blocked thread does not move.
		again, _ := s.Unwind(syscallOf(t, v.PID, tid))
		if !slices.Equal(funcs(again), names) {
			t.Errorf("tid %d: unwound %v, then %v", tid, names, funcs(again))
		}
	}
	frames, err := s.Unwind(syscallOf(t, v.PID, v.PID))
	if names := funcs(frames); !slices.Contains(names, "main") {
		t.Errorf("main thread: stack %v (%v), want main on it", names, err)
	}
}

// An address no file maps, and a stack pointer nothing maps, end the
// walk with an error, not a crash.
func TestUnwindNowhere(t *testing.T) {
	s := NewSymbolizer(sampler.NewFS(""), os.Getpid())
	defer s.Close()
	if frames, err := s.Unwind(0x10, 0x8); err == nil || len(frames) != 1 {
		t.Errorf("Unwind(0x10, 0x8) = %v, %v; want the one frame and an error", frames, err)
	}
}

// A C program's PLT stubs are named as objdump names them ("F@plt"), by
// the relocation of their slot: a thread caught in one was "in _init",
// the symbol before them, sized 0.
func TestPLTStubs(t *testing.T) {
	path := testvictim.Build(t, "spinholder")
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Fatalf("objdump not found: install binutils (gcc brings it)")
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[uint64]string{}
	for _, y := range pltStubs(f) {
		if y.name != "[plt]" {
			got[y.value] = y.name
		}
	}
	out, err := exec.Command(objdump, "-d", "-j", ".plt", "-j", ".plt.sec", path).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	want := 0
	for _, line := range strings.Split(string(out), "\n") {
		// 0000000000001060 <pthread_mutex_lock@plt>:
		var addr uint64
		var name string
		if n, _ := fmt.Sscanf(line, "%x <%s", &addr, &name); n != 2 || !strings.HasSuffix(name, "@plt>:") {
			continue
		}
		name = strings.TrimSuffix(name, ">:")
		want++
		if got[addr] != name {
			t.Errorf("stub at 0x%x: named %q, objdump says %q", addr, got[addr], name)
		}
	}
	if want < 3 {
		t.Fatalf("objdump named %d stubs in %s, want the victim's calls into libc:\n%s", want, path, out)
	}
	e, err := readSymbols(path, "")
	if err != nil {
		t.Fatal(err)
	}
	for addr, name := range got {
		if n, _ := e.atVaddr(addr + 4); n != name {
			t.Errorf("a pc inside the stub at 0x%x is named %q, want %q", addr, n, name)
		}
		if !e.inPLT(addr) {
			t.Errorf("0x%x: not in a PLT section", addr)
		}
	}
}

// A library's call-frame information is found for every function it
// describes: glibc's .eh_frame is not in address order (its string
// functions come last), and the parser keeps it as read, so a search by
// halves missed memcpy and the walk stopped there.
func TestCFIInAddressOrder(t *testing.T) {
	v := testvictim.Start(t, testvictim.Build(t, "spinholder"))
	maps, err := sampler.ExecMappings(sampler.NewFS(""), v.PID)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(maps, func(m sampler.ExecMapping) bool { return strings.Contains(m.Path, "/libc.so") })
	if i < 0 {
		t.Fatalf("no libc mapped in the victim: %+v", maps)
	}
	fdes := readCFI(maps[i].Path)
	if len(fdes) < 100 {
		t.Fatalf("%s: %d FDEs read, want its .eh_frame", maps[i].Path, len(fdes))
	}
	for _, fde := range fdes {
		if got, err := fdes.FDEForPC(fde.Begin()); err != nil || got.Begin() != fde.Begin() {
			t.Fatalf("%s: the FDE of 0x%x is not found by its address (%v)", maps[i].Path, fde.Begin(), err)
		}
	}
}
