package python

import (
	"bytes"
	"github.com/hangdoc/hangdoc/model"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// addFileSeeds adds the testdata dumps matching each glob to f's seeds,
// each whole and cut in the middle of a line.
func addFileSeeds(f *testing.F, globs ...string) {
	f.Helper()
	n := 0
	for _, g := range globs {
		files, err := filepath.Glob(filepath.Join("testdata", g))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, uint16(len(b)/2))
			n++
		}
	}
	if n == 0 {
		f.Fatalf("no testdata file matches %q to seed from", globs)
	}
}

// checkDumps asserts what holds of any parse of any input: an error and
// dumps never both; every dump of the format; every frame with a Func;
// no negative numbers; no more threads, nor frames, than the input has
// lines (each comes from a line of its own, or in JSON an object), so
// memory stays linear in the input; and a last line cut short (no
// newline) shows as Truncated.
func checkDumps(t *testing.T, parser string, b []byte, dumps []Dump, err error, format model.Format) {
	t.Helper()
	if err != nil {
		if dumps != nil {
			t.Errorf("%s(%q) gave dumps and the error %v", parser, b, err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "parsing ") {
			t.Errorf("%s(%q): error %q does not say what was being parsed", parser, b, msg)
		}
		return
	}
	if len(dumps) == 0 {
		t.Fatalf("%s(%q) gave neither a dump nor an error", parser, b)
	}
	threads, frames := 0, 0
	for i, d := range dumps {
		if format != model.FormatNone && d.Format != format || d.Format == model.FormatNone {
			t.Errorf("%s(%q): dump %d has format %q, want %q", parser, b, i, d.Format, format)
		}
		if d.Format != dumps[0].Format {
			t.Errorf("%s(%q): dump %d has format %q, dump 0 %q", parser, b, i, d.Format, dumps[0].Format)
		}
		if d.PID < 0 {
			t.Errorf("%s(%q): dump %d has PID %d", parser, b, i, d.PID)
		}
		threads += len(d.Threads)
		for _, th := range d.Threads {
			if th.NativeID < 0 {
				t.Errorf("%s(%q): thread with NativeID %d", parser, b, th.NativeID)
			}
			frames += len(th.Frames)
			for _, f := range th.Frames {
				if f.Func == "" || f.Line < 0 {
					t.Errorf("%s(%q): frame %+v has no Func or a negative Line", parser, b, f)
				}
			}
		}
	}
	bound := bytes.Count(b, []byte{'\n'}) + 1
	if dumps[0].Format == FormatPySpyJSON {
		// Each thread and frame is an object of its own.
		bound = bytes.Count(b, []byte{'{'})
	}
	if threads > bound || frames > bound {
		t.Errorf("%s(%q): %d threads and %d frames from an input that can hold %d", parser, b, threads, frames, bound)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' && dumps[0].Format != FormatPySpyJSON && !dumps[len(dumps)-1].Truncated {
		t.Errorf("%s(%q): the last line is cut short, but the last dump is not Truncated", parser, b)
	}
}

// prefix cuts b at cut, wrapped to b's length.
func prefix(b []byte, cut uint16) []byte {
	return b[:int(cut)%(len(b)+1)]
}

func FuzzParsePySpyText(f *testing.F) {
	addFileSeeds(f, "corpus/*pyspy*", "live/pyspy-*.txt")
	for _, tc := range pySpyTextCases {
		f.Add([]byte(tc.in), uint16(len(tc.in)/2))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		for _, in := range [][]byte{b, prefix(b, cut)} {
			dumps, err := parsePySpyTexts(in)
			checkDumps(t, "parsePySpyTexts", in, dumps, err, FormatPySpyText)
			d, err := ParsePySpyText(in)
			if err == nil && len(dumps) > 0 && !cmp.Equal(d, dumps[0]) {
				t.Errorf("ParsePySpyText(%q) is not the first of parsePySpyTexts's dumps", in)
			}
		}
	})
}

func FuzzParseFaulthandler(f *testing.F) {
	addFileSeeds(f, "corpus/*faulthandler*", "live/faulthandler-*.txt")
	for _, tc := range faulthandlerCases {
		f.Add([]byte(tc.in), uint16(len(tc.in)/2))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		for _, in := range [][]byte{b, prefix(b, cut)} {
			dumps, err := ParseFaulthandler(in)
			checkDumps(t, "ParseFaulthandler", in, dumps, err, FormatFaulthandler)
		}
	})
}

func FuzzParsePySpyJSON(f *testing.F) {
	addFileSeeds(f, "live/*.json")
	for _, tc := range pySpyJSONCases {
		f.Add([]byte(tc.in), uint16(len(tc.in)/2))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		d, end, err := parsePySpyJSON(b)
		var dumps []Dump
		if err == nil {
			dumps = []Dump{d}
		}
		checkDumps(t, "parsePySpyJSON", b, dumps, err, FormatPySpyJSON)
		if err == nil && (end < 0 || end > len(b)) {
			t.Fatalf("parsePySpyJSON(%q): end %d outside the input", b, end)
		}
		if got, gotErr := ParsePySpyJSON(b); (gotErr == nil) != (err == nil) || err == nil && !cmp.Equal(got, d) {
			t.Errorf("ParsePySpyJSON(%q) differs from parsePySpyJSON", b)
		}
		// Cutting a complete array anywhere before its end leaves it
		// Truncated, or nothing to parse.
		if err != nil || d.Truncated {
			return
		}
		in := prefix(b, cut)
		if len(in) >= end {
			return
		}
		d2, _, err := parsePySpyJSON(in)
		if err == nil && !d2.Truncated {
			t.Errorf("parsePySpyJSON(%q), a complete array cut at %d of its %d bytes, is not Truncated", in, len(in), end)
		}
	})
}

func FuzzParse(f *testing.F) {
	addFileSeeds(f, "corpus/*.txt", "live/*.txt", "live/*.json")
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		for _, in := range [][]byte{b, prefix(b, cut)} {
			dumps, err := Parse(in)
			checkDumps(t, "Parse", in, dumps, err, model.FormatNone)
		}
	})
}
