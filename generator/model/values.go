package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/runtime/schemaset"
)

// A schema that no value can satisfy, and a value the schema itself
// refuses, are mistakes JSON Schema lets through: "default" is only an
// annotation, and an enum or a pair of bounds nothing satisfies is just a
// schema that rejects everything. warren turns these values into code (a
// typed constant per enum value and per default, "Default:" in the doc
// comment), so a value its schema refuses would be a constant that fails
// its own Validate, and a field no payload can fill would poison every
// fact. Both are refused here, naming the value and why it does not fit.

// A vendored file is the exception for a default: it is never edited,
// and the generated code does without a default (a default is only an
// annotation), so one its schema refuses is left out of the generated
// code, and `warren check` warns about it (rule vendored-default-refused).

// DroppedDefault is a default of a vendored file that its schema refuses,
// left out of the generated code.
type DroppedDefault struct {
	Doc     *load.Document
	Pointer string // the "default" keyword
	Value   any
	Why     string // what the schema says of the value
}

// checkValues checks every schema of the directory (not of its imports,
// which are checked where they are generated) for bounds that exclude each
// other and empty enums, and validates each default, enum value and const
// against the schema it is written in, with the validator generated code
// uses.
func (b *builder) checkValues() {
	set := b.valueSet()
	vendored := b.s.Vendored()
	visit := func(n *load.Schema) bool {
		if n.Keywords == nil {
			return true
		}
		// Up to draft-07 the keywords beside a $ref are ignored, its
		// default included: the value is checked against the $ref's
		// target, which is then the schema of the property.
		ignored := n.RefText != "" && n.RefAlone
		if !ignored && !b.checkSatisfiable(n) {
			return true // every value would fail again, for the same reason
		}
		if !ignored {
			if vals, ok := n.Keywords["enum"].([]any); ok {
				for i, v := range vals {
					b.checkValue(set, n, load.AppendIndex(load.Append(n.Pointer, "enum"), i), "enum value", v)
				}
			}
			if v, ok := n.Keywords["const"]; ok && n.Draft.Version >= 6 {
				b.checkValue(set, n, load.Append(n.Pointer, "const"), "const", v)
			}
		}
		if n.HasDefault {
			ptr := load.Append(n.Pointer, "default")
			if !vendored[n.Doc] {
				b.checkValue(set, n, ptr, "default", n.Default)
			} else if why := refusal(set, n, n.Default); why != "" {
				b.leftOut[n] = true
				b.dropped = append(b.dropped, DroppedDefault{Doc: n.Doc, Pointer: ptr, Value: n.Default, Why: why})
			}
		}
		return true
	}
	for _, doc := range b.s.Docs {
		for _, root := range doc.Roots() {
			root.Walk(visit)
		}
	}
	for _, r := range b.s.Requests {
		r.Reply.Walk(visit)
	}
}

// valueSet is the directory's schemas as generated code validates them,
// with one difference: "date-time" is asserted even when the manifest does
// not assert it, because such a value becomes a time.Time, which only a
// valid date-time can.
func (b *builder) valueSet() *schemaset.Set {
	files := map[string]string{}
	var add func(doc *load.Document)
	add = func(doc *load.Document) {
		if _, ok := files[doc.Path]; ok {
			return
		}
		files[doc.Path] = string(doc.DraftSource())
		for _, target := range b.s.Referenced(doc) {
			add(target)
		}
	}
	for _, doc := range b.s.Docs {
		add(doc)
	}
	ids := map[string]string{}
	all := []map[string]string{b.s.IDs()}
	for _, imp := range b.s.Imports {
		all = append(all, imp.Schemas.IDs())
	}
	for _, m := range all {
		for id, loc := range m {
			file, _, _ := strings.Cut(loc, "#")
			if _, ok := files[file]; ok {
				ids[id] = loc
			}
		}
	}
	return schemaset.NewWith(files, schemaset.Options{IDs: ids, AssertFormats: AssertedFormats(b.s.Manifest)})
}

// checkValue validates v, written at ptr as what ("default", "enum
// value", "const"), against the schema n it is written in.
func (b *builder) checkValue(set *schemaset.Set, n *load.Schema, ptr, what string, v any) {
	if why := refusal(set, n, v); why != "" {
		b.errs.Add(n.Doc.Errorf(ptr, "%s %s does not fit the schema: %s", what, jsonText(v), why))
		return
	}
	if num, ok := v.(json.Number); ok && integerOnly(n) {
		if _, err := strconv.ParseInt(num.String(), 10, 64); errors.Is(err, strconv.ErrRange) {
			b.errs.Add(n.Doc.Errorf(ptr, "%s %s does not fit in 64 bits: an integer is an int64 in Go, and the decoder refuses such a value; expected an integer from -9223372036854775808 to 9223372036854775807", what, num))
		}
	}
}

// integerOnly reports whether n's type is integer and not number: its Go
// type is int64.
func integerOnly(n *load.Schema) bool {
	switch t := n.Keywords["type"].(type) {
	case string:
		return t == "integer"
	case []any:
		return slices.Contains(t, any("integer")) && !slices.Contains(t, any("number"))
	}
	return false
}

// refusal says why the schema n refuses v, written in it; "" when it
// does not.
func refusal(set *schemaset.Set, n *load.Schema, v any) string {
	if v == nil && n.Keywords["nullable"] == true {
		// OpenAPI's way to admit null beside a type that does not, which
		// JSON Schema ignores: exported schemas write "default": null and
		// a null enum value with it.
		return ""
	}
	err := set.ValidateValue(n.Location(), v)
	var ve *schemaset.ValidationError
	if !errors.As(err, &ve) {
		// nil, or a schema the validator cannot compile, which the
		// loader has checked: nothing to say about the value.
		return ""
	}
	why := make([]string, len(ve.Problems))
	for i, p := range ve.Problems {
		why[i] = p.Message
		if p.Pointer != "" {
			why[i] = "at " + p.Pointer + ": " + p.Message
		}
	}
	return strings.Join(why, "; ")
}

// JSONText renders a JSON value for a message as it is written, short
// enough to read.
func JSONText(v any) string { return jsonText(v) }

// jsonText renders a JSON value for an error message as it is written
// (no "<" turned into "\u003c"), short enough to read.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	out := []rune(strings.TrimSuffix(buf.String(), "\n"))
	if len(out) <= 60 {
		return string(out)
	}
	return string(out[:57]) + "..."
}

// checkSatisfiable reports an empty enum and bounds that exclude each
// other, and says whether n has neither.
func (b *builder) checkSatisfiable(n *load.Schema) bool {
	ok := true
	if vals, isList := n.Keywords["enum"].([]any); isList && len(vals) == 0 {
		// Up to draft-07 the meta-schema refuses it already; 2019-09
		// and 2020-12 allow it.
		b.errs.Add(n.Doc.Errorf(load.Append(n.Pointer, "enum"), "an empty enum admits no value: list the values it allows, or remove it"))
		ok = false
	}
	if lo, hi := n.Minimum, n.Maximum; lo != nil && hi != nil {
		if cmp, known := compareNumbers(lo.Value, hi.Value); known && (cmp > 0 || cmp == 0 && (lo.Exclusive || hi.Exclusive)) {
			b.errs.Add(n.Doc.Errorf(boundPointer(n, lo, "minimum"), "%s", excluding(boundText(n, lo, "minimum"), boundText(n, hi, "maximum"), cmp, "number")))
			ok = false
		}
	}
	for _, c := range []struct{ min, max, noun string }{
		{"minLength", "maxLength", "string"},
		{"minItems", "maxItems", "array"},
		{"minProperties", "maxProperties", "object"},
	} {
		lo, hi := count(n, c.min), count(n, c.max)
		if lo >= 0 && hi >= 0 && lo > hi {
			b.errs.Add(n.Doc.Errorf(load.Append(n.Pointer, c.min), "%s %d is greater than %s %d: no %s satisfies both", c.min, lo, c.max, hi, c.noun))
			ok = false
		}
	}
	return ok
}

// excluding says why a lower and an upper bound leave nothing between them.
func excluding(lo, hi string, cmp int, noun string) string {
	if cmp > 0 {
		return fmt.Sprintf("%s is greater than %s: no %s satisfies both", lo, hi, noun)
	}
	return fmt.Sprintf("%s and %s leave no %s between them", lo, hi, noun)
}

// boundPointer is where a bound is written: its exclusive keyword from
// draft-06 on, else the inclusive one (draft-04's exclusiveMinimum is a
// flag on minimum).
func boundPointer(n *load.Schema, bd *load.Bound, inclusive string) string {
	if bd.Exclusive && n.Draft.Version >= 6 {
		return load.Append(n.Pointer, exclusiveKeyword(inclusive))
	}
	return load.Append(n.Pointer, inclusive)
}

// boundText writes a bound as the schema does.
func boundText(n *load.Schema, bd *load.Bound, inclusive string) string {
	switch {
	case !bd.Exclusive:
		return inclusive + " " + bd.Value.String()
	case n.Draft.Version >= 6:
		return exclusiveKeyword(inclusive) + " " + bd.Value.String()
	}
	return fmt.Sprintf("%s %s (exclusive)", inclusive, bd.Value)
}

func exclusiveKeyword(inclusive string) string {
	return "exclusive" + strings.ToUpper(inclusive[:1]) + inclusive[1:]
}

// compareNumbers compares two JSON numbers, and says whether both could
// be read. A big.Float keeps the exponent apart from the digits, so a
// bound of 1e9999 (the loader refuses exponents beyond 10000) costs no
// more than 1000 (a big.Rat would write out its digits); 512 bits tell
// apart any two bounds that differ within their first 150 significant
// digits.
func compareNumbers(a, b json.Number) (int, bool) {
	x, _, errA := big.ParseFloat(a.String(), 10, 512, big.ToNearestEven)
	y, _, errB := big.ParseFloat(b.String(), 10, 512, big.ToNearestEven)
	if errA != nil || errB != nil {
		return 0, false
	}
	return x.Cmp(y), true
}
