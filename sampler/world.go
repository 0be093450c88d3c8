package sampler

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// Process is a process that one of the target's waits leads to — the other
// end of a pipe or socket, a waited-for child — sampled alongside it.
type Process struct {
	PID     int    `json:"pid"`
	Cmdline string `json:"cmdline"`
	// Depth is how many waits away from the target it is: 1 for a process
	// the target waits on directly.
	Depth   int      `json:"depth"`
	Samples []Sample `json:"samples"`
	// Err says why it could not be sampled (gone, permission); Samples is
	// then empty.
	Err string `json:"err,omitempty"`
}

// Resource is what the kernel says about one thing a blocked thread waits
// on, named as /proc/PID/fd names it: "pipe:[32921]", "socket:[123]".
type Resource struct {
	Name string `json:"name"`
	// Holders are every descriptor found open on it, in any process.
	Holders []FDRef   `json:"holders"`
	Pipe    *PipeFill `json:"pipe,omitempty"`
	TCP     *TCPConn  `json:"tcp,omitempty"`
	// Peer names the other end of a TCP connection on this host
	// ("socket:[456]"), itself a Resource.
	Peer string `json:"peer,omitempty"`
}

// Search says how the holders of resources were looked for.
type Search struct {
	Scanned  int   `json:"scanned_processes"`
	Complete bool  `json:"complete"`
	BudgetMS int64 `json:"budget_ms"`
}

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
