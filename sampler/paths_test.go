package sampler

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestFormatSockaddr(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"unix path", append([]byte{1, 0}, "/run/app.sock\x00junk"...), "unix:/run/app.sock"},
		{"unix abstract", append([]byte{1, 0}, "\x00name\x00x"...), "unix:@name@x"},
		{"unix unnamed", []byte{1, 0}, "unix:(unnamed)"},
		{"inet", []byte{2, 0, 0x1f, 0x90, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, "127.0.0.1:8080"},
		{"inet6", append([]byte{10, 0, 0, 80, 0, 0, 0, 0}, append(make([]byte, 15), 1, 0, 0, 0, 0)...), "[::1]:80"},
		{"other", []byte{16, 0, 1, 2}, "family 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := formatSockaddr(tt.b)
			if err != nil || got != tt.want {
				t.Errorf("formatSockaddr(%q) = %q, %v; want %q", tt.b, got, err, tt.want)
			}
		})
	}
	for _, b := range [][]byte{{1}, {2, 0, 0, 80}, {10, 0, 0, 80, 0, 0, 0, 0, 1}} {
		if got, err := formatSockaddr(b); err == nil {
			t.Errorf("formatSockaddr(%v) = %q, want an error for a short address", b, got)
		}
	}
}

// TestReadCString reads strings from this process's own memory: one that
// ends, one that runs to the end of its mapping with no NUL, and pointers
// into nothing.
func TestReadCString(t *testing.T) {
	page := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	// The second page unreadable: a string may not run into it.
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	copy(mem, "/run/app/ctl\x00")
	for i := 100; i < page; i++ {
		mem[i] = 'a'
	}
	s, err := New(NewFS(""), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	maps := s.readMaps()
	if got, err := s.readCString(maps, base); err != nil || got != "/run/app/ctl" {
		t.Errorf("readCString = %q, %v; want /run/app/ctl", got, err)
	}
	if got, err := s.readCString(maps, base+uint64(page)-6); err == nil || !strings.Contains(err.Error(), "no end within 6 bytes") {
		t.Errorf("readCString at the mapping's end = %q, %v; want no end within 6 bytes", got, err)
	}
	for _, addr := range []uint64{0, 16, base + uint64(page)} {
		if got, err := s.readCString(maps, addr); err == nil {
			t.Errorf("readCString(0x%x) = %q, want an error", addr, got)
		}
	}
}

func FuzzFormatSockaddr(f *testing.F) {
	f.Add(append([]byte{1, 0}, "/run/app.sock\x00"...))
	f.Add([]byte{2, 0, 0x1f, 0x90, 127, 0, 0, 1})
	f.Add([]byte{10, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		formatSockaddr(b)
	})
}
