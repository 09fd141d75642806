package gogen

import (
	"bytes"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// groupImports splits the import block of src into two groups separated
// by a blank line, the standard library first, as goimports does; gofmt
// then sorts each group. jennifer writes one block sorted by path, which
// puts github.com/... before time. A path is in the standard library when
// its first element has no dot, the rule goimports applies. src that does
// not parse, or has no parenthesised import block, is returned unchanged:
// gofmt reports the syntax error with context.
func groupImports(src []byte) []byte { return groupImportsIn(src, new(bytes.Buffer)) }

// groupImportsIn is groupImports writing into b, which it resets, when
// the imports are regrouped.
func groupImportsIn(src []byte, b *bytes.Buffer) []byte {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly|parser.ParseComments)
	if err != nil || len(f.Imports) < 2 {
		return src
	}
	// jennifer writes all imports in one block; replace the text from
	// the first spec to the end of the last.
	start := fset.Position(f.Imports[0].Pos()).Offset
	end := fset.Position(f.Imports[len(f.Imports)-1].End()).Offset
	var std, other []string
	for _, spec := range f.Imports {
		if spec.Doc != nil || spec.Comment != nil {
			return src // jennifer writes none; keep anything unexpected as is
		}
		text := string(src[fset.Position(spec.Pos()).Offset:fset.Position(spec.End()).Offset])
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return src
		}
		if isStandard(path) {
			std = append(std, text)
		} else {
			other = append(other, text)
		}
	}
	if len(std) == 0 || len(other) == 0 {
		return src
	}
	b.Reset()
	b.Grow(len(src) + 2)
	b.Write(src[:start])
	b.WriteString(strings.Join(std, "\n\t"))
	b.WriteString("\n\n\t")
	b.WriteString(strings.Join(other, "\n\t"))
	b.Write(src[end:])
	return b.Bytes()
}

// isStandard reports whether an import path belongs to the standard
// library: its first element has no dot ("encoding/json", not
// "github.com/...").
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
