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
		// A goroutine read from memory while it ran in every sample: its
		// saved stack is stale, so none was read.
		return "(its stack unread: it ran at every read)"
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
