package sampler

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/model"
)

// semctl commands (linux/sem.h).
const (
	semGetPID  = 11
	semGetVal  = 12
	semGetNCnt = 14
	semGetZCnt = 15
)

// readSysV describes the SysV semaphore set or message queue each thread
// blocked in semop, semtimedop, msgrcv or msgsnd waits on: from
// /proc/sysvipc, the operations from the thread's memory, and each named
// semaphore's state from semctl, which only reads. The ids are those of
// the target's IPC namespace: a target in another one is described only
// by the ids its call was given.
func (s *Sampler) readSysV(sample *model.Sample) {
	for i := range sample.Threads {
		t := &sample.Threads[i]
		sc := t.Syscall
		if !sc.InCall() || t.Exited {
			continue
		}
		var w *model.SysVWait
		switch sc.Name {
		case "semop", "semtimedop":
			w = &model.SysVWait{Sem: true, ID: int(int32(sc.Args[0]))}
		case "msgrcv":
			w = &model.SysVWait{ID: int(int32(sc.Args[0])), MsgTyp: int64(sc.Args[3])}
		case "msgsnd":
			w = &model.SysVWait{ID: int(int32(sc.Args[0])), Send: true}
		default:
			continue
		}
		t.SysV = w
		if !s.sameIPCNamespace() {
			w.Err = "the target is in another IPC namespace"
			continue
		}
		if !w.Sem {
			if err := s.readMsgQueue(w); err != nil {
				w.Err = err.Error()
			}
			continue
		}
		if err := s.readSemSet(w); err != nil {
			w.Err = err.Error()
			continue
		}
		if s.mem < 0 {
			w.Err = s.memErr.Error()
			continue
		}
		maps := s.readMaps()
		n := min(sc.Args[2], model.MaxSemOps)
		if n == 0 {
			continue
		}
		b, err := s.readMem(maps, sc.Args[1], 6*n)
		if err != nil {
			w.Err = "reading its operations: " + err.Error()
			continue
		}
		for j := range int(n) {
			op := model.SemOp{
				Num:  int(binary.LittleEndian.Uint16(b[6*j:])),
				Op:   int(int16(binary.LittleEndian.Uint16(b[6*j+2:]))),
				Flag: int(int16(binary.LittleEndian.Uint16(b[6*j+4:]))),
			}
			w.Ops = append(w.Ops, op)
			if op.Num >= w.NSems || semStated(w.Sems, op.Num) {
				continue
			}
			w.Sems = append(w.Sems, semState(w.ID, op.Num))
		}
	}
}

func semStated(ss []model.SemState, num int) bool {
	for _, s := range ss {
		if s.Num == num {
			return true
		}
	}
	return false
}

// semState reads one semaphore through semctl; a value that cannot be
// read (the set was removed) is -1.
func semState(id, num int) model.SemState {
	get := func(cmd int) int {
		r, _, errno := unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), uintptr(num), uintptr(cmd), 0, 0, 0)
		if errno != 0 {
			return -1
		}
		return int(int32(r))
	}
	return model.SemState{Num: num, Val: get(semGetVal), PID: get(semGetPID), NCnt: get(semGetNCnt), ZCnt: get(semGetZCnt)}
}

// sameIPCNamespace says whether the target shares hangdoc's IPC namespace,
// where /proc/sysvipc and semctl see its ids.
func (s *Sampler) sameIPCNamespace() bool {
	theirs, err1 := os.Readlink(s.fs.pidPath(s.pid, "ns", "ipc"))
	ours, err2 := os.Readlink("/proc/self/ns/ipc")
	return err1 == nil && err2 == nil && theirs == ours
}

// sysvLine finds the line of /proc/sysvipc/NAME whose id (the second
// field) is id, split into fields.
func (s *Sampler) sysvLine(name string, id int) ([]string, error) {
	path := s.fs.Path("sysvipc", name)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 512), 4096)
	want := strconv.Itoa(id)
	for n := 0; n < 1<<16 && sc.Scan(); n++ {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 7 && fs[1] == want {
			return fs, nil
		}
	}
	return nil, fmt.Errorf("no id %d in %s (removed?)", id, path)
}

// readSemSet reads a semaphore set's line: "key semid perms nsems …".
func (s *Sampler) readSemSet(w *model.SysVWait) error {
	f, err := s.sysvLine("sem", w.ID)
	if err != nil {
		return err
	}
	key, err1 := strconv.ParseInt(f[0], 10, 64)
	nsems, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || nsems < 0 {
		return fmt.Errorf("parsing /proc/sysvipc/sem: %q", strings.Join(f, " "))
	}
	w.Key, w.NSems = fmt.Sprintf("0x%08x", uint32(key)), nsems
	return nil
}

// readMsgQueue reads a message queue's line:
// "key msqid perms cbytes qnum lspid lrpid …".
func (s *Sampler) readMsgQueue(w *model.SysVWait) error {
	f, err := s.sysvLine("msg", w.ID)
	if err != nil {
		return err
	}
	key, err1 := strconv.ParseInt(f[0], 10, 64)
	qnum, err2 := strconv.Atoi(f[4])
	lspid, err3 := strconv.Atoi(f[5])
	lrpid, err4 := strconv.Atoi(f[6])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return fmt.Errorf("parsing /proc/sysvipc/msg: %q", strings.Join(f, " "))
	}
	w.Key, w.QNum, w.LSPID, w.LRPID = fmt.Sprintf("0x%08x", uint32(key)), qnum, lspid, lrpid
	return nil
}
