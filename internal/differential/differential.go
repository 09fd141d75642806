// Package differential checks generated validation against the reference
// validator: the same bytes must be accepted or rejected by both. It
// derives documents from samples (a property dropped, a value replaced by
// null, by a value of another type, by an edge value) so that every rule
// is crossed from both sides, and it names the inputs on which the two
// disagree by design (docs/CONFORMANCE.md).
package differential

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"
)

// Verdict is what one validator said of a document.
type Verdict struct {
	Reference, Generated error
}

// Agree reports whether both accepted or both rejected.
func (v Verdict) Agree() bool { return (v.Reference == nil) == (v.Generated == nil) }

func (v Verdict) String() string {
	say := func(err error) string {
		if err == nil {
			return "accepted"
		}
		return "rejected (" + err.Error() + ")"
	}
	return fmt.Sprintf("reference %s, generated %s", say(v.Reference), say(v.Generated))
}

// ByDesign says why the two validators may disagree on data, or "": the
// documented differences that come from the Go types and the tokenizer,
// not from a rule.
func ByDesign(data []byte) string {
	if !utf8.Valid(data) {
		return "invalid UTF-8 (the reference reads it as U+FFFD, the generated decoding keeps the bytes)"
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "" // not JSON: both must reject it
	}
	if dec.More() {
		return ""
	}
	if dupKeys(data) {
		return "an object with a member name twice (the reference keeps the last, the generated decoding checks each)"
	}
	return walk(v)
}

func walk(v any) string {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(x.String())
		if !ok {
			return ""
		}
		if r.IsInt() && !r.Num().IsInt64() {
			return "an integer beyond 64 bits (" + x.String() + ")"
		}
		if !r.IsInt() {
			digits := strings.TrimLeft(strings.NewReplacer(".", "", "-", "", "+", "").Replace(strings.SplitN(strings.ToLower(x.String()), "e", 2)[0]), "0")
			if len(digits) > 15 {
				return "a number with more digits than a float64 holds (" + x.String() + ")"
			}
		}
		if f, _ := x.Float64(); f > 1e300 || f < -1e300 {
			return "a number beyond float64 (" + x.String() + ")"
		}
	case map[string]any:
		for _, e := range x {
			if why := walk(e); why != "" {
				return why
			}
		}
	case []any:
		for _, e := range x {
			if why := walk(e); why != "" {
				return why
			}
		}
	}
	return ""
}

// dupKeys reports whether any object in data names a member twice.
func dupKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string token of an object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			if top != nil && top.obj && top.key {
				if top.keys[t] {
					return true
				}
				top.keys[t] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.obj {
			top.key = true
		}
	}
}

// Mutations returns documents derived from a JSON sample: for every value
// in it, the document with that value replaced by null, by a value of each
// other JSON type and by edge values of its own type, and, for every
// object member, the document without it and with an unknown member
// beside it.
func Mutations(sample []byte) [][]byte {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(sample))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil
	}
	var out [][]byte
	emit := func(v any) {
		b, err := json.Marshal(v)
		if err == nil {
			out = append(out, b)
		}
	}
	var visit func(path []any)
	visit = func(path []any) {
		cur := get(doc, path)
		for _, repl := range replacements(cur) {
			emit(set(doc, path, repl))
		}
		switch x := cur.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				emit(set(doc, path, without(x, k)))
				visit(append(slices.Clone(path), k))
			}
			emit(set(doc, path, with(x, "zz_unknown", true)))
		case []any:
			for i := range x {
				visit(append(slices.Clone(path), i))
			}
			if len(x) > 0 {
				emit(set(doc, path, append(slices.Clone(x), x[0])))
				emit(set(doc, path, []any{}))
			}
		}
	}
	visit(nil)
	return out
}

func replacements(v any) []any {
	all := []any{nil, true, "", "x", json.Number("0"), json.Number("-1"), json.Number("1.5"), []any{}, map[string]any{}}
	switch x := v.(type) {
	case string:
		all = append(all, strings.Repeat("A", 300), strings.ToUpper(x), x+" ", "é", "not-a-date", "2024-05-01T10:00:00Z", "a@example.com")
	case json.Number:
		all = append(all, json.Number("1e3"), json.Number("1.0"), json.Number("100000000"), json.Number("0.01"), json.Number(x.String()+"1"))
	}
	return all
}

func get(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

// set returns a copy of root with the value at path replaced.
func set(root any, path []any, repl any) any {
	if len(path) == 0 {
		return repl
	}
	switch k := path[0].(type) {
	case string:
		m := root.(map[string]any)
		c := make(map[string]any, len(m))
		for kk, vv := range m {
			c[kk] = vv
		}
		c[k] = set(m[k], path[1:], repl)
		return c
	case int:
		s := slices.Clone(root.([]any))
		s[k] = set(s[k], path[1:], repl)
		return s
	}
	return root
}

func without(m map[string]any, key string) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			c[k] = v
		}
	}
	return c
}

func with(m map[string]any, key string, v any) map[string]any {
	c := without(m, key)
	c[key] = v
	return c
}

// Narrowed says why a document the reference accepted may be refused by
// the generated decoding because its Go type holds less than the schema
// allows, or "": a time.Time field (format date-time) takes only RFC 3339
// text, even where the manifest does not assert date-time; and a fact's
// payload whose schema names members but no type is a struct, which holds
// only an object.
func Narrowed(v Verdict) string {
	if v.Reference == nil && v.Generated != nil && strings.Contains(v.Generated.Error(), "a date-time (RFC 3339)") {
		return "a time.Time holds only RFC 3339 date-times"
	}
	if v.Reference == nil && v.Generated != nil && strings.HasPrefix(v.Generated.Error(), "(root): an object, got ") {
		// Only a root without "type" gets here: with one, the reference
		// refuses a value of another type too.
		return "a fact's payload schema that names members but no type is read as an object"
	}
	return ""
}
