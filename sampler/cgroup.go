package sampler

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// The CPU a process may use: its cgroup's bandwidth limit (cgroup v2's
// cpu.max, v1's cpu.cfs_quota_us and cpu.cfs_period_us), how often the
// limit throttled it (cpu.stat), the pressure on it (PSI), and how busy
// the machine is. A thread throttled by its cgroup wants a core as a
// spinning one does; these say it is starved, not hung.

// cgroupMount is where a cgroup hierarchy is mounted: its mount point and
// the cgroup path its root shows (not "/" inside a cgroup namespace's
// bind mount).
type cgroupMount struct{ dir, root string }

// cgroupMounts reads, from hangdoc's own mountinfo, where the cgroup v2
// hierarchy and the v1 cpu controller are mounted.
func cgroupMounts(fs FS) (v2, v1cpu cgroupMount) {
	b, err := readFile(fs.Path("self", "mountinfo"), nil)
	if err != nil {
		return
	}
	for line := range bytes.Lines(b) {
		pre, post, ok := strings.Cut(strings.TrimSpace(string(line)), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{dir: unescapeMount(f[4]), root: unescapeMount(f[3])}
		switch {
		case g[0] == "cgroup2" && v2.dir == "":
			v2 = m
		case g[0] == "cgroup" && v1cpu.dir == "" && containsString(strings.Split(g[2], ","), "cpu"):
			v1cpu = m
		}
	}
	return
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// unescapeMount undoes mountinfo's octal escapes of spaces and the like.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseProcCgroup reads /proc/PID/cgroup into the v2 path ("0::/path") and
// the v1 cpu controller's ("N:cpu,cpuacct:/path"); "" for none.
func parseProcCgroup(b []byte) (v2, v1cpu string) {
	for line := range bytes.Lines(b) {
		id, rest, ok := strings.Cut(strings.TrimSpace(string(line)), ":")
		if !ok {
			continue
		}
		ctrl, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case id == "0" && ctrl == "":
			v2 = path
		case containsString(strings.Split(ctrl, ","), "cpu"):
			v1cpu = path
		}
	}
	return
}

// readCgroup reads the CPU limit of pid's cgroup: the deepest cgroup from
// its own up to the root with a quota (v2 where its cpu controller is
// mounted, else v1), and that cgroup's throttling; with neither, the
// pressure of its own cgroup. nil when the process has no cgroup hangdoc
// can read.
func (s *Sampler) readCgroup() *model.Cgroup {
	b, err := readFile(s.fs.pidPath(s.pid, "cgroup"), nil)
	if err != nil {
		return nil
	}
	v2path, v1path := parseProcCgroup(b)
	if s.mounts == nil {
		v2, v1 := cgroupMounts(s.fs)
		s.mounts = &[2]cgroupMount{v2, v1}
	}
	v2, v1 := s.mounts[0], s.mounts[1]
	switch {
	case v1path != "" && v1.dir != "":
		return readCgroupDir(1, v1path, v1, s.pid)
	case v2path != "" && v2.dir != "":
		return readCgroupDir(2, v2path, v2, s.pid)
	}
	return nil
}

func readCgroupDir(version int, path string, m cgroupMount, pid int) *model.Cgroup {
	c := &model.Cgroup{Path: path, Version: version}
	rel := strings.TrimPrefix(path, m.root)
	if rel == path && m.root != "/" {
		// The process's cgroup is outside what this mount shows (another
		// cgroup namespace's): nothing to read.
		c.Err = "its cgroup " + path + " is not under the hierarchy mounted at " + m.dir
		return c
	}
	own := filepath.Join(m.dir, rel)
	for dir := own; ; dir = filepath.Dir(dir) {
		if q, p, ok := readQuota(version, dir); ok {
			c.QuotaUS, c.PeriodUS = q, p
			c.Limited = strings.TrimPrefix(dir, m.dir)
			if c.Limited == "" {
				c.Limited = "/"
			}
			readCPUStat(version, dir, c)
			c.Alone = dir == own && aloneIn(dir, pid)
			break
		}
		if dir == m.dir || len(dir) <= len(m.dir) {
			break
		}
	}
	if version == 2 {
		c.Pressure = readPressure(own, "cpu.pressure", "memory.pressure", "io.pressure")
	}
	return c
}

// aloneIn reports a cgroup with no child cgroup whose cgroup.procs lists
// pid and nothing else (read up to 4 KiB: a longer list is not one pid).
func aloneIn(dir string, pid int) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.IsDir() {
			return false
		}
	}
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := io.ReadFull(f, b)
	return n < len(b) && strings.TrimSpace(string(b[:n])) == strconv.Itoa(pid)
}

// readQuota reads a cgroup's CPU bandwidth limit; ok is false when it has
// none ("max", -1) or the files cannot be read.
func readQuota(version int, dir string) (quota, period int64, ok bool) {
	if version == 2 {
		b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return 0, 0, false
		}
		f := strings.Fields(string(b))
		if len(f) != 2 || f[0] == "max" {
			return 0, 0, false
		}
		q, err1 := strconv.ParseInt(f[0], 10, 64)
		p, err2 := strconv.ParseInt(f[1], 10, 64)
		return q, p, err1 == nil && err2 == nil && q > 0 && p > 0
	}
	qb, err1 := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	pb, err2 := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	q, err1 := strconv.ParseInt(strings.TrimSpace(string(qb)), 10, 64)
	p, err2 := strconv.ParseInt(strings.TrimSpace(string(pb)), 10, 64)
	return q, p, err1 == nil && err2 == nil && q > 0 && p > 0
}

// readCPUStat reads cpu.stat's throttling counters (v1 gives the
// throttled time in ns, v2 in µs).
func readCPUStat(version int, dir string, c *model.Cgroup) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		c.Err = "reading cpu.stat: " + err.Error()
		return
	}
	for line := range bytes.Lines(b) {
		k, v, ok := strings.Cut(strings.TrimSpace(string(line)), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "nr_periods":
			c.Periods = n
		case "nr_throttled":
			c.Throttled = n
		case "throttled_usec":
			c.ThrottledUS = n
		case "throttled_time":
			if version == 1 {
				c.ThrottledUS = n / 1000
			}
		}
	}
}

// readPressure reads the "some" totals of PSI files in dir; nil when none
// can be read (no CONFIG_PSI, or psi=0).
func readPressure(dir string, cpu, memory, io string) *model.Pressure {
	var p model.Pressure
	found := false
	for _, x := range []struct {
		file string
		to   *uint64
	}{{cpu, &p.CPUUS}, {memory, &p.MemoryUS}, {io, &p.IOUS}} {
		if n, ok := pressureTotal(filepath.Join(dir, x.file)); ok {
			*x.to, found = n, true
		}
	}
	if !found {
		return nil
	}
	return &p
}

// pressureTotal is the total= of a PSI file's "some" line.
func pressureTotal(path string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, field := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(field, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// readMachine reads the host's cumulative CPU ticks (busy: all but idle
// and iowait), its one-minute load and its pressure.
func readMachine(fs FS) *model.Machine {
	b, err := readFile(fs.Path("stat"), make([]byte, 0, 4096))
	if err != nil {
		return nil
	}
	m := &model.Machine{}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return nil
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil
		}
		// guest and guest_nice (9, 10) are already counted in user and
		// nice.
		if i >= 8 {
			break
		}
		m.TotalTicks += n
		if i != 3 && i != 4 { // idle, iowait
			m.BusyTicks += n
		}
	}
	if lb, err := readFile(fs.Path("loadavg"), nil); err == nil {
		if lf := strings.Fields(string(lb)); len(lf) > 0 {
			m.Load1, _ = strconv.ParseFloat(lf[0], 64)
		}
	}
	m.Pressure = readPressure(fs.Path("pressure"), "cpu", "memory", "io")
	return m
}
