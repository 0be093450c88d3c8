package pymem

// Layout is where, in one CPython minor version, the reader finds what it
// follows: byte offsets within each struct, -1 for a field that version
// does not have. gen writes the table (zlayouts.go) from the interpreters'
// own DWARF.
type Layout struct {
	Version string // the interpreter the row was read from: "3.12.1"

	// The runtime's interpreters; the GIL, in the runtime before 3.12
	// (RuntimeGIL*), per interpreter since, through a pointer (InterpGIL)
	// to a struct whose fields are GIL*.
	RuntimeInterpretersHead int
	RuntimeGILLocked        int
	RuntimeGILHolder        int
	InterpNext              int
	InterpThreadsHead       int
	InterpGIL               int
	GILLocked               int
	GILHolder               int

	// A thread state: the next, its frame (a PyFrameObject before 3.11,
	// an interpreter frame since: through its _PyCFrame in 3.11 and 3.12,
	// directly in 3.13), its pthread_t, its OS thread id (3.11 on).
	TstateNext           int
	TstateInterp         int
	TstateFrame          int
	TstateCFrame         int
	CFrameCurrent        int
	TstateThreadID       int
	TstateNativeThreadID int

	// PyFrameObject (3.8 to 3.10).
	FrameBack  int
	FrameCode  int
	FrameLasti int

	// _PyInterpreterFrame (3.11 on).
	IFramePrevious int
	IFrameCode     int
	IFrameInstr    int
	IFrameOwner    int

	// PyCodeObject.
	CodeFilename  int
	CodeName      int
	CodeQualname  int
	CodeFirstLine int
	CodeLineTable int
	CodeCode      int // the bytecode, a bytes object (before 3.11)
	CodeAdaptive  int // the bytecode, inline (3.11 on)

	// The objects names and tables are in.
	ObType      int
	TypeName    int
	VarSize     int
	BytesData   int
	ASCIILength int
	ASCIIState  int
	ASCIISize   int
	CompactSize int
}
