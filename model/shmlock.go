package model

// SharedWord places a futex word in a MAP_SHARED mapping: a file (a
// /dev/shm object, a POSIX named semaphore), anonymous shared memory
// inherited over fork ("/dev/zero (deleted)") or a SysV segment
// ("/SYSV0000abcd (deleted)"). Two processes share the word when they map
// the same Dev and Inode at the same Offset.
type SharedWord struct {
	Path   string `json:"path"`
	Offset uint64 `json:"offset"` // the word's offset in the object
	Dev    string `json:"dev"`    // major:minor as maps prints it
	Inode  uint64 `json:"inode"`
}

// AnonFD is what /proc/PID/fdinfo says of an anonymous-inode descriptor a
// blocked call waits on: an eventfd, a signalfd, a timerfd, an inotify
// instance or a pidfd. Only the fields of its Kind are set.
type AnonFD struct {
	FD   int    `json:"fd"`
	Kind string `json:"kind"` // eventfd, signalfd, timerfd, inotify, pidfd, io_uring
	// An eventfd: its counter, its id (kernels from 6.1) and the
	// descriptors open on it in any process (who could write it), found
	// by the id; Complete is false when the search ran out of time.
	Count    *uint64 `json:"count,omitempty"`
	ID       *uint64 `json:"id,omitempty"`
	Holders  []FDRef `json:"holders,omitempty"`
	Complete bool    `json:"complete,omitempty"`
	// A signalfd: the signals it accepts (sigmask).
	Signals []string `json:"signals,omitempty"`
	// A timerfd: the time to its next expiry and its interval (it_value,
	// it_interval); both 0 when it is disarmed.
	ValueNS    int64 `json:"value_ns,omitempty"`
	IntervalNS int64 `json:"interval_ns,omitempty"`
	Armed      bool  `json:"armed,omitempty"`
	// An inotify instance: the inodes it watches (at most MaxInotifyWatches)
	// and how many there are in all.
	Watches    []InotifyWatch `json:"watches,omitempty"`
	WatchCount int            `json:"watch_count,omitempty"`
	// A pidfd: the process it refers to (see Thread.PidfdPID).
	PID int `json:"pid,omitempty"`
	// An io_uring: the submissions the kernel has not consumed (SQEs),
	// the completions not reaped (CQEs), and how many completions the
	// io_uring_enter call waits for.
	SQEs        *uint64 `json:"sqes,omitempty"`
	CQEs        *uint64 `json:"cqes,omitempty"`
	MinComplete uint64  `json:"min_complete,omitempty"`
}

// MaxInotifyWatches bounds the watches an AnonFD lists.
const MaxInotifyWatches = 64

// InotifyWatch is one inode an inotify instance watches.
type InotifyWatch struct {
	Inode uint64 `json:"inode"`
	Dev   string `json:"dev"` // major:minor
	Mask  uint32 `json:"mask"`
}

// SysVWait is a semop/semtimedop on a SysV semaphore set, or a
// msgrcv/msgsnd on a SysV message queue, as /proc/sysvipc and semctl
// describe it: the set or queue, and the last process that operated on it.
type SysVWait struct {
	// Sem: a semaphore set; else a message queue.
	Sem bool   `json:"sem"`
	ID  int    `json:"id"`
	Key string `json:"key"` // 0x%08x as ipcs prints it; 0x00000000 for IPC_PRIVATE
	// A semaphore set: its size, the operations the call asks for (read
	// from the thread's memory, at most MaxSemOps) and the state of each
	// semaphore they name (semctl GETVAL, GETPID, GETNCNT, GETZCNT).
	NSems int        `json:"nsems,omitempty"`
	Ops   []SemOp    `json:"ops,omitempty"`
	Sems  []SemState `json:"sems,omitempty"`
	// A message queue: messages queued, and the last sender and receiver.
	QNum   int   `json:"qnum,omitempty"`
	LSPID  int   `json:"lspid,omitempty"`
	LRPID  int   `json:"lrpid,omitempty"`
	Send   bool  `json:"send,omitempty"` // msgsnd: waits for room
	MsgTyp int64 `json:"msgtyp,omitempty"`
	// Err says what could not be read (another IPC namespace, the set
	// removed, the operations unreadable).
	Err string `json:"err,omitempty"`
}

// MaxSemOps bounds the semaphore operations read from a target's memory.
const MaxSemOps = 16

// SemOp is one struct sembuf.
type SemOp struct {
	Num  int `json:"num"`
	Op   int `json:"op"`
	Flag int `json:"flag"`
}

// SemState is one semaphore of a set: its value, the last process that
// operated on it (sempid) and how many wait for it to grow or be zero.
type SemState struct {
	Num  int `json:"num"`
	Val  int `json:"val"`
	PID  int `json:"pid"`
	NCnt int `json:"ncnt"`
	ZCnt int `json:"zcnt"`
}
