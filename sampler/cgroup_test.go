package sampler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/model"
)

func TestParseProcCgroup(t *testing.T) {
	v2, v1 := parseProcCgroup([]byte("9:name=systemd:/\n4:memory:/m\n1:cpu,cpuacct:/kube/pod1\n0::/kube/pod1/c\n"))
	if v2 != "/kube/pod1/c" || v1 != "/kube/pod1" {
		t.Errorf("parseProcCgroup = %q, %q", v2, v1)
	}
	if v2, v1 := parseProcCgroup([]byte("0::/\n")); v2 != "/" || v1 != "" {
		t.Errorf("pure v2: %q, %q", v2, v1)
	}
}

// TestReadCgroupDir: the quota is found on the cgroup or an ancestor, and
// the throttling read from the cgroup that has it, in both versions.
func TestReadCgroupDir(t *testing.T) {
	write := func(dir string, files map[string]string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	root := t.TempDir()
	write(filepath.Join(root, "v2", "svc"), map[string]string{"cpu.max": "5000 100000\n",
		"cpu.stat": "usage_usec 100\nnr_periods 14\nnr_throttled 10\nthrottled_usec 950000\n"})
	write(filepath.Join(root, "v2", "svc", "worker"), map[string]string{"cpu.max": "max 100000\n",
		"cpu.pressure":    "some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"})
	got := readCgroupDir(2, "/svc/worker", cgroupMount{dir: filepath.Join(root, "v2"), root: "/"}, 42)
	want := &model.Cgroup{Path: "/svc/worker", Limited: "/svc", Version: 2, QuotaUS: 5000, PeriodUS: 100000, Periods: 14, Throttled: 10,
		ThrottledUS: 950000, Pressure: &model.Pressure{CPUUS: 123456, MemoryUS: 7}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("v2 (-want +got):\n%s", diff)
	}
	write(filepath.Join(root, "v1", "job"), map[string]string{"cpu.cfs_quota_us": "20000\n", "cpu.cfs_period_us": "100000\n",
		"cpu.stat": "nr_periods 5\nnr_throttled 5\nthrottled_time 385535738\n", "cgroup.procs": "42\n"})
	write(filepath.Join(root, "v1"), map[string]string{"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n"})
	got = readCgroupDir(1, "/ns/job", cgroupMount{dir: filepath.Join(root, "v1"), root: "/ns"}, 42)
	want = &model.Cgroup{Path: "/ns/job", Limited: "/job", Version: 1, QuotaUS: 20000, PeriodUS: 100000, Periods: 5, Throttled: 5, ThrottledUS: 385535, Alone: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("v1 in a cgroup namespace (-want +got):\n%s", diff)
	}
	// Another process in the cgroup, or the quota on an ancestor (the v2
	// case above): its throttling may be another's demand.
	if c := readCgroupDir(1, "/ns/job", cgroupMount{dir: filepath.Join(root, "v1"), root: "/ns"}, 43); c.Alone {
		t.Errorf("pid 43 is not in the cgroup, yet alone: %+v", c)
	}
	write(filepath.Join(root, "v1", "job"), map[string]string{"cgroup.procs": "42\n43\n"})
	if c := readCgroupDir(1, "/ns/job", cgroupMount{dir: filepath.Join(root, "v1"), root: "/ns"}, 42); c.Alone {
		t.Errorf("two processes, yet alone: %+v", c)
	}
	if c := readCgroupDir(1, "/", cgroupMount{dir: filepath.Join(root, "v1"), root: "/"}, 42); c.Limited != "" || c.QuotaUS != 0 {
		t.Errorf("no quota anywhere: %+v", c)
	}
}

func TestReadMachine(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "stat"), []byte("cpu  100 10 50 800 40 0 5 0 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"), 0o644)
	os.WriteFile(filepath.Join(root, "loadavg"), []byte("1.50 1.00 0.50 2/300 4242\n"), 0o644)
	m := readMachine(NewFS(root))
	if m == nil || m.TotalTicks != 1005 || m.BusyTicks != 165 || m.Load1 != 1.5 || m.Pressure != nil {
		t.Errorf("readMachine = %+v", m)
	}
}

func FuzzParseProcCgroup(f *testing.F) {
	for _, s := range []string{"0::/\n", "9:name=systemd:/\n1:cpu,cpuacct:/kube/pod1\n0::/kube/pod1/c\n", "::", "1:cpu", "x:y:z:w\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		parseProcCgroup(b)
	})
}

func FuzzUnescapeMount(f *testing.F) {
	for _, s := range []string{`/sys/fs/cgroup`, `/mnt/a\040b`, `\`, `\0`, `\777`, `a\12`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if u := unescapeMount(s); len(u) > len(s) {
			t.Errorf("unescapeMount(%q) = %q: longer", s, u)
		}
	})
}
