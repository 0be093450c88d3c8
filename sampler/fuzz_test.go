package sampler

import (
	"bytes"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hangdoc/hangdoc/model"
)

// addProcSeeds adds every file called name under testdata/proc, the
// captured /proc tree, to f's seed corpus.
func addProcSeeds(f *testing.F, name string) {
	f.Helper()
	n := 0
	err := filepath.WalkDir("testdata/proc", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != name || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f.Add(b)
		n++
		return nil
	})
	if err != nil {
		f.Fatalf("seeding from testdata/proc: %v", err)
	}
	if n == 0 {
		f.Fatalf("no %s file under testdata/proc to seed from", name)
	}
}

func FuzzParseStat(f *testing.F) {
	addProcSeeds(f, "stat")
	for _, tc := range statCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseStat(b)
		if err != nil {
			return
		}
		open := bytes.IndexByte(b, '(')
		end := bytes.LastIndexByte(b, ')')
		if open < 0 || end < open {
			t.Fatalf("parseStat(%q) succeeded without a (comm)", b)
		}
		if want := string(b[open+1 : end]); s.Comm != want {
			t.Errorf("parseStat(%q): Comm %q, want the bytes between the first '(' and the last ')': %q", b, s.Comm, want)
		}
		if pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open]))); err != nil || s.PID != pid {
			t.Errorf("parseStat(%q): PID %d, but the text before '(' is %q", b, s.PID, b[:open])
		}
		fields := bytes.Fields(b[end+1:])
		if len(fields) < 22 {
			t.Fatalf("parseStat(%q) succeeded with %d fields after the comm", b, len(fields))
		}
		if s.State != model.ParseThreadState(string(fields[0])) {
			t.Errorf("parseStat(%q): State %q, want field 3, %q", b, s.State, fields[0])
		}
		if s.CPUTime < 0 {
			t.Errorf("parseStat(%q): negative CPUTime %v", b, s.CPUTime)
		}
		// CPUTime is exactly utime+stime (fields 14 and 15) ticks of 10ms,
		// computed here without overflow.
		utime, ok1 := new(big.Int).SetString(string(fields[11]), 10)
		stime, ok2 := new(big.Int).SetString(string(fields[12]), 10)
		if !ok1 || !ok2 {
			t.Fatalf("parseStat(%q) succeeded with utime %q, stime %q", b, fields[11], fields[12])
		}
		want := new(big.Int).Add(utime, stime)
		want.Mul(want, big.NewInt(int64(time.Second/ticksPerSecond)))
		if !want.IsInt64() || want.Int64() != int64(s.CPUTime) {
			t.Errorf("parseStat(%q): CPUTime %d ns, want (%s+%s) ticks = %s ns", b, int64(s.CPUTime), utime, stime, want)
		}
	})
}

// refStatusField is a line-by-line reading of a status field, to check
// the status parser against: the first line whose text starts with key,
// its value trimmed and decimal.
func refStatusField(b []byte, key string) (uint64, bool) {
	lines := bytes.Split(b, []byte("\n"))
	for _, l := range lines {
		if v, ok := bytes.CutPrefix(l, []byte(key)); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func FuzzParseCtxtSwitches(f *testing.F) {
	addProcSeeds(f, "status")
	for _, tc := range ctxtCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vol, inv, err := parseCtxtSwitches(b)
		wantVol, ok1 := refStatusField(b, "voluntary_ctxt_switches:")
		wantInv, ok2 := refStatusField(b, "nonvoluntary_ctxt_switches:")
		if (err == nil) != (ok1 && ok2) {
			t.Fatalf("parseCtxtSwitches(%q) = %d, %d, %v; the lines say voluntary %d (%v), nonvoluntary %d (%v)",
				b, vol, inv, err, wantVol, ok1, wantInv, ok2)
		}
		if err == nil && (vol != wantVol || inv != wantInv) {
			t.Errorf("parseCtxtSwitches(%q) = %d, %d; want %d, %d", b, vol, inv, wantVol, wantInv)
		}
	})
}

func FuzzParseSyscall(f *testing.F) {
	addProcSeeds(f, "syscall")
	for _, tc := range syscallCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := parseSyscall(b)
		if err != nil {
			if d := cmp.Diff(model.Syscall{}, sc); d != "" {
				t.Errorf("parseSyscall(%q) failed (%v) but returned a value (-zero +got):\n%s", b, err, d)
			}
			return
		}
		if sc.Nr < -1 {
			t.Errorf("parseSyscall(%q): Nr %d < -1", b, sc.Nr)
		}
		if sc.Unknown || sc.Name != "" {
			t.Errorf("parseSyscall(%q) = %+v: the parser sets neither Unknown nor Name", b, sc)
		}
		trimmed := bytes.TrimSpace(b)
		if sc.Running != (string(trimmed) == "running") {
			t.Errorf("parseSyscall(%q): Running %v", b, sc.Running)
		}
		if sc.Running && sc.Nr != -1 {
			t.Errorf("parseSyscall(%q): Running with Nr %d, want -1", b, sc.Nr)
		}
		if sc.Nr == -1 {
			if sc.Args != [6]uint64{} {
				t.Errorf("parseSyscall(%q): arguments %#x outside a syscall", b, sc.Args)
			}
			return
		}
		fields := bytes.Fields(trimmed)
		if len(fields) != 9 {
			t.Fatalf("parseSyscall(%q) = %+v from %d fields, want 9", b, sc, len(fields))
		}
		if nr, err := strconv.Atoi(string(fields[0])); err != nil || nr != sc.Nr {
			t.Errorf("parseSyscall(%q): Nr %d, field %q", b, sc.Nr, fields[0])
		}
		for i, a := range sc.Args {
			h, ok := bytes.CutPrefix(fields[i+1], []byte("0x"))
			v, err := strconv.ParseUint(string(h), 16, 64)
			if !ok || err != nil || v != a {
				t.Errorf("parseSyscall(%q): Args[%d] = %#x from %q", b, i, a, fields[i+1])
			}
		}
		// What the kernel would print for it parses back to the same.
		canon := strconv.Itoa(sc.Nr)
		for _, a := range sc.Args {
			canon += " 0x" + strconv.FormatUint(a, 16)
		}
		canon += " 0x" + strconv.FormatUint(sc.SP, 16) + " 0x" + strconv.FormatUint(sc.PC, 16) + "\n"
		if again, err := parseSyscall([]byte(canon)); err != nil || again != sc {
			t.Errorf("parseSyscall(%q) = %+v, %v; want %+v as from %q", canon, again, err, sc, b)
		}
	})
}

// FuzzParseSchedstat has no captured seeds: the fixture's threads are all
// asleep, and schedstat is read only for running ones.
func FuzzParseSchedstat(f *testing.F) {
	for _, tc := range schedstatCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		run, wait, err := parseSchedstat(b)
		if err != nil {
			if run != 0 || wait != 0 {
				t.Errorf("parseSchedstat(%q) failed (%v) but returned %v, %v", b, err, run, wait)
			}
			return
		}
		fields := bytes.Fields(b)
		if len(fields) != 3 {
			t.Fatalf("parseSchedstat(%q) succeeded with %d fields", b, len(fields))
		}
		if run < 0 || wait < 0 {
			t.Errorf("parseSchedstat(%q) = %v, %v: negative", b, run, wait)
		}
		for i, got := range []time.Duration{run, wait} {
			if v, err := strconv.ParseUint(string(fields[i]), 10, 64); err != nil || v != uint64(got) {
				t.Errorf("parseSchedstat(%q): field %d %q read as %d ns", b, i+1, fields[i], got)
			}
		}
	})
}

func FuzzParseNSpid(f *testing.F) {
	addProcSeeds(f, "status")
	f.Add([]byte("Name:\tx\nNSpid:\t4187\t1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ns := parseNSpid(b)
		for _, p := range ns {
			if p <= 0 {
				t.Fatalf("parseNSpid(%q) = %v: a pid not above 0", b, ns)
			}
		}
		if inner := innerPID(ns, 1); inner < 0 || inner != 0 && inner != ns[len(ns)-1] {
			t.Fatalf("innerPID(%v, 1) = %d", ns, inner)
		}
	})
}

func FuzzStackPointer(f *testing.F) {
	addProcSeeds(f, "syscall")
	f.Add([]byte("202 0x55f0e1a2b0 0x189 0x0 0x0 0x0 0xffffffff 0x7f4c206086a0 0x7f4c2104a0aa\n"))
	f.Add([]byte("-1 0x7f4c207ff000 0x7f4c2104a0aa\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sp, ok := stackPointer(b)
		if ok && sp == 0 {
			t.Fatalf("stackPointer(%q) = 0, true", b)
		}
	})
}
