package load

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// Document is one parsed JSON file of a schema directory. Value holds the
// decoded JSON (map[string]any, []any, string, json.Number, bool or nil);
// numbers stay json.Number so that no integer loses precision. The document
// remembers where every value and property name starts, so any JSON pointer
// can be turned into line:column.
type Document struct {
	Path  string // slash-separated path relative to the schema directory
	Src   []byte // the file as read
	Value any    // the decoded JSON

	// For a schema file (not warren.json): the draft its $schema names,
	// and its root schema with every subschema read under that draft.
	Draft *Draft
	Root  *Schema
	// MetaSchema is the URL of the manifest's metaSchemas that $schema
	// names, "" when it names a draft (or nothing).
	MetaSchema string

	mu    sync.Mutex         // guards nodes and detached, which resolving a $ref may extend
	nodes map[string]*Schema // JSON pointer -> schema, for every subschema
	// detached are the schemas read where no keyword of the file's draft
	// holds one, because the manifest or a $ref points there (an OpenAPI
	// document's #/components/schemas/Money), each the root of its own
	// tree; none holds another. See [Document.Roots].
	detached []*Schema

	spans map[string]span // JSON pointer -> byte offsets
	lines []int           // byte offset at which each line starts
}

// span records where the value at a pointer starts, and where its property
// name starts when the value is an object member (-1 otherwise).
type span struct{ key, value int }

// Parse decodes src as the document at path. Duplicate property names are an
// error (JSON Schema leaves their meaning undefined). A syntax error comes
// back as an *[Error] carrying line and column.
func Parse(path string, src []byte) (*Document, error) {
	if msg := byteOrderMark(src); msg != "" {
		return nil, &Error{File: path, Line: 1, Col: 1, Msg: msg}
	}
	// A span for every value: about one per name and one per item, made
	// room for at once rather than by growing the map again and again.
	values := bytes.Count(src, []byte{':'}) + bytes.Count(src, []byte{','}) + 1
	d := &Document{Path: path, Src: src, spans: make(map[string]span, values)}
	d.lines = lineStarts(src)
	p := parser{doc: d, src: src}
	v, err := p.value("", -1, 0)
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.pos < len(src) {
		return nil, d.errorAt(p.pos, "", "invalid JSON: unexpected data after the top-level value")
	}
	d.Value = v
	return d, nil
}

// byteOrderMark says what is wrong with a file that starts with a byte
// order mark, which JSON parsers see as a stray character ("invalid
// character 'ï'"); "" when src starts with none. RFC 8259 (section 8.1)
// forbids adding one and lets a parser ignore it. warren refuses it rather
// than ignoring it: a schema file is also read by the consumers' tools and
// by the documents warren writes from it, and Go's encoding/json, among
// others, fails on it.
func byteOrderMark(src []byte) string {
	switch {
	case bytes.HasPrefix(src, []byte{0xEF, 0xBB, 0xBF}):
		return "invalid JSON: the file starts with a UTF-8 byte order mark (EF BB BF), which a JSON file must not have (RFC 8259, section 8.1): save it as UTF-8 without one"
	case bytes.HasPrefix(src, []byte{0xFE, 0xFF}), bytes.HasPrefix(src, []byte{0xFF, 0xFE}):
		return "invalid JSON: the file starts with a UTF-16 byte order mark, and a JSON file must be UTF-8 without one (RFC 8259, section 8.1): save it as UTF-8"
	}
	return ""
}

// Lookup returns the value at pointer.
func (d *Document) Lookup(pointer string) (any, bool) { return Lookup(d.Value, pointer) }

// Keys returns the property names of the object at pointer in the order
// they appear in the file (a decoded map forgets it; generated structs keep
// the author's field order). It returns nil if pointer is not an object.
func (d *Document) Keys(pointer string) []string {
	obj, ok := d.Lookup(pointer)
	m, isObj := obj.(map[string]any)
	if !ok || !isObj {
		return nil
	}
	// Look each name's offset up once, not once per comparison. Names are
	// distinct, so their offsets are too and the order is total.
	type keyAt struct {
		name string
		off  int
	}
	byOffset := make([]keyAt, 0, len(m))
	for name := range m {
		byOffset = append(byOffset, keyAt{name, d.spans[Append(pointer, name)].key})
	}
	slices.SortFunc(byOffset, func(a, b keyAt) int { return cmp.Compare(a.off, b.off) })
	keys := make([]string, len(byOffset))
	for i, k := range byOffset {
		keys[i] = k.name
	}
	return keys
}

// Offset returns the byte offset at which the value at pointer starts, or
// -1 if there is none. It orders things "as written in the file".
func (d *Document) Offset(pointer string) int {
	sp, ok := d.spans[pointer]
	if !ok {
		return -1
	}
	return sp.value
}

// Position returns the line and column at which the value at pointer starts.
// For a pointer that does not exist it returns the position of the nearest
// existing ancestor and ok=false.
func (d *Document) Position(pointer string) (line, col int, ok bool) {
	sp, ok := d.nearest(pointer)
	line, col = d.lineCol(sp.value)
	return line, col, ok
}

// KeyPosition is like [Document.Position] but points at the property name
// when the value is an object member, which is where an editor should put
// the cursor for "unknown property" errors.
func (d *Document) KeyPosition(pointer string) (line, col int, ok bool) {
	sp, ok := d.nearest(pointer)
	off := sp.value
	if ok && sp.key >= 0 {
		off = sp.key
	}
	line, col = d.lineCol(off)
	return line, col, ok
}

// Errorf returns an error at the value that pointer designates.
func (d *Document) Errorf(pointer, format string, args ...any) *Error {
	line, col, _ := d.Position(pointer)
	return &Error{File: d.Path, Line: line, Col: col, Pointer: pointer, Msg: fmt.Sprintf(format, args...)}
}

// KeyErrorf returns an error at the property name of the member that pointer
// designates.
func (d *Document) KeyErrorf(pointer, format string, args ...any) *Error {
	line, col, _ := d.KeyPosition(pointer)
	return &Error{File: d.Path, Line: line, Col: col, Pointer: pointer, Msg: fmt.Sprintf(format, args...)}
}

func (d *Document) nearest(pointer string) (span, bool) {
	if sp, ok := d.spans[pointer]; ok {
		return sp, true
	}
	for p := pointer; p != ""; {
		i := lastSlash(p)
		p = p[:i]
		if sp, ok := d.spans[p]; ok {
			return sp, false
		}
	}
	return span{key: -1, value: 0}, false
}

func lastSlash(p string) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return i
		}
	}
	return 0
}

func (d *Document) errorAt(off int, pointer, format string, args ...any) *Error {
	line, col := d.lineCol(off)
	return &Error{File: d.Path, Line: line, Col: col, Pointer: pointer, Msg: fmt.Sprintf(format, args...)}
}

// lineCol is the one place that turns a byte offset into a 1-based line and
// byte column.
func (d *Document) lineCol(off int) (line, col int) {
	off = max(0, min(off, len(d.Src)))
	i := sort.Search(len(d.lines), func(i int) bool { return d.lines[i] > off }) - 1
	return i + 1, off - d.lines[i] + 1
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}
