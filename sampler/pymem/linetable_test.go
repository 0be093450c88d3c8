package pymem

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// lineFixture is one interpreter's output of testdata/gen_lines.py: the
// line table of every code object of a sample module and the line CPython
// gives for each of its instructions.
type lineFixture struct {
	Version string     `json:"version"`
	Minor   int        `json:"minor"`
	Codes   []lineCode `json:"codes"`
}

type lineCode struct {
	Name  string `json:"name"`
	First int    `json:"first"`
	Table string `json:"table"`
	// Lines holds the line of the instruction at byte offset 2*i.
	Lines []int `json:"lines"`
}

// readLineFixtures reads testdata/lines-3.*.json and fails the test unless
// every supported minor version has one, so a fixture that goes missing
// cannot quietly shrink what is checked.
func readLineFixtures(tb testing.TB) []lineFixture {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "lines-3.*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var fixtures []lineFixture
	seen := map[int]bool{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		var fx lineFixture
		if err := json.Unmarshal(data, &fx); err != nil {
			tb.Fatalf("parsing %s: %v", p, err)
		}
		if len(fx.Codes) == 0 {
			tb.Fatalf("%s: no code objects", p)
		}
		seen[fx.Minor] = true
		fixtures = append(fixtures, fx)
	}
	for minor := 8; minor <= 13; minor++ {
		if !seen[minor] {
			tb.Fatalf("no fixture for 3.%d in testdata; run testdata/gen_lines.py", minor)
		}
	}
	return fixtures
}

func decodeTable(tb testing.TB, fx lineFixture, c lineCode) []byte {
	tb.Helper()
	table, err := hex.DecodeString(c.Table)
	if err != nil {
		tb.Fatalf("%s %s: table: %v", fx.Version, c.Name, err)
	}
	return table
}

func TestLineOf(t *testing.T) {
	for _, fx := range readLineFixtures(t) {
		t.Run(fx.Version, func(t *testing.T) {
			for _, c := range fx.Codes {
				table := decodeTable(t, fx, c)
				bad := 0
				for i, want := range c.Lines {
					off := 2 * i
					got := lineOf(fx.Minor, c.First, table, off)
					if got == want {
						continue
					}
					// A few mismatches say which decoder is wrong; hundreds
					// only bury the first.
					if bad++; bad == 1 {
						t.Logf("%s %s: first %d, table %s", fx.Version, c.Name, c.First, c.Table)
					}
					if bad <= 3 {
						t.Errorf("%s %s: lineOf(off=%d) = %d, want %d",
							fx.Version, c.Name, off, got, want)
					}
				}
				if bad > 3 {
					t.Errorf("%s %s: %d mismatches in all", fx.Version, c.Name, bad)
				}
			}
		})
	}
}

// TestLineOfOutside checks the answers that no fixture reaches: offsets
// before the code or past the table, empty tables and minor versions
// lineOf does not know.
func TestLineOfOutside(t *testing.T) {
	// One entry per format, each covering bytes 0 to 3 on line first+1.
	lnotab := []byte{0, 1, 4, 0}
	linetable310 := []byte{4, 1}
	locations := []byte{0x80 | (locOneLine0+1)<<3 | 1, 0, 5} // Line delta 1, two code units.
	tests := []struct {
		name  string
		minor int
		table []byte
		off   int
		want  int
	}{
		{"3.10 inside", 10, linetable310, 2, 11},
		{"3.10 past end", 10, linetable310, 4, 0},
		{"3.10 empty", 10, nil, 0, 0},
		{"3.11 inside", 11, locations, 2, 11},
		{"3.11 past end", 11, locations, 4, 0},
		{"3.11 empty", 11, nil, 0, 0},
		{"3.13 past end", 13, locations, 100, 0},
		{"3.13 empty", 13, []byte{}, 0, 0},
		{"negative offset", 11, locations, -2, 0},
		{"unknown minor", 7, lnotab, 0, 0},
		{"unknown minor", 14, locations, 0, 0},
		// co_lnotab does not record where the code ends, so CPython puts
		// any later offset on the last line, and an empty table is what a
		// one-line function has.
		{"3.8 inside", 8, lnotab, 2, 11},
		{"3.8 past last entry", 8, lnotab, 400, 11},
		{"3.9 empty", 9, nil, 6, 10},
		// Garbled tables: an entry that does not start with bit 7, a
		// varint cut short, a line before the first.
		{"3.11 no entry start", 11, []byte{0x05, 0x80}, 0, 0},
		{"3.11 truncated varint", 11, []byte{0x80 | locLong<<3, 0x40}, 0, 0},
		{"3.12 overlong varint", 12, []byte{0x80 | locNoColumns<<3, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00}, 0, 0},
		{"3.10 negative line", 10, []byte{2, 0x81}, 0, 0},
	}
	for _, tt := range tests {
		if got := lineOf(tt.minor, 10, tt.table, tt.off); got != tt.want {
			t.Errorf("%s: lineOf(%d, 10, %x, %d) = %d, want %d",
				tt.name, tt.minor, tt.table, tt.off, got, tt.want)
		}
	}
}

// FuzzLineOf feeds lineOf tables as a torn memory read could leave them:
// whatever the bytes, it must return, and never a negative line.
func FuzzLineOf(f *testing.F) {
	for _, fx := range readLineFixtures(f) {
		for i, c := range fx.Codes {
			// Every code object of every version would only slow the
			// fuzzer's start; a few per format cover their shapes.
			if i%8 != 0 {
				continue
			}
			f.Add(uint8(fx.Minor), int32(c.First), decodeTable(f, fx, c), int32(len(c.Lines)))
		}
	}
	f.Fuzz(func(t *testing.T, minor uint8, first int32, table []byte, off int32) {
		got := lineOf(int(minor), int(first), table, int(off))
		if got < 0 {
			t.Fatalf("lineOf(%d, %d, %x, %d) = %d, want >= 0", minor, first, table, off, got)
		}
	})
}
