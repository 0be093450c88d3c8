// Package golive takes goroutine dumps from a live Go process: from the
// net/http/pprof endpoint it may already serve (found through its own
// listening sockets, read without touching it), or, when the user asks,
// from the dump the runtime writes on SIGQUIT, which kills it.
package golive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/hangdoc/hangdoc/model"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/sampler"
	"github.com/hangdoc/hangdoc/sampler/goroutines"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotPprof: an address answered, but not with a goroutine profile.
	ErrNotPprof = errors.New("not a pprof endpoint")
	// ErrNoEndpoint: none of the target's listening sockets serves one.
	ErrNoEndpoint = errors.New("no pprof endpoint")
	// ErrOtherNetNS: the target's sockets are in another network
	// namespace, out of hangdoc's reach.
	ErrOtherNetNS = errors.New("in another network namespace")
	// ErrSlow: the endpoint did not finish its answer in time. It may
	// well serve profiles (a program with many goroutines writes a long
	// one): not the same as ErrNotPprof. The error is a *SlowError.
	ErrSlow = errors.New("too slow")
)

// SlowError is a fetch given up at its timeout.
type SlowError struct {
	URL     string
	Timeout time.Duration
	// Bytes of the answer read by then (0: none came).
	Bytes int64
	Err   error // the context's error
}

func (e *SlowError) Error() string {
	got := "no answer"
	if e.Bytes > 0 {
		got = fmt.Sprintf("%d bytes of the profile and no end", e.Bytes)
	}
	return fmt.Sprintf("fetching %s: %s within %v: %v; the request was cancelled", e.URL, got, e.Timeout, e.Err)
}

func (e *SlowError) Is(target error) bool { return target == ErrSlow }
func (e *SlowError) Unwrap() error        { return e.Err }

// FetchTimeout is a fetch's timeout for a profile of n goroutines: 3 s
// plus 60 µs a goroutine. A debug=2 profile of 100,000 parked goroutines
// took a Go 1.26 server 1.5-1.7 s to write, and Fetch 2.2-3.1 s to fetch and
// parse, on this project's 2 shared cores (RELIABILITY.md): 60 µs is twice
// that rate, for a server busier than the test's. n is the goroutine
// count pprof's index gives (Probe) or the last profile's.
func FetchTimeout(n int) time.Duration {
	return 3*time.Second + time.Duration(max(n, 0))*60*time.Microsecond
}

// IndexPath is pprof's index page: it lists each profile with its count,
// and writing it stops nothing.
const IndexPath = "/debug/pprof/"

// ProfilePath is what Fetch asks a base URL for: every goroutine's stack,
// as runtime.Stack(all) prints them.
const ProfilePath = "/debug/pprof/goroutine?debug=2"

// DefaultProbeTimeout is a sensible per-candidate timeout for Discover.
const DefaultProbeTimeout = 500 * time.Millisecond

// maxBody bounds a profile: pprof itself stops at 64 MiB.
const maxBody = 80 << 20

// pprofPort is net/http/pprof's documented example port, tried first.
const pprofPort = 6060

// Candidates returns base URLs ("http://127.0.0.1:6060") for pid's own
// listening TCP sockets: the LISTEN entries of /proc/PID/net/tcp and tcp6
// whose inodes pid's descriptors hold. A wildcard listener is dialled on
// loopback. Port 6060 comes first, then the rest by port. The target must
// share hangdoc's network namespace.
func Candidates(fs sampler.FS, pid int) ([]string, error) {
	same, err := sampler.SameNetNS(fs, pid)
	if err != nil {
		return nil, fmt.Errorf("finding pid %d's pprof endpoint: %w", pid, err)
	}
	if !same {
		return nil, fmt.Errorf("finding pid %d's pprof endpoint: it is %w from hangdoc, so its ports are out of reach: run hangdoc inside it (nsenter --target %d --net hangdoc ...)", pid, ErrOtherNetNS, pid)
	}
	inodes, err := sampler.SocketInodes(fs, pid)
	if err != nil {
		return nil, fmt.Errorf("finding pid %d's pprof endpoint: %w", pid, err)
	}
	conns, err := sampler.ReadTCP(fs, pid)
	if err != nil {
		return nil, fmt.Errorf("finding pid %d's pprof endpoint: %w", pid, err)
	}
	return candidates(conns, inodes), nil
}

// candidates picks pid's listeners out of conns, its namespace's sockets,
// and turns them into base URLs.
func candidates(conns []model.TCPConn, inodes map[uint64]bool) []string {
	// Ports other processes listen on over IPv4 loopback: pid's IPv6
	// wildcard socket on such a port is IPv6-only, and 127.0.0.1 reaches
	// the other process.
	others := map[uint16]bool{}
	for _, c := range conns {
		a := c.Local.Addr().Unmap()
		if c.State == "LISTEN" && !inodes[c.Inode] && a.Is4() && (a.IsUnspecified() || a.IsLoopback()) {
			others[c.Local.Port()] = true
		}
	}
	loop4 := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	var mine []netip.AddrPort
	add := func(a netip.Addr, p uint16) {
		if ap := netip.AddrPortFrom(a, p); !slices.Contains(mine, ap) {
			mine = append(mine, ap)
		}
	}
	for _, c := range conns {
		if c.State != "LISTEN" || !inodes[c.Inode] {
			continue
		}
		a, p := c.Local.Addr().Unmap(), c.Local.Port()
		switch {
		case a.Is4() && a.IsUnspecified():
			add(loop4, p)
		case a.IsUnspecified():
			// Dual-stack unless IPV6_V6ONLY, which /proc does not show.
			if !others[p] {
				add(loop4, p)
			}
			add(netip.IPv6Loopback(), p)
		default:
			add(a.WithZone(""), p)
		}
	}
	slices.SortStableFunc(mine, func(a, b netip.AddrPort) int {
		if (a.Port() == pprofPort) != (b.Port() == pprofPort) {
			if a.Port() == pprofPort {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Port(), b.Port())
	})
	bases := make([]string, len(mine))
	for i, ap := range mine {
		bases[i] = "http://" + ap.String()
	}
	return bases
}

// client never follows redirects, never uses a proxy and keeps no
// connection open to the target after a fetch.
var client = &http.Client{
	Transport: &http.Transport{
		Proxy:             nil,
		DialContext:       (&net.Dialer{}).DialContext,
		DisableKeepAlives: true,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Fetch GETs base+ProfilePath and parses the goroutine profile, all within
// timeout (none when 0). A reply that is not a debug=2 goroutine profile (a
// status other than 200, HTML, any other body) is ErrNotPprof; one not
// finished in time is a *SlowError (ErrSlow). A request given up is
// cancelled: its connection is closed, so the server's handler sees its
// context end and its writes fail.
func Fetch(ctx context.Context, base string, timeout time.Duration) ([]model.Goroutine, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	u := strings.TrimSuffix(base, "/") + ProfilePath
	var body countingReader
	fail := func(err error) ([]model.Goroutine, error) {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said once, below
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return nil, &SlowError{URL: u, Timeout: timeout, Bytes: body.n, Err: ctx.Err()}
		}
		return nil, fmt.Errorf("fetching %s: %w", u, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("User-Agent", "hangdoc")
	resp, err := client.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("%w: HTTP %s", ErrNotPprof, resp.Status))
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil && mt == "text/html" {
		return fail(fmt.Errorf("%w: the reply is HTML", ErrNotPprof))
	}
	body.r = io.LimitReader(resp.Body, maxBody)
	var gs []model.Goroutine
	dumps, err := goroutines.ParseFunc(&body, func(_ int, g goroutines.Goroutine) {
		if g.ID != 0 {
			gs = append(gs, g.Sample())
		}
	})
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	if errors.Is(err, goroutines.ErrNoDump) || (err == nil && dumps[0].Producer != goroutines.ProducerPprofDebug2) {
		return fail(fmt.Errorf("%w: the reply is no goroutine profile", ErrNotPprof))
	}
	if err != nil {
		return fail(err)
	}
	// A dump that runs past maxBody was cut: what parsed is still every
	// goroutine up to there, which beats none.
	return gs, nil
}

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// indexCount finds the goroutine count in pprof's index page:
// "<td>1234</td><td><a href='goroutine?debug=1'>goroutine</a>".
var indexCount = regexp.MustCompile(`<td>(\d+)</td><td><a href=['"]goroutine\?debug=1['"]>goroutine</a>`)

// Probe GETs base's pprof index within timeout and returns the goroutine
// count it lists: cheap for the target (the index stops nothing, unlike a
// profile), and what FetchTimeout needs. A reply that is not a pprof index
// is ErrNotPprof.
func Probe(ctx context.Context, base string, timeout time.Duration) (goroutines int, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := strings.TrimSuffix(base, "/") + IndexPath
	fail := func(err error) (int, error) {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return 0, &SlowError{URL: u, Timeout: timeout, Err: ctx.Err()}
		}
		return 0, fmt.Errorf("fetching %s: %w", u, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("User-Agent", "hangdoc")
	resp, err := client.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("%w: HTTP %s", ErrNotPprof, resp.Status))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fail(err)
	}
	m := indexCount.FindSubmatch(b)
	if m == nil {
		return fail(fmt.Errorf("%w: the reply is no pprof index", ErrNotPprof))
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return fail(fmt.Errorf("%w: goroutine count %q", ErrNotPprof, m[1]))
	}
	return n, nil
}

// Discover tries pid's Candidates in turn and returns the first that
// serves a goroutine profile, with the profile. Each is probed within
// timeout (Probe: pprof's index, which stops nothing, says whether it is
// pprof and how many goroutines there are), then fetched within
// FetchTimeout of that count; a candidate without an index is fetched
// within timeout. When none serves one the error wraps ErrNoEndpoint and
// names what each said; a candidate that is pprof but too slow makes it
// wrap ErrSlow as well, so the caller can tell "no pprof" from "pprof, slow".
func Discover(ctx context.Context, fs sampler.FS, pid int, timeout time.Duration) (base string, gs []model.Goroutine, err error) {
	bases, err := Candidates(fs, pid)
	if err != nil {
		return "", nil, err
	}
	const fix = "serve net/http/pprof in the target or take a SIGQUIT dump (it kills the target)"
	if len(bases) == 0 {
		return "", nil, fmt.Errorf("pid %d listens on no TCP port, so it serves %w: %s", pid, ErrNoEndpoint, fix)
	}
	said := make([]string, 0, len(bases))
	var slow error
	for _, b := range bases {
		fetchTimeout := timeout
		if n, err := Probe(ctx, b, timeout); err == nil {
			fetchTimeout = FetchTimeout(n)
		}
		gs, err := Fetch(ctx, b, fetchTimeout)
		if err == nil {
			return b, gs, nil
		}
		if ctx.Err() != nil {
			return "", nil, fmt.Errorf("finding pid %d's pprof endpoint: %w", pid, ctx.Err())
		}
		if errors.Is(err, ErrSlow) && slow == nil {
			slow = err
		}
		said = append(said, b+": "+reason(err))
	}
	err = fmt.Errorf("pid %d has %w on its %d listening address%s (%s): %s",
		pid, ErrNoEndpoint, len(bases), plural(len(bases), "es"), strings.Join(said, "; "), fix)
	if slow != nil {
		err = &alsoErr{err, slow}
	}
	return "", nil, err
}

// alsoErr is err, which also is another error (for errors.Is and As),
// said in err's message already.
type alsoErr struct{ err, also error }

func (e *alsoErr) Error() string   { return e.err.Error() }
func (e *alsoErr) Unwrap() []error { return []error{e.err, e.also} }

// reason is what a failed Fetch says after its "fetching URL: ".
func reason(err error) string {
	s := err.Error()
	if i := strings.Index(s, ProfilePath+": "); i >= 0 {
		return s[i+len(ProfilePath)+2:]
	}
	return s
}

func plural(n int, suffix string) string {
	if n == 1 {
		return ""
	}
	return suffix
}
