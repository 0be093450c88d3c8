package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/classify"
	"github.com/hangdoc/hangdoc/model"
)

// Where says where a goroutine stands in its program's terms: the library
// call its own code made, and that code: "sync.(*Mutex).Lock ←
// main.(*Store).Put". A goroutine in its own code names that function; one
// in library code alone, the first frame past the runtime's and its caller.
func Where(stack []model.Frame) string {
	u := classify.UserFrame(stack)
	switch {
	case len(stack) == 0:
		// A goroutine running on a CPU, read from memory, has none: never
		// an empty slot ("spins in ?").
		return "(no stack read)"
	case u == 0:
		return stack[0].Func
	case u > 0:
		return stack[u-1].Func + " ← " + stack[u].Func
	}
	i := slices.IndexFunc(stack, func(f model.Frame) bool {
		return !strings.HasPrefix(f.Func, "runtime.") && !strings.HasPrefix(f.Func, "internal/")
	})
	switch {
	case i < 0:
		return stack[0].Func
	case i+1 < len(stack):
		return stack[i].Func + " ← " + stack[i+1].Func
	}
	return stack[i].Func
}

// ownFunc is the innermost function of the program's own code, else
// where the goroutine stands.
func ownFunc(stack []model.Frame) string {
	if u := classify.UserFrame(stack); u >= 0 {
		return stack[u].Func
	}
	return Where(stack)
}

// threadWhere is a thread's innermost stack frame, "emit (app.py:42)", or
// "" without a stack.
func threadWhere(stack []model.Frame) string {
	if len(stack) == 0 {
		return ""
	}
	f := stack[0]
	// A native stack: where the program stands is its innermost frame in
	// its own executable, in the library call it makes ("renderer in
	// pthread_mutex_lock").
	if exe, i := ownNative(stack); i > 0 {
		return frameWhere(exe) + " in " + stack[i-1].Func
	}
	// py-spy --native puts the C frames first: where the program stands
	// is its innermost frame with a line, in the C function above it.
	if f.Line == 0 {
		for i, g := range stack[1:] {
			if g.Line > 0 && i < 8 {
				return frameWhere(g) + " in " + f.Func
			}
		}
	}
	return frameWhere(f)
}

func frameWhere(f model.Frame) string {
	if f.File == "" {
		return f.Func // code no file maps (JIT-compiled): its address alone
	}
	file := f.File
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		file = file[i+1:]
	}
	if f.Line == 0 {
		return fmt.Sprintf("%s (%s)", f.Func, file)
	}
	return fmt.Sprintf("%s (%s:%d)", f.Func, file, f.Line)
}

// actorWhere is where an actor stands: a goroutine's Where, a thread's
// innermost frame.
func actorWhere(a *classify.Actor) string {
	if a.Kind == classify.ActorGoroutine {
		return Where(a.Stack)
	}
	return threadWhere(a.Stack)
}

// ownNative finds, in a native stack (frames with no line, each with the
// file mapped there), the innermost frame of the executable: the first
// frame past the innermost run of shared libraries' ("….so", "….so.6").
// -1 when the stack is not native or has none.
func ownNative(stack []model.Frame) (model.Frame, int) {
	for i, f := range stack {
		if f.Line != 0 || f.File == "" {
			return model.Frame{}, -1
		}
		if !sharedLibrary(f.File) {
			return f, i
		}
	}
	return model.Frame{}, -1
}

func sharedLibrary(path string) bool {
	base := path[strings.LastIndexByte(path, '/')+1:]
	return strings.HasSuffix(base, ".so") || strings.Contains(base, ".so.")
}
