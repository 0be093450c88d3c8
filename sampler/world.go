package sampler

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// BootTime reads when the machine booted (the btime line of /proc/stat), to
// turn start times in clock ticks into dates.
func BootTime(fs FS) (time.Time, error) {
	path := fs.Path("stat")
	b, err := readFile(path, make([]byte, 16<<10))
	if err != nil {
		// Not classifyErr: a missing /proc/stat is no missing process.
		return time.Time{}, fmt.Errorf("reading %s: %w", path, err)
	}
	for line := range bytes.Lines(b) {
		v, ok := bytes.CutPrefix(line, []byte("btime "))
		if !ok {
			continue
		}
		sec, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("reading %s: btime: %w", path, err)
		}
		return time.Unix(sec, 0), nil
	}
	return time.Time{}, fmt.Errorf("reading %s: no btime line", path)
}
