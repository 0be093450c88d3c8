package sampler

import (
	"bufio"
	"bytes"
	"io"
	"os"
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
