// Package goroutines parses Go goroutine dumps — SIGQUIT and crash
// tracebacks, panics, fatal errors, go test timeouts, runtime.Stack(all)
// and pprof goroutine profiles (debug=2; debug=1 is only recognised) —
// into goroutines with their states and frames, streaming, so that a dump
// far larger than memory can be read.
package goroutines
