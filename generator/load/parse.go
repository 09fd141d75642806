package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth is how deeply arrays and objects may nest. No schema needs more,
// and the bound keeps hostile input cheap: the positions of a document
// nested n deep take memory in n squared (each value's pointer names its
// ancestors), and several passes recurse as deep as the document.
const maxDepth = 1000

// maxExponent bounds the exponent of a number. JSON allows any, but a
// bound such as 1e99999999 is read exactly by no validator (math/big
// gives up on it, and the one that checks schemas and payloads panics),
// and a bound beyond float64 or int64 needs an exponent of a few hundred
// at most.
const maxExponent = 10000

// parser reads JSON byte by byte, recording the offset of every value and
// property name as it goes. It decodes exactly as encoding/json does
// (numbers as json.Number); encoding/json's streaming Token API, used
// before, allocated and formatted a discarded error for every scalar and
// made parsing three times the cost of a plain json.Unmarshal.
//
// On a syntax error it asks json.Unmarshal for the message and the offset,
// so that errors read as the standard library's.
type parser struct {
	doc *Document
	src []byte
	pos int
}

var errSyntax = errors.New("syntax error")

// skipSpace moves past JSON whitespace.
func (p *parser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

// value reads the value that starts at p.pos (after whitespace) and is
// found at pointer; keyOff is where its property name starts, or -1.
func (p *parser) value(pointer string, keyOff, depth int) (any, error) {
	p.skipSpace()
	start := p.pos
	if start >= len(p.src) {
		return nil, p.syntax(start)
	}
	var v any
	var err error
	switch c := p.src[start]; {
	case (c == '{' || c == '[') && depth >= maxDepth:
		// No pointer: at this depth it would be thousands of characters long.
		return nil, p.doc.errorAt(start, "", "arrays and objects nested more than %d deep", maxDepth)
	case c == '{':
		p.doc.spans[pointer] = span{key: keyOff, value: start}
		return p.object(pointer, depth+1)
	case c == '[':
		p.doc.spans[pointer] = span{key: keyOff, value: start}
		return p.array(pointer, depth+1)
	case c == '"':
		v, err = p.string()
	case c == '-' || c >= '0' && c <= '9':
		var n json.Number
		if n, err = p.number(); err == nil && hugeExponent(n) {
			return nil, p.doc.errorAt(start, pointer, "number %s: expected an exponent from -%d to %d (no validator reads this one exactly, and no schema needs one beyond)", shortNumber(n), maxExponent, maxExponent)
		}
		v = n
	default:
		v, err = p.literal()
	}
	if err != nil {
		return nil, err
	}
	p.doc.spans[pointer] = span{key: keyOff, value: start}
	return v, nil
}

func (p *parser) object(pointer string, depth int) (any, error) {
	obj := make(map[string]any)
	p.pos++ // '{'
	if p.skipSpace(); p.peek() == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.skipSpace()
		koff := p.pos
		if p.peek() != '"' {
			return nil, p.syntax(koff)
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		child := Append(pointer, key)
		if _, dup := obj[key]; dup {
			return nil, p.doc.errorAt(koff, child, "duplicate property %s", strconv.Quote(key))
		}
		if p.skipSpace(); p.peek() != ':' {
			return nil, p.syntax(p.pos)
		}
		p.pos++
		v, err := p.value(child, koff, depth)
		if err != nil {
			return nil, err
		}
		obj[key] = v
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.syntax(p.pos)
		}
	}
}

func (p *parser) array(pointer string, depth int) (any, error) {
	arr := []any{}
	p.pos++ // '['
	if p.skipSpace(); p.peek() == ']' {
		p.pos++
		return arr, nil
	}
	for i := 0; ; i++ {
		v, err := p.value(AppendIndex(pointer, i), -1, depth)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return arr, nil
		default:
			return nil, p.syntax(p.pos)
		}
	}
}

// peek returns the byte at p.pos, or 0 at the end of the input (0 is never
// valid where peek is used).
func (p *parser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

// string reads a string literal. Plain ones (no escapes, valid UTF-8) are
// sliced out; the rest go through encoding/json, which owns the rules for
// escapes, surrogates and invalid UTF-8.
func (p *parser) string() (string, error) {
	start := p.pos
	plain := true
	for i := start + 1; i < len(p.src); i++ {
		switch c := p.src[i]; {
		case c == '"':
			p.pos = i + 1
			raw := p.src[start+1 : i]
			if plain && utf8.Valid(raw) {
				return string(raw), nil
			}
			var s string
			if err := json.Unmarshal(p.src[start:i+1], &s); err != nil {
				return "", p.syntax(start)
			}
			return s, nil
		case c == '\\':
			plain = false
			i++ // the escaped byte cannot end the string
		case c < ' ':
			return "", p.syntax(i)
		}
	}
	return "", p.syntax(len(p.src))
}

// number reads a number, checking the JSON grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (json.Number, error) {
	start, i := p.pos, p.pos
	src := p.src
	digits := func() bool {
		n := i
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
		return i > n
	}
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case !digits():
		return "", p.syntax(i)
	}
	if i < len(src) && src[i] == '.' {
		i++
		if !digits() {
			return "", p.syntax(i)
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if !digits() {
			return "", p.syntax(i)
		}
	}
	p.pos = i
	return json.Number(src[start:i]), nil
}

// hugeExponent reports whether n, a valid JSON number, has an exponent
// beyond maxExponent.
func hugeExponent(n json.Number) bool {
	i := strings.IndexAny(string(n), "eE")
	if i < 0 {
		return false
	}
	exp := strings.TrimLeft(strings.TrimLeft(string(n[i+1:]), "+-"), "0")
	if len(exp) > len(strconv.Itoa(maxExponent)) {
		return true
	}
	e, _ := strconv.Atoi(exp)
	return e > maxExponent
}

// shortNumber is n for a message: a number with thousands of digits is
// cut short.
func shortNumber(n json.Number) string {
	if len(n) > 40 {
		return string(n[:20]) + "..." + string(n[len(n)-15:])
	}
	return string(n)
}

func (p *parser) literal() (any, error) {
	for _, lit := range []struct {
		text  string
		value any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if bytes.HasPrefix(p.src[p.pos:], []byte(lit.text)) {
			p.pos += len(lit.text)
			return lit.value, nil
		}
	}
	return nil, p.syntax(p.pos)
}

// syntax reports a syntax error found at off. The message and offset come
// from json.Unmarshal of the whole file, which points at the offending
// byte the way Go programmers know.
func (p *parser) syntax(off int) error {
	var probe any
	err := json.Unmarshal(p.doc.Src, &probe)
	var se *json.SyntaxError
	switch {
	case err == nil:
		// Unreachable: the parser accepts exactly what Unmarshal does.
		return p.doc.errorAt(off, "", "invalid JSON: %v", errSyntax)
	case errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end"):
		return p.doc.errorAt(len(p.doc.Src), "", "invalid JSON: unexpected end of file")
	case errors.As(err, &se):
		// Offset counts the offending byte itself.
		at := max(0, int(se.Offset)-1)
		if comma, ok := trailingComma(p.doc.Src, at); ok {
			return p.doc.errorAt(comma, "", "invalid JSON: trailing comma before %q (JSON allows no comma after the last element)", p.doc.Src[at])
		}
		return p.doc.errorAt(at, "", "invalid JSON: %s", se.Error())
	default:
		return p.doc.errorAt(off, "", "invalid JSON: %v", err)
	}
}

// trailingComma reports whether the offending byte at off closes an object
// or array right after a comma, the most common slip in hand-written JSON
// (and one JavaScript allows), and returns where the comma is.
// encoding/json only says it was looking for a key or a value.
func trailingComma(src []byte, off int) (int, bool) {
	if off >= len(src) || src[off] != '}' && src[off] != ']' {
		return 0, false
	}
	i := off - 1
	for i >= 0 && (src[i] == ' ' || src[i] == '\t' || src[i] == '\r' || src[i] == '\n') {
		i--
	}
	return i, i >= 0 && src[i] == ','
}
