package gomem

import (
	"slices"
	"testing"
)

// TestLockOfSema: the lock is the semaphore word less the word's offset
// in sync.Mutex (sema) or sync.RWMutex (writerSem, readerSem).
func TestLockOfSema(t *testing.T) {
	for _, tc := range []struct {
		state string
		sema  uint64
		want  string
	}{
		{"sync.Mutex.Lock", 0xc000012084, "0xc000012080"},
		{"sync.Mutex.Lock (leaked)", 0xc000012084, "0xc000012080"},
		{"sync.RWMutex.Lock", 0xc000012088, "0xc000012080"},
		{"sync.RWMutex.RLock", 0xc00001208c, "0xc000012080"},
		{"sync.WaitGroup.Wait", 0xc000012088, ""},
		{"chan receive", 0xc000012088, ""},
		{"sync.Mutex.Lock", 2, ""},
	} {
		if got := lockOfSema(tc.state, tc.sema); got != tc.want {
			t.Errorf("lockOfSema(%q, %#x) = %q, want %q", tc.state, tc.sema, got, tc.want)
		}
	}
}

// TestCallTargets: direct calls' targets, relative to the next
// instruction (amd64) or to the BL itself (arm64), backwards too.
func TestCallTargets(t *testing.T) {
	// amd64: a NOP, CALL +0x10, CALL -0x20 (from 0x1000).
	amd := []byte{0x90, 0xe8, 0x10, 0, 0, 0, 0xe8, 0xe0, 0xff, 0xff, 0xff}
	if got, want := callTargets("amd64", amd, 0x1000), []uint64{0x1000 + 6 + 0x10, 0x1000 + 11 - 0x20}; !slices.Equal(got, want) {
		t.Errorf("amd64: %#x, want %#x", got, want)
	}
	// arm64: NOP, BL +8, BL -4 (from 0x2000).
	arm := []byte{0x1f, 0x20, 0x03, 0xd5, 0x02, 0, 0, 0x94, 0xff, 0xff, 0xff, 0x97}
	if got, want := callTargets("arm64", arm, 0x2000), []uint64{0x2004 + 8, 0x2008 - 4}; !slices.Equal(got, want) {
		t.Errorf("arm64: %#x, want %#x", got, want)
	}
}
