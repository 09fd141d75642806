package gogen

import (
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"
)

// docComment turns free text from a schema into // comment lines. It is the
// only way schema text enters generated code outside string literals: line
// breaks of any kind start a new // line, and characters that Go source
// cannot hold or that could confuse a reader (control characters, BOM,
// invalid UTF-8) become spaces or U+FFFD. Nothing can end the comment.
func docComment(paragraphs ...string) []jen.Code {
	lines := docLines(paragraphs...)
	out := make([]jen.Code, len(lines))
	for i, l := range lines {
		out[i] = jen.Comment(commentLine(l))
	}
	return out
}

// docLines is docComment's text: the sanitised, wrapped lines of the
// paragraphs, a blank line between two, for [commentLine].
func docLines(paragraphs ...string) []string {
	var lines []string
	for _, p := range paragraphs {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, commentLines(p)...)
	}
	return lines
}

// lineBreaks turns every line break Unicode knows into "\n".
var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u2028", "\n", "\u2029", "\n", "\u0085", "\n", "\v", "\n", "\f", "\n")

// commentLines splits text into sanitised lines, without leading or
// trailing blank lines.
func commentLines(text string) []string {
	if strings.ContainsFunc(text, func(r rune) bool { return r == '\r' || r == '\v' || r == '\f' || r >= 0x80 }) {
		text = lineBreaks.Replace(text) // the replacer allocates even when it finds nothing
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(sanitize(l), unicode.IsSpace)
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var wrapped []string
	for _, l := range lines {
		wrapped = append(wrapped, wrap(l)...)
	}
	return wrapped
}

// commentWidth is how much text a wrapped comment line holds after "// ".
// Generated code is read in pull requests, where long lines scroll.
const commentWidth = 76

// wrap breaks a line of prose at spaces so that it fits commentWidth. It
// leaves alone what doc-comment syntax gives a meaning to: indented lines
// (code blocks), list items and headings, and a word longer than the width
// (a URL) keeps a line of its own.
func wrap(line string) []string {
	if len(line) <= commentWidth || !isProse(line) {
		return []string{line}
	}
	var out []string
	var cur strings.Builder
	for _, word := range strings.Fields(line) {
		if cur.Len() > 0 && cur.Len()+1+len(word) > commentWidth {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	return append(out, cur.String())
}

func isProse(line string) bool {
	if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' {
		return false
	}
	first, _, _ := strings.Cut(line, " ")
	switch {
	case first == "-" || first == "*" || first == "+":
		return false
	case strings.HasSuffix(first, ".") && strings.Trim(first, "0123456789") == ".":
		return false // a numbered list item
	}
	return true
}

// commentLine renders one line as a // comment. jen writes a string that
// starts with "//" as it is, so the line cannot be reformatted into a
// /* */ block.
func commentLine(line string) string {
	line = sanitize(line)
	if strings.ContainsAny(line, "\n\r") {
		panic("gogen: comment line with a line break") // sanitize removes them
	}
	if line == "" {
		return "//"
	}
	return "// " + line
}

func sanitize(s string) string {
	if isPlainASCII(s) {
		return s // nothing to replace: the common case, so skip the rune loop
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return r
		case r == '\uFEFF', unicode.IsControl(r), r == '\u2028', r == '\u2029':
			return ' '
		}
		return r
	}, s)
}

// isPlainASCII reports whether s holds only printable ASCII and tabs, which
// sanitize leaves as they are.
func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x7f || c < ' ' && c != '\t' {
			return false
		}
	}
	return true
}
