package report

import "github.com/hangdoc/hangdoc/classify"

// Java is what a JVM thread dump says of a thread (docs/json.md).
type Java struct {
	// Number is the Java thread id ("#N"); absent for the JVM's own
	// threads, which have none.
	Number int64 `json:"number,omitempty"`
	// State is java.lang.Thread.State as the dump prints it.
	State   string `json:"state,omitempty"`
	Daemon  bool   `json:"daemon,omitempty"`
	Virtual bool   `json:"virtual,omitempty"`
	// System: the JVM's own thread (GC, compiler, VM thread…), set aside
	// like the Go runtime's goroutines.
	System bool `json:"system,omitempty"`
	// StandInTID: the dump gave no Linux tid (a JSON dump, a deadlock
	// excerpt), so tid is a stand-in, the same in every snapshot.
	StandInTID bool `json:"stand_in_tid,omitempty"`
	// CPUMS is the last dump's cpu= (JDK 11+), CPU time since the thread
	// started, in ms; absent when the dump did not print it.
	CPUMS *float64 `json:"cpu_ms,omitempty"`
}

func javaThread(t *classify.Actor) *Java {
	j := t.Java
	if j == nil {
		return nil
	}
	return &Java{Number: j.Number, State: j.State, Daemon: j.Daemon, Virtual: j.Virtual,
		System: t.Aside.Machinery(), StandInTID: j.NoNID, CPUMS: j.CPUMillis}
}
