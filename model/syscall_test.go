package model

import "testing"

func TestGoStd(t *testing.T) {
	for fn, want := range map[string]bool{
		"net/http.(*conn).serve":                               true,
		"internal/sync.(*Mutex).Lock":                          true,
		"runtime.gopark":                                       true,
		"sync.(*Mutex).Lock":                                   true,
		"vendor/golang.org/x/net/http2/hpack.(*Decoder).Write": true,
		"main.main":                                            false,
		"github.com/acme/db.(*Pool).Get":                       false,
		// A module path needs no dot: a program's own packages.
		"corpusvictims/tlogdump.(*pool).take": false,
		"myapp.run":                           false,
		"command-line-arguments.TestX":        false,
	} {
		if got := GoStd(fn); got != want {
			t.Errorf("GoStd(%q) = %v, want %v", fn, got, want)
		}
	}
}
