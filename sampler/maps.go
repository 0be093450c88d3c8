package sampler

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
)

// sampleMaps is the target's /proc/PID/maps as one sample reads it: the
// file once (the kernel walks every mapping to print it, which costs on a
// process with many), each view of it parsed once, for the readers of
// poll sets, paths, sleeps, SysV operations and shared futex words.
type sampleMaps struct {
	read         bool
	text         []byte
	readable     []mapping
	readableDone bool
	shared       []shmMapping
	sharedDone   bool
}

// maxMapsBytes bounds a maps file read: maxMapsLines lines of a path's
// length each.
const maxMapsBytes = 64 << 20

// mapsText is the target's maps for this sample, read on first use; nil
// when it cannot be read.
func (s *Sampler) mapsText() []byte {
	if !s.maps.read {
		s.maps.text, _ = readMapsFile(s.fs, s.pid)
		s.maps.read = true
	}
	return s.maps.text
}

// readMapsFile reads a process's maps, bounded by maxMapsBytes.
func readMapsFile(fs FS, pid int) ([]byte, error) {
	f, err := os.Open(fs.pidPath(pid, "maps"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxMapsBytes))
}

// parseMaps parses the first maxMapsLines lines of a maps file with
// parse, keeping the lines it takes.
func parseMaps[M any](b []byte, parse func(string) (M, bool)) []M {
	var out []M
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 0; n < maxMapsLines && sc.Scan(); n++ {
		if m, ok := parse(sc.Text()); ok {
			out = append(out, m)
		}
	}
	return out
}

// ExecMapping is a mapping of a file's code into a process: the target
// addresses [Start, End) hold the file's bytes from Offset on.
type ExecMapping struct {
	Start, End, Offset uint64
	Path               string
}

// ExecMappings are a process's executable mappings of files, in address
// order, from its maps (bounded as every maps read is): where a code
// address's symbols are found.
func ExecMappings(fs FS, pid int) ([]ExecMapping, error) {
	b, err := readMapsFile(fs, pid)
	if err != nil {
		return nil, classifyErr("reading", fs.pidPath(pid, "maps"), err)
	}
	return parseMaps(b, parseExecMapping), nil
}

// parseExecMapping reads one maps line, "start-end perms offset dev inode
// path", keeping it if it maps a file's code.
func parseExecMapping(line string) (ExecMapping, bool) {
	f := strings.Fields(line)
	if len(f) < 6 || len(f[1]) < 3 || f[1][2] != 'x' || !strings.HasPrefix(f[5], "/") {
		return ExecMapping{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return ExecMapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	off, err3 := strconv.ParseUint(f[2], 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || end <= start {
		return ExecMapping{}, false
	}
	// A path with spaces is the rest of the line; " (deleted)" is the
	// kernel's, not the file's.
	path := strings.TrimSuffix(strings.Join(f[5:], " "), " (deleted)")
	return ExecMapping{Start: start, End: end, Offset: off, Path: path}, true
}
