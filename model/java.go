package model

// JavaThread is what a JVM thread dump says of one thread beyond its
// stack: its Java identity, its state, and the monitors and
// synchronizers its frames hold, wait for or park on.
type JavaThread struct {
	// Number is the Java thread id ("#N", the JSON's tid); 0 for the
	// JVM's own threads (GC, compiler, VM thread), which have none.
	Number int64 `json:"number,omitempty"`
	Daemon bool  `json:"daemon,omitempty"`
	// State is java.lang.Thread.State as printed: "BLOCKED (on object
	// monitor)", "WAITING (parking)", "RUNNABLE"; "" for the JVM's own.
	State string `json:"state,omitempty"`
	// Status is the header's words: "waiting for monitor entry".
	Status  string `json:"status,omitempty"`
	Virtual bool   `json:"virtual,omitempty"`
	// NoNID: the dump gave no Linux tid (a JSON dump, a deadlock
	// excerpt): the thread's TID is a stand-in, the same in every
	// snapshot of the run.
	NoNID bool `json:"no_nid,omitempty"`
	// CPUMillis is the dump's cpu= (JDK 11+): CPU time since the thread
	// started. Nil when the dump did not print it: unknown, not zero.
	CPUMillis *float64 `json:"cpu_ms,omitempty"`
	// Locks are the lock lines under its frames, innermost first.
	Locks []JavaLock `json:"locks,omitempty"`
	// Ownable are its "Locked ownable synchronizers" (jstack -l): the
	// j.u.c locks it owns (a ReentrantLock's sync). OwnableRead: the
	// dump printed the section (without -l it does not, and nothing
	// can be said of what it owns).
	Ownable     []JavaObject `json:"ownable,omitempty"`
	OwnableRead bool         `json:"ownable_read,omitempty"`
	// BlockerOwner is the Java thread id (Number) the JVM names as the
	// owner of what it parks on (JSON dumps of newer JDKs); 0 for none.
	BlockerOwner int64 `json:"blocker_owner,omitempty"`
}

// JavaObject is an object a JVM dump names: by its address
// ("0x00000000ffd17098") or, in a JSON dump, its identity string
// ("java.lang.Object@1b6d3586"); and its class.
type JavaObject struct {
	Addr  string `json:"addr"`
	Class string `json:"class,omitempty"`
}

// JavaLock is one lock line of a frame: "locked", "waiting to lock",
// "waiting on", "parking to wait for", "waiting to re-lock in wait()",
// "eliminated".
type JavaLock struct {
	Frame int    `json:"frame"`
	Kind  string `json:"kind"`
	JavaObject
}

// JavaDeadlock is one "Found one Java-level deadlock:" section of a JVM
// dump: the JVM's own word that these threads wait for each other.
type JavaDeadlock struct {
	Links []JavaDeadlockLink `json:"links"`
}

// JavaDeadlockLink is one thread of a JVM-reported deadlock: TID waits
// for Object (a monitor, or an ownable synchronizer), which HeldBy holds
// (0 when the JVM could not name it).
type JavaDeadlockLink struct {
	TID     int  `json:"tid"`
	HeldBy  int  `json:"held_by,omitempty"`
	Ownable bool `json:"ownable,omitempty"`
	JavaObject
}

// JVMCounters are a HotSpot JVM's own counters at a sample, from its
// hsperfdata file (what jstat reads): cumulative, so two samples give the
// run's.
type JVMCounters struct {
	// TickHz is how many ticks make a second (sun.os.hrt.frequency).
	TickHz int64 `json:"tick_hz"`
	// GCTicks is the time all collectors' pauses took, GCCount how many
	// there were (sun.gc.collector.*.time, .invocations).
	GCTicks int64 `json:"gc_ticks"`
	GCCount int64 `json:"gc_count"`
	// HeapUsed and HeapMax are the heap's bytes in use and its maximum.
	HeapUsed int64 `json:"heap_used"`
	HeapMax  int64 `json:"heap_max"`
	// SafepointTicks is the time spent in safepoints, Safepoints how many.
	SafepointTicks int64 `json:"safepoint_ticks"`
	Safepoints     int64 `json:"safepoints"`
	// Threads is java.threads.live.
	Threads int64 `json:"threads"`
}
