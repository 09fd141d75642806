package gogen

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// schemasDirect is genSchemas written directly (gofile): the map of every
// embedded schema file, one a line, its keys aligned as gofmt aligns them.
// A package with schema IDs or asserted formats (schemaset.NewWith), or a
// key gofmt might not align (longer than 40 columns), is left to
// genSchemas, as are the rare packages of one schema or none.
func (e *emitter) schemasDirect(g *gofile) {
	if len(e.m.SchemaIDs) > 0 || len(e.m.AssertFormats) > 0 || len(e.m.Schemas) < 2 {
		g.ok = false
		return
	}
	type entry struct{ key, value string }
	entries := make([]entry, len(e.m.Schemas))
	for i, s := range e.m.Schemas {
		key := quote(s.Path)
		if len(key) > 40 || strings.ContainsAny(key, " ({[") {
			g.ok = false
			return
		}
		entries[i] = entry{key, stringLitText(string(s.JSON))}
	}
	// in order of the keys as written, as jennifer writes a Dict
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	g.decl()
	g.doc(0, docLines(schemasDoc))
	g.line(0, "var "+schemaSetVar+" = "+g.q(schemasetPath, "New")+"(map[string]string{")
	for _, en := range entries {
		g.row(1, en.value+",", en.key+":")
	}
	g.line(0, "})")
}

// stringLitText is stringLit's text.
func stringLitText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsAny(s, "`\x00\r\uFEFF") {
		return "`" + s + "`"
	}
	return quote(s)
}
