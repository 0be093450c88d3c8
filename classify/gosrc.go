package classify

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
)

// The Go source reader: which mutexes a function has locked at a line, and
// which one it locks there, read from the function's source with
// go/parser. A goroutine holds X at a frame when the function, before the
// frame's line, calls X.Lock() or X.RLock() with no X.Unlock() or
// X.RUnlock() in between (a deferred one keeps it held).

// goFile is one parsed source file.
type goFile struct {
	fset  *token.FileSet
	file  *ast.File
	funcs []*goFunc
	// firstField is, per struct type declared in the file, the name of its
	// first field: a pointer to the struct is a pointer to that field.
	firstField map[string]string
	// fieldType is, per struct type, each field's type name (pointers
	// followed): Loader.cache → Cache.
	fieldType map[string]map[string]string
	globals   map[string]bool
	// lockFields are the struct fields ("Counter.mu") that are a
	// sync.Mutex or sync.RWMutex held in the struct itself, not behind a
	// pointer: a copy of the struct copies the lock.
	lockFields map[string]bool
	// calls are the calls in the file, by line: what the callee's
	// arguments were, as its caller wrote them.
	calls map[int][]goCall
}

// goCall is one call expression: the function called (as written) and its
// arguments, the receiver of a method call first.
type goCall struct {
	fun  string
	recv string // X of X.f(…): a method's receiver, or a package's name
	args []string
}

// goFunc is one function or function literal.
type goFunc struct {
	from, to int // its lines
	recv     string
	recvType string // the receiver's type name, without '*'
	// recvValue: the receiver is a value, not a pointer: the method has
	// a copy of it.
	recvValue bool
	params    []string // receiver first, for a method
	locals    map[string]bool
	calls     []lockCall
	outer     *goFunc // the function a literal is in
}

// lockCall is a call X.Lock(), X.RLock(), X.Unlock() or X.RUnlock().
type lockCall struct {
	expr     string // X, as written
	line     int
	op       string // Lock, RLock, Unlock, RUnlock
	deferred bool
}

// parseGo parses a file's lines; nil when it does not parse.
func parseGo(lines []string) *goFile {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", strings.Join(lines, "\n"), parser.SkipObjectResolution)
	if err != nil && f == nil {
		return nil
	}
	g := &goFile{fset: fset, file: f, firstField: map[string]string{}, fieldType: map[string]map[string]string{},
		globals: map[string]bool{}, calls: map[int][]goCall{}, lockFields: map[string]bool{}}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						g.globals[n.Name] = true
					}
				case *ast.TypeSpec:
					if st, ok := sp.Type.(*ast.StructType); ok && len(st.Fields.List) > 0 {
						fl := st.Fields.List[0]
						if len(fl.Names) > 0 {
							g.firstField[sp.Name.Name] = fl.Names[0].Name
						} else {
							g.firstField[sp.Name.Name] = embeddedName(fl.Type)
						}
						types := map[string]string{}
						for _, fl := range st.Fields.List {
							_, ptr := fl.Type.(*ast.StarExpr)
							for _, n := range fl.Names {
								types[n.Name] = embeddedName(fl.Type)
								if !ptr && isSyncLock(fl.Type) {
									g.lockFields[sp.Name.Name+"."+n.Name] = true
								}
							}
							if len(fl.Names) == 0 {
								types[embeddedName(fl.Type)] = embeddedName(fl.Type)
							}
						}
						g.fieldType[sp.Name.Name] = types
					}
				}
			}
		case *ast.FuncDecl:
			if d.Body != nil {
				g.addFunc(d.Recv, d.Type, d.Body, nil)
			}
		}
	}
	return g
}

// isSyncLock: the type is sync.Mutex or sync.RWMutex.
func isSyncLock(e ast.Expr) bool {
	se, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := se.X.(*ast.Ident)
	return ok && pkg.Name == "sync" && (se.Sel.Name == "Mutex" || se.Sel.Name == "RWMutex")
}

// copiedLock reports expr, locked in fn, as a mutex field of fn's value
// receiver (c.mu in func (c Counter) Get): the method locks the copy its
// call made, in whatever state the original was then (go vet: copylocks).
func (g *goFile) copiedLock(fn *goFunc, expr string) bool {
	if fn == nil || fn.recv == "" || fn.recv == "_" || !fn.recvValue {
		return false
	}
	root, field, ok := strings.Cut(expr, ".")
	return ok && root == fn.recv && g.lockFields[fn.recvType+"."+field]
}

// embeddedName is the field name of an embedded type: sync.Mutex → Mutex.
func embeddedName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return embeddedName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}

func (g *goFile) line(p token.Pos) int { return g.fset.Position(p).Line }

func (g *goFile) addFunc(recv *ast.FieldList, typ *ast.FuncType, body *ast.BlockStmt, outer *goFunc) {
	fn := &goFunc{from: g.line(body.Lbrace), to: g.line(body.Rbrace), locals: map[string]bool{}, outer: outer}
	if recv != nil && len(recv.List) > 0 {
		r := recv.List[0]
		if len(r.Names) > 0 {
			fn.recv = r.Names[0].Name
		}
		fn.recvType = embeddedName(r.Type)
		_, ptr := r.Type.(*ast.StarExpr)
		fn.recvValue = !ptr
		fn.params = append(fn.params, fn.recv)
	}
	if typ.Params != nil {
		for _, p := range typ.Params.List {
			if len(p.Names) == 0 {
				fn.params = append(fn.params, "_")
			}
			for _, n := range p.Names {
				fn.params = append(fn.params, n.Name)
			}
		}
	}
	g.funcs = append(g.funcs, fn)
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			g.addFunc(nil, n.Type, n.Body, fn)
			return false
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						fn.locals[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				fn.locals[id.Name] = true
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok {
					fn.locals[id.Name] = true
				}
			}
		case *ast.DeferStmt:
			if c, ok := lockCallOf(n.Call); ok {
				c.line, c.deferred = g.line(n.Pos()), true
				fn.calls = append(fn.calls, c)
			}
			return false
		case *ast.CallExpr:
			if c, ok := lockCallOf(n); ok {
				c.line = g.line(n.Pos())
				fn.calls = append(fn.calls, c)
			}
			g.addCall(n)
		}
		return true
	})
}

// addCall records a call's function and arguments under each line it spans.
func (g *goFile) addCall(c *ast.CallExpr) {
	call := goCall{fun: exprText(c.Fun)}
	if call.fun == "" {
		return
	}
	if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
		call.recv = exprText(sel.X)
	}
	for _, a := range c.Args {
		call.args = append(call.args, exprText(a))
	}
	for l := g.line(c.Pos()); l <= g.line(c.End()); l++ {
		g.calls[l] = append(g.calls[l], call)
	}
}

// callTo finds the call at line to a function named name (its last
// element: "alice", "snapshot").
func (g *goFile) callTo(line int, name string) (goCall, bool) {
	for _, c := range g.calls[line] {
		if c.fun == name || strings.HasSuffix(c.fun, "."+name) {
			return c, true
		}
	}
	return goCall{}, false
}

// lockCallOf reads X.Lock() and its kin.
func lockCallOf(c *ast.CallExpr) (lockCall, bool) {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || len(c.Args) != 0 {
		return lockCall{}, false
	}
	switch sel.Sel.Name {
	case "Lock", "RLock", "Unlock", "RUnlock":
	default:
		return lockCall{}, false
	}
	expr := exprText(sel.X)
	if expr == "" {
		return lockCall{}, false
	}
	return lockCall{expr: expr, op: sel.Sel.Name}, true
}

// exprText prints a selector chain: s.mu, mu, s.a.b; "" for anything else.
func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		if x := exprText(e.X); x != "" {
			return x + "." + e.Sel.Name
		}
	case *ast.ParenExpr:
		return exprText(e.X)
	case *ast.StarExpr:
		return exprText(e.X)
	case *ast.UnaryExpr:
		if e.Op == token.AND {
			return exprText(e.X)
		}
	}
	return ""
}

// funcAt is the innermost function whose body holds line.
func (g *goFile) funcAt(line int) *goFunc {
	var best *goFunc
	for _, f := range g.funcs {
		if f.from <= line && line <= f.to && (best == nil || f.from >= best.from) {
			best = f
		}
	}
	return best
}

// lockingAt is the Lock or RLock call at line, if there is one.
func (f *goFunc) lockingAt(line int) (lockCall, bool) {
	for _, c := range f.calls {
		if c.line == line && !c.deferred && (c.op == "Lock" || c.op == "RLock") {
			return c, true
		}
	}
	return lockCall{}, false
}

// hasLockAt reports a Lock or RLock call at line.
func (f *goFunc) hasLockAt(line int) bool {
	_, ok := f.lockingAt(line)
	return ok
}

// heldAt is the locks the function holds at line: locked before it and not
// unlocked since, a deferred unlock keeping them held. With sameLine (the
// frame stands at line in something other than a lock's Lock: `mu.RLock();
// <-never`), the calls at the line itself count too: the line's Lock
// returned, and an Unlock on it has not run, as the frame is still there
// (a line's calls are taken in order, which a line number cannot tell).
func (f *goFunc) heldAt(line int, sameLine bool) []lockCall {
	var held []lockCall
	for _, c := range f.calls {
		if c.line > line || c.line == line && !sameLine || c.deferred {
			continue
		}
		switch c.op {
		case "Lock", "RLock":
			held = append(held, c)
		case "Unlock", "RUnlock":
			read := c.op == "RUnlock"
			for i := len(held) - 1; i >= 0; i-- {
				if held[i].expr == c.expr && (held[i].op == "RLock") == read {
					held = append(held[:i], held[i+1:]...)
					break
				}
			}
		}
	}
	return held
}

// scope says what the root of a lock expression is in the function: the
// receiver, a parameter (its index, the receiver counting as 0), a local,
// or a package-level name.
type scope uint8

const (
	scopeUnknown scope = iota
	scopeReceiver
	scopeParam
	scopeLocal
	scopeGlobal
)

// declaredIn is the function whose variable expr's root is, from f
// outward: f itself, or the function a literal captured it from; nil for a
// global or a name not found.
func (f *goFunc) declaredIn(expr string) *goFunc {
	root, _, _ := strings.Cut(expr, ".")
	for fn := f; fn != nil; fn = fn.outer {
		if fn.recv == root || slices.Contains(fn.params, root) || fn.locals[root] {
			return fn
		}
	}
	return nil
}

func (f *goFunc) scopeOf(g *goFile, expr string) (scope, int) {
	root, _, _ := strings.Cut(expr, ".")
	for fn := f; fn != nil; fn = fn.outer {
		if fn.recv != "" && root == fn.recv {
			if fn == f {
				return scopeReceiver, 0
			}
			return scopeUnknown, 0 // a literal's captured receiver: its value is not in the literal's frame
		}
		for i, p := range fn.params {
			if p == root {
				if fn == f {
					return scopeParam, i
				}
				return scopeUnknown, 0
			}
		}
		if fn.locals[root] {
			return scopeLocal, 0
		}
	}
	if g.globals[root] {
		return scopeGlobal, 0
	}
	return scopeUnknown, 0
}

// fieldOf follows a field path from a struct type: (Loader, "cache.mu") →
// (Cache, "mu"), the type that has the last field; "" when the path leaves
// the types this file declares.
func (g *goFile) fieldOf(typ, path string) (string, string) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := g.fieldType[typ][p]
		if !ok {
			return "", ""
		}
		typ = next
	}
	return typ, parts[len(parts)-1]
}

// condLock reports a lock a sync.Cond is made over — X.L of a cond, or the
// argument of a sync.NewCond in the file — which Cond.Wait unlocks while
// it waits.
func (g *goFile) condLock(expr string) bool {
	if strings.HasSuffix(expr, ".L") {
		return true
	}
	for _, calls := range g.calls {
		for _, c := range calls {
			if c.fun == "sync.NewCond" && len(c.args) == 1 && c.args[0] == expr {
				return true
			}
		}
	}
	return false
}
