package gogen

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// gofile writes a Go file's text in gofmt's layout as it goes: lines
// indented by tabs, the columns gofmt aligns padded as its tabwriter pads
// them (through layout's columnWidths, the same code that lays out
// jennifer's text), a function body on its header's line when gofmt keeps
// it there. It is for the declarations whose layout is known before they
// are written (the emitters of the *direct.go files): most of a package,
// written without a jennifer tree and without scanning that tree's text
// again. Whatever it is asked to write that gofmt would lay out otherwise
// (a doc comment gofmt reformats, a package it does not know) turns ok to
// false, and the caller renders the file with jennifer instead.
type gofile struct {
	body    *bytes.Buffer
	imports []string  // paths named, in order of first use
	rows    []outLine // an aligned block not written yet
	ok      bool
	started bool // a declaration has been written
	// names are the names of packages beyond packageNames (the kit's
	// generated package), aliased those imported under a name that is
	// not their path's last element.
	names   map[string]string
	aliased map[string]bool
	// for declarations left to jennifer (jen): a new file, and the
	// memory to lay it out in
	newJen func() *jen.File
	s      *scratch
	// pkgDoc is the package's doc comment, its lines as gofmt leaves them.
	pkgDoc []string
}

// newGofile starts a file whose declarations go into body, which it
// resets; newJen makes the jennifer files of the declarations it leaves
// to jennifer, laid out in the memory of s.
func newGofile(body *bytes.Buffer, s *scratch, newJen func() *jen.File) *gofile {
	body.Reset()
	return &gofile{body: body, ok: true, s: s, newJen: newJen}
}

// name is the name the file knows the package at path by.
func (g *gofile) name(path string) (string, bool) {
	if n, ok := g.names[path]; ok {
		return n, true
	}
	n, ok := packageNames[path]
	return n, ok
}

// packageNames are the names of the packages generated code imports, as
// their import declarations leave them (no alias).
var packageNames = map[string]string{
	runtimePath:      "runtime",
	schemasetPath:    "schemaset",
	topologyPath:     "topology",
	streamoffsetPath: "streamoffset",
	errorsPath:       "errors",
	jsonPath:         "json",
	timePath:         "time",
	contextPath:      "context",
	fmtPath:          "fmt",
	codecPath:        "codec",
	jxPath:           "jx",
	mathPath:         "math",
	"strconv":        "strconv",
	outboxPath:       "outbox",
	sqldbPath:        "sqldb",
	warrentestPath:   "warrentest",
	testingPath:      "testing",
}

// q is name qualified by the package at path, which the file then
// imports; with no name, the qualifier alone ("runtime.").
func (g *gofile) q(path, name string) string {
	pkg, ok := g.name(path)
	if !ok {
		g.ok = false // an alias may be needed: jennifer knows
		return name
	}
	if !slices.Contains(g.imports, path) {
		g.imports = append(g.imports, path)
	}
	return pkg + "." + name
}

// frag is f's text, its packages imported.
func (g *gofile) frag(f frag) string {
	if len(f) == 1 && f[0].path == "" {
		return f[0].text
	}
	var b strings.Builder
	for _, p := range f {
		if p.path != "" {
			b.WriteString(g.q(p.path, p.text))
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// decl starts a top-level declaration: one blank line after the last.
func (g *gofile) decl() {
	g.flush()
	if g.started {
		g.body.WriteByte('\n')
	}
	g.started = true
}

// blank writes an empty line.
func (g *gofile) blank() {
	g.flush()
	g.body.WriteByte('\n')
}

// line writes one line at the indentation given.
func (g *gofile) line(indent int, s string) {
	g.flush()
	for range indent {
		g.body.WriteByte('\t')
	}
	g.body.WriteString(s)
	g.body.WriteByte('\n')
}

// doc writes the lines of a doc comment (docLines); one that gofmt
// would reformat gives up.
func (g *gofile) doc(indent int, lines []string) {
	for _, l := range lines {
		c := commentLine(l)
		if !plainComment(c) {
			g.ok = false
		}
		g.line(indent, c)
	}
}

// comment writes one line of comment that is written as it is.
func (g *gofile) comment(indent int, c string) { g.doc(indent, []string{c}) }

// row adds a line to the aligned block being written: cells padded to
// their column's width (gofmt's tabwriter cells), then text. A line of
// another kind ends the block.
func (g *gofile) row(indent int, text string, cells ...string) {
	g.rows = append(g.rows, outLine{indent: indent, cells: cells, text: text})
}

// flush writes the aligned block.
func (g *gofile) flush() {
	if len(g.rows) == 0 {
		return
	}
	widths := columnWidths(g.rows)
	for i, o := range g.rows {
		writeLine(g.body, o, widths[i])
	}
	clear(g.rows)
	g.rows = g.rows[:0]
}

// fn writes a function declaration of one statement: on one line when
// gofmt keeps it there (header and statement within 100 columns, counted
// from the column before "func"), else on three.
func (g *gofile) fn(header, stmt string) {
	if len(header)+1+len(stmt) <= 100 {
		g.line(0, header+" { "+stmt+" }")
		return
	}
	g.line(0, header+" {")
	g.line(1, stmt)
	g.line(0, "}")
}

// bytes is the whole file: its header comments, package clause and
// imports (the standard library's first, a blank line, the others, each
// group sorted, as groupImports and gofmt leave them), then the
// declarations.
func (g *gofile) bytes(header []string, pkg string) []byte {
	g.flush()
	var std, other []string
	for _, p := range g.imports {
		if isStandard(p) {
			std = append(std, p)
		} else {
			other = append(other, p)
		}
	}
	slices.Sort(std)
	slices.Sort(other)
	size := len("package \n\nimport (\n)\n\n\n") + len(pkg) + g.body.Len()
	for _, h := range append(header, g.pkgDoc...) {
		size += len(h) + 1
	}
	for _, p := range g.imports {
		size += len(p) + 4 + len(g.names[p]) + 1
	}
	out := make([]byte, 0, size+1)
	for _, h := range header {
		out = append(out, h...)
		out = append(out, '\n')
	}
	if len(header) > 0 {
		out = append(out, '\n')
	}
	for _, l := range g.pkgDoc {
		out = append(out, l...)
		out = append(out, '\n')
	}
	out = append(out, "package "...)
	out = append(out, pkg...)
	out = append(out, "\n\n"...)
	switch len(g.imports) {
	case 0:
	case 1:
		out = append(out, "import "...)
		if p := g.imports[0]; g.aliased[p] {
			out = append(out, g.names[p]...)
			out = append(out, ' ')
		}
		out = strconv.AppendQuote(out, g.imports[0])
		out = append(out, "\n\n"...)
	default:
		out = append(out, "import (\n"...)
		for i, group := range [][]string{std, other} {
			if i > 0 && len(std) > 0 && len(other) > 0 {
				out = append(out, '\n')
			}
			for _, p := range group {
				out = append(out, '\t')
				if g.aliased[p] {
					out = append(out, g.names[p]...)
					out = append(out, ' ')
				}
				out = strconv.AppendQuote(out, p)
				out = append(out, '\n')
			}
		}
		out = append(out, ")\n\n"...)
	}
	return append(out, g.body.Bytes()...)
}
