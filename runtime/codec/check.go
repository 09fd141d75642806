package codec

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/schemaset"
)

// The rules of one value beyond its Go type, as generated code declares
// them once per property: var checkOrderID = codec.String{MinLength: 1,
// MaxLength: 64, Pattern: codec.Regexp(`^ORD-`)}.

// String checks a string: its length in code points (as JSON Schema
// counts), a pattern and an asserted format.
type String struct {
	MinLength int      // 0: no minimum
	MaxLength int      // -1: no maximum
	Pattern   *Pattern // nil: none
	Format    *Format  // nil: none asserted
	Enum      *Enum    // nil: none
}

// Check checks s.
func (c *String) Check(s string) error {
	if c.MinLength > 0 || c.MaxLength >= 0 {
		n := utf8.RuneCountInString(s)
		if n < c.MinLength {
			return Expect("at least " + plural(c.MinLength, "character"))
		}
		if c.MaxLength >= 0 && n > c.MaxLength {
			return Expect("at most " + plural(c.MaxLength, "character"))
		}
	}
	if c.Pattern != nil {
		if err := c.Pattern.Check(s); err != nil {
			return err
		}
	}
	if c.Format != nil {
		if err := c.Format.Check(s); err != nil {
			return err
		}
	}
	if c.Enum != nil {
		return c.Enum.check(strconv.Quote(s))
	}
	return nil
}

// Str reads a string and checks it.
func (c *String) Str(d *jx.Decoder) (string, error) {
	s, err := Str(d)
	if err != nil {
		return s, err
	}
	return s, c.Check(s)
}

// Time reads a date-time, checking its text first: an asserted
// date-time format is stricter than Go's RFC 3339 parser (a one-digit
// hour). A time.Time built in Go always writes valid text.
func (c *String) Time(d *jx.Decoder) (time.Time, error) {
	s, err := Str(d)
	if err != nil {
		return time.Time{}, err
	}
	if err := c.Check(s); err != nil {
		return time.Time{}, err
	}
	var t time.Time
	if err := t.UnmarshalText([]byte(s)); err != nil {
		return time.Time{}, Wrap(err, "a date-time (RFC 3339)")
	}
	return t, nil
}

// Pattern is a regular expression compiled on first use, as the
// reference validator compiles "pattern" (Go's regexp, unanchored).
type Pattern struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
	err  error
}

// Regexp returns the pattern expr.
func Regexp(expr string) *Pattern { return &Pattern{expr: expr} }

// Check reports whether s matches.
func (p *Pattern) Check(s string) error {
	p.once.Do(func() { p.re, p.err = regexp.Compile(p.expr) })
	if p.err != nil {
		return Wrap(p.err, "a schema whose pattern compiles")
	}
	if !p.re.MatchString(s) {
		return Expect("a string matching " + strconv.Quote(p.expr))
	}
	return nil
}

// Format is an asserted "format", checked by the same code the reference
// validator uses for it (runtime/schemaset).
type Format struct {
	name  string
	check func(string) error
}

// FormatOf returns the check of the format name.
func FormatOf(name string) *Format { return &Format{name: name, check: schemaset.FormatChecker(name)} }

// Check checks s.
func (f *Format) Check(s string) error {
	if err := f.check(s); err != nil {
		return Wrap(err, "a valid "+f.name)
	}
	return nil
}

// Int checks an integer: Min <= v <= Max (exclusive bounds are made
// inclusive by the generator) and a multiple of MultipleOf.
type Int struct {
	Min, Max   int64
	MultipleOf int64 // 0: none
}

// Check checks v.
func (c *Int) Check(v int64) error {
	if v < c.Min {
		return Expect("at least " + strconv.FormatInt(c.Min, 10))
	}
	if v > c.Max {
		return Expect("at most " + strconv.FormatInt(c.Max, 10))
	}
	if c.MultipleOf != 0 && v%c.MultipleOf != 0 {
		return Expect("a multiple of " + strconv.FormatInt(c.MultipleOf, 10))
	}
	return nil
}

// Int reads an integer and checks it.
func (c *Int) Int(d *jx.Decoder) (int64, error) {
	v, err := Int64(d)
	if err != nil {
		return v, err
	}
	return v, c.Check(v)
}

// Float checks a number against bounds and multipleOf.
type Float struct {
	Min, Max                   float64 // math.Inf for none
	ExclusiveMin, ExclusiveMax bool
	MultipleOf                 *big.Rat // nil: none
	Enum                       *Enum    // nil: none
}

// Check checks v.
func (c *Float) Check(v float64) error {
	switch {
	case c.ExclusiveMin && v <= c.Min:
		return Expect("more than " + formatFloat(c.Min))
	case v < c.Min:
		return Expect("at least " + formatFloat(c.Min))
	case c.ExclusiveMax && v >= c.Max:
		return Expect("less than " + formatFloat(c.Max))
	case v > c.Max:
		return Expect("at most " + formatFloat(c.Max))
	}
	if c.MultipleOf != nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
		// The shortest decimal that reads back as v: the text of the
		// number as it was written, unless it had more digits than a
		// float64 holds.
		r, _ := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
		if !r.Quo(r, c.MultipleOf).IsInt() {
			return Expect("a multiple of " + c.MultipleOf.RatString())
		}
	}
	if c.Enum != nil {
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
		if !ok {
			return Expect(c.Enum.shown)
		}
		return c.Enum.check(r.RatString())
	}
	return nil
}

// Float reads a number and checks it.
func (c *Float) Float(d *jx.Decoder) (float64, error) {
	v, err := Float64(d)
	if err != nil {
		return v, err
	}
	return v, c.Check(v)
}

// Rat returns the exact value of a decimal literal, for Float.MultipleOf.
func Rat(decimal string) *big.Rat {
	r, ok := new(big.Rat).SetString(decimal)
	if !ok {
		panic("codec: " + decimal + " is not a number") // generated code writes literals
	}
	return r
}

// Array checks the number of items and, with Unique, that no two are the
// same JSON value.
type Array struct {
	MinItems int // 0: no minimum
	MaxItems int // -1: no maximum
	Unique   bool
}

// Check checks an array of n items; key returns the canonical JSON of
// item i (used only when Unique is set; nil: uniqueness is checked by the
// caller).
func (c *Array) Check(n int, key func(i int) string) error {
	if n < c.MinItems {
		return Expect("at least " + plural(c.MinItems, "item"))
	}
	if c.MaxItems >= 0 && n > c.MaxItems {
		return Expect("at most " + plural(c.MaxItems, "item"))
	}
	if c.Unique && n > 1 && key != nil {
		seen := make(map[string]int, n)
		for i := range n {
			k := key(i)
			if j, dup := seen[k]; dup {
				return Expect("unique items; items " + strconv.Itoa(j) + " and " + strconv.Itoa(i) + " are equal")
			}
			seen[k] = i
		}
	}
	return nil
}

// Items checks a slice, with enc writing an item's JSON for uniqueness.
func Items[T any](c *Array, items []T, enc func(*jx.Encoder, T)) error {
	return c.Check(len(items), func(i int) string {
		var e jx.Encoder
		enc(&e, items[i])
		return canonical(e.Bytes())
	})
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

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

// Each checks every item of a slice with check, naming the failing index.
func Each[T any](items []T, check func(T) error) error {
	for i, x := range items {
		if err := check(x); err != nil {
			return AtIndex(err, i)
		}
	}
	return nil
}

// EachValue checks every value of a map with check, naming the member.
func EachValue[T any](m map[string]T, check func(T) error) error {
	for k, x := range m {
		if err := check(x); err != nil {
			return AtField(err, k)
		}
	}
	return nil
}

// CountSet counts the true values: the branches of a union that are set.
func CountSet(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
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

// Check checks raw; nil (an absent value) is not checked.
func (c *Any) Check(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
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
	return raw, c.Check(raw)
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
