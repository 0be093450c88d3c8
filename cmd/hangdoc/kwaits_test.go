package main

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// TestAnonFDWaits: a read or poll of an eventfd, a pidfd, a signalfd, a
// timerfd or an inotify instance, an epoll_wait over a pipe, and an
// io_uring_enter for completions, each named from fdinfo: who else has
// the eventfd open, the process a pidfd waits for (followed), the
// signals, the timer, the watches, the pipe's writer behind the epoll
// instance (followed), the ring's queues. A futex_waitv names the futex
// words it waits on, read from its memory.
func TestAnonFDWaits(t *testing.T) {
	type anon struct {
		Kind       string   `json:"kind"`
		OpenBy     []int    `json:"open_by"`
		Signals    []string `json:"signals"`
		ValueMS    *float64 `json:"value_ms"`
		Armed      *bool    `json:"armed"`
		WatchCount *int     `json:"watch_count"`
		PID        int      `json:"pid"`
		SQEs       *uint64  `json:"sqes"`
		CQEs       *uint64  `json:"cqes"`
		MinComp    *uint64  `json:"min_complete"`
	}
	type report struct {
		Verdict string `json:"verdict"`
		Summary string `json:"summary"`
		Waits   []struct {
			From   ref    `json:"from"`
			To     *ref   `json:"to"`
			Kind   string `json:"kind"`
			Detail string `json:"detail"`
			Chain  string `json:"chain"`
			Anon   *anon  `json:"anon"`
		} `json:"waits"`
	}
	bin := testvictim.Build(t, "kwaits")
	tests := []struct {
		mode, verdict, kind string
		code                ExitCode
		check               func(t *testing.T, a *anon, other int, detail, chain string)
	}{
		{"eventfd", "blocked", "eventfd", ExitBlocked, func(t *testing.T, a *anon, other int, detail, chain string) {
			if a == nil || !slices.Contains(a.OpenBy, other) || !strings.Contains(detail, "pid "+strconv.Itoa(other)+" also has it open") {
				t.Errorf("anon %+v, detail %q: want the child %d with the eventfd open", a, detail, other)
			}
		}},
		{"pidfd", "blocked", "pidfd", ExitBlocked, func(t *testing.T, a *anon, other int, detail, chain string) {
			if a == nil || a.PID != other || !strings.Contains(chain, "pid "+strconv.Itoa(other)) || !strings.Contains(chain, "sleeping") {
				t.Errorf("anon %+v, chain %q: want the wait for pid %d, followed", a, chain, other)
			}
		}},
		{"epoll", "blocked", "poll-fds", ExitBlocked, func(t *testing.T, a *anon, other int, detail, chain string) {
			for _, needle := range []string{"epoll_wait(", "pipe:[", "pid " + strconv.Itoa(other), "sleeping"} {
				if !strings.Contains(chain, needle) {
					t.Errorf("chain %q: want %q", chain, needle)
				}
			}
		}},
		{"signalfd", "idle", "signalfd", ExitIdle, func(t *testing.T, a *anon, other int, detail, chain string) {
			if a == nil || !slices.Equal(a.Signals, []string{"SIGUSR1", "SIGTERM"}) || !strings.Contains(detail, "SIGUSR1, SIGTERM") {
				t.Errorf("anon %+v, detail %q: want SIGUSR1 and SIGTERM", a, detail)
			}
		}},
		{"timerfd", "idle", "timerfd", ExitIdle, func(t *testing.T, a *anon, other int, detail, chain string) {
			if a == nil || a.Armed == nil || !*a.Armed || a.ValueMS == nil || *a.ValueMS <= 0 || *a.ValueMS > 3600e3 {
				t.Errorf("anon %+v: want a timer armed to expire within the hour", a)
			}
		}},
		{"io_uring", "idle", "io-uring", ExitIdle, func(t *testing.T, a *anon, other int, detail, chain string) {
			if a == nil || a.MinComp == nil || *a.MinComp != 1 || a.SQEs == nil || *a.SQEs != 0 || a.CQEs == nil || *a.CQEs != 0 ||
				!strings.Contains(detail, "waits for 1 completion on io_uring fd") {
				t.Errorf("anon %+v, detail %q: want a wait for 1 completion of an empty ring", a, detail)
			}
		}},
		{"futex_waitv", "blocked", "futex", ExitBlocked, func(t *testing.T, a *anon, other int, detail, chain string) {
			if !strings.Contains(detail, " at any of 0x") || strings.Count(detail, " or 0x") != 1 || !strings.Contains(detail, "no live thread is left") {
				t.Errorf("detail %q: want the two futex words, and nobody left to wake them", detail)
			}
		}},
		{"inotify", "idle", "inotify", ExitIdle, func(t *testing.T, a *anon, other int, detail, chain string) {
			if a == nil || a.WatchCount == nil || *a.WatchCount != 1 {
				t.Errorf("anon %+v: want one watch", a)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tt.mode)
			// The inotify victim watches its own directory, which nothing
			// else writes to.
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
			v := testvictim.StartCmd(t, cmd)
			other := v.Int("other")
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
			var r report
			if err := jsonUnmarshal(out, &r); err != nil {
				t.Fatalf("%v\n%s\n%s", err, out, stderr)
			}
			if code != tt.code || r.Verdict != tt.verdict {
				t.Fatalf("exit %d verdict %q (%s), want %s\n%s", code, r.Verdict, r.Summary, tt.verdict, stderr)
			}
			for _, w := range r.Waits {
				if w.From.TID != v.PID {
					continue
				}
				if w.Kind != tt.kind {
					t.Fatalf("wait %+v, want kind %s", w, tt.kind)
				}
				tt.check(t, w.Anon, other, w.Detail, w.Chain)
				return
			}
			t.Fatalf("no wait of tid %d in %s", v.PID, out)
		})
	}
}
