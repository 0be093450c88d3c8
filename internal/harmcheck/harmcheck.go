// Package harmcheck tells whether a diagnosed process came out of it as it
// went in: no thread stopped (T or t), no tracer left, its heartbeat still
// advancing, and its code in memory the same as in its executable, byte for
// byte (a breakpoint left behind would kill it with SIGTRAP at its next
// panic). It is for tests: the harm and kill-trial tests of the sources.
package harmcheck

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/internal/procstatus"
)

// StoppedThreads lists the threads of pid in state T or t, as
// "TID:STATE".
func StoppedThreads(pid int) []string {
	stats, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/stat")
	var out []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		if s := b[i+2]; s == 'T' || s == 't' {
			out = append(out, filepath.Base(filepath.Dir(p))+":"+string(s))
		}
	}
	return out
}

// State is pid's state letter ("" if gone).
func State(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// TracerPid is the TracerPid of pid's status (-1 if unreadable).
func TracerPid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	st, _ := procstatus.Parse(b)
	if st.Has&procstatus.HasTracerPid == 0 {
		return -1
	}
	return st.TracerPid
}

// Beat reads the counter a heartbeat victim writes to path.
func Beat(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// WaitBeat waits until the counter at path has advanced by n from its
// value now. guard only bounds a failure: a victim that runs gets there
// in n ticks, however slow the machine, and one that is stopped never does.
func WaitBeat(path string, n uint64, guard time.Duration) error {
	first, err := Beat(path)
	if err != nil {
		return err
	}
	end := time.Now().Add(guard)
	last := first
	for time.Now().Before(end) {
		if last >= first+n {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
		if last, err = Beat(path); err != nil {
			return err
		}
	}
	return fmt.Errorf("heartbeat %s frozen: %d after %v (was %d), want +%d", path, last, guard, first, n)
}

// TextIntact compares every executable segment of pid's executable, as
// mapped in its memory, with the file: nil if equal byte for byte.
func TextIntact(pid int) error {
	exe := fmt.Sprintf("/proc/%d/exe", pid)
	f, err := elf.Open(exe)
	if err != nil {
		return err
	}
	defer f.Close()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err
	}
	target, err := os.Readlink(exe)
	if err != nil {
		return err
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return err
	}
	defer mem.Close()
	checked := 0
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_LOAD || prog.Flags&elf.PF_X == 0 {
			continue
		}
		want := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(want, 0); err != nil {
			return fmt.Errorf("reading %s's segment at offset %#x: %v", exe, prog.Off, err)
		}
		addr, ok := mapped(maps, target, prog.Off)
		if !ok {
			return fmt.Errorf("pid %d: the segment at file offset %#x of %s is not mapped", pid, prog.Off, target)
		}
		got := make([]byte, len(want))
		if _, err := mem.ReadAt(got, int64(addr)); err != nil {
			return fmt.Errorf("reading pid %d's text at %#x: %v", pid, addr, err)
		}
		if i := firstDiff(got, want); i >= 0 {
			return fmt.Errorf("pid %d: code at %#x is %#x, the executable has %#x (a breakpoint left behind?)", pid, addr+uint64(i), got[i], want[i])
		}
		checked++
	}
	if checked == 0 {
		return errors.New("no executable segment found")
	}
	return nil
}

// mapped finds the address at which file offset off of path is mapped.
func mapped(maps []byte, path string, off uint64) (uint64, bool) {
	for line := range strings.Lines(string(maps)) {
		fields := strings.Fields(line)
		if len(fields) < 6 || strings.Join(fields[5:], " ") != path {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		foff, err3 := strconv.ParseUint(fields[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		// The segment starts inside this mapping (its offset is page
		// aligned down in the mapping).
		if off >= foff && off < foff+(end-start) {
			return start + (off - foff), true
		}
	}
	return 0, false
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// Check runs every check on pid (the heartbeat's only if beat is not ""):
// nil when it is unharmed, else every harm found, one per line.
func Check(pid int, beat string) error {
	var harms []string
	if st := State(pid); st == "" || st == "Z" || st == "X" {
		return fmt.Errorf("pid %d is gone (state %q)", pid, st)
	}
	if beat != "" {
		if err := WaitBeat(beat, 3, 20*time.Second); err != nil {
			harms = append(harms, err.Error())
		}
	}
	if s := StoppedThreads(pid); len(s) > 0 {
		harms = append(harms, fmt.Sprintf("stopped threads %v", s))
	}
	if tp := TracerPid(pid); tp != 0 {
		harms = append(harms, fmt.Sprintf("TracerPid %d", tp))
	}
	if err := TextIntact(pid); err != nil {
		harms = append(harms, err.Error())
	}
	if len(harms) > 0 {
		return fmt.Errorf("pid %d harmed: %s", pid, strings.Join(harms, "; "))
	}
	return nil
}
