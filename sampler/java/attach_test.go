package java

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/procstatus"
)

func TestAttachDisabledIn(t *testing.T) {
	for _, tc := range []struct {
		cmdline, environ string
		want             bool
	}{
		{"java\x00-XX:+DisableAttachMechanism\x00-cp\x00x\x00Main\x00", "", true},
		{"java\x00-cp\x00x\x00Main\x00", "HOME=/root\x00JAVA_TOOL_OPTIONS=-Xmx1g -XX:+DisableAttachMechanism\x00", true},
		{"java\x00-cp\x00x\x00Main\x00", "_JAVA_OPTIONS=-XX:+DisableAttachMechanism\x00", true},
		{"java\x00-XX:-DisableAttachMechanism\x00Main\x00", "", false},
		{"java\x00Main\x00--flag=-XX:+DisableAttachMechanismX\x00", "OTHER=-XX:+DisableAttachMechanism\x00", false},
	} {
		if got := AttachDisabledIn([]byte(tc.cmdline), []byte(tc.environ)); got != tc.want {
			t.Errorf("AttachDisabledIn(%q, %q) = %v, want %v", tc.cmdline, tc.environ, got, tc.want)
		}
	}
}

// TestAttachAsOwner: a listener that, like JDK 8's, ends unanswered every
// connection not made with its own uid and gid is answered on a second
// connection made with them, by one thread of hangdoc that takes them and
// then ends; a listener that, like JDK 9's and later, answers root too is
// answered on the first. The listener reads the client's ids from the
// kernel (SO_PEERCRED), so the test fails if the ids were not taken.
func TestAttachAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root: it connects as another user")
	}
	const owner = 65534 // nobody
	for _, tc := range []struct {
		name      string
		rootToo   bool // the listener answers root as well as its owner
		wantOwner bool
	}{
		{"JDK 8", false, true},
		{"JDK 9 and later", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, err := os.MkdirTemp("", "hangdoc-attach")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(root) })
			if err := os.Mkdir(filepath.Join(root, "tmp"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chmod(root, 0o755)
			a := AttachTarget{Root: root, NSPID: 4242, UID: owner, GID: owner, OwnerKnown: true}
			ln, err := net.Listen("unix", a.socket())
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if err := os.Chown(a.socket(), owner, owner); err != nil {
				t.Fatal(err)
			}
			os.Chmod(a.socket(), 0o600)
			peers := make(chan uint32, 4)
			go fakeListener(ln.(*net.UnixListener), owner, tc.rootToo, peers)

			r, err := ThreadDump(context.Background(), a)
			if err != nil {
				t.Fatalf("ThreadDump: %v", err)
			}
			if !bytes.HasPrefix(r.Dump, []byte("Full thread dump")) || r.AsOwner != tc.wantOwner {
				t.Errorf("reply %q, as owner %v: want a dump, as owner %v", firstLine(r.Dump), r.AsOwner, tc.wantOwner)
			}
			if last := lastPeer(peers); tc.wantOwner && last != owner {
				t.Errorf("the answered connection came from uid %d, want %d", last, owner)
			}
			// The thread that took the owner's ids ends with its goroutine.
			for i := 0; ; i++ {
				other := threadsNotRoot(t)
				if len(other) == 0 {
					break
				}
				if i == 200 {
					t.Fatalf("threads of hangdoc still run as another user: %v", other)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// fakeListener answers attach requests as HotSpot does, each from a peer
// whose uid is owner (or root, with rootToo); it ends others unanswered.
// It sends each peer's uid on peers.
func fakeListener(ln *net.UnixListener, owner uint32, rootToo bool, peers chan<- uint32) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		raw, _ := c.SyscallConn()
		var cred *unix.Ucred
		raw.Control(func(fd uintptr) { cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
		if cred == nil || !(cred.Uid == owner && cred.Gid == owner || rootToo && cred.Uid == 0) {
			c.Close()
			continue
		}
		select {
		case peers <- cred.Uid:
		default:
		}
		buf := make([]byte, 256)
		nuls := 0
		for nuls < 5 {
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			nuls += bytes.Count(buf[:n], []byte{0})
		}
		c.Write([]byte("0\nFull thread dump OpenJDK 64-Bit Server VM (8.0 mixed mode):\n\n"))
		c.Close()
	}
}

func lastPeer(peers chan uint32) uint32 {
	last := uint32(1 << 31)
	for {
		select {
		case p := <-peers:
			last = p
		default:
			return last
		}
	}
}

// threadsNotRoot lists this process's threads whose effective uid is not
// root's.
func threadsNotRoot(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var other []string
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // ended
		}
		st, _ := procstatus.Parse(b)
		if st.Uid[1] != 0 || st.Gid[1] != 0 {
			other = append(other, fmt.Sprintf("%s (pid %d, uid %v gid %v)", task.Name(), os.Getpid(), st.Uid, st.Gid))
		}
	}
	return other
}
