package main

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/sampler"
)

// Kernel waits followed to their other end (issue 20): the path or
// address a blocked call was given, read from the target's memory, and
// who is at the other end of a FIFO, a Unix socket or a record lock.

// kwReport is the part of the JSON report these tests read.
type kwReport struct {
	Verdict string `json:"verdict"`
	Summary string `json:"summary"`
	Waits   []kwWait
}

type kwWait struct {
	From   ref    `json:"from"`
	To     *ref   `json:"to"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
	Chain  string `json:"chain"`
	Path   string `json:"path"`
	FIFO   *struct {
		Path     string `json:"path"`
		WaitsFor string `json:"waits_for"`
		OpenBy   []int  `json:"open_by"`
		Complete bool   `json:"complete"`
	} `json:"fifo"`
	Unix *struct {
		Type     string `json:"type"`
		Peer     string `json:"peer"`
		PeerPath string `json:"peer_path"`
		Listener bool   `json:"listener"`
		Queued   *int   `json:"queued"`
		Backlog  *int   `json:"backlog"`
	} `json:"unix"`
	Retry *struct {
		Path    string  `json:"path"`
		Holder  int     `json:"holder"`
		Lock    string  `json:"lock"`
		SleepMS float64 `json:"sleep_ms"`
		SQLite  bool    `json:"sqlite"`
		Basis   string  `json:"basis"`
		Samples int     `json:"samples"`
	} `json:"retry"`
}

// kwDiagnose runs hangdoc on pid with samples samples and wants a blocked
// verdict.
func kwDiagnose(t *testing.T, pid, samples int) kwReport {
	t.Helper()
	out, stderr, code := hangdoc(t, strconv.Itoa(pid), "--json", "--interval", "300ms", "--samples", strconv.Itoa(samples))
	var r kwReport
	if err := jsonUnmarshal(out, &r); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	if code != ExitBlocked || r.Verdict != "blocked" {
		t.Fatalf("exit %d verdict %q (%s), want blocked\n%s\n%s", code, r.Verdict, r.Summary, out, stderr)
	}
	return r
}

// waitOf is the wait of thread tid.
func (r kwReport) waitOf(t *testing.T, tid int) kwWait {
	t.Helper()
	for _, w := range r.Waits {
		if w.From.TID == tid {
			return w
		}
	}
	t.Fatalf("no wait of tid %d in %+v", tid, r.Waits)
	return kwWait{}
}

// TestFIFOOpen: an open of a FIFO with no reader names the FIFO, the end
// it waits for, and who has it open: nobody, or a writer that opened it
// while a reader was there.
func TestFIFOOpen(t *testing.T) {
	bin := testvictim.Build(t, "fifo")
	for _, mode := range []string{"nobody", "writer"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, mode)
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
			v := testvictim.StartCmd(t, cmd)
			path, writer := v.Info["path"], v.Int("writer")
			r := kwDiagnose(t, v.PID, 2)
			w := r.waitOf(t, v.PID)
			if w.Kind != "fifo-open" || w.Path != path || w.FIFO == nil || w.FIFO.Path != path || w.FIFO.WaitsFor != "reader" {
				t.Fatalf("wait %+v, want a fifo-open of %s waiting for a reader", w, path)
			}
			if !strings.Contains(w.Detail, "waits for a reader of FIFO "+path) || !strings.Contains(r.Summary, "waits for a reader of FIFO "+path) {
				t.Errorf("detail %q, summary %q: want both to name the FIFO", w.Detail, r.Summary)
			}
			if mode == "nobody" {
				// Another test's process may not have it open: the path is
				// this test's own.
				// A search cut short by a loaded machine says so instead.
				if len(w.FIFO.OpenBy) != 0 || w.FIFO.Complete && !strings.Contains(w.Detail, "nobody has it open") {
					t.Errorf("fifo %+v, detail %q: want nobody with it open", w.FIFO, w.Detail)
				}
				return
			}
			if !slices.Contains(w.FIFO.OpenBy, writer) || !strings.Contains(w.Detail, "pid "+strconv.Itoa(writer)) {
				t.Errorf("fifo %+v, detail %q: want the writer %d with it open", w.FIFO, w.Detail, writer)
			}
		})
	}
}

// TestUnixSockets: a connect() blocked on a listener whose backlog is full
// names the listener, its process and its queue; a read of a socketpair
// names the process that holds the other end.
func TestUnixSockets(t *testing.T) {
	bin := testvictim.Build(t, "unixsock")
	diag := sampler.UnixDiagWorks()
	for _, mode := range []string{"backlog", "pair"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			if mode == "pair" && !diag {
				t.Skip("sock_diag does not answer about Unix sockets on this kernel (CONFIG_UNIX_DIAG): a peer cannot be found")
			}
			cmd := exec.Command(bin, mode)
			// sun_path holds 108 bytes: a short directory of the test's own.
			dir, err := os.MkdirTemp("/tmp", "hd")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			cmd.Env = append(os.Environ(), "TMPDIR="+dir)
			v := testvictim.StartCmd(t, cmd)
			other, path := v.Int("other"), v.Info["path"]
			r := kwDiagnose(t, v.PID, 2)
			w := r.waitOf(t, v.PID)
			if w.To == nil || w.To.PID != other || w.Unix == nil || w.Unix.Peer == "" {
				t.Fatalf("wait %+v, want one to pid %d through a Unix socket's peer", w, other)
			}
			if !strings.Contains(w.Chain, "pid "+strconv.Itoa(other)) {
				t.Errorf("chain %q does not follow to pid %d", w.Chain, other)
			}
			if mode == "pair" {
				if w.Kind != "socket-read" || w.Unix.Listener {
					t.Errorf("wait %+v, want a socket-read of a connected socket", w)
				}
				return
			}
			if w.Kind != "socket-connect" || w.Path != "unix:"+path || !w.Unix.Listener || w.Unix.PeerPath != path {
				t.Errorf("wait %+v (unix %+v), want a socket-connect to the listener at %s", w, *w.Unix, path)
			}
			if diag && (w.Unix.Queued == nil || w.Unix.Backlog == nil || *w.Unix.Queued <= *w.Unix.Backlog ||
				!strings.Contains(w.Detail, "accept queue is full")) {
				t.Errorf("unix %+v, detail %q: want the listener's full queue", *w.Unix, w.Detail)
			}
		})
	}
}

// TestSQLiteBusy: a SQLite write that retries in its busy handler while
// another process holds a write transaction is blocked behind that
// process, named with the database file and the basis of the claim.
func TestSQLiteBusy(t *testing.T) {
	if err := exec.Command("python3", "-c", "import sqlite3").Run(); err != nil {
		t.Fatalf("python3 has no sqlite3 module: %v", err)
	}
	cmd := exec.Command("python3", testvictim.Script(t, "py_sqlite_busy.py"))
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	v := testvictim.StartCmd(t, cmd)
	holder, path := v.Int("holder"), v.Info["path"]
	// A sample that catches the retrier back on a CPU cannot see its nap:
	// three samples, of which one asleep is enough.
	r := kwDiagnose(t, v.PID, 3)
	w := r.waitOf(t, v.PID)
	if w.Kind != "lock-retry" || w.To == nil || w.To.PID != holder || w.Retry == nil {
		t.Fatalf("wait %+v, want a lock-retry behind pid %d", w, holder)
	}
	if w.Retry.Path != path || w.Retry.Holder != holder || !w.Retry.SQLite || w.Retry.Basis != "inferred" || !strings.HasPrefix(w.Retry.Lock, "POSIX ") {
		t.Errorf("retry %+v, want the SQLite database %s locked by pid %d, inferred", *w.Retry, path, holder)
	}
	want := "retries a lock on the SQLite database " + path + " held by pid " + strconv.Itoa(holder)
	if !strings.Contains(w.Detail, want) || !strings.Contains(w.Detail, "probable holder") {
		t.Errorf("detail %q lacks %q and its basis", w.Detail, want)
	}
	if !strings.Contains(r.Summary, "pid "+strconv.Itoa(holder)) {
		t.Errorf("summary %q does not name the holder %d", r.Summary, holder)
	}
}
