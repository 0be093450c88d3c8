package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// The lock hangs of the dump corpus (testdata/corpus/victims), diagnosed
// live: the holder of every lock is named wherever it took it, with its
// basis, and the deadlocks are found (issue 11).

// reportLock is a lock of the JSON report.
type reportLock struct {
	ID     string `json:"id"`
	Holder *struct {
		TID       int   `json:"tid"`
		Goroutine int64 `json:"goroutine"`
	} `json:"holder"`
	Readers []struct {
		Goroutine int64 `json:"goroutine"`
	} `json:"readers"`
	Waiters []struct {
		Goroutine int64 `json:"goroutine"`
	} `json:"waiters"`
	BasisKind string `json:"basis_kind"`
	Basis     string `json:"basis"`
}

// lockReport is the part of the JSON report these tests read.
type lockReport struct {
	Verdict string `json:"verdict"`
	Summary string `json:"summary"`
	Threads []struct {
		TID  int    `json:"tid"`
		Name string `json:"name"`
	} `json:"threads"`
	Locks  []reportLock `json:"locks"`
	Cycles [][]struct {
		TID       int   `json:"tid"`
		Goroutine int64 `json:"goroutine"`
	} `json:"cycles"`
	Sampling struct {
		StackSource string   `json:"stack_source"`
		Notes       []string `json:"notes"`
	} `json:"sampling"`
}

var corpusBuilds sync.Map // victim name and flags → *corpusBuild

type corpusBuild struct {
	once sync.Once
	path string
	err  error
}

// buildCorpusGo builds a Go victim of the corpus's own module with this
// machine's Go, or the toolchain a "GOTOOLCHAIN=go1.N.0" flag names.
func buildCorpusGo(t *testing.T, name string, flags ...string) string {
	t.Helper()
	root, err := testvictim.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	key := name + " " + strings.Join(flags, " ")
	v, _ := corpusBuilds.LoadOrStore(key, &corpusBuild{})
	b := v.(*corpusBuild)
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "hangdoc-corpus-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		toolchain := "GOTOOLCHAIN=local"
		args := []string{"build", "-o", b.path}
		for _, f := range flags {
			if strings.HasPrefix(f, "GOTOOLCHAIN=") {
				toolchain = f // fetched through the module proxy
			} else {
				args = append(args, f)
			}
		}
		cmd := exec.Command("go", append(args, "./"+name)...)
		cmd.Dir = filepath.Join(root, "testdata", "corpus", "victims", "go")
		cmd.Env = append(os.Environ(), toolchain, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = err
			t.Logf("%s", out)
		}
	})
	if b.err != nil {
		t.Fatalf("building corpus victim %s: %v", name, b.err)
	}
	return b.path
}

func holderOf(r lockReport, goroutine int64) (basis string, ok bool) {
	for _, l := range r.Locks {
		if l.Holder != nil && l.Holder.Goroutine == goroutine {
			return l.BasisKind, true
		}
		for _, rd := range l.Readers {
			if rd.Goroutine == goroutine {
				return l.BasisKind, true
			}
		}
	}
	return "", false
}

func TestGoLockHoldersLive(t *testing.T) {
	tests := []struct {
		victim  string
		flags   []string
		verdict string
		holders []string // ready-line keys naming the holders
		basis   string
		cycle   bool
	}{
		{victim: "lockelsewhere", verdict: "blocked", holders: []string{"holder"}, basis: "exact"},
		{victim: "callerholds", verdict: "blocked", holders: []string{"holder"}, basis: "probable"},
		{victim: "rwmutex", verdict: "blocked", holders: []string{"holder"}, basis: "exact"},
		{victim: "abba", verdict: "deadlock", holders: []string{"alice", "bob"}, cycle: true},
		{victim: "abba", flags: []string{"-gcflags=all=-N -l"}, verdict: "deadlock", holders: []string{"alice", "bob"}, basis: "exact", cycle: true},
	}
	for _, tc := range tests {
		name := tc.victim + strings.Join(tc.flags, "")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := testvictim.Start(t, buildCorpusGo(t, tc.victim, tc.flags...), "-http", "127.0.0.1:0")
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms", "--pprof", "http://"+v.Info["addr"])
			var r lockReport
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("exit %d, %v: %s\n%s", code, err, out, stderr)
			}
			if r.Verdict != tc.verdict || r.Sampling.StackSource != "pprof" {
				t.Errorf("verdict %s from %s (%s), want %s from pprof; notes %v", r.Verdict, r.Sampling.StackSource, r.Summary, tc.verdict, r.Sampling.Notes)
			}
			for _, key := range tc.holders {
				id := int64(v.Int(key))
				basis, ok := holderOf(r, id)
				if !ok || tc.basis != "" && basis != tc.basis {
					t.Errorf("goroutine %d (%s) holds no lock with basis %q: locks %+v", id, key, tc.basis, r.Locks)
				}
			}
			if tc.cycle && len(r.Cycles) == 0 {
				t.Errorf("no cycle: %s", r.Summary)
			}
		})
	}
}

// TestGoLockIdentityFromMemory: goroutines read from memory, with no
// pprof and no stop. The lock each waits for is known by its address (the
// semaphore it is parked on): one RWMutex taken by three closures is one
// lock. Its holder is the goroutine whose stack refers to that address
// and whose code takes a lock: probable with the source (the same
// expression locked on the path, here earlier on the line the holder waits
// at), inferred without it (-trimpath: no file is found), where the abba
// pair becomes a deadlock with both holders named.
func TestGoLockIdentityFromMemory(t *testing.T) {
	tests := []struct {
		victim  string
		flags   []string
		verdict string
		holders []string // ready-line keys naming the holders
		waiters int      // of the one lock, when there is one
		basis   string
		summary string // in the summary, beside the words of the basis
	}{
		{victim: "rwclosures", verdict: "blocked", holders: []string{"holder"}, waiters: 3, basis: "probable"},
		// A recursive read lock with a writer queued between: the reader
		// waits for the writer, which waits for the reader.
		{victim: "rlockwriter", verdict: "deadlock", holders: []string{"reader"}, waiters: 2, basis: "exact",
			summary: "holds %s for reading and read-locks it again, queued behind the writer (goroutine {writer})"},
		{victim: "rwclosures", flags: []string{"-trimpath"}, verdict: "blocked", holders: []string{"holder"}, waiters: 3, basis: "inferred"},
		{victim: "rwclosures", flags: []string{"-trimpath", "GOTOOLCHAIN=go1.22.0"}, verdict: "blocked", holders: []string{"holder"}, waiters: 3, basis: "inferred"},
		{victim: "abba", flags: []string{"-trimpath"}, verdict: "deadlock", holders: []string{"alice", "bob"}, basis: "inferred"},
		{victim: "abba", flags: []string{"-trimpath", "GOTOOLCHAIN=go1.22.0"}, verdict: "deadlock", holders: []string{"alice", "bob"}, basis: "inferred"},
		{victim: "abba", flags: []string{"-trimpath", "-ldflags=-s -w", "GOTOOLCHAIN=go1.27.0"}, verdict: "deadlock", holders: []string{"alice", "bob"}, basis: "inferred"},
	}
	for _, tc := range tests {
		t.Run(tc.victim+strings.Join(tc.flags, ""), func(t *testing.T) {
			t.Parallel()
			v := testvictim.Start(t, buildCorpusGo(t, tc.victim, tc.flags...))
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms")
			var r lockReport
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("exit %d, %v: %s\n%s", code, err, out, stderr)
			}
			if r.Verdict != tc.verdict || r.Sampling.StackSource != "memory" {
				t.Errorf("verdict %s from %s (%s), want %s from memory; notes %v", r.Verdict, r.Sampling.StackSource, r.Summary, tc.verdict, r.Sampling.Notes)
			}
			if tc.waiters > 0 && (len(r.Locks) != 1 || len(r.Locks[0].Waiters) != tc.waiters) {
				t.Errorf("locks %+v, want one with %d waiters", r.Locks, tc.waiters)
			}
			for _, key := range tc.holders {
				id := int64(v.Int(key))
				if basis, ok := holderOf(r, id); !ok || basis != tc.basis {
					t.Errorf("goroutine %d (%s) holds no lock with basis %q: locks %+v", id, key, tc.basis, r.Locks)
				}
			}
			// The words say what the basis rests on.
			want := "whose stack refers to its address"
			if tc.basis != "inferred" {
				want = "held for reading by goroutine " + v.Info[tc.holders[0]]
			}
			if tc.summary != "" && len(r.Locks) > 0 {
				s := strings.ReplaceAll(fmt.Sprintf(tc.summary, r.Locks[0].ID), "{writer}", v.Info["writer"])
				if !strings.Contains(r.Summary, s) {
					t.Errorf("summary %q lacks %q", r.Summary, s)
				}
			}
			for _, l := range r.Locks {
				if !strings.Contains(l.Basis, want) {
					t.Errorf("lock %s: basis %q lacks %q", l.ID, l.Basis, want)
				}
			}
			if tc.verdict == "deadlock" && len(r.Cycles) == 0 {
				t.Errorf("no cycle: %s", r.Summary)
			}
		})
	}
}

// TestGoCopiedLock: a method with a value receiver locks its copy of a
// struct's mutex, copied while another goroutine held the original. The
// copy has no holder and nothing unlocks it: no holder is named (the
// original's holder is not this lock's), and the report says why.
func TestGoCopiedLock(t *testing.T) {
	for _, flags := range [][]string{nil, {"GOTOOLCHAIN=go1.22.0"}} {
		t.Run(strings.Join(append([]string{"host"}, flags...), ""), func(t *testing.T) {
			t.Parallel()
			v := testvictim.Start(t, buildCorpusGo(t, "copylock", flags...))
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms")
			var r struct {
				lockReport
				Hint string `json:"hint"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("exit %d, %v: %s\n%s", code, err, out, stderr)
			}
			if r.Verdict != "blocked" || !strings.Contains(r.Summary, "a copy of c.mu") || !strings.Contains(r.Hint, "locks a copy of a mutex") {
				t.Errorf("verdict %s (%s), hint %q: want blocked on a copy of c.mu", r.Verdict, r.Summary, r.Hint)
			}
			if len(r.Locks) != 1 || r.Locks[0].Holder != nil || !strings.Contains(r.Locks[0].Basis, "it is a copy") {
				t.Errorf("locks %+v: want one, a copy, with no holder", r.Locks)
			}
		})
	}
}

func TestPythonLockHoldersLive(t *testing.T) {
	root, err := testvictim.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("py-spy"); err != nil {
		t.Fatalf("py-spy not found: pip install py-spy")
	}
	dir := filepath.Join(root, "testdata", "corpus", "victims", "python")
	tests := []struct {
		victim  string
		verdict string
		holder  string // the holder thread's name, from the ready line
		basis   string
		cycle   bool
	}{
		{victim: "cache_refresh.py", verdict: "blocked", holder: "refresher", basis: "probable"},
		{victim: "acquire_release.py", verdict: "blocked", holder: "runner", basis: "probable"},
		// py-spy --locals gives each lock's address: the swap is exact.
		{victim: "lock_order.py", verdict: "deadlock", basis: "exact", cycle: true},
		// A signal handler logs into the queue whose mutex the code it
		// interrupted holds: the thread waits for itself (--locals: the
		// same queue object in both frames).
		{victim: "signal_logging.py", verdict: "deadlock", holder: "MainThread", basis: "exact", cycle: true},
	}
	for _, tc := range tests {
		t.Run(tc.victim, func(t *testing.T) {
			t.Parallel()
			py, err := exec.LookPath("python3")
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py, filepath.Join(dir, tc.victim))
			cmd.Dir = dir
			v := testvictim.StartCmd(t, cmd)
			// Main prints the ready line, then joins: from memory, a read
			// can catch it on its way.
			v.WaitBlocked(v.PID)
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--samples", "2", "--interval", "300ms")
			var r lockReport
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("exit %d, %v: %s\n%s", code, err, out, stderr)
			}
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s (%s), want %s; notes %v", r.Verdict, r.Summary, tc.verdict, r.Sampling.Notes)
			}
			name := map[int]string{}
			for _, th := range r.Threads {
				name[th.TID] = th.Name
			}
			if tc.holder != "" && !slices.ContainsFunc(r.Locks, func(l reportLock) bool {
				return l.Holder != nil && name[l.Holder.TID] == tc.holder && l.BasisKind == tc.basis
			}) {
				t.Errorf("no lock held by %s with basis %s: %+v", tc.holder, tc.basis, r.Locks)
			}
			if tc.cycle {
				size := 2
				if tc.holder != "" {
					size = 1 // a self-deadlock
				}
				if len(r.Cycles) == 0 || len(r.Cycles[0]) != size {
					t.Errorf("cycles %+v, want one of %d threads: %s", r.Cycles, size, r.Summary)
				}
				for _, l := range r.Locks {
					if l.Holder != nil && l.BasisKind != tc.basis {
						t.Errorf("lock %s basis %s, want %s: %s", l.ID, l.BasisKind, tc.basis, l.Basis)
					}
				}
			}
		})
	}
}
