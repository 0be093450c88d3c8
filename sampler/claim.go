package sampler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/procstatus"
)

// Two diagnoses of one target at once would read each other's stops as
// the target's movement (a py-spy pause, a Delve attach wake the target's
// threads), and the second ptrace attach fails. So a diagnosis claims its
// target: a lock file per target — pid and start time, so a reused pid is
// another target — held with flock(2) for the run. The kernel drops the
// lock when its holder dies, however it dies.

// claimDir is where the claims are kept: the runtime directory when
// hangdoc may write there (root), else a directory of the user's own.
func claimDir() string {
	if unix.Access("/run", unix.W_OK) == nil {
		return "/run/hangdoc"
	}
	return filepath.Join(os.TempDir(), "hangdoc-"+strconv.Itoa(os.Getuid()))
}

// Claim is a diagnosis's hold on its target; Release lets it go. A
// diagnosis that could not take it keeps the path, to ask at each sample
// whether another still holds it (Other).
type Claim struct {
	f    *os.File
	path string
}

// Release lets the target go to the next diagnosis.
func (c *Claim) Release() {
	if c != nil && c.f != nil {
		c.f.Close()
		c.f = nil
	}
}

// ErrClaimed says another diagnosis holds the target.
var ErrClaimed = errors.New("another diagnosis holds the target")

// Claim takes the target for this diagnosis, waiting up to wait (and no
// longer than ctx) for another one to finish. When it cannot, the error
// wraps ErrClaimed and names the other diagnosis's pid, and the Claim
// returned holds nothing but can say whether the other still holds it. A
// replayed target needs no claim.
func (t *Target) Claim(ctx context.Context, wait time.Duration) (*Claim, error) {
	if _, live := t.Sys.(live); !live {
		return &Claim{}, nil
	}
	dir := claimDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("claiming pid %d: %w", t.PID, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%d-%d.lock", t.PID, t.Start))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("claiming pid %d: %w", t.PID, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			f.Truncate(0)
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			return &Claim{f: f, path: path}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("claiming pid %d: %w", t.PID, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b, _ := os.ReadFile(path)
			f.Close()
			holder := strings.TrimSpace(string(b))
			if holder == "" {
				holder = "unknown"
			}
			return &Claim{path: path}, fmt.Errorf("pid %s: %w", holder, ErrClaimed)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Other says whether another diagnosis holds the target's claim now, and
// its pid (0 when it wrote none). A claim that came free is taken, so the
// diagnoses still waiting for it do not stop the target under this one.
func (c *Claim) Other() (pid int, held bool) {
	if c == nil || c.path == "" || c.f != nil {
		return 0, false
	}
	f, err := os.OpenFile(c.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, false
	}
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		f.Truncate(0)
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		c.f = f
		return 0, false
	}
	defer f.Close()
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return 0, false
	}
	b, _ := readFile(c.path, make([]byte, 64))
	pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, true
}

// TracerPID is the process tracing pid (TracerPid in its status), 0 for
// none.
func TracerPID(fs FS, pid int) int {
	st, _ := ReadStatus(fs, pid)
	return st.TracerPid
}

// ThreadGroup is the process a pid belongs to (Tgid in its status): itself
// for a process, another for a thread's id.
func ThreadGroup(fs FS, pid int) (int, error) {
	st, err := ReadStatus(fs, pid)
	if err != nil && !errors.Is(err, ErrNoProcess) && !errors.Is(err, ErrPermission) {
		return 0, fmt.Errorf("reading %s: %w", fs.pidPath(pid, "status"), err)
	}
	if err != nil {
		return 0, err
	}
	if st.Has&procstatus.HasTgid == 0 {
		return pid, nil
	}
	return st.Tgid, nil
}
