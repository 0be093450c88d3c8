// Command gomemold is a Go program too old for sampler/gomem's memory
// reader (the tests build it with Go 1.21, GOTOOLCHAIN=go1.21.0): Open
// must refuse it with ErrUnsupported, so that hangdoc falls back to Delve.
// It prints "ready pid=P" and sleeps until killed.
//
// It is a module of its own, with go 1.20, so that Go 1.21 builds it.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	fmt.Printf("ready pid=%d\n", os.Getpid())
	for {
		time.Sleep(time.Hour)
	}
}
