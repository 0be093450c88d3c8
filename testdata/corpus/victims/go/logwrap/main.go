// logwrap is a supervisor of the kind that wraps a service's output in log
// lines: it runs its arguments as a child, passes the child's stdout through
// and logs every line of its stderr with the log package (date, time with
// microseconds, "name[pid]: "). A SIGQUIT dump of the child thus arrives
// with a prefix on every line.
package main

import (
	"bufio"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: logwrap COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdout = os.Stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	lg := log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
	name := filepath.Base(os.Args[1])
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		lg.Printf("%s[%d]: %s", name, cmd.Process.Pid, sc.Text())
	}
	err = cmd.Wait()
	lg.Printf("%s[%d]: exited: %v", name, cmd.Process.Pid, err)
}
