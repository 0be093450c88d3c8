package golive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	_ "net/http/pprof" // a pprof endpoint in the test binary, for Fetch
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hangdoc/hangdoc/internal/testvictim"
	"github.com/hangdoc/hangdoc/model"
	"github.com/hangdoc/hangdoc/sampler"
)

var procFS = sampler.NewFS("")

// startGo builds and starts the Go victim name with args.
func startGo(t *testing.T, name string, args ...string) *testvictim.Victim {
	t.Helper()
	return testvictim.Start(t, testvictim.BuildGo(t, name), args...)
}

// untouched fails the test unless pid is alive, not stopped and not
// traced: the non-destructive sources must leave it as they found it.
func untouched(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("victim %d: %v", pid, err)
	}
	var state, tracer string
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "State:"); ok {
			state = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			tracer = strings.TrimSpace(v)
		}
	}
	if state == "" || strings.ContainsAny(state[:1], "ZXTt") {
		t.Errorf("victim %d is in state %q, want running or sleeping", pid, state)
	}
	if tracer != "0" {
		t.Errorf("victim %d has TracerPid %q, want 0", pid, tracer)
	}
}

// dead fails the test unless pid has exited.
func dead(t *testing.T, pid int) {
	t.Helper()
	if !gone(procFS, pid) {
		t.Errorf("victim %d is still alive", pid)
	}
}

func goid(t *testing.T, v *testvictim.Victim, key string) int64 {
	t.Helper()
	return int64(v.Int(key))
}

func find(gs []model.Goroutine, id int64) (model.Goroutine, bool) {
	i := slices.IndexFunc(gs, func(g model.Goroutine) bool { return g.ID == id })
	if i < 0 {
		return model.Goroutine{}, false
	}
	return gs[i], true
}

func hasFrame(g model.Goroutine, fn string) bool {
	return slices.ContainsFunc(g.Stack, func(f model.Frame) bool { return f.Func == fn })
}

func funcs(g model.Goroutine) string {
	var s []string
	for _, f := range g.Stack {
		s = append(s, f.Func)
	}
	return strings.Join(s, " < ")
}

// dump renders goroutines for a failure message.
func dump(gs []model.Goroutine) string {
	var b strings.Builder
	for _, g := range gs {
		fmt.Fprintf(&b, "  %d [%s]: %s\n", g.ID, g.State, funcs(g))
	}
	return b.String()
}

// expectG checks that goroutine id is in gs, in state, with fn on its stack.
func expectG(t *testing.T, gs []model.Goroutine, id int64, states []string, fn string) {
	t.Helper()
	g, ok := find(gs, id)
	if !ok {
		t.Errorf("goroutine %d missing from the profile:\n%s", id, dump(gs))
		return
	}
	if !slices.Contains(states, g.State) || !hasFrame(g, fn) {
		t.Errorf("goroutine %d is [%s] %s, want one of %q with %s on the stack", id, g.State, funcs(g), states, fn)
	}
}

// count is how many goroutines of gs are in state with fn on their stack.
func count(gs []model.Goroutine, state, fn string) int {
	n := 0
	for _, g := range gs {
		if g.State == state && hasFrame(g, fn) {
			n++
		}
	}
	return n
}

func TestLinksPprof(t *testing.T) {
	t.Parallel()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatalf("sleep not found: %v", err)
	}
	root, err := testvictim.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// A stripped build has no .symtab: the answer must come from the
	// function names in .gopclntab.
	stripped := filepath.Join(t.TempDir(), "gochancycle-stripped")
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", stripped, "./testdata/victims/gochancycle")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", build.Args, err, out)
	}

	tests := []struct {
		name string
		cmd  *exec.Cmd
		want bool
	}{
		{"go victim with pprof", exec.Command(testvictim.BuildGo(t, "gochancycle")), true},
		{"stripped go victim with pprof", exec.Command(stripped), true},
		{"go victim without pprof", exec.Command(testvictim.BuildGo(t, "gowait")), false},
		{"non-go program", exec.Command(sleep, "60"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pid int
			if filepath.Base(tt.cmd.Path) == "sleep" {
				// No ready line: start it plainly.
				if err := tt.cmd.Start(); err != nil {
					t.Fatal(err)
				}
				pid = tt.cmd.Process.Pid
				t.Cleanup(func() { tt.cmd.Process.Kill(); tt.cmd.Wait() })
				// Until exec, /proc/PID/exe is the test binary.
				for i := 0; i < 500; i++ {
					if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == sleep {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			} else {
				pid = testvictim.StartCmd(t, tt.cmd).PID
			}
			got, err := LinksPprof(procFS, pid)
			if err != nil {
				t.Fatalf("LinksPprof(%d): %v", pid, err)
			}
			if got != tt.want {
				t.Errorf("LinksPprof(%d) = %v, want %v", pid, got, tt.want)
			}
			untouched(t, pid)
		})
	}
}

func TestLinksPprofNoProcess(t *testing.T) {
	t.Parallel()
	_, err := LinksPprof(procFS, 1<<30)
	if !errors.Is(err, sampler.ErrNoProcess) {
		t.Errorf("LinksPprof(no such pid) = %v, want ErrNoProcess", err)
	}
}

// chunkReader hands out its data n bytes at a time.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}

func TestHoldsName(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", 1<<16-5)
	tests := []struct {
		name string
		data string
		want bool
	}{
		{"found", "\x00runtime.main\x00net/http/pprof.Index\x00", true},
		{"across a chunk boundary", pad + "\x00net/http/pprof.Index\x00", true},
		{"only inside another name", "\x00vendor/net/http/pprof.Index\x00", false},
		{"absent", "\x00runtime.main\x00net/http.Serve\x00", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 7, 1 << 16} {
			got, err := holdsName(&chunkReader{[]byte(tt.data), n}, pprofPkg)
			if err != nil || got != tt.want {
				t.Errorf("%s, %d-byte reads: holdsName = %v, %v, want %v", tt.name, n, got, err, tt.want)
			}
		}
	}
}

func TestCandidatesTable(t *testing.T) {
	t.Parallel()
	conn := func(local, state string, inode uint64) model.TCPConn {
		ap := netip.MustParseAddrPort(local)
		remote := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
		if ap.Addr().Is6() {
			remote = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
		}
		return model.TCPConn{Local: ap, Remote: remote, State: state, Inode: inode}
	}
	mine := map[uint64]bool{1: true, 2: true, 3: true, 4: true}
	tests := []struct {
		name  string
		conns []model.TCPConn
		want  []string
	}{
		{"none", nil, []string{}},
		{"ipv4 wildcard dials loopback", []model.TCPConn{conn("0.0.0.0:8080", "LISTEN", 1)},
			[]string{"http://127.0.0.1:8080"}},
		{"ipv6 wildcard dials both loopbacks", []model.TCPConn{conn("[::]:8080", "LISTEN", 1)},
			[]string{"http://127.0.0.1:8080", "http://[::1]:8080"}},
		{"ipv6 wildcard on a port another process has on ipv4", []model.TCPConn{
			conn("[::]:8080", "LISTEN", 1), conn("127.0.0.1:8080", "LISTEN", 99)},
			[]string{"http://[::1]:8080"}},
		{"specific addresses kept, mapped ones unmapped", []model.TCPConn{
			conn("127.0.0.2:7000", "LISTEN", 1), conn("[::ffff:127.0.0.1]:7001", "LISTEN", 2)},
			[]string{"http://127.0.0.2:7000", "http://127.0.0.1:7001"}},
		{"others' listeners and connections skipped", []model.TCPConn{
			conn("127.0.0.1:9000", "LISTEN", 99), conn("127.0.0.1:9001", "ESTABLISHED", 1),
			conn("127.0.0.1:9002", "LISTEN", 2)},
			[]string{"http://127.0.0.1:9002"}},
		{"6060 first, then by port, no duplicates", []model.TCPConn{
			conn("0.0.0.0:9000", "LISTEN", 1), conn("127.0.0.1:80", "LISTEN", 2),
			conn("0.0.0.0:6060", "LISTEN", 3), conn("[::]:6060", "LISTEN", 4)},
			[]string{"http://127.0.0.1:6060", "http://[::1]:6060", "http://127.0.0.1:80", "http://127.0.0.1:9000"}},
	}
	for _, tt := range tests {
		got := candidates(tt.conns, mine)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: candidates(%v) mismatch (-want +got):\n%s", tt.name, tt.conns, diff)
		}
	}
}

func TestCandidatesLive(t *testing.T) {
	t.Parallel()
	v := startGo(t, "gochancycle")
	bases, err := Candidates(procFS, v.PID)
	if err != nil {
		t.Fatalf("Candidates(%d): %v", v.PID, err)
	}
	want := "http://" + v.Info["addr"]
	if !slices.Contains(bases, want) {
		t.Errorf("Candidates(%d) = %q, want it to include %q", v.PID, bases, want)
	}
	untouched(t, v.PID)
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("pprof", func(t *testing.T) {
		t.Parallel()
		v := startGo(t, "gochancycle", "-pprof")
		base, gs, err := Discover(ctx, procFS, v.PID, DefaultProbeTimeout)
		if err != nil {
			t.Fatalf("Discover(%d): %v", v.PID, err)
		}
		if want := "http://" + v.Info["addr"]; base != want {
			t.Errorf("Discover(%d) found %s, want %s", v.PID, base, want)
		}
		expectG(t, gs, goid(t, v, "ping"), []string{"chan send"}, "main.ping")
		untouched(t, v.PID)
	})
	t.Run("no pprof", func(t *testing.T) {
		t.Parallel()
		v := startGo(t, "gochancycle")
		_, _, err := Discover(ctx, procFS, v.PID, DefaultProbeTimeout)
		if !errors.Is(err, ErrNoEndpoint) {
			t.Fatalf("Discover(%d) = %v, want ErrNoEndpoint", v.PID, err)
		}
		msg := err.Error()
		t.Logf("Discover(%d): %s", v.PID, msg)
		for _, want := range []string{v.Info["addr"], "not a pprof endpoint", "serve net/http/pprof"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Discover(%d) error %q does not say %q", v.PID, msg, want)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("Discover(%d) error is more than one line: %q", v.PID, msg)
		}
		untouched(t, v.PID)
	})
}

// TestFetchVictims checks each victim's named goroutines in its profile:
// the states the classifier relies on.
func TestFetchVictims(t *testing.T) {
	t.Parallel()
	tests := []struct {
		victim string
		check  func(t *testing.T, v *testvictim.Victim, gs []model.Goroutine)
	}{
		{"gomutexpipe", func(t *testing.T, v *testvictim.Victim, gs []model.Goroutine) {
			expectG(t, gs, goid(t, v, "holder"), []string{"IO wait"}, "main.(*Store).Put")
			if n, want := count(gs, "sync.Mutex.Lock", "main.(*Store).Put"), v.Int("waiters"); n != want {
				t.Errorf("%d goroutines in [sync.Mutex.Lock] in Store.Put, want %d:\n%s", n, want, dump(gs))
			}
		}},
		{"gospinholder", func(t *testing.T, v *testvictim.Victim, gs []model.Goroutine) {
			expectG(t, gs, goid(t, v, "holder"), []string{"running", "runnable"}, "main.(*Cache).Refresh")
			if n, want := count(gs, "sync.Mutex.Lock", "main.(*Cache).Refresh"), v.Int("waiters"); n != want {
				t.Errorf("%d goroutines in [sync.Mutex.Lock] in main.(*Cache).Refresh, want %d:\n%s", n, want, dump(gs))
			}
		}},
		{"gochancycle", func(t *testing.T, v *testvictim.Victim, gs []model.Goroutine) {
			expectG(t, gs, goid(t, v, "ping"), []string{"chan send"}, "main.ping")
			expectG(t, gs, goid(t, v, "pong"), []string{"chan send"}, "main.pong")
		}},
		{"godeadfeeder", func(t *testing.T, v *testvictim.Victim, gs []model.Goroutine) {
			ids := v.TIDs("goids")
			if len(ids) != v.Int("workers") {
				t.Fatalf("ready line has %d goids, want workers=%d", len(ids), v.Int("workers"))
			}
			for _, id := range ids {
				expectG(t, gs, int64(id), []string{"chan receive"}, "main.worker")
			}
			expectG(t, gs, 1, []string{"sync.WaitGroup.Wait"}, "main.main")
			if n := count(gs, "chan send", "main.feed"); n != 0 {
				t.Errorf("the feeder is alive:\n%s", dump(gs))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.victim, func(t *testing.T) {
			t.Parallel()
			v := startGo(t, tt.victim, "-pprof")
			gs, err := Fetch(context.Background(), "http://"+v.Info["addr"], 5*time.Second)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			tt.check(t, v, gs)
			untouched(t, v.PID)
		})
	}
}

// TestFetchWorking: a working pool's stacks move between profiles.
func TestFetchWorking(t *testing.T) {
	t.Parallel()
	v := startGo(t, "goworking", "-pprof")
	ids := v.TIDs("goids")
	seen := map[int]map[string]bool{}
	moved := 0
	// At least 10 profiles; more, up to a generous bound, while fewer
	// than 3 workers were seen to move: on a loaded machine the workers
	// may not run between two profiles 50ms apart.
	for n, deadline := 0, time.Now().Add(30*time.Second); n < 10 || moved < 3 && time.Now().Before(deadline); n++ {
		gs, err := Fetch(context.Background(), "http://"+v.Info["addr"], 5*time.Second)
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		for _, id := range ids {
			g, ok := find(gs, int64(id))
			if !ok || !hasFrame(g, "main.worker") {
				t.Fatalf("worker goroutine %d missing from the profile:\n%s", id, dump(gs))
			}
			if seen[id] == nil {
				seen[id] = map[string]bool{}
			}
			seen[id][g.State+" "+funcs(g)] = true
		}
		moved = 0
		for _, stacks := range seen {
			if len(stacks) > 1 {
				moved++
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if moved < 3 {
		t.Errorf("%d of %d workers' stacks moved over the profiles, want at least 3: %v", moved, len(ids), seen)
	}
	untouched(t, v.PID)
}

func TestFetchRejects(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/html/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html><body>goroutine 1 [running]:</body></html>")
	})
	mux.HandleFunc("/text/", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "hello\n")
	})
	mux.HandleFunc("/stack/", func(w http.ResponseWriter, _ *http.Request) {
		// A runtime.Stack dump is goroutines, but not pprof's.
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "goroutine 1 [running]:\nmain.main()\n\t/x/main.go:5 +0x1d\n")
	})
	mux.HandleFunc("/redirect/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/debug/pprof/goroutine?debug=2", http.StatusFound)
	})
	block := make(chan struct{})
	mux.HandleFunc("/slow/", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	mux.Handle("/pprof/", http.StripPrefix("/pprof", http.DefaultServeMux))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(block) })

	ctx := context.Background()
	gs, err := Fetch(ctx, srv.URL+"/pprof", 5*time.Second)
	if err != nil {
		t.Fatalf("Fetch of a real pprof endpoint: %v", err)
	}
	if len(gs) == 0 || !hasFrame(gs[0], "runtime/pprof.writeGoroutineStacks") {
		t.Errorf("Fetch of a real pprof endpoint: first goroutine is not the handler's:\n%s", dump(gs))
	}

	for _, path := range []string{"/html", "/text", "/stack", "/redirect", "/nothing"} {
		_, err := Fetch(ctx, srv.URL+path, 5*time.Second)
		if !errors.Is(err, ErrNotPprof) {
			t.Errorf("Fetch(%s) = %v, want ErrNotPprof", path, err)
		}
	}
	_, err = Fetch(ctx, srv.URL+"/slow", 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") || !errors.Is(err, ErrSlow) {
		t.Errorf("Fetch of a silent server = %v, want a timeout (ErrSlow)", err)
	}
}

// startLogged starts the Go victim name with its stderr going to the file
// stderr, through a shell that execs it (so the pid is the victim's).
func startLogged(t *testing.T, name string, stderr *os.File) *testvictim.Victim {
	t.Helper()
	cmd := exec.Command("sh", "-c", `exec "$0" 2>&3`, testvictim.BuildGo(t, name))
	cmd.ExtraFiles = []*os.File{stderr}
	return testvictim.StartCmd(t, cmd)
}

// oldDump is a goroutine dump already in a log before the signal: it
// must not be read back.
const oldDump = "SIGQUIT: quit\nPC=0x4711 m=0 sigcode=0\n\ngoroutine 99 [chan send]:\nmain.old()\n\t/old/main.go:1 +0x1\n\n"

func TestSigquitDumpStderrFile(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "victim.err")
	if err := os.WriteFile(log, []byte("earlier output\n"+oldDump), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := startLogged(t, "gochancycle", f)
	f.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	gs, err := SigquitDump(ctx, procFS, v.PID, "")
	if err != nil {
		t.Fatalf("SigquitDump(%d): %v", v.PID, err)
	}
	expectG(t, gs, goid(t, v, "ping"), []string{"chan send"}, "main.ping")
	expectG(t, gs, goid(t, v, "pong"), []string{"chan send"}, "main.pong")
	if _, ok := find(gs, 99); ok {
		t.Errorf("SigquitDump read the dump that was in the log before the signal:\n%s", dump(gs))
	}
	dead(t, v.PID)
}

func TestSigquitDumpLogPath(t *testing.T) {
	t.Parallel()
	// The victim's stderr is a pipe into a logger that appends to a file:
	// without the file's name the dump cannot be read back.
	log := filepath.Join(t.TempDir(), "victim.log")
	if err := os.WriteFile(log, []byte(oldDump), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	logger := exec.Command("cat")
	logger.Stdin, logger.Stdout = r, out
	if err := logger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logger.Process.Kill(); logger.Wait() })
	v := startLogged(t, "godeadfeeder", w)
	r.Close()
	w.Close()
	out.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = SigquitDump(ctx, procFS, v.PID, "")
	if err == nil || !strings.Contains(err.Error(), "--sigquit-log PATH") || !strings.Contains(err.Error(), "pipe:[") {
		t.Errorf("SigquitDump(%d) with stderr a pipe = %v, want an error naming the pipe and --sigquit-log", v.PID, err)
	}
	t.Logf("SigquitDump(%d): %v", v.PID, err)
	untouched(t, v.PID) // the error came before any signal

	gs, err := SigquitDump(ctx, procFS, v.PID, log)
	if err != nil {
		t.Fatalf("SigquitDump(%d, %s): %v", v.PID, log, err)
	}
	for _, id := range v.TIDs("goids") {
		expectG(t, gs, int64(id), []string{"chan receive"}, "main.worker")
	}
	expectG(t, gs, 1, []string{"sync.WaitGroup.Wait"}, "main.main")
	if _, ok := find(gs, 99); ok {
		t.Errorf("SigquitDump read the dump that was in the log before the signal:\n%s", dump(gs))
	}
	dead(t, v.PID)
}

func TestSigquitDumpStderrPipe(t *testing.T) {
	t.Parallel()
	v := startGo(t, "gochancycle") // testvictim reads its stderr through a pipe
	_, err := SigquitDump(context.Background(), procFS, v.PID, "")
	if err == nil || !strings.Contains(err.Error(), "--sigquit-log PATH") {
		t.Errorf("SigquitDump(%d) = %v, want an error that says to pass --sigquit-log PATH", v.PID, err)
	}
	untouched(t, v.PID)
}

func TestSigquitDumpNoProcess(t *testing.T) {
	t.Parallel()
	_, err := SigquitDump(context.Background(), procFS, 1<<30, "")
	if !errors.Is(err, sampler.ErrNoProcess) {
		t.Errorf("SigquitDump(no such pid) = %v, want ErrNoProcess", err)
	}
}

func TestGone(t *testing.T) {
	t.Parallel()
	if gone(procFS, os.Getpid()) {
		t.Errorf("gone(self) = true")
	}
	if !gone(procFS, 1<<30) {
		t.Errorf("gone(no such pid) = false")
	}
	// An exited child not yet reaped is a zombie: gone.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !gone(procFS, cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("gone(%d) stays false after the child exited", cmd.Process.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat"); !strings.Contains(string(b), ") Z ") {
		t.Errorf("child %d is not a zombie: %q", cmd.Process.Pid, b)
	}
}
