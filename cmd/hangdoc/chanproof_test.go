package main

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// chanWait is a wait of the JSON report with its counterparts.
type chanWait struct {
	From         goRef `json:"from"`
	Counterparts *struct {
		Refs       []goRef `json:"refs"`
		Basis      string  `json:"basis"`
		Complete   bool    `json:"complete"`
		Cut        string  `json:"cut"`
		NobodyLeft bool    `json:"nobody_left"`
		WaitFirst  []goRef `json:"wait_first"`
	} `json:"counterparts"`
}

// TestChanProofs: "nobody left" for goroutines blocked on a channel needs
// a proof, and a goroutine that refers to the channel is named. The
// memory reader's channel scan, on the last sample, gives both: the
// workers on <-ctx.Done() whose main holds the cancel and waits for them
// in wg.Wait() are blocked, with main named; the workers on a channel
// nobody else refers to have nobody left, proven by a complete scan.
func TestChanProofs(t *testing.T) {
	bin := testvictim.BuildModule(t, "gochanproof", testvictim.ModuleBuild{})
	tests := []struct {
		mode, verdict string
		code          ExitCode
		summary, not  []string
		nobody        bool
	}{
		{mode: "ctx", verdict: "blocked", code: ExitBlocked,
			summary: []string{"on a channel that goroutine 1 (main.withCancel) refers to", "goroutine 1 refers to the channel but waits first", "among those that could end it"},
			not:     []string{"feeder", "nobody is left", "would"}},
		{mode: "orphan", verdict: "idle", code: ExitIdle, nobody: true,
			summary: []string{"no goroutine but them refers to their channel", "every stack and the globals, 2 pointers deep"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			v := testvictim.StartCmd(t, exec.Command(bin, tt.mode))
			out, stderr, code := hangdocProcess(t, strconv.Itoa(v.PID), "--json", "--interval", "500ms", "--samples", "2")
			var c struct {
				tcontract
				Waits    []chanWait `json:"waits"`
				Sampling struct {
					StackSource string   `json:"stack_source"`
					Notes       []string `json:"notes"`
				} `json:"sampling"`
			}
			c.tcontract = tdecode(t, out)
			if err := jsonUnmarshal(out, &c); err != nil {
				t.Fatal(err)
			}
			if c.Sampling.StackSource != "memory" {
				t.Fatalf("stack source %q, want memory (the scan is the memory reader's); notes %v\n%s", c.Sampling.StackSource, c.Sampling.Notes, stderr)
			}
			if code != tt.code || c.Verdict != tt.verdict {
				t.Errorf("exit %d verdict %q, want %q\nsummary: %s", code, c.Verdict, tt.verdict, c.Summary)
			}
			for _, s := range tt.summary {
				if !strings.Contains(c.Summary, s) {
					t.Errorf("summary %q lacks %q", c.Summary, s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(c.Summary, s) {
					t.Errorf("summary %q says %q", c.Summary, s)
				}
			}
			mainID := int64(v.Int("main"))
			var workers []int64
			for _, s := range strings.Split(v.Info["workers"], ",") {
				id, _ := strconv.ParseInt(s, 10, 64)
				workers = append(workers, id)
			}
			for _, w := range workers {
				i := slices.IndexFunc(c.Waits, func(x chanWait) bool {
					return x.From.Goroutine == w && x.Counterparts != nil
				})
				if i < 0 {
					t.Errorf("no wait with counterparts from worker %d", w)
					continue
				}
				cp := c.Waits[i].Counterparts
				if cp.Basis != "memory scan" || cp.NobodyLeft != tt.nobody {
					t.Errorf("worker %d: counterparts %+v, want basis memory scan, nobody_left %v", w, *cp, tt.nobody)
				}
				hasMain := slices.ContainsFunc(cp.Refs, func(r goRef) bool { return r.Goroutine == mainID })
				switch {
				case tt.nobody && (len(cp.Refs) > 0 || !cp.Complete):
					t.Errorf("worker %d: counterparts %+v, want none, by a complete scan", w, *cp)
				case !tt.nobody && (!hasMain || !slices.ContainsFunc(cp.WaitFirst, func(r goRef) bool { return r.Goroutine == mainID })):
					t.Errorf("worker %d: counterparts %+v, want main (goroutine %d) among refs and wait_first", w, *cp, mainID)
				}
			}
		})
	}
}
