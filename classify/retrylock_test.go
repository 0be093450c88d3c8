package classify_test

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// TestRetryLock: a process whose threads are idle, one asleep briefly, and
// whose samples show another process's record lock on a file it has open
// is blocked behind that process — the SQLite busy handler's shape. A long
// sleep, a lock of its own, or a thread that works, is not.
func TestRetryLock(t *testing.T) {
	const holder = 200
	nap := call("clock_nanosleep", 1, 0, 0x7000, 0)
	db := model.LockedFile{Path: "/srv/app.db", FD: 4, Dev: "08:01", Inode: 77, SQLite: true,
		Held: []model.FileLockEntry{{Class: "POSIX", Type: "READ", PID: holder, Range: "1073741826 1073742335"},
			{Class: "POSIX", Type: "WRITE", PID: holder, Range: "1073741825 1073741825"}}}
	mk := func(sleepNS int64, files []model.LockedFile, other *th) []model.Sample {
		threads := []th{{tid: pid, name: "main", state: "S", vol: 10, call: nap, wchan: "hrtimer_nanosleep"}}
		if other != nil {
			threads = append(threads, *other)
		}
		ss := steady(3, nil, threads...)
		for i := range ss {
			ss[i].Threads[0].SleepNS = sleepNS
			if i > 0 { // the first sample caught it running: it did not look
				ss[i].LockedFiles = files
			}
		}
		return ss
	}
	// Caught between tries in the middle sample: in the database file's
	// read, its waits move, and its CPU stays near nothing.
	between := func() []model.Sample {
		ss := mk(100e6, []model.LockedFile{db}, nil)
		ss[2].Threads[0].Syscall = call("pread64", 4, 0x7100, 100, 0)
		ss[2].Threads[0].SleepNS = 0
		ss[2].LockedFiles = nil // it did not look
		ss[0].LockedFiles = []model.LockedFile{db}
		ss[2].Threads[0].Wchan = "do_syscall_64"
		ss[1].Threads[0].Voluntary += 3
		ss[2].Threads[0].Voluntary += 6
		return ss
	}
	worker := &th{tid: pid + 1, name: "worker", state: "R", cpu: 900e6, call: running}
	tests := []struct {
		name    string
		samples []model.Sample
		retry   bool
	}{
		{"sqlite busy", mk(100e6, []model.LockedFile{db}, nil), true},
		{"caught between tries", between(), true},
		{"a long sleep", mk(30e9, []model.LockedFile{db}, nil), false},
		{"a runtime's nap", mk(5e6, []model.LockedFile{db}, nil), false},
		{"no lock of another's", mk(100e6, nil, nil), false},
		{"a thread works", mk(100e6, []model.LockedFile{db}, worker), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify(tt.samples, World{}, classify.DefaultOptions())
			var w *classify.Wait
			for i := range d.Waits {
				if d.Waits[i].From.TID == pid {
					w = &d.Waits[i]
				}
			}
			t.Logf("%s: %s %s", tt.name, d.Verdict, d.Summary)
			if !tt.retry {
				if w != nil && w.Kind == model.WaitLockRetry {
					t.Fatalf("wait %+v, want no lock-retry", *w)
				}
				return
			}
			if d.Verdict != classify.Blocked || w == nil || w.Kind != model.WaitLockRetry || w.To == nil || w.To.PID != holder ||
				w.Retry == nil || w.Retry.Lock.Type != "WRITE" || !w.Retry.SQLite || w.Retry.Samples != 2 || w.Retry.SleepNS != 100e6 {
				t.Fatalf("verdict %s, wait %+v, want blocked behind pid %d on its WRITE lock", d.Verdict, w, holder)
			}
			for _, r := range d.R.Waits {
				if r.From.TID == pid && !strings.Contains(r.Detail, "retries a lock on the SQLite database /srv/app.db held by pid 200, asleep ~100 ms") {
					t.Errorf("detail %q", r.Detail)
				}
			}
		})
	}
}
