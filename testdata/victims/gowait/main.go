// Command gowait is a victim: os/exec's documented misuse, Cmd.Wait before
// reading Cmd.StdoutPipe.
//
//	cmd := exec.Command("sh", "-c", "exec head -c 200000 /dev/zero")
//	out, _ := cmd.StdoutPipe()
//	cmd.Start()
//	cmd.Wait() // never returns
//	io.ReadAll(out)
//
// The child (the sh, which execs head: one process, comm "head") blocks in
// write(1, ...) once the 64 KiB pipe is full; the parent's main goroutine
// blocks in Wait. Since Go 1.23, on Linux, os/exec waits with
// waitid(P_PIDFD, pidfd, ..., WEXITED, ...) on the pidfd obtained from
// clone(CLONE_PIDFD); without pidfds it waits in waitid(P_PID, pid, ...,
// WEXITED|WNOWAIT, ...) and then wait4. The waiting OS thread is whichever
// thread the main goroutine was running on.
//
// A goroutine polls /proc until the child is in write(1, ...) on a pipe
// whose read end the parent holds and one of the parent's threads is in the
// wait, twice in a row 100 ms apart, then prints
//
//	ready pid=P child=C waiter=TID wait=waitid idtype=pidfd pidfd=N pipefd=R
//
// (wait=waitid idtype=pid, or wait=wait4, and no pidfd key, on the
// fallback; pipefd is the parent's read end). If the hang is not reached
// within 60 s it writes the reason to stderr and exits 1 (the child dies
// with it: PR_SET_PDEATHSIG).
//
// This directory is under testdata, so `go build ./...` and `go vet ./...`
// skip it; the tests build it with
//
//	go build -o DIR/gowait ./testdata/victims/gowait
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Values of waitid's idtype (linux/wait.h).
const (
	pPID   = 1
	pPIDFD = 3
)

func main() {
	cmd := exec.Command("sh", "-c", "exec head -c 200000 /dev/zero")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fatal(err)
	}
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	rd := -1
	if f, ok := out.(*os.File); ok {
		// Not f.Fd(): it would put the pipe in blocking mode.
		if rc, err := f.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { rd = int(fd) })
		}
	}
	go report(os.Getpid(), cmd.Process.Pid, rd)

	err = cmd.Wait() // never returns: nobody reads the pipe
	b, _ := io.ReadAll(out)
	fatal(fmt.Errorf("Wait returned %v after %d bytes", err, len(b)))
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "error: %v\n", err)
	os.Exit(1)
}

// report polls check and prints the ready line (see the package comment).
func report(pid, child, rd int) {
	reason := "not checked"
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		line, err := check(pid, child, rd)
		if err == nil {
			time.Sleep(100 * time.Millisecond)
			line, err = check(pid, child, rd)
		}
		if err == nil {
			if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
				fatal(err)
			}
			return
		}
		reason = err.Error()
		time.Sleep(10 * time.Millisecond)
	}
	fatal(fmt.Errorf("hang not reached within 60s: %s", reason))
}

func check(pid, child, rd int) (string, error) {
	nr, args, err := taskSyscall(child, child)
	if err != nil {
		return "", err
	}
	if nr != syscall.SYS_WRITE || args[0] != 1 {
		return "", fmt.Errorf("child %d not in write(1, ...) (syscall %d)", child, nr)
	}
	pipe, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", child))
	if err != nil {
		return "", err
	}
	if rd < 0 {
		return "", fmt.Errorf("the parent's read end of the pipe is unknown")
	}
	if mine, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", rd)); err != nil || mine != pipe {
		return "", fmt.Errorf("child's fd 1 is %s, the parent's read end fd %d is %s (%v)", pipe, rd, mine, err)
	}

	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil {
		return "", err
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(filepath.Base(task))
		if err != nil {
			continue
		}
		nr, args, err := taskSyscall(pid, tid)
		if err != nil {
			continue
		}
		prefix := fmt.Sprintf("ready pid=%d child=%d waiter=%d", pid, child, tid)
		switch {
		case nr == syscall.SYS_WAITID && args[0] == pPIDFD:
			link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", args[1]))
			if err != nil || link != "anon_inode:[pidfd]" {
				return "", fmt.Errorf("thread %d in waitid(P_PIDFD, %d): fd is %q (%v)", tid, args[1], link, err)
			}
			return fmt.Sprintf("%s wait=waitid idtype=pidfd pidfd=%d pipefd=%d", prefix, args[1], rd), nil
		case nr == syscall.SYS_WAITID && args[0] == pPID && args[1] == uint64(child):
			return fmt.Sprintf("%s wait=waitid idtype=pid pipefd=%d", prefix, rd), nil
		case nr == syscall.SYS_WAIT4 && args[0] == uint64(child):
			return fmt.Sprintf("%s wait=wait4 pipefd=%d", prefix, rd), nil
		}
	}
	return "", fmt.Errorf("no thread of %d waiting for %d", pid, child)
}

// taskSyscall reads /proc/PID/task/TID/syscall: the syscall number and its
// six arguments, or an error when the thread is not blocked in a syscall.
func taskSyscall(pid, tid int) (int, [6]uint64, error) {
	var args [6]uint64
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
	if err != nil {
		return 0, args, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 || f[0] == "running" {
		return 0, args, fmt.Errorf("thread %d/%d is running", pid, tid)
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil || nr < 0 || len(f) < 7 {
		return 0, args, fmt.Errorf("thread %d/%d is not in a syscall (%q)", pid, tid, strings.TrimSpace(string(b)))
	}
	for i := range args {
		args[i], err = strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		if err != nil {
			return 0, args, err
		}
	}
	return nr, args, nil
}
