// Command gostackparse parses a goroutine dump with DataDog/gostackparse
// and prints how many goroutines it found: the bare parse, as a whole
// process, for BENCHMARKS.md's side-by-side run against hangdoc analyze.
package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/DataDog/gostackparse"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gostackparse FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gs, errs := gostackparse.Parse(bufio.NewReaderSize(f, 64<<10))
	fmt.Printf("%d goroutines, %d errors\n", len(gs), len(errs))
}
