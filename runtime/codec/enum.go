package codec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/go-faster/jx"
)

// canonical returns text that is the same for equal JSON values and
// differs otherwise: numbers by value (1, 1.0 and 1e0 alike), object
// members in order of name, strings quoted (so "1" is not 1).
func canonical(data []byte) string {
	if s, ok := plainScalar(data); ok {
		return s
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(data)
	}
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

// plainScalar is the canonical form of a value whose text already is
// one: true, false, null, an integer without sign or leading zero, a
// string of printable ASCII without escapes.
func plainScalar(data []byte) (string, bool) {
	switch s := string(data); s {
	case "true", "false", "null":
		return s, true
	}
	if len(data) >= 2 && data[0] == '"' && data[len(data)-1] == '"' {
		for _, c := range data[1 : len(data)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return "", false
			}
		}
		return string(data), true
	}
	if len(data) > 0 && data[0] >= '1' && data[0] <= '9' {
		for _, c := range data {
			if c < '0' || c > '9' {
				return "", false
			}
		}
		return string(data), true
	}
	return "", false
}

func writeCanonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		if r, ok := new(big.Rat).SetString(x.String()); ok {
			b.WriteString(r.RatString())
		} else {
			b.WriteString(x.String())
		}
	case string:
		b.WriteString(strconv.Quote(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	}
}

// Enum is the set of values an enum or const allows, compared as JSON
// values (1 and 1.0 alike), for Go types that are not an enum type of
// their own: numbers and raw JSON.
type Enum struct {
	set   map[string]bool
	shown string
}

// EnumOf returns the enum of the given JSON texts.
func EnumOf(values ...string) *Enum {
	e := &Enum{set: make(map[string]bool, len(values))}
	for _, v := range values {
		e.set[canonical([]byte(v))] = true
	}
	e.shown = strings.Join(values, ", ")
	if len(values) == 1 {
		e.shown = "the constant " + e.shown
	} else {
		e.shown = "one of " + e.shown
	}
	return e
}

// CheckJSON checks one JSON value.
func (e *Enum) CheckJSON(raw []byte) error {
	if !e.set[canonical(raw)] {
		return Expect(e.shown)
	}
	return nil
}

func (e *Enum) check(canon string) error {
	if !e.set[canon] {
		return Expect(e.shown)
	}
	return nil
}

// Any checks a value kept as raw JSON: its JSON type and an enum.
type Any struct {
	Types []string // nil: any; "number" includes "integer"
	Enum  *Enum
}

// Check checks raw, which must be one JSON value in valid UTF-8 (see
// [CheckRaw]); nil (an absent value) is not checked.
func (c *Any) Check(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	if err := CheckRaw(raw); err != nil {
		return err
	}
	return c.rules(raw)
}

// rules checks raw, read from a body known to be valid UTF-8.
func (c *Any) rules(raw json.RawMessage) error {
	if c.Types != nil {
		t := jsonType(raw)
		if !slices.Contains(c.Types, t) && (t != "integer" || !slices.Contains(c.Types, "number")) {
			return Expect("a value of type " + strings.Join(c.Types, " or ") + ", got " + t)
		}
	}
	if c.Enum == nil {
		return nil
	}
	return c.Enum.CheckJSON(raw)
}

// Raw reads any JSON value and checks it.
func (c *Any) Raw(d *jx.Decoder) (json.RawMessage, error) {
	raw, err := Raw(d)
	if err != nil {
		return raw, err
	}
	return raw, c.rules(raw)
}

// Flag checks a boolean against an enum or const.
type Flag struct {
	Enum *Enum
}

// Check checks b.
func (c *Flag) Check(b bool) error { return c.Enum.check(strconv.FormatBool(b)) }

// Bool reads a boolean and checks it.
func (c *Flag) Bool(d *jx.Decoder) (bool, error) {
	b, err := Bool(d)
	if err != nil {
		return b, err
	}
	return b, c.Check(b)
}

// jsonType is the JSON Schema type of one JSON value.
func jsonType(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	r, ok := new(big.Rat).SetString(string(bytes.TrimRight(raw, " \t\r\n")))
	if ok && r.IsInt() {
		return "integer"
	}
	return "number"
}

// Distinct checks a slice of strings, numbers or booleans (or generated
// types of them) against c: for these, Go equality is JSON equality, so
// uniqueness needs no encoding.
func Distinct[T comparable](c *Array, items []T) error {
	if err := c.Check(len(items), nil); err != nil || !c.Unique || len(items) < 2 {
		return err
	}
	seen := make(map[T]int, len(items))
	for i, x := range items {
		if j, dup := seen[x]; dup {
			return Expect("unique items; items " + strconv.Itoa(j) + " and " + strconv.Itoa(i) + " are equal")
		}
		seen[x] = i
	}
	return nil
}

// Strings is the set of values of a string enum type, for its generated
// Validate: Sorted in byte order, what Check expects said as Expected
// ("one of \"new\", \"done\""). Generated code declares one per enum type as
// a package-level literal, which the compiler lays out as data.
type Strings struct {
	Sorted   []string
	Expected string
}

// Check checks that s is one of the values.
func (c *Strings) Check(s string) error { return oneOf(c.Sorted, s, c.Expected) }

// Ints is Strings for an integer enum type.
type Ints struct {
	Sorted   []int64
	Expected string
}

// Check checks that i is one of the values.
func (c *Ints) Check(i int64) error { return oneOf(c.Sorted, i, c.Expected) }

func oneOf[T cmp.Ordered](sorted []T, v T, expected string) error {
	if _, ok := slices.BinarySearch(sorted, v); !ok {
		return Expect(expected)
	}
	return nil
}

// Read reads a string into *v, the string of an enum type, and checks
// that it is one of the values: a generated DecodeJSON, which converts
// its receiver (not a generic function, compiled for every enum type).
func (c *Strings) Read(d *jx.Decoder, v *string) error {
	s, err := Str(d)
	if err != nil {
		return err
	}
	*v = s
	return c.Check(s)
}

// Read reads an integer into *v, the integer of an enum type, and checks
// that it is one of the values; see [Strings.Read].
func (c *Ints) Read(d *jx.Decoder, v *int64) error {
	i, err := Int64(d)
	if err != nil {
		return err
	}
	*v = i
	return c.Check(i)
}
