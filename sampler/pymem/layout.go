package pymem

// Layout is where, in one CPython minor version, the reader finds what it
// follows: byte offsets within each struct, -1 for a field that version
// does not have. gen writes the table (zlayouts.go) from the interpreters'
// own DWARF.
type Layout struct {
	Version string // the interpreter the row was read from: "3.12.1"

	// The runtime's interpreters; the GIL, in the runtime before 3.12
	// (RuntimeGIL), per interpreter since, through a pointer (InterpGIL):
	// whether it is locked, its last holder, and how many times it passed
	// from one thread to another.
	RuntimeInterpretersHead int
	RuntimeMainThread       int // the main thread's pthread_t
	RuntimeGIL              int
	InterpNext              int
	InterpThreadsHead       int
	InterpGIL               int
	GILLocked               int
	GILHolder               int
	GILSwitch               int

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

	// A frame's locals (the first is a method's self) and globals (its
	// module's dict), in a PyFrameObject and a _PyInterpreterFrame.
	FrameLocals   int
	FrameGlobals  int
	IFrameLocals  int
	IFrameGlobals int

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
	// Its variables' names: locals, then cells, then free variables, in
	// three tuples (before 3.11) or one with a kind byte each (3.11 on).
	CodeVarnames    int
	CodeCellvars    int
	CodeFreevars    int
	CodeLocalsNames int
	CodeLocalsKinds int
	TupleItems      int
	ListItems       int // a list's items: a pointer to its array
	CellRef         int
	FuncClosure     int // a function's closure: the cells of its free variables

	// Where an instance's attributes are: its type's flags (3.11 on: a
	// managed dict; 3.13: values inline after the object), the dict's
	// offset in the object (before 3.11), the shared keys of a class's
	// instances; a dict's keys and values; the keys object, its entries
	// (a hash, a key and a value; from 3.11, a key and a value where all
	// keys are str); a split table's values (3.13: valid when in use).
	TypeFlags          int
	TypeDictOffset     int
	TypeBasicSize      int
	HeapTypeCachedKeys int
	DictKeys           int
	DictValues         int
	KeysSize           int
	KeysLog2Size       int
	KeysLog2IndexBytes int
	KeysKind           int
	KeysNEntries       int
	KeysIndices        int
	EntrySize          int
	EntryKey           int
	EntryValue         int
	UnicodeEntrySize   int
	ValuesValues       int
	ValuesValid        int

	// asyncio's tasks: the interpreter's sys.modules, a module's dict, a
	// set's table (entries of a key and a hash), a weak reference's
	// object; a coroutine's frame (inside it, from 3.11) and its state,
	// a frame's value stack's height (what a suspended frame awaits is
	// on top); the _asyncio module's Task (from its own DWARF).
	InterpModules  int
	ModuleDict     int
	SetMask        int
	SetTable       int
	SetEntrySize   int
	WeakrefObject  int
	CoroFrameState int
	CoroFrame      int
	IFrameStackTop int
	TaskState      int
	TaskFutWaiter  int
	TaskCoro       int
	TaskName       int
	TaskException  int // the exception a finished task raised; NULL for none
	// FutureIterFuture is the future a Future's await iterator stands
	// for: what a coroutine in `await fut` has on its stack.
	FutureIterFuture int

	// A small int (a task's number, before its name is asked for): from
	// 3.12 its digit count is in a tag (LongTag), before in ob_size.
	LongTag    int
	LongDigits int

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
