package sampler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hangdoc/hangdoc/model"
)

func TestSysVLines(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sysvipc"), 0o755); err != nil {
		t.Fatal(err)
	}
	sem := `       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime
         0          3   600          1     0     0     0     0 1764900000 1764900000
1234567890          4   600          7     0     0     0     0 1764900000 1764900000
`
	msg := `       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime
        42          5   600          16          1  4653     0     0     0     0     0 1764900000          0 1764900000
`
	os.WriteFile(filepath.Join(root, "sysvipc", "sem"), []byte(sem), 0o644)
	os.WriteFile(filepath.Join(root, "sysvipc", "msg"), []byte(msg), 0o644)
	s := &Sampler{fs: NewFS(root)}
	w := model.SysVWait{Sem: true, ID: 4}
	if err := s.readSemSet(&w); err != nil || w.Key != "0x499602d2" || w.NSems != 7 {
		t.Errorf("readSemSet(4) = %+v, %v", w, err)
	}
	w = model.SysVWait{Sem: true, ID: 9}
	if err := s.readSemSet(&w); err == nil {
		t.Errorf("readSemSet(9) = %+v: want an error, no such set", w)
	}
	q := model.SysVWait{ID: 5}
	if err := s.readMsgQueue(&q); err != nil || q.Key != "0x0000002a" || q.QNum != 1 || q.LSPID != 4653 || q.LRPID != 0 {
		t.Errorf("readMsgQueue(5) = %+v, %v", q, err)
	}
}
