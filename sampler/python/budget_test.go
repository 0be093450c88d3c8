package python

import (
	"context"
	"testing"
	"time"
)

// The dump's budget is the caller's deadline; Options.Timeout only
// shortens it, and DefaultTimeout applies only without either.
func TestBudget(t *testing.T) {
	bg := context.Background()
	hour, cancel := context.WithTimeout(bg, time.Hour)
	defer cancel()
	second, cancel2 := context.WithTimeout(bg, time.Second)
	defer cancel2()
	for _, c := range []struct {
		name    string
		ctx     context.Context
		timeout time.Duration
		own     time.Duration // the bound RunPySpy sets itself, 0 for none
		within  time.Duration // the context's deadline is at most this far
	}{
		{"caller's deadline alone", hour, 0, 0, time.Hour},
		{"Timeout shorter than the deadline", hour, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{"deadline shorter than Timeout", second, time.Minute, 0, time.Second},
		{"no deadline, no Timeout", bg, 0, DefaultTimeout, DefaultTimeout},
		{"no deadline, a Timeout", bg, 3 * time.Second, 3 * time.Second, 3 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel, own := Options{Timeout: c.timeout}.budget(c.ctx)
			defer cancel()
			d, ok := ctx.Deadline()
			if own != c.own || !ok || time.Until(d) > c.within {
				t.Errorf("budget: own %v, deadline in %v (set %v); want own %v, deadline within %v", own, time.Until(d), ok, c.own, c.within)
			}
		})
	}
}
