package sampler

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/model"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/internal/fusehang"
	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// A Go program whose executable sits on a hung filesystem: reading its
// /proc/PID/exe blocks. DescribeContext gives that up at the deadline,
// says so, and still names the rest; the runtime is unknown, not a guess.
func TestDescribeHungExe(t *testing.T) {
	bin, err := os.ReadFile(testvictim.BuildGo(t, "goheartbeat"))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := fusehang.Mount(t.TempDir(), map[string][]byte{"goheartbeat": bin})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	cmd := exec.Command(filepath.Join(fs.Dir, "goheartbeat"), "-beat", filepath.Join(t.TempDir(), "beat"))
	v := testvictim.StartCmd(t, cmd)

	// Unhung, it is a Go program.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if tg, err := DescribeContext(ctx, NewFS(""), v.PID); err != nil || tg.Runtime != model.RuntimeGo {
		t.Fatalf("DescribeContext before the hang: %+v, %v; want a go runtime", tg, err)
	}

	fs.HangOpens()
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	tg, err := DescribeContext(ctx, NewFS(""), v.PID)
	if !errors.Is(err, deadline.ErrAbandoned) || !strings.Contains(err.Error(), "/proc/") {
		t.Fatalf("DescribeContext on a hung executable: %v, want a give-up naming the executable", err)
	}
	if fs.Held() == 0 {
		t.Fatal("no request held: the executable's read did not hang")
	}
	if tg.Runtime != model.RuntimeUnknown || tg.Cmdline == "" || tg.PID != v.PID {
		t.Errorf("DescribeContext = %+v, want runtime %q, the command line and pid", tg, model.RuntimeUnknown)
	}
	t.Log(err)
}
