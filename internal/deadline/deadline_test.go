package deadline

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRunReturns(t *testing.T) {
	v, err := Run(context.Background(), "adding", func() (int, error) { return 42, nil })
	if v != 42 || err != nil {
		t.Fatalf("Run = %d, %v; want 42, nil", v, err)
	}
	want := errors.New("boom")
	if _, err := Run(context.Background(), "failing", func() (int, error) { return 0, want }); err != want {
		t.Fatalf("Run = %v, want the call's own error", err)
	}
}

// A call that blocks is given up when the context ends, counted stuck
// while it blocks, and uncounted when it returns.
func TestRunGivesUp(t *testing.T) {
	block := make(chan struct{})
	returned := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	before := Stuck()
	_, err := Run(ctx, "reading /proc/1/exe", func() (int, error) {
		cancel() // the call has started; now it blocks past its deadline
		<-block
		close(returned)
		return 1, nil
	})
	var e *Error
	if !errors.Is(err, ErrAbandoned) || !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.What != "reading /proc/1/exe" {
		t.Fatalf("Run = %v, want an *Error wrapping ErrAbandoned and the context's error", err)
	}
	if Stuck() != before+1 {
		t.Errorf("Stuck() = %d while the call blocks, want %d", Stuck(), before+1)
	}
	close(block)
	<-returned
	for end := time.Now().Add(20 * time.Second); Stuck() != before; {
		if time.Now().After(end) {
			t.Fatalf("Stuck() = %d after the call returned, want %d", Stuck(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// Past MaxStuck blocked calls, Run refuses new ones at once.
func TestRunBoundsStuck(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// With ctx already done Run does not even start the call.
	if _, err := Run(ctx, "x", func() (int, error) { t.Error("called"); return 0, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a done context = %v", err)
	}
	for Stuck() < MaxStuck {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		Run(ctx, "blocking", func() (int, error) { <-block; return 0, nil })
		cancel()
	}
	called := false
	_, err := Run(context.Background(), "one more", func() (int, error) { called = true; return 0, nil })
	if !errors.Is(err, ErrTooManyStuck) || called {
		t.Fatalf("Run past MaxStuck = %v (called %v), want ErrTooManyStuck without calling", err, called)
	}
}

// The call runs on a thread that takes no SIGINT or SIGTERM: stuck in
// the kernel, it would keep them from os/signal.
func TestRunMasksInterrupts(t *testing.T) {
	// callMasked, the call's wrapper in Run: another test leaves MaxStuck
	// calls blocked for a while, and Run refuses new ones then.
	blocked, err := callMasked(func() (string, error) {
		b, err := os.ReadFile("/proc/thread-self/status")
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "SigBlk:"); ok {
				return strings.TrimSpace(v), err
			}
		}
		return "", err
	})
	if err != nil {
		t.Fatal(err)
	}
	mask, err := strconv.ParseUint(blocked, 16, 64)
	const want = 1<<(2-1) | 1<<(15-1) // SIGINT, SIGTERM
	if err != nil || mask&want != want {
		t.Errorf("SigBlk %s during the call: want SIGINT and SIGTERM blocked", blocked)
	}
}
