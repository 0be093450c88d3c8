// wgnodone: fetchAll waits in wg.Wait for three fetches; the one for an
// empty URL returns before its `defer wg.Done()`, so no goroutine is left that
// could call Done. Goroutine 1 waits forever; a listener goroutine keeps the
// process alive.
package main

import (
	"flag"
	"strings"
	"sync"

	"corpusvictims/internal/hang"
)

func fetchAll(urls []string) []string {
	var wg sync.WaitGroup
	out := make([]string, len(urls))
	for i, u := range urls {
		wg.Add(1)
		go func(i int, u string) {
			if u == "" {
				return // bug: returns before the Done below is deferred
			}
			defer wg.Done()
			out[i] = strings.ToUpper(u)
		}(i, u)
	}
	wg.Wait()
	return out
}

func main() {
	httpAddr := flag.String("http", "", "serve net/http/pprof on this address")
	flag.Parse()
	ln := hang.Listen(*httpAddr)
	go hang.Serve(ln, *httpAddr != "")
	go func() {
		hang.Await("main in wg.Wait, fetches gone", func(d string) bool {
			return hang.Parked(d, 1, "main.fetchAll") && !strings.Contains(d, "main.fetchAll.func1")
		})
		hang.Ready("main=1", "addr="+ln.Addr().String())
	}()
	fetchAll([]string{"a", "", "c"})
}
