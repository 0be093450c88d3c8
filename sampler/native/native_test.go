package native

import (
	"fmt"
	"os"
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
