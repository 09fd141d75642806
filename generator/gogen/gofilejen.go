package gogen

import (
	"bytes"
	"strconv"

	"github.com/dave/jennifer/jen"
)

// jen writes the declarations gen adds to a jennifer file, laid out as
// the whole file would be (formatFile), after a blank line: for the
// declarations of a file made once per package, which direct writing
// would not make faster, beside those made once per fact. gofmt lays out
// each top-level declaration on its own, so the parts join as one file
// laid out at once would. Their imports join the file's.
func (g *gofile) jen(gen func(f *jen.File)) {
	if !g.ok {
		return
	}
	f := g.newJen()
	gen(f)
	src, err := formatFile(f, g.s)
	if err != nil {
		g.ok = false // rendering the whole file with jennifer reports it
		return
	}
	body, ok := g.takeImports(src)
	if !ok {
		g.ok = false
		return
	}
	if len(body) == 0 {
		return
	}
	g.decl()
	g.body.Write(body)
}

// takeImports adds the imports of src, a file laid out by formatFile, to
// the file's and returns its declarations; ok is false when an import is
// not one the file knows by the same name.
func (g *gofile) takeImports(src []byte) (body []byte, ok bool) {
	_, rest, found := bytes.Cut(src, []byte("\n\n")) // the package clause
	if !found {
		return nil, len(bytes.TrimSpace(src)) > 0 && bytes.HasPrefix(src, []byte("package "))
	}
	var block []byte
	switch {
	case bytes.HasPrefix(rest, []byte("import (\n")):
		block, rest, found = bytes.Cut(rest[len("import (\n"):], []byte("\n)\n"))
		if !found {
			return nil, false
		}
		rest = bytes.TrimPrefix(rest, []byte("\n"))
	case bytes.HasPrefix(rest, []byte("import ")):
		block, rest, found = bytes.Cut(rest[len("import "):], []byte("\n"))
		if !found {
			return nil, false
		}
		rest = bytes.TrimPrefix(rest, []byte("\n"))
	}
	for line := range bytes.SplitSeq(block, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		name, quoted, alias := bytes.Cut(line, []byte(" "))
		if !alias {
			quoted = name
		}
		path, err := strconv.Unquote(string(quoted))
		if err != nil {
			return nil, false
		}
		known, ok := g.name(path)
		if !ok || alias != g.aliased[path] || alias && string(name) != known {
			return nil, false
		}
		g.q(path, "")
	}
	return rest, true
}
