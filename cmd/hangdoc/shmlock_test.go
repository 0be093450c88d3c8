package main

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/testvictim"
)

// TestSharedMutexAcrossProcesses: a process-shared pthread mutex in a
// MAP_SHARED mapping, held by a child that sleeps, is a lock held by that
// child: named exact from the word the waiter's memory holds, checked
// against the child's own maps, and followed into the child.
func TestSharedMutexAcrossProcesses(t *testing.T) {
	bin := testvictim.Build(t, "shmmutex")
	for _, mode := range []string{"file", "anon", "robust"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, mode)
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
			v := testvictim.StartCmd(t, cmd)
			holder, path := v.Int("holder"), v.Info["path"]
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
			c := xdecode(t, out)
			if code != ExitBlocked || c.Verdict != "blocked" {
				t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, c.Verdict, c.Summary, stderr)
			}
			var l struct {
				Locks []struct {
					Kind      string `json:"kind"`
					Holder    *ref   `json:"holder"`
					Waiters   []ref  `json:"waiters"`
					BasisKind string `json:"basis_kind"`
					Basis     string `json:"basis"`
				} `json:"locks"`
			}
			if err := jsonUnmarshal(out, &l); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, lk := range l.Locks {
				if lk.Kind == "mutex" && lk.Holder != nil && lk.Holder.PID == holder && lk.Holder.TID == holder && lk.BasisKind == "exact" &&
					len(lk.Waiters) == 1 && lk.Waiters[0].TID == v.PID {
					found = true
					where := path
					if mode == "anon" {
						where = "anonymous shared memory"
					}
					if !strings.Contains(lk.Basis, "process-shared glibc mutex in "+where) || !strings.Contains(lk.Basis, "a thread of pid "+strconv.Itoa(holder)) {
						t.Errorf("basis %q: want the mapping (%s) and the holder's pid", lk.Basis, where)
					}
				}
			}
			if !found {
				t.Fatalf("locks %+v, want a mutex held by pid %d tid %d, waited for by tid %d\n%s", l.Locks, holder, holder, v.PID, out)
			}
			chain := c.chainOf(v.PID)
			for _, needle := range []string{"futex(", "held by pid " + strconv.Itoa(holder), "sleeping"} {
				if !strings.Contains(chain, needle) {
					t.Errorf("chain %q: want %q", chain, needle)
				}
			}
			followed := false
			for _, p := range c.Processes {
				followed = followed || p.PID == holder
			}
			if !followed {
				t.Errorf("processes %+v: want the holder %d followed", c.Processes, holder)
			}
		})
	}
}

// TestPOSIXSemaphoreNobodyPosts: sem_wait on a POSIX named semaphore that
// a sleeping child also maps is blocked, never "nobody left": the child
// could post it, and hangdoc names it as one who could, not as the one who
// will.
// (The victim's reporter child, forked after the mapping, may still be
// alive as hangdoc samples: a second process that maps the semaphore.)
func TestPOSIXSemaphoreNobodyPosts(t *testing.T) {
	v := testvictim.Start(t, testvictim.Build(t, "possem"))
	other := v.Int("other")
	out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
	var r struct {
		Verdict string `json:"verdict"`
		Summary string `json:"summary"`
		Waits   []struct {
			From   ref    `json:"from"`
			Kind   string `json:"kind"`
			Detail string `json:"detail"`
			Shared *struct {
				Path      string `json:"path"`
				Semaphore bool   `json:"semaphore"`
				MappedBy  []int  `json:"mapped_by"`
			} `json:"shared"`
		} `json:"waits"`
	}
	if err := jsonUnmarshal(out, &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != ExitBlocked || r.Verdict != "blocked" {
		t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, r.Verdict, r.Summary, stderr)
	}
	if strings.Contains(r.Summary, "no live thread is left") {
		t.Errorf("summary %q: another process maps the semaphore", r.Summary)
	}
	for _, w := range r.Waits {
		if w.From.TID != v.PID {
			continue
		}
		if w.Kind != "futex" || w.Shared == nil || !w.Shared.Semaphore || !strings.HasPrefix(w.Shared.Path, "/dev/shm/sem.") ||
			!slices.Contains(w.Shared.MappedBy, other) || !strings.Contains(w.Detail, "pid "+strconv.Itoa(other)) || !strings.Contains(w.Detail, " also map") {
			t.Fatalf("wait %+v (shared %+v): want a futex wait in a POSIX named semaphore that pid %d also maps", w, w.Shared, other)
		}
		return
	}
	t.Fatalf("no wait of tid %d in %s", v.PID, out)
}

// TestSysVWaits: a semop on a SysV semaphore and a msgrcv on a SysV
// message queue name the set or queue and its last operator (the child
// that operated on it and sleeps): the last to touch it, not the one who
// will.
func TestSysVWaits(t *testing.T) {
	bin := testvictim.Build(t, "sysvsem")
	for _, mode := range []string{"sem", "msg"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			v := testvictim.Start(t, bin, mode)
			other, id := v.Int("other"), v.Int("id")
			t.Cleanup(func() {
				// IPC_PRIVATE objects outlive their processes: semctl(id,
				// 0, IPC_RMID) or msgctl(id, IPC_RMID, NULL).
				if mode == "sem" {
					unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0)
				} else {
					unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)
				}
			})
			out, stderr, code := hangdoc(t, strconv.Itoa(v.PID), "--json", "--interval", "300ms", "--samples", "2")
			var r struct {
				Verdict string `json:"verdict"`
				Summary string `json:"summary"`
				Waits   []struct {
					From   ref    `json:"from"`
					Kind   string `json:"kind"`
					Detail string `json:"detail"`
					SysV   *struct {
						ID    int `json:"id"`
						LSPID int `json:"lspid"`
						Sems  []struct {
							PID int `json:"pid"`
							Val int `json:"val"`
						} `json:"sems"`
					} `json:"sysv"`
				} `json:"waits"`
			}
			if err := jsonUnmarshal(out, &r); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if code != ExitBlocked || r.Verdict != "blocked" {
				t.Fatalf("exit %d verdict %q (%s), want blocked\n%s", code, r.Verdict, r.Summary, stderr)
			}
			for _, w := range r.Waits {
				if w.From.TID != v.PID {
					continue
				}
				if w.Kind != "sysv-"+mode || w.SysV == nil || w.SysV.ID != id {
					t.Fatalf("wait %+v, want a sysv-%s wait on id %d", w, mode, id)
				}
				last := w.SysV.LSPID
				if mode == "sem" && len(w.SysV.Sems) == 1 {
					last = w.SysV.Sems[0].PID
				}
				if last != other || !strings.Contains(w.Detail, "the last to "+map[string]string{"sem": "operate on it", "msg": "send"}[mode]+" was pid "+strconv.Itoa(other)) {
					t.Errorf("wait %+v (sysv %+v): want pid %d as the last operator", w, w.SysV, other)
				}
				return
			}
			t.Fatalf("no wait of tid %d in %s", v.PID, out)
		})
	}
}
