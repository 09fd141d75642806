package docgen

// Rendering of schema text for the catalogue. Schema text is
// written by anyone who can open a pull request, and lands in Markdown
// tables, paragraphs and a Mermaid diagram: each place has its own escaping,
// so that no description can break the page's structure or smuggle HTML.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// htmlEscaper keeps schema text from opening HTML tags (which GitHub would
// swallow or render) and from starting a blockquote with '>'.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// mdCell renders prose for one table cell: HTML escaped, '|' escaped so it
// cannot end the cell, line breaks as <br> so they cannot end the row.
func mdCell(s string) string {
	s = htmlEscaper.Replace(strings.ReplaceAll(s, "\r", ""))
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "<br>")
}

// mdText renders prose as paragraphs: HTML escaped, and with what would
// turn a line into a heading, a code fence or a rule escaped. Other
// Markdown (emphasis, links, lists) is kept: descriptions may use it.
func mdText(s string) string {
	s = htmlEscaper.Replace(strings.ReplaceAll(s, "\r", ""))
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, line := range lines {
		// Indentation would make a code block.
		line = strings.TrimLeft(line, " \t")
		if startsBlock(line) {
			line = `\` + line
		}
		lines[i] = line
	}
	return strings.Join(lines, "\n")
}

// startsBlock reports whether a line would open a heading or a code fence,
// or be read as a rule or a setext underline.
func startsBlock(line string) bool {
	if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
		return true
	}
	trimmed := strings.TrimSpace(line)
	return trimmed != "" && strings.Trim(trimmed, "-=*_ ") == ""
}

// mdCode renders s as an inline code span that is also safe in a table
// cell: a backtick in s gets a longer fence, '|' is escaped (GitHub
// removes the backslash inside tables) and line breaks become spaces.
func mdCode(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ")), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// mermaidLabel escapes text for a quoted Mermaid label with Mermaid's
// entity codes: '#' first of all (it starts an entity, and binding patterns
// use it), then what would end the label or the edge.
var mermaidLabel = strings.NewReplacer(
	"#", "#35;", `"`, "#quot;", "<", "#lt;", ">", "#gt;", "|", "#124;", "`", "#96;",
	"\r", "", "\n", " ",
).Replace

// scalarGo names the Go types of the kinds that have no parts.
var scalarGo = map[model.Kind]string{
	model.String: "string", model.Int: "int64", model.Float: "float64",
	model.Bool: "bool", model.Time: "time.Time", model.Raw: "json.RawMessage",
}

// goTypeMD renders a Go type as Markdown: code spans, with the declared
// types linked to their section of the page.
func goTypeMD(r model.Ref, pointer bool) string {
	var b strings.Builder
	var plain string // text not yet written, merged into one code span
	flush := func() {
		if plain != "" {
			b.WriteString(mdCode(plain))
			plain = ""
		}
	}
	var walk func(r model.Ref, pointer bool)
	walk = func(r model.Ref, pointer bool) {
		if pointer {
			plain += "*"
		}
		if name, ok := scalarGo[r.Kind]; ok {
			plain += name
			return
		}
		switch r.Kind {
		case model.Named:
			flush()
			anchor := typeAnchor(r.Type)
			if r.Type.Fact != nil {
				anchor = factAnchor(r.Type.Fact)
			}
			fmt.Fprintf(&b, "[%s](#%s)", mdCode(r.Type.GoName), anchor)
		case model.Slice:
			plain += "[]"
			walk(*r.Elem, r.Elem.Nullable && !r.Elem.HasNil())
		case model.Map:
			plain += "map[string]"
			walk(*r.Elem, r.Elem.Nullable && !r.Elem.HasNil())
		}
	}
	walk(r, pointer)
	flush()
	return b.String()
}

// constraints describes the keywords of a schema that its Go type cannot
// express (the embedded schema enforces them), and its default, as
// Markdown for a table cell. It reads the loader's typed view, so a bound
// means the same in every draft (draft-04's boolean exclusiveMinimum is
// settled there).
func constraints(schema *load.Schema, def any) string {
	var notes []string
	if schema != nil {
		notes = schemaNotes(schema)
	}
	if def != nil {
		notes = append(notes, "default "+mdCode(jsonLiteral(def)))
	}
	return strings.Join(notes, ", ")
}

// schemaNotes lists the constraints of one schema node.
func schemaNotes(s *load.Schema) []string {
	var notes []string
	if s.Format != "" {
		notes = append(notes, "format "+mdCode(s.Format))
	}
	if p, ok := s.Keywords["pattern"].(string); ok {
		notes = append(notes, "pattern "+mdCode(p))
	}
	notes = appendBound(notes, s.Minimum, "≥ ", "> ")
	notes = appendBound(notes, s.Maximum, "≤ ", "< ")
	for _, kw := range []struct{ key, text string }{
		{"multipleOf", "multiple of "},
		{"minLength", "length ≥ "}, {"maxLength", "length ≤ "},
		{"minItems", "items ≥ "}, {"maxItems", "items ≤ "},
		{"minProperties", "properties ≥ "}, {"maxProperties", "properties ≤ "},
	} {
		if v, ok := s.Keywords[kw.key]; ok {
			notes = append(notes, kw.text+jsonLiteral(v))
		}
	}
	if s.Keywords["uniqueItems"] == true {
		notes = append(notes, "unique items")
	}
	if s.Items != nil && s.Items.Bool == nil {
		if n := schemaNotes(s.Items); len(n) > 0 {
			notes = append(notes, "each item: "+strings.Join(n, ", "))
		}
	}
	return notes
}

// appendBound adds a numeric bound, inclusive or exclusive as settled.
func appendBound(notes []string, b *load.Bound, inclusive, exclusive string) []string {
	switch {
	case b == nil:
		return notes
	case b.Exclusive:
		return append(notes, exclusive+b.Value.String())
	}
	return append(notes, inclusive+b.Value.String())
}

// jsonLiteral writes a decoded JSON value back as JSON.
func jsonLiteral(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
