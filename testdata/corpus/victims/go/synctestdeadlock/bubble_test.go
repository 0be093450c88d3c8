//go:build go1.25

// Package synctestdeadlock is a testing/synctest test (Go 1.25+) whose bubble
// deadlocks: the worker waits for a request the test never sends, and the
// test waits for the worker's reply. Every goroutine in the bubble is durably
// blocked, so synctest panics "deadlock: all goroutines in bubble are
// blocked" and prints the bubble's goroutines (", synctest bubble N" in their
// headers, "(durable)" wait reasons).
package synctestdeadlock

import (
	"testing"
	"testing/synctest"
)

func serve(reqs <-chan string, replies chan<- string) {
	for r := range reqs {
		replies <- "re: " + r
	}
}

func TestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reqs, replies := make(chan string), make(chan string)
		go serve(reqs, replies)
		// forgot: reqs <- "hello"
		if got := <-replies; got != "re: hello" {
			t.Errorf("reply %q", got)
		}
	})
}
