// Command gendump writes a generated goroutine dump to standard output,
// for the whole-process benchmarks (analyze.sh): `gendump server N` is
// bench.ServerDump(N), goroutines that own their objects, and
// `gendump sites N` is bench.Dump(N), goroutines from 48 call sites;
// `gendump jstack N` is bench.JstackDump(N), a JVM server's jstack -l of N
// Java threads.
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/hangdoc/hangdoc/bench"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gendump server|sites|jstack N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "gendump: %q is not a number of goroutines\n", os.Args[2])
		os.Exit(2)
	}
	var b []byte
	switch os.Args[1] {
	case "server":
		b = bench.ServerDump(n)
	case "sites":
		b = bench.Dump(n)
	case "jstack":
		b = bench.JstackDump(n)
	default:
		fmt.Fprintf(os.Stderr, "gendump: no shape %q: server, sites or jstack\n", os.Args[1])
		os.Exit(2)
	}
	if _, err := os.Stdout.Write(b); err != nil {
		fmt.Fprintln(os.Stderr, "gendump:", err)
		os.Exit(1)
	}
}
