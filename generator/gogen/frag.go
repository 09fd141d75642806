package gogen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// frag is the Go text of an expression, with the package-qualified names
// in it kept apart so that whoever writes it knows what to import. The
// same frag goes into a jennifer tree (jen, for the files jennifer
// renders) or is written directly (gofile.frag): the rules of the codec
// and the Shapes are built once, in one place, for both.
type frag []piece

// piece is text as it is, or, when path is set, the name text of the
// package at path.
type piece struct{ text, path string }

// raw is text that names no package.
func raw(text string) piece { return piece{text: text} }

// qual is name of the package at path.
func qual(path, name string) piece { return piece{text: name, path: path} }

// jen is f as jennifer code: the text as operators (written as they
// are), the qualified names as jen.Qual, so that the file imports them.
func (f frag) jen() *jen.Statement {
	s := jen.Null()
	for _, p := range f {
		if p.path != "" {
			s.Qual(p.path, p.text)
		} else {
			s.Op(p.text)
		}
	}
	return s
}

// fragWriter builds a frag from text and qualified names; frag returns
// it. Text between two names is gathered in one buffer, not by adding
// strings together.
type fragWriter struct {
	f    frag
	text []byte // not in f yet
}

func (w *fragWriter) raw(s string) { w.text = append(w.text, s...) }

func (w *fragWriter) qual(path, name string) {
	w.flush()
	w.f = append(w.f, qual(path, name))
}

func (w *fragWriter) flush() {
	if len(w.text) > 0 {
		w.f = append(w.f, raw(string(w.text)))
		w.text = w.text[:0]
	}
}

// frag is what was written.
func (w *fragWriter) frag() frag {
	w.flush()
	return w.f
}

func (w *fragWriter) add(f frag) {
	for _, p := range f {
		if p.path != "" {
			w.qual(p.path, p.text)
		} else {
			w.raw(p.text)
		}
	}
}

// keyed writes the fields of a composite literal on one line, in the
// order given ({K: v, ...}).
func (w *fragWriter) keyed(fields []field) {
	w.raw("{")
	for i, fl := range fields {
		if i > 0 {
			w.raw(", ")
		}
		w.raw(fl.key + ": ")
		w.add(fl.value)
	}
	w.raw("}")
}

// field is one key: value of a composite literal.
type field struct {
	key   string
	value frag
}

func text(s string) frag { return frag{raw(s)} }

// quote is a string literal as jennifer writes one (jen.Lit).
func quote(s string) string { return strconv.Quote(s) }

// floatLit is a float64 literal as jennifer writes one (jen.Lit): Go
// syntax, with ".0" when it would read as an integer.
func floatLit(f float64) string {
	out := fmt.Sprintf("%#v", f)
	if !strings.Contains(out, ".") && !strings.Contains(out, "e") {
		out += ".0"
	}
	return out
}
