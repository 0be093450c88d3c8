package membudget

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"512MiB", 512 << 20}, {"1GiB", 1 << 30}, {"64KiB", 64 << 10}, {"300MB", 300e6},
		{"1048576", 1 << 20}, {"2G", 2 << 30}, {" 8 MiB", 8 << 20}, {"100B", 100},
	} {
		if got, err := Parse(c.in); err != nil || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "0", "1.5GiB", "lots", "9999999999GiB"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, got)
		}
	}
	if s := Bytes(Default).String(); s != "512MiB" {
		t.Errorf("Default reads %q, want 512MiB", s)
	}
	if s := Bytes(1500).String(); s != "1500B" {
		t.Errorf("1500 bytes read %q", s)
	}
}

func TestSetRestores(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	restore := Set(64 << 20)
	if got := debug.SetMemoryLimit(-1); got != 64<<20 && before > 64<<20 {
		t.Errorf("limit %d after Set(64MiB)", got)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit %d after restore, want %d", got, before)
	}
}

func TestTight(t *testing.T) {
	if _, tight := Tight(1 << 50); tight {
		t.Error("a petabyte budget is tight")
	}
	keep := make([]byte, 4<<20)
	if h, tight := Tight(1 << 20); !tight || h < 4<<20 {
		t.Errorf("Tight(1MiB) with 4MiB held = %d, %v", h, tight)
	}
	runtime.KeepAlive(keep)
	o := Degrade(classify.DefaultOptions())
	if !o.ShapeOnly || o.HolderLocks != HolderLocks {
		t.Errorf("Degrade = %+v", o)
	}
}
