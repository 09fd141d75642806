package load

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is one problem in the user's input, located as precisely as the
// input allows. It prints as
//
//	catalogue/item-updated.json:12:5: /properties/sku: expected "string", got 3
//
// File is relative to the schema directory; Line and Col are 1-based (Col
// counts bytes) and zero when the place is unknown; Pointer is an RFC 6901
// JSON pointer into File ("" is the whole document).
type Error struct {
	File    string // slash-separated path relative to the schema directory
	Line    int    // 1-based line, 0 if unknown
	Col     int    // 1-based byte column, 0 if unknown
	Pointer string // JSON pointer into File; "" for the document itself
	Msg     string // what is wrong and what was expected
	// Root marks an error about the root value, whose pointer "" would
	// print as nothing: "expected object, got an array" must say of what,
	// as every error below the root does. It prints as (root), and it
	// tells such an error apart from one about the file as a whole (a
	// syntax error, a missing package name), which has no pointer.
	Root bool
}

// Error prints the error on one line. Characters that are not printable
// (line breaks, terminal escapes, invalid UTF-8), which schema text and
// file names can hold, are written as Go escapes such as \n: an
// [ErrorList] is one error per line, and a terminal must not interpret
// what a schema says.
func (e *Error) Error() string {
	return escapeUnprintable(e.text())
}

func (e *Error) text() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	switch {
	case e.Pointer != "":
		b.WriteString(e.Pointer)
		b.WriteString(": ")
	case e.Root:
		// As the runtime's validation errors show the root.
		b.WriteString("(root): ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList collects every [Error] of a run, so that a user sees all the
// problems at once instead of fixing them one build at a time.
type ErrorList []*Error

// Add appends e.
func (l *ErrorList) Add(e *Error) { *l = append(*l, e) }

// Addf appends an error without a position, for problems that belong to a
// file as a whole (or to no file, when file is "").
func (l *ErrorList) Addf(file, pointer, format string, args ...any) {
	l.Add(&Error{File: file, Pointer: pointer, Msg: fmt.Sprintf(format, args...)})
}

// Len reports how many errors were collected.
func (l ErrorList) Len() int { return len(l) }

// Sort orders the errors by file, line, column, pointer and message, and
// drops exact duplicates, so that output is stable.
func (l *ErrorList) Sort() {
	slices.SortFunc(*l, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Pointer, b.Pointer),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	*l = slices.CompactFunc(*l, func(a, b *Error) bool { return *a == *b })
}

// Err returns the list, sorted and without duplicates, as an error, or nil
// when it is empty. It sorts a copy: l is a value, and compacting its
// backing array in place would leave nil entries behind in the caller's
// list, which still has its old length.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	out := slices.Clone(l)
	out.Sort()
	return out
}

// Error prints one error per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each error to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// WithoutFollowOns returns the errors of more that are not at, or below,
// the place of an error of l in the same file. When [Load] returns the
// directory together with its errors, it has read around the values those
// errors name: a later check finds such a value left out, and what it says
// there is the same mistake again (a default that does not fit), not a
// problem of its own.
func (l ErrorList) WithoutFollowOns(more ErrorList) ErrorList {
	var out ErrorList
	for _, e := range more {
		if !slices.ContainsFunc(l, func(r *Error) bool {
			return r.File == e.File && (e.Pointer == r.Pointer || strings.HasPrefix(e.Pointer, r.Pointer+"/"))
		}) {
			out = append(out, e)
		}
	}
	return out
}

// escapeUnprintable writes every rune of s that strconv.IsPrint rejects,
// and every invalid byte, as a Go escape.
func escapeUnprintable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
