package python

import (
	"regexp"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// pySpyVarRE is a variable under a frame of `py-spy dump --locals`, past
// its "Arguments:" or "Locals:" line: "            first: <_thread.lock
// at 0x7f029b225a00>". Only a value that names an object at an address is
// kept (older py-spys and reprs say "<unlocked _thread.lock object at
// 0x…>").
var pySpyVarRE = regexp.MustCompile(`^\s{8,}([A-Za-z_]\w*): <(?:(?:un)?locked )?([\w.]+)(?: object)?(?: [^<>]*)? at (0x[0-9a-fA-F]+)>$`)

// parsePySpyVar reads one such variable; false for anything else (a value
// that is not an object is never kept: it may be a secret).
func parsePySpyVar(l string) (model.Var, bool) {
	l = strings.TrimRight(l, "\r")
	m := pySpyVarRE.FindStringSubmatch(l)
	if m == nil {
		return model.Var{}, false
	}
	return model.Var{Name: m[1], Type: m[2], Addr: strings.ToLower(m[3])}, true
}

// jsonLocal is a variable of `py-spy dump --json --locals`.
type jsonLocal struct {
	Name string `json:"name"`
	Repr string `json:"repr"`
}

// objectVars keeps the variables that name objects: their names, types
// and addresses, from the repr ("<_thread.lock at 0x7f6d1e7294c0>").
func objectVars(locals []jsonLocal) []model.Var {
	var out []model.Var
	for _, l := range locals {
		if v, ok := parsePySpyVar("        " + l.Name + ": " + l.Repr); ok {
			out = append(out, v)
		}
	}
	return out
}
