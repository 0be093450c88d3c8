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
