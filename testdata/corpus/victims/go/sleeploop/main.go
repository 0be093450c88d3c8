// sleeploop: goroutine 1 polls for a file that never appears, sleeping half a
// second between looks. Every dump shows it in time.Sleep: idle, not stuck on
// anything.
package main

import (
	"flag"
	"os"
	"time"

	"corpusvictims/internal/hang"
)

func waitForFile(path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	if *httpAddr != "" {
		ln := hang.Listen(*httpAddr)
		go hang.Serve(ln, true)
		defer ln.Close()
		go func() {
			hang.Await("main sleeping", func(d string) bool { return hang.Parked(d, 1, "main.waitForFile") })
			hang.Ready("main=1", "addr="+ln.Addr().String())
		}()
	} else {
		go func() {
			hang.Await("main sleeping", func(d string) bool { return hang.Parked(d, 1, "main.waitForFile") })
			hang.Ready("main=1")
		}()
	}
	waitForFile("/nonexistent/corpus-ready.flag")
}
