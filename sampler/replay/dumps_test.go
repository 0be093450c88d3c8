package replay

import (
	"strings"
	"testing"
)

func TestAnalyzeStdinAndThreadMatching(t *testing.T) {
	dump := `Process 4242: python3 app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    _wait_for_tstate_lock (threading.py:1132)
    join (threading.py:1112)
    <module> (app.py:30)
Thread 4250 (idle): "worker-0"
    wait (threading.py:320)
    get (queue.py:171)
    work (app.py:12)
`
	rec, err := Dumps([]string{"-"}, strings.NewReader(dump), "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) != 1 || rec.Target.PID != 4242 || rec.Target.RuntimeVersion != "3.11.7" {
		t.Fatalf("recording: %d samples, target %+v", len(rec.Samples), rec.Target)
	}
	s := rec.Samples[0]
	if len(s.Threads) != 2 || s.Threads[1].TID != 4250 || s.Threads[1].Python.ThreadName != "worker-0" || !s.Threads[1].Syscall.Unknown {
		t.Errorf("threads %+v: want the OS thread ids, names, and no kernel evidence", s.Threads)
	}
}
