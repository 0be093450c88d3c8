package golive

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/deadline"
	"github.com/hangdoc/hangdoc/internal/fusehang"
	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// slowServer serves pprof's index (with a goroutine count) and a goroutine
// profile that never ends: after head, if any, it waits for the request to
// be cancelled, and tells gone when it is.
func slowServer(t *testing.T, head string) (srv *httptest.Server, gone <-chan struct{}) {
	t.Helper()
	done := make(chan struct{}, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "<html><table><tr><td>123</td><td><a href='goroutine?debug=1'>goroutine</a></td></tr></table></html>")
	})
	mux.HandleFunc("/debug/pprof/goroutine", func(w http.ResponseWriter, r *http.Request) {
		if head != "" {
			io.WriteString(w, head)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		done <- struct{}{}
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, done
}

// A profile that does not come in time is ErrSlow, not ErrNotPprof, and the
// request is cancelled: the server's handler sees its context end.
func TestFetchSlow(t *testing.T) {
	for _, head := range []string{"", "goroutine 1 [running]:\nmain.main()\n\t/x/main.go:5 +0x1d\n"} {
		srv, gone := slowServer(t, head)
		_, err := Fetch(context.Background(), srv.URL, 100*time.Millisecond)
		var se *SlowError
		if !errors.Is(err, ErrSlow) || errors.Is(err, ErrNotPprof) || !errors.As(err, &se) {
			t.Fatalf("Fetch of a slow profile = %v, want ErrSlow and not ErrNotPprof", err)
		}
		if (head != "") != (se.Bytes > 0) || se.Timeout != 100*time.Millisecond {
			t.Errorf("SlowError %+v after a head of %d bytes", se, len(head))
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Fetch = %v, want it to wrap the deadline", err)
		}
		select {
		case <-gone:
		case <-time.After(20 * time.Second): // a failure guard only
			t.Fatal("the server's handler never saw the request cancelled")
		}
		t.Log(err)
	}
}

// Probe reads the goroutine count from pprof's index, which stops nothing.
func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.DefaultServeMux) // net/http/pprof's, in this test binary
	t.Cleanup(srv.Close)
	n, err := Probe(context.Background(), srv.URL, 5*time.Second)
	if err != nil || n < 2 || n > runtime.NumGoroutine()+64 {
		t.Fatalf("Probe = %d, %v; want about %d goroutines", n, err, runtime.NumGoroutine())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello\n") })
	other := httptest.NewServer(mux)
	t.Cleanup(other.Close)
	if _, err := Probe(context.Background(), other.URL, 5*time.Second); !errors.Is(err, ErrNotPprof) {
		t.Errorf("Probe of a non-pprof server = %v, want ErrNotPprof", err)
	}
}

func TestFetchTimeout(t *testing.T) {
	for n, want := range map[int]time.Duration{-1: 3 * time.Second, 0: 3 * time.Second, 10000: 3600 * time.Millisecond, 100000: 9 * time.Second} {
		if got := FetchTimeout(n); got != want {
			t.Errorf("FetchTimeout(%d) = %v, want %v", n, got, want)
		}
	}
}

// Discover tells "pprof, but too slow" from "no pprof": a candidate whose
// index answers and whose profile does not makes its error ErrSlow too.
func TestDiscoverSlow(t *testing.T) {
	srv, _ := slowServer(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := Discover(ctx, procFS, os.Getpid(), 200*time.Millisecond)
	if !errors.Is(err, ErrNoEndpoint) || !errors.Is(err, ErrSlow) {
		t.Fatalf("Discover with a slow pprof endpoint = %v, want ErrNoEndpoint and ErrSlow", err)
	}
	// Sized from the index's 123 goroutines, not the probe's 200ms.
	if !strings.Contains(err.Error(), strings.TrimPrefix(srv.URL, "http://")) || !strings.Contains(err.Error(), FetchTimeout(123).String()) {
		t.Errorf("Discover error %q does not name the slow endpoint and its %v timeout", err, FetchTimeout(123))
	}
}

// A Go program whose executable is on a hung filesystem: LinksPprof
// gives its read up at the deadline.
func TestLinksPprofHungExe(t *testing.T) {
	bin, err := os.ReadFile(testvictim.BuildGo(t, "goheartbeat"))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := fusehang.Mount(t.TempDir(), map[string][]byte{"goheartbeat": bin})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	v := testvictim.StartCmd(t, exec.Command(filepath.Join(fs.Dir, "goheartbeat"), "-pprof", "-beat", filepath.Join(t.TempDir(), "beat")))
	if ok, err := LinksPprof(procFS, v.PID); err != nil || !ok {
		t.Fatalf("LinksPprof before the hang = %v, %v; want true", ok, err)
	}
	fs.HangOpens()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = LinksPprofContext(ctx, procFS, v.PID)
	if !errors.Is(err, deadline.ErrAbandoned) || fs.Held() == 0 {
		t.Fatalf("LinksPprofContext on a hung executable = %v (%d requests held), want a give-up", err, fs.Held())
	}
	t.Log(err)
}
