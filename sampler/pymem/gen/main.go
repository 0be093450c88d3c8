// Command gen writes the CPython layout table of sampler/pymem
// (zlayouts.go): for each interpreter given, it reads from the DWARF of
// its libpython (or its executable, for a static build) the offsets of
// the fields the reader follows — the runtime's interpreter list, each
// interpreter's threads, each thread's frames, each frame's code object,
// and the objects the names are in — and writes one row per minor
// version. An interpreter without DWARF is read with the row of its minor
// version: within one, CPython keeps these structs' layouts.
//
// Usage, from sampler/pymem:
//
//	go run ./gen [-out zlayouts.go] PYTHON...
//
// with no PYTHON, the pyenv interpreters 3.8 to 3.13 of this machine.
package main

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// field is one offset the reader needs: the struct (its DWARF name, a
// struct tag or a typedef) and the path of members within it; "sizeof"
// for the struct's size. Alternatives, tried in order, cover renames
// across versions.
type field struct {
	name    string // the Layout field
	paths   [][2]string
	asyncio bool // in the _asyncio extension module, not the runtime
}

func f(name string, alts ...string) field {
	fl := field{name: name}
	for _, a := range alts {
		s, p, _ := strings.Cut(a, ":")
		if s == "asyncio" {
			// A struct of the _asyncio extension module: its own DWARF.
			fl.asyncio = true
			s, p, _ = strings.Cut(p, ":")
		}
		fl.paths = append(fl.paths, [2]string{s, p})
	}
	return fl
}

var fields = []field{
	f("RuntimeInterpretersHead", "pyruntimestate:interpreters.head"),
	f("RuntimeMainThread", "pyruntimestate:main_thread"),
	f("RuntimeGIL", "pyruntimestate:ceval.gil"),
	f("InterpNext", "_is:next"),
	f("InterpThreadsHead", "_is:threads.head", "_is:tstate_head"),
	f("InterpGIL", "_is:ceval.gil"),
	f("GILLocked", "_gil_runtime_state:locked"),
	f("GILHolder", "_gil_runtime_state:last_holder"),
	f("GILSwitch", "_gil_runtime_state:switch_number"),
	f("TstateNext", "_ts:next"),
	f("TstateInterp", "_ts:interp"),
	f("TstateFrame", "_ts:current_frame", "_ts:frame"),
	f("TstateCFrame", "_ts:cframe"),
	f("CFrameCurrent", "_PyCFrame:current_frame"),
	f("TstateThreadID", "_ts:thread_id"),
	f("TstateNativeThreadID", "_ts:native_thread_id"),
	f("FrameBack", "_frame:f_back"),
	f("FrameCode", "_frame:f_code"),
	f("FrameLasti", "_frame:f_lasti"),
	f("IFramePrevious", "_PyInterpreterFrame:previous"),
	f("IFrameCode", "_PyInterpreterFrame:f_executable", "_PyInterpreterFrame:f_code"),
	f("IFrameInstr", "_PyInterpreterFrame:instr_ptr", "_PyInterpreterFrame:prev_instr"),
	f("IFrameOwner", "_PyInterpreterFrame:owner"),
	f("FrameLocals", "_frame:f_localsplus"),
	f("FrameGlobals", "_frame:f_globals"),
	f("IFrameLocals", "_PyInterpreterFrame:localsplus"),
	f("IFrameGlobals", "_PyInterpreterFrame:f_globals"),
	f("CodeFilename", "PyCodeObject:co_filename"),
	f("CodeName", "PyCodeObject:co_name"),
	f("CodeQualname", "PyCodeObject:co_qualname"),
	f("CodeFirstLine", "PyCodeObject:co_firstlineno"),
	f("CodeLineTable", "PyCodeObject:co_linetable", "PyCodeObject:co_lnotab"),
	f("CodeCode", "PyCodeObject:co_code"),
	f("CodeVarnames", "PyCodeObject:co_varnames"),
	f("CodeCellvars", "PyCodeObject:co_cellvars"),
	f("CodeFreevars", "PyCodeObject:co_freevars"),
	f("CodeLocalsNames", "PyCodeObject:co_localsplusnames"),
	f("CodeLocalsKinds", "PyCodeObject:co_localspluskinds"),
	f("TupleItems", "PyTupleObject:ob_item"),
	f("ListItems", "PyListObject:ob_item"),
	f("CellRef", "PyCellObject:ob_ref"),
	f("FuncClosure", "PyFunctionObject:func_closure"),
	f("CodeAdaptive", "PyCodeObject:co_code_adaptive"),
	f("ObType", "_object:ob_type"),
	f("TypeName", "_typeobject:tp_name"),
	f("TypeFlags", "_typeobject:tp_flags"),
	f("TypeDictOffset", "_typeobject:tp_dictoffset"),
	f("TypeBasicSize", "_typeobject:tp_basicsize"),
	f("HeapTypeCachedKeys", "_heaptypeobject:ht_cached_keys"),
	f("DictKeys", "PyDictObject:ma_keys"),
	f("DictValues", "PyDictObject:ma_values"),
	f("KeysSize", "_dictkeysobject:dk_size"),
	f("KeysLog2Size", "_dictkeysobject:dk_log2_size"),
	f("KeysLog2IndexBytes", "_dictkeysobject:dk_log2_index_bytes"),
	f("KeysKind", "_dictkeysobject:dk_kind"),
	f("KeysNEntries", "_dictkeysobject:dk_nentries"),
	f("KeysIndices", "_dictkeysobject:dk_indices"),
	f("EntrySize", "PyDictKeyEntry:sizeof"),
	f("EntryKey", "PyDictKeyEntry:me_key"),
	f("EntryValue", "PyDictKeyEntry:me_value"),
	f("UnicodeEntrySize", "PyDictUnicodeEntry:sizeof"),
	f("ValuesValues", "_dictvalues:values"),
	f("ValuesValid", "_dictvalues:valid"),
	f("VarSize", "PyVarObject:ob_size"),
	f("BytesData", "PyBytesObject:ob_sval"),
	f("InterpModules", "_is:imports.modules", "_is:modules"),
	f("ModuleDict", "PyModuleObject:md_dict"),
	f("SetMask", "PySetObject:mask"),
	f("SetTable", "PySetObject:table"),
	f("SetEntrySize", "setentry:sizeof"),
	f("WeakrefObject", "_PyWeakReference:wr_object"),
	f("CoroFrameState", "PyCoroObject:cr_frame_state"),
	f("CoroFrame", "PyCoroObject:cr_iframe"),
	f("IFrameStackTop", "_PyInterpreterFrame:stacktop"),
	f("TaskState", "asyncio:TaskObj:task_state"),
	f("TaskFutWaiter", "asyncio:TaskObj:task_fut_waiter"),
	f("TaskCoro", "asyncio:TaskObj:task_coro"),
	f("TaskName", "asyncio:TaskObj:task_name"),
	f("TaskException", "asyncio:TaskObj:task_exception"),
	f("FutureIterFuture", "asyncio:futureiterobject:future"),
	f("LongTag", "_longobject:long_value.lv_tag"),
	f("LongDigits", "_longobject:long_value.ob_digit", "_longobject:ob_digit"),
	f("ASCIILength", "PyASCIIObject:length"),
	f("ASCIIState", "PyASCIIObject:state"),
	f("ASCIISize", "PyASCIIObject:sizeof"),
	f("CompactSize", "PyCompactUnicodeObject:sizeof"),
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	out := flag.String("out", "zlayouts.go", "file to write")
	flag.Parse()
	pythons := flag.Args()
	if len(pythons) == 0 {
		home, _ := os.UserHomeDir()
		for _, v := range []string{"3.8", "3.9", "3.10", "3.11", "3.12", "3.13"} {
			m, _ := filepath.Glob(filepath.Join(home, ".pyenv/versions", v+".*", "bin/python"+v))
			sort.Strings(m)
			if len(m) == 0 {
				log.Fatalf("no pyenv Python %s: install it (pyenv install %s) or name the interpreters", v, v)
			}
			pythons = append(pythons, m[len(m)-1])
		}
	}
	var rows bytes.Buffer
	for _, py := range pythons {
		version, lib, asyncio := describe(py)
		d := dwarfOf(lib)
		types := structs(d)
		atypes := structs(dwarfOf(asyncio))
		minor := strings.Split(version, ".")[1]
		fmt.Fprintf(&rows, "\t// %s, from %s\n\t%s: {Version: %q,\n", version, filepath.Base(lib), minor, version)
		for _, fl := range fields {
			off := -1
			in := types
			if fl.asyncio {
				in = atypes
			}
			for _, p := range fl.paths {
				if o, ok := offsetOf(in, p[0], p[1]); ok {
					off = o
					break
				}
			}
			fmt.Fprintf(&rows, "\t\t%s: %d,\n", fl.name, off)
		}
		rows.WriteString("\t},\n")
	}
	src := fmt.Sprintf(`// Code generated by go run ./gen; DO NOT EDIT.

package pymem

// layouts are CPython's struct offsets by minor version (3.N), read from
// the DWARF of the interpreters named in each row; -1 where the field is
// not in that version.
var layouts = map[int]Layout{
%s}
`, rows.String())
	b, err := format.Source([]byte(src))
	if err != nil {
		log.Fatalf("formatting: %v\n%s", err, src)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		log.Fatal(err)
	}
}

// describe is an interpreter's version, the file its runtime is in (its
// libpython when it links one, else itself) and its _asyncio extension
// module's file.
func describe(py string) (version, lib, asyncio string) {
	b, err := exec.Command(py, "-c", "import sys, sysconfig, os, _asyncio; print('%d.%d.%d' % sys.version_info[:3]); print(os.path.join(sysconfig.get_config_var('LIBDIR') or '', sysconfig.get_config_var('INSTSONAME') or '') if sysconfig.get_config_var('Py_ENABLE_SHARED') else sys.executable); print(_asyncio.__file__)").Output()
	if err != nil {
		log.Fatalf("%s: %v", py, err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		log.Fatalf("%s: %q", py, b)
	}
	return lines[0], lines[1], lines[2]
}

func dwarfOf(path string) *dwarf.Data {
	f, err := elf.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	d, err := f.DWARF()
	if err != nil {
		log.Fatalf("%s: no DWARF (%v): build the interpreter with -g", path, err)
	}
	return d
}

// structs indexes the complete struct types by their tag and by the
// typedefs that name them.
func structs(d *dwarf.Data) map[string]*dwarf.StructType {
	out := map[string]*dwarf.StructType{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			log.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagStructType && e.Tag != dwarf.TagTypedef {
			if e.Tag != dwarf.TagCompileUnit {
				r.SkipChildren()
			}
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if name == "" || out[name] != nil {
			r.SkipChildren()
			continue
		}
		t, err := d.Type(e.Offset)
		r.SkipChildren()
		if err != nil {
			continue
		}
		for {
			td, ok := t.(*dwarf.TypedefType)
			if !ok {
				break
			}
			t = td.Type
		}
		if st, ok := t.(*dwarf.StructType); ok && !st.Incomplete {
			out[name] = st
		}
	}
	return out
}

// offsetOf is the offset of path (members joined by dots; "sizeof" for
// the struct's size) in the struct named name.
func offsetOf(types map[string]*dwarf.StructType, name, path string) (int, bool) {
	st := types[name]
	if st == nil {
		return 0, false
	}
	if path == "sizeof" {
		return int(st.ByteSize), true
	}
	off := 0
	parts := strings.Split(path, ".")
	for i, p := range parts {
		var found *dwarf.StructField
		for _, fl := range st.Field {
			if fl.Name == p {
				found = fl
				break
			}
		}
		if found == nil {
			return 0, false
		}
		off += int(found.ByteOffset)
		if i == len(parts)-1 {
			return off, true
		}
		t := found.Type
		for {
			td, ok := t.(*dwarf.TypedefType)
			if !ok {
				break
			}
			t = td.Type
		}
		next, ok := t.(*dwarf.StructType)
		if !ok {
			return 0, false
		}
		st = next
	}
	return off, true
}
