package main

import (
	"strings"
	"testing"
)

// The worst proven state decides, not the biggest group; harness and
// server machinery by role (issue 18). Each case is a real dump, written
// by runtime.Stack in the program beside it (testdata/minority/*/main.go,
// testdata/harness/inflight/main.go) and committed: the test reads only
// the dump, and --src points at the programs' sources wherever the
// checkout is.

// minorityCase runs analyze on one dump, in text and JSON.
func minorityCase(t *testing.T, dump string, src ...string) (text string, c gocontract) {
	t.Helper()
	args := []string{"analyze"}
	for _, s := range src {
		args = append(args, "--src", s)
	}
	out, stderr, code := hangdoc(t, append(append(args, "--json"), dump)...)
	if code == ExitError || code == ExitUsage {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	c = godecode(t, out)
	text, _, _ = hangdoc(t, append(args, dump)...)
	return text, c
}

// TestBlockedMinority: a minority blocked behind a mutex's holder makes the
// verdict blocked, whatever idle majority stands around it, and the
// summary leads with the mutex and its holder, then says what else waits.
// The two server shapes of the issue, at a small scale (N waiters, 2N
// idle): the holder blocked on a channel; main holding the mutex, parked
// for good in select {}.
func TestBlockedMinority(t *testing.T) {
	for _, tc := range []struct {
		name   string
		holder int64
		says   []string
	}{
		{"registry", 407, []string{"goroutine 407 probably holds sync.Mutex", "main.(*registry).flush", "200 goroutines wait for the mutex", "400 goroutines [select] in main.(*conn).pump wait for work"}},
		{"parkedholder", 1, []string{"goroutine 1 probably holds sync.Mutex", "parked for good in select {} in main.main", "200 goroutines wait for the mutex", "400 goroutines [chan receive] in main.worker wait for work"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, c := minorityCase(t, "testdata/minority/"+tc.name+"/dump.txt", "testdata/minority")
			if c.Verdict != "blocked" {
				t.Errorf("verdict %s, want blocked: %s", c.Verdict, c.Summary)
			}
			if len(c.Locks) == 0 || c.Locks[0].Holder == nil || c.Locks[0].Holder.Goroutine != tc.holder || len(c.Locks[0].Waiters) != 200 {
				t.Fatalf("locks %+v, want the mutex held by goroutine %d with 200 waiters", c.Locks, tc.holder)
			}
			if !strings.Contains(c.Summary, c.Locks[0].ID) {
				t.Errorf("the summary does not name the mutex %s: %s", c.Locks[0].ID, c.Summary)
			}
			for _, s := range tc.says {
				if !strings.Contains(c.Summary, s) {
					t.Errorf("the summary does not say %q: %s", s, c.Summary)
				}
			}
			for _, s := range []string{"feeder goroutine is gone", "no goroutine is left that could send"} {
				if strings.Contains(text, s) {
					t.Errorf("the report says %q:\n%s", s, text)
				}
			}
		})
	}
}

// TestHarnessAndRequests: go test's alarm is the harness's, never work;
// an HTTP server's requests in flight that do not return are blocked,
// counted, with their handler named — never an idle pool.
func TestHarnessAndRequests(t *testing.T) {
	t.Run("go test alarm, old Go", func(t *testing.T) {
		// Go 1.4's form (testing.func·008, created by time.goFunc):
		// four goroutines 5 minutes in chan send.
		text, c := minorityCase(t, "testdata/harness/testtimeout-go1.4.txt")
		if c.Verdict != "blocked" {
			t.Errorf("verdict %s, want blocked: %s", c.Verdict, c.Summary)
		}
		if !strings.Contains(c.Summary, "4 goroutines are blocked sending") {
			t.Errorf("the summary does not lead with the four senders: %s", c.Summary)
		}
		for _, g := range c.Goroutines {
			if g.ID == 22 && g.Class == "working" {
				t.Errorf("the alarm (goroutine 22, testing.func·008) is working:\n%s", text)
			}
		}
	})
	t.Run("go test alarm", func(t *testing.T) {
		for _, v := range []string{"go1.22.0", "go1.26.0", "go1.27.0"} {
			_, c := minorityCase(t, "../../testdata/corpus/dumps/go-test/testtimeout."+v+".txt")
			if c.Verdict != "blocked" {
				t.Errorf("%s: verdict %s, want blocked: %s", v, c.Verdict, c.Summary)
			}
			for _, g := range c.Goroutines {
				if g.Class == "working" {
					t.Errorf("%s: goroutine %d [%s] is working: only the alarm runs, and it is the harness's", v, g.ID, g.State)
				}
			}
		}
	})
	t.Run("requests in flight", func(t *testing.T) {
		text, c := minorityCase(t, "testdata/harness/inflight/dump.txt", "testdata/harness")
		if c.Verdict != "blocked" {
			t.Errorf("verdict %s, want blocked: %s", c.Verdict, c.Summary)
		}
		if s := "40 requests in flight have not returned: their handler main.(*api).lookup waits [chan receive]"; !strings.Contains(c.Summary, s) {
			t.Errorf("the summary does not say %q: %s", s, c.Summary)
		}
		for _, g := range c.Goroutines {
			if len(g.Stack) > 0 && g.Stack[0].Func == "main.(*api).lookup" && g.Class != "blocked" {
				t.Errorf("request goroutine %d is %s, want blocked", g.ID, g.Class)
			}
		}
		for _, s := range []string{"feeder", "no goroutine is left", "workers"} {
			if strings.Contains(text, s) {
				t.Errorf("the report says %q:\n%s", s, text)
			}
		}
	})
	t.Run("requests in flight among clients", func(t *testing.T) {
		// panicweb: 13 requests in two handlers, beside its own clients
		// waiting for their responses.
		text, c := minorityCase(t, "testdata/harness/panicweb-pprof-debug2.txt")
		if c.Verdict != "blocked" {
			t.Errorf("verdict %s, want blocked: %s", c.Verdict, c.Summary)
		}
		if s := "13 requests in flight have not returned, 10 of them in the handler github.com/maruel/panicparse/cmd/panicweb/internal.URL1Handler"; !strings.Contains(c.Summary, s) {
			t.Errorf("the summary does not say %q: %s", s, c.Summary)
		}
		for _, s := range []string{"feeder", "no goroutine is left"} {
			if strings.Contains(text, s) {
				t.Errorf("the report says %q:\n%s", s, text)
			}
		}
	})
}
