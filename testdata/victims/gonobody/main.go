// Command gonobody is a victim: a goroutine that waits for something no
// goroutine of the program is left to do, or for another process that
// never answers. By its first argument:
//
//	waitgroup   main waits in wg.Wait() for two workers that returned on
//	            an error path before calling wg.Done();
//	dbpool      a database/sql pool of one connection (SetMaxOpenConns(1)):
//	            main holds rows open and runs a second query, which waits
//	            in (*DB).conn for a connection only main could give back;
//	httpclient  http.Get with no timeout against a server in a child
//	            process that reads the request and never answers: main
//	            waits in (*persistConn).roundTrip, the connection's readLoop
//	            in IO wait on the socket.
//	httpunix    the same over a Unix socket (HTTP to a daemon's socket):
//	            the server listens on a path in $TMPDIR.
//
// Like every Go victim, it keeps itself alive with a TCP listener on
// 127.0.0.1:0 (the runtime's deadlock detector never fires while a
// goroutine waits in the network poller).
//
// A goroutine polls runtime.Stack until the hang is in place, twice 100 ms
// apart, then prints
//
//	ready pid=P mode=M [server=PID addr=HOST:PORT|addr=unix:PATH]
//
// This directory is under testdata, so `go build ./...` and `go vet ./...`
// skip it; the tests build it with
//
//	go build -o DIR/gonobody ./testdata/victims/gonobody
package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/testdata/victims/govictim"
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == "mute-server" {
		muteServer(os.Args[2], os.Args[3])
		return
	}
	mode := "waitgroup"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	govictim.Listen("gonobody", false)
	extra := ""
	var hang func()
	switch mode {
	case "waitgroup":
		hang = waitGroup
	case "dbpool":
		hang = dbPool
	case "httpclient", "httpunix":
		network := "tcp"
		if mode == "httpunix" {
			network = "unix"
		}
		server, addr := startServer(network)
		extra = fmt.Sprintf(" server=%d addr=%s", server, addr)
		hang = func() { httpClient(addr) }
	default:
		govictim.Fatal(fmt.Errorf("usage: gonobody waitgroup|dbpool|httpclient|httpunix"))
	}
	go report(mode, extra)
	hang()
	govictim.Fatal(errors.New("the hang ended"))
}

// waitGroup: the workers return on an error path before Done.
func waitGroup() {
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			if err := work(i); err != nil {
				return // the bug: no wg.Done() on this path
			}
			wg.Done()
		}()
	}
	wg.Wait()
}

func work(int) error { return errors.New("bad input") }

// dbPool: rows left open hold the pool's only connection.
func dbPool() {
	sql.Register("fake", fakeDriver{})
	db, err := sql.Open("fake", "")
	if err != nil {
		govictim.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	rows, err := db.Query("SELECT 1")
	if err != nil {
		govictim.Fatal(err)
	}
	_ = rows // the bug: rows.Close() is missing before the next query
	if _, err := db.Query("SELECT 2"); err != nil {
		govictim.Fatal(err)
	}
}

// httpClient: no timeout on the client. An addr "unix:PATH" is dialled
// on the Unix socket PATH.
func httpClient(addr string) {
	client := http.DefaultClient
	url := "http://" + addr + "/"
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
		url = "http://daemon/"
	}
	resp, err := client.Get(url)
	if err != nil {
		govictim.Fatal(err)
	}
	resp.Body.Close()
}

// startServer re-runs this program as the mute server, in a child process,
// and waits for it to listen.
func startServer(network string) (pid int, addr string) {
	r, w, err := os.Pipe()
	if err != nil {
		govictim.Fatal(err)
	}
	cmd := exec.Command("/proc/self/exe", "mute-server", "3", network)
	cmd.Args[0] = os.Args[0]
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		govictim.Fatal(err)
	}
	w.Close()
	b := make([]byte, 4096)
	n, err := r.Read(b)
	if err != nil {
		govictim.Fatal(fmt.Errorf("the mute server did not start: %v", err))
	}
	return cmd.Process.Pid, strings.TrimSpace(string(b[:n]))
}

// muteServer accepts one connection, reads the request and never answers.
func muteServer(_, network string) {
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(os.TempDir(), fmt.Sprintf("gn-%d.sock", os.Getpid()))
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		govictim.Fatal(err)
	}
	ready := os.NewFile(3, "ready")
	if network == "unix" {
		fmt.Fprintln(ready, "unix:"+addr)
	} else {
		fmt.Fprintln(ready, ln.Addr().String())
	}
	ready.Close()
	c, err := ln.Accept()
	if err != nil {
		govictim.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if err != nil || strings.Contains(string(buf[:n]), "\r\n\r\n") {
			break
		}
	}
	for {
		time.Sleep(time.Hour)
	}
}

// report polls check and prints the ready line.
func report(mode, extra string) {
	deadline := time.Now().Add(60 * time.Second)
	reason := "not checked"
	for time.Now().Before(deadline) {
		err := check(mode)
		if err == nil {
			time.Sleep(100 * time.Millisecond)
			err = check(mode)
		}
		if err == nil {
			fmt.Printf("ready pid=%d mode=%s%s\n", os.Getpid(), mode, extra)
			return
		}
		reason = err.Error()
		time.Sleep(10 * time.Millisecond)
	}
	govictim.Fatal(fmt.Errorf("hang not reached within 60s: %s", reason))
}

func check(mode string) error {
	gs := govictim.Goroutines()
	has := func(state, frame string) bool {
		for _, g := range gs {
			if strings.HasPrefix(g.State, state) && strings.Contains(g.Stack, frame) {
				return true
			}
		}
		return false
	}
	switch mode {
	case "waitgroup":
		if !has("sync.WaitGroup.Wait", "main.waitGroup") {
			return errors.New("main not in wg.Wait")
		}
		if has("", "main.waitGroup.func1") {
			return errors.New("a worker is still running")
		}
	case "dbpool":
		if !has("select", "database/sql.(*DB).conn") {
			return errors.New("no goroutine waits in (*DB).conn")
		}
	case "httpclient", "httpunix":
		if !has("select", "net/http.(*persistConn).roundTrip") || !has("IO wait", "net/http.(*persistConn).readLoop") {
			return errors.New("the client is not waiting for the response")
		}
	}
	return nil
}

// fakeDriver is a database/sql driver whose connections answer every
// query with one row, so that the pool, not the database, is the story.
type fakeDriver struct{}

func (fakeDriver) Open(string) (driver.Conn, error) { return &fakeConn{}, nil }

type fakeConn struct{}

func (*fakeConn) Prepare(q string) (driver.Stmt, error) { return &fakeStmt{}, nil }
func (*fakeConn) Close() error                          { return nil }
func (*fakeConn) Begin() (driver.Tx, error)             { return nil, errors.New("no transactions") }
func (*fakeConn) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return &fakeRows{}, nil
}

type fakeStmt struct{}

func (*fakeStmt) Close() error                               { return nil }
func (*fakeStmt) NumInput() int                              { return 0 }
func (*fakeStmt) Exec([]driver.Value) (driver.Result, error) { return nil, errors.New("no exec") }
func (*fakeStmt) Query([]driver.Value) (driver.Rows, error)  { return &fakeRows{}, nil }

type fakeRows struct{ done bool }

func (*fakeRows) Columns() []string { return []string{"n"} }
func (*fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(1)
	return nil
}
