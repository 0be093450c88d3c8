package sampler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

func TestParseShmMapping(t *testing.T) {
	tests := []struct {
		line string
		want shmMapping
		ok   bool
	}{
		{"7f0c1a2b3000-7f0c1a2b4000 rw-s 00001000 00:1a 1234                       /dev/shm/app cache",
			shmMapping{start: 0x7f0c1a2b3000, end: 0x7f0c1a2b4000, off: 0x1000, shared: true, dev: "00:1a", inode: 1234, path: "/dev/shm/app cache"}, true},
		{"7f71eaef7000-7f71eaef8000 rw-s 00000000 00:01 1025                       /dev/zero (deleted)",
			shmMapping{start: 0x7f71eaef7000, end: 0x7f71eaef8000, shared: true, dev: "00:01", inode: 1025, path: "/dev/zero (deleted)"}, true},
		{"7ffd0000-7ffd1000 rw-p 00000000 00:00 0 ",
			shmMapping{start: 0x7ffd0000, end: 0x7ffd1000, dev: "00:00"}, true},
		{"7ffd0000-7ffd1000 rw-p 00000000 00:00 0",
			shmMapping{start: 0x7ffd0000, end: 0x7ffd1000, dev: "00:00"}, true},
		{"", shmMapping{}, false},
		{"7ffd1000-7ffd0000 rw-s 0 00:00 0", shmMapping{}, false}, // end before start
		{"zz-7ffd0000 rw-s 0 00:00 0", shmMapping{}, false},
		{"1000-2000 rw 0 00:00 0", shmMapping{}, false},
		{"1000-2000 rw-s 0 0000 0", shmMapping{}, false},
		{"1000-2000 rw-s", shmMapping{}, false},
	}
	for _, tt := range tests {
		got, ok := parseShmMapping(tt.line)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("parseShmMapping(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseShmMapping(f *testing.F) {
	f.Add("7f0c1a2b3000-7f0c1a2b4000 rw-s 00001000 00:1a 1234 /dev/shm/app")
	f.Add("7ffd0000-7ffd1000 rw-p 00000000 00:00 0")
	f.Fuzz(func(t *testing.T, line string) {
		m, ok := parseShmMapping(line)
		if ok && m.end <= m.start {
			t.Errorf("parseShmMapping(%q) = %+v: an empty range", line, m)
		}
	})
}

func TestSharedWordAt(t *testing.T) {
	maps := []shmMapping{
		{start: 0x1000, end: 0x2000, dev: "00:00"},
		{start: 0x2000, end: 0x3000, off: 0x4000, shared: true, dev: "00:1a", inode: 9, path: "/dev/shm/app"},
		{start: 0x3000, end: 0x4000, shared: true, dev: "00:00"}, // no object
	}
	if w, ok := sharedWordAt(maps, 0x2040); !ok || *w != (model.SharedWord{Path: "/dev/shm/app", Offset: 0x4040, Dev: "00:1a", Inode: 9}) {
		t.Errorf("sharedWordAt(0x2040) = %+v, %v", w, ok)
	}
	for _, addr := range []uint64{0x1040, 0x2ffe, 0x3040, 0x9000, 1<<64 - 2} {
		if w, ok := sharedWordAt(maps, addr); ok {
			t.Errorf("sharedWordAt(%#x) = %+v: want no shared word", addr, w)
		}
	}
	w := &model.SharedWord{Offset: 0x4040, Dev: "00:1a", Inode: 9}
	other := []shmMapping{{start: 0x8000, end: 0x9000, off: 0x4000, shared: true, dev: "00:1a", inode: 9}}
	if wrap := (&model.SharedWord{Offset: 1<<64 - 2, Dev: "00:1a", Inode: 9}); mapsWord(other, wrap) {
		t.Errorf("mapsWord: an offset past the mapping's end, wrapped")
	}
	if !mapsWord(other, w) {
		t.Errorf("mapsWord: the same object at another address is the same word")
	}
	for _, m := range []shmMapping{
		{start: 0x8000, end: 0x9000, shared: true, dev: "00:1a", inode: 9},               // offsets 0..0x1000
		{start: 0x8000, end: 0x9000, off: 0x4000, dev: "00:1a", inode: 9},                // private
		{start: 0x8000, end: 0x9000, off: 0x4000, shared: true, dev: "00:1b", inode: 9},  // another device
		{start: 0x8000, end: 0x9000, off: 0x4000, shared: true, dev: "00:1a", inode: 10}, // another file
	} {
		if mapsWord([]shmMapping{m}, w) {
			t.Errorf("mapsWord(%+v) holds %+v", m, w)
		}
	}
}

func TestFutexOwnerTID(t *testing.T) {
	for _, tt := range []struct {
		f    model.Futex
		want int
	}{
		{model.Futex{Word: 2, Owner: 7, Kind: 128}, 7},
		{model.Futex{Word: int32(-0x80000000 | 9), Owner: 7, Kind: 16 | 128}, 9},
		{model.Futex{Word: 0x40000000, Owner: 7, Kind: 16}, 7}, // owner died: no TID in the word
		{model.Futex{Word: 5, Owner: 7, Kind: -1}, 7},
	} {
		if got := futexOwnerTID(tt.f); got != tt.want {
			t.Errorf("futexOwnerTID(%+v) = %d, want %d", tt.f, got, tt.want)
		}
	}
}

// TestSharedOwner: the owner's process is named only when the thread is
// one of its tasks and it maps the same word.
func TestSharedOwner(t *testing.T) {
	root := t.TempDir()
	write := func(path, s string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// pid 20 with thread 21 maps the object; pid 30 does not; thread 41's
	// status names pid 40, which lists no such task.
	write("21/status", "Name:\tholder\nTgid:\t20\n")
	write("20/task/21/stat", "")
	write("20/maps", "7f0000000000-7f0000001000 rw-s 00000000 00:1a 9 /dev/shm/app\n")
	write("31/status", "Tgid:\t30\n")
	write("30/task/31/stat", "")
	write("30/maps", "7f0000000000-7f0000001000 rw-p 00000000 00:1a 9 /dev/shm/app\n")
	write("41/status", "Tgid:\t40\n")
	write("40/maps", "7f0000000000-7f0000001000 rw-s 00000000 00:1a 9 /dev/shm/app\n")
	fs := NewFS(root)
	w := &model.SharedWord{Path: "/dev/shm/app", Offset: 64, Dev: "00:1a", Inode: 9}
	for tid, want := range map[int]int{21: 20, 31: 0, 41: 0, 51: 0} {
		if got := sharedOwner(fs, tid, w); got != want {
			t.Errorf("sharedOwner(tid %d) = %d, want %d", tid, got, want)
		}
	}
}
