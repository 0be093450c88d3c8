package dstate

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/fusehang"
)

// A thread of this process stat-ing a hung FUSE mount is found in D, with
// its wchan; once the mount is aborted, none is.
func TestCheck(t *testing.T) {
	if err := Check(os.Getpid()); err != nil {
		t.Fatalf("Check before any hang = %v", err)
	}
	fs, err := fusehang.Mount(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	tid := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		os.Stat(filepath.Join(fs.Dir, "hang"))
		close(done)
	}()
	id := <-tid
	if err := fs.WaitHeld(1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Second); ; {
		if s, _ := State(os.Getpid(), id); s == 'D' {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the stat-ing thread never went into D")
		}
		time.Sleep(time.Millisecond)
	}
	err = Check(os.Getpid())
	var e *Error
	if !errors.Is(err, ErrUninterruptible) || !errors.As(err, &e) || e.TID != id || e.Wchan == "" {
		t.Fatalf("Check = %v, want an *Error for thread %d with its wchan", err, id)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(id)) || !strings.Contains(err.Error(), e.Wchan) {
		t.Errorf("error %q does not name the thread and wchan", err)
	}
	fs.Close()
	<-done
	if err := Check(os.Getpid()); err != nil {
		t.Errorf("Check after the abort = %v", err)
	}
}

func TestCheckGone(t *testing.T) {
	if err := Check(1 << 30); err != nil {
		t.Errorf("Check(no such pid) = %v, want nil (the source that follows says it is gone)", err)
	}
}
