package sampler

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// maxSource bounds a source file read to find the locks a frame holds.
const maxSource = 1 << 20

// ReadSource reads a source file a stack points into, as the target sees
// it: through /proc/PID/root, so a file inside a container is the
// container's. Lines are returned without their newlines, line 1 first.
func ReadSource(fs FS, pid int, path string) ([]string, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("reading source %q: not an absolute path", path)
	}
	return readLines(fs.Path(strconv.Itoa(pid), "root", path))
}

// ReadLocalSource reads a source file from this machine's filesystem, for
// dumps analysed offline on the host that took them.
func ReadLocalSource(path string) ([]string, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("reading source %q: not an absolute path", path)
	}
	return readLines(path)
}

func readLines(full string) ([]string, error) {
	f, err := os.Open(full)
	if err != nil {
		return nil, fmt.Errorf("reading source %s: %w", full, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSource+1))
	if err != nil {
		return nil, fmt.Errorf("reading source %s: %w", full, err)
	}
	if len(b) > maxSource {
		return nil, fmt.Errorf("reading source %s: larger than %d bytes", full, maxSource)
	}
	var lines []string
	for line := range bytes.Lines(b) {
		lines = append(lines, string(bytes.TrimRight(line, "\r\n")))
	}
	return lines, nil
}
