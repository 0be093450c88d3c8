package native

import (
	"strconv"
	"strings"
)

// demangle reads the common shape of C++ and Rust symbol names: a nested
// name, "_ZN3foo3barE…" (C++'s foo::bar, parameters dropped), "_Z3foov",
// and Rust's legacy scheme on top of it ("_ZN4core3ptr13drop_in_place
// 17h0123456789abcdefE": core::ptr::drop_in_place, its hash dropped, its
// $-escapes undone). Names it cannot read whole — templates, the C++
// substitutions (S_), Rust's v0 scheme (_R…) — are returned as they are:
// a mangled name is still the right one, only harder to read. Rust's v0
// names are read for their path's identifiers alone (demangleV0). No library
// on the allowed list demangles (Go's own toolchain vendors one, not
// importable).
func demangle(name string) string {
	if strings.HasPrefix(name, "_R") {
		return demangleV0(name)
	}
	if !strings.HasPrefix(name, "_Z") {
		return name
	}
	s := name[2:]
	var parts []string
	if strings.HasPrefix(s, "N") {
		s = s[1:]
		// CV-qualifiers of a method: K (const), V, r; a ref-qualifier.
		s = strings.TrimLeft(s, "KVrRO")
		for len(s) > 0 && s[0] != 'E' {
			switch {
			case s[0] >= '0' && s[0] <= '9':
				var p string
				var ok bool
				if p, s, ok = sourceName(s); !ok {
					return name
				}
				parts = append(parts, p)
			case (s[0] == 'C' || s[0] == 'D') && len(s) > 1 && s[1] >= '0' && s[1] <= '5' && len(parts) > 0:
				class := parts[len(parts)-1]
				if s[0] == 'D' {
					class = "~" + class
				}
				parts = append(parts, class)
				s = s[2:]
			default:
				return name
			}
		}
		if len(s) == 0 || len(parts) == 0 {
			return name
		}
	} else {
		p, _, ok := sourceName(s)
		if !ok {
			return name
		}
		parts = []string{p}
	}
	if n := len(parts); n > 1 && rustHash(parts[n-1]) {
		parts = parts[:n-1]
		for i, p := range parts {
			parts[i] = rustUnescape(p)
		}
	}
	return strings.Join(parts, "::")
}

// sourceName reads "<length><identifier>" off the front of s.
func sourceName(s string) (string, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n <= 0 || i+n > len(s) {
		return "", s, false
	}
	return s[i : i+n], s[i+n:], true
}

// rustHash reports Rust's legacy hash component: "h" and 16 hex digits.
func rustHash(p string) bool {
	if len(p) != 17 || p[0] != 'h' {
		return false
	}
	for _, c := range p[1:] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

var rustEscapes = strings.NewReplacer(
	"$SP$", "@", "$BP$", "*", "$RF$", "&", "$LT$", "<", "$GT$", ">", "$LP$", "(", "$RP$", ")", "$C$", ",",
	"$u7e$", "~", "$u20$", " ", "$u27$", "'", "$u5b$", "[", "$u5d$", "]", "$u7b$", "{", "$u7d$", "}", "$u3b$", ";", "$u2b$", "+", "$u22$", "\"",
	"..", "::",
)

// rustUnescape undoes the legacy scheme's escapes: "$LT$impl$u20$Foo$GT$".
func rustUnescape(p string) string {
	if strings.HasPrefix(p, "_$") {
		p = p[1:] // an identifier may not begin with '$'
	}
	return rustEscapes.Replace(p)
}

// demangleV0 reads a Rust v0 symbol ("_RNvMNtCs…_3std4sync5Mutex4lock")
// for its path: std::sync::Mutex::lock. Generic arguments are dropped,
// disambiguators skipped, back-references followed; an impl's path is
// its type's, a trait impl's "<Type as Trait>". A name it cannot read is
// returned as it is.
func demangleV0(name string) string {
	d := &v0{s: name[2:]}
	out, ok := d.path(0)
	if !ok || out == "" {
		return name
	}
	return out
}

// v0 is Rust's v0 mangling as far as a path goes.
type v0 struct {
	s     string
	pos   int
	depth int
}

func (d *v0) next() (byte, bool) {
	if d.pos >= len(d.s) {
		return 0, false
	}
	c := d.s[d.pos]
	d.pos++
	return c, true
}

// base62 reads "<base-62 digits>_" ("_" alone is 0, else value+1).
func (d *v0) base62() (int, bool) {
	j := strings.IndexByte(d.s[d.pos:], '_')
	if j < 0 {
		return 0, false
	}
	digits := d.s[d.pos : d.pos+j]
	d.pos += j + 1
	if digits == "" {
		return 0, true
	}
	n := 0
	for _, c := range digits {
		if n < 0 {
			break
		}
		var v int
		switch {
		case c >= '0' && c <= '9':
			v = int(c - '0')
		case c >= 'a' && c <= 'z':
			v = int(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			v = int(c-'A') + 36
		default:
			return 0, false
		}
		n = n*62 + v
		if n > 1<<40 {
			n = -2 // a disambiguator's hash: its value is never used
		}
	}
	return n + 1, true
}

// disambiguator skips an optional "s<base-62>_".
func (d *v0) disambiguator() bool {
	if d.pos < len(d.s) && d.s[d.pos] == 's' {
		d.pos++
		_, ok := d.base62()
		return ok
	}
	return true
}

// ident reads "[u]<decimal>[_]<bytes>".
func (d *v0) ident() (string, bool) {
	if d.pos < len(d.s) && d.s[d.pos] == 'u' {
		d.pos++ // punycode: shown as it is encoded
	}
	j := d.pos
	for j < len(d.s) && d.s[j] >= '0' && d.s[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(d.s[d.pos:j])
	if err != nil || n < 0 {
		return "", false
	}
	d.pos = j
	if d.pos < len(d.s) && d.s[d.pos] == '_' {
		d.pos++
	}
	if d.pos+n > len(d.s) {
		return "", false
	}
	id := d.s[d.pos : d.pos+n]
	d.pos += n
	return id, true
}

func (d *v0) path(depth int) (string, bool) {
	if depth > 32 {
		return "", false
	}
	c, ok := d.next()
	if !ok {
		return "", false
	}
	switch c {
	case 'C':
		if !d.disambiguator() {
			return "", false
		}
		return d.ident()
	case 'N':
		if _, ok := d.next(); !ok { // the namespace: v (value), t (type), C (closure)…
			return "", false
		}
		p, ok := d.path(depth + 1)
		if !ok || !d.disambiguator() {
			return "", false
		}
		id, ok := d.ident()
		if !ok {
			return "", false
		}
		if id == "" {
			return p, true
		}
		return p + "::" + id, true
	case 'M':
		if !d.disambiguator() {
			return "", false
		}
		if _, ok := d.path(depth + 1); !ok { // the impl's own path
			return "", false
		}
		return d.typ(depth + 1)
	case 'X':
		if !d.disambiguator() {
			return "", false
		}
		if _, ok := d.path(depth + 1); !ok {
			return "", false
		}
		t, ok := d.typ(depth + 1)
		if !ok {
			return "", false
		}
		tr, ok := d.path(depth + 1)
		return "<" + t + " as " + tr + ">", ok
	case 'Y':
		t, ok := d.typ(depth + 1)
		if !ok {
			return "", false
		}
		tr, ok := d.path(depth + 1)
		return "<" + t + " as " + tr + ">", ok
	case 'I':
		p, ok := d.path(depth + 1)
		if !ok {
			return "", false
		}
		// The generic arguments are not shown: skip to the matching E.
		for n := 1; n > 0; {
			c, ok := d.next()
			switch {
			case !ok:
				return p, true
			case c == 'I':
				n++
			case c == 'E':
				n--
			}
		}
		return p, true
	case 'B':
		at, ok := d.base62()
		if !ok || at < 0 || at >= d.pos {
			return "", false
		}
		save := d.pos
		d.pos = at
		p, ok := d.path(depth + 1)
		d.pos = save
		return p, ok
	}
	return "", false
}

// typ reads a type as far as a path shows it: a path type, or one of
// the basic types by their letters.
func (d *v0) typ(depth int) (string, bool) {
	if d.pos >= len(d.s) {
		return "", false
	}
	c := d.s[d.pos]
	if strings.IndexByte("CNMXYIB", c) >= 0 {
		return d.path(depth)
	}
	basic := map[byte]string{'a': "i8", 'b': "bool", 'c': "char", 'd': "f64", 'e': "str", 'f': "f32", 'h': "u8", 'i': "isize", 'j': "usize", 'l': "i32", 'm': "u32", 'n': "i128", 'o': "u128", 's': "i16", 't': "u16", 'u': "()", 'v': "...", 'x': "i64", 'y': "u64", 'z': "!", 'p': "_"}
	if b, ok := basic[c]; ok {
		d.pos++
		return b, true
	}
	return "", false
}
