// Command hangdoc tells why a process has stopped making progress.
package main

import "os"

func main() {
	os.Exit(int(Main(os.Args[1:], os.Stdout, os.Stderr)))
}
