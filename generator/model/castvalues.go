package model

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// A generated cast copies each value across as it is, and the result is
// validated against the schema of the version it becomes: a property whose
// Go type stays but whose schema accepts fewer values there (maxLength
// lowered, minimum raised, a pattern added or changed, an enum value gone)
// would poison every fact whose value the newer schema refuses, so such a
// change is not mechanical. The comparison is conservative: a keyword that
// asserts something warren cannot prove the other version asserts too
// counts as accepting fewer values.

// narrowedValues returns, per property the cast's steps copy and per
// keyword of the result's root, what the schema of to accepts fewer
// values of than the schema of from; nil when every value from admits
// fits to. assert are the formats validation checks.
func narrowedValues(from, to *Fact, steps []CastStep, assert []string) []string {
	if from.decl == nil || to.decl == nil {
		return nil
	}
	n := narrower{assert: assert}
	fromRoot, toRoot := conjuncts(from.decl.Schema), conjuncts(to.decl.Schema)
	var out []string
	// The root: its properties are compared through the steps, and an
	// object the Go type closes keeps only its own fields anyway.
	if why := n.compare(fromRoot, toRoot, true); len(why) > 0 {
		out = append(out, fmt.Sprintf("the object accepts fewer values in version %d (%s)", to.Version, strings.Join(why, ", ")))
	}
	for _, s := range steps {
		if why := n.compare(declarations(fromRoot, s.From.JSONName), declarations(toRoot, s.To.JSONName), false); len(why) > 0 {
			out = append(out, fmt.Sprintf("property %s accepts fewer values in version %d (%s)", strconv.Quote(s.To.JSONName), to.Version, strings.Join(why, ", ")))
		}
	}
	return out
}

// assertFormats are the formats validation checks: the manifest's
// assertFormats, and date-time, which every generated validation checks.
func (b *builder) assertFormats() []string {
	assert := slices.Clone(b.s.Manifest.AssertFormats)
	if !slices.Contains(assert, "date-time") {
		assert = append(assert, "date-time")
	}
	return assert
}

// conjuncts returns the schemas that all apply to a value validated
// against s: s itself, what its $ref points at and its allOf members,
// recursively, each once.
func conjuncts(ss ...*load.Schema) []*load.Schema {
	var out []*load.Schema
	seen := map[*load.Schema]bool{}
	var walk func(*load.Schema)
	walk = func(s *load.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if s.Ref != nil {
			walk(s.Ref)
		}
		if s.RefText != "" && s.RefAlone {
			return // the keywords beside it are ignored
		}
		out = append(out, s)
		for _, m := range s.AllOf {
			walk(m)
		}
	}
	for _, s := range ss {
		walk(s)
	}
	return out
}

// declarations returns the conjuncts of every declaration of property
// name among the conjuncts of an object.
func declarations(object []*load.Schema, name string) []*load.Schema {
	var decls []*load.Schema
	for _, s := range object {
		for _, p := range s.Properties {
			if p.Name == name {
				decls = append(decls, p.Schema)
			}
		}
	}
	return conjuncts(decls...)
}

type narrower struct {
	assert []string // formats validation checks
}

// compare returns what the conjuncts to assert that the conjuncts from do
// not: the ways a value from admits may fail to. root skips the keywords
// of an object that the cast's steps and Go types account for.
func (n narrower) compare(from, to []*load.Schema, root bool) []string {
	var why []string
	for _, s := range to {
		if slices.Contains(from, s) {
			continue // the same schema: it admits what it admitted
		}
		why = append(why, n.implied(from, s, root)...)
	}
	return why
}

// handledKeywords are the keywords implied judges one by one; any other
// keyword that asserts something must be written the same way in from.
var handledKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true, "pattern": true,
	"format": true, "uniqueItems": true, "items": true, "prefixItems": true, "additionalItems": true,
	"properties": true, "required": true, "additionalProperties": true,
	"allOf": true, "$ref": true, // conjuncts follows them
}

// lengthBounds are the keywords that bound a count from below (min) or
// above.
var lengthBounds = []struct {
	kw  string
	min bool
}{
	{"minLength", true}, {"maxLength", false}, {"minItems", true}, {"maxItems", false},
	{"minProperties", true}, {"maxProperties", false}, {"minContains", true}, {"maxContains", false},
}

func init() {
	for _, b := range lengthBounds {
		handledKeywords[b.kw] = true
	}
}

// implied returns what schema s asserts that no conjunct of from does.
func (n narrower) implied(from []*load.Schema, s *load.Schema, root bool) []string {
	if s.Keywords == nil {
		if s.IsFalse() && !slices.ContainsFunc(from, (*load.Schema).IsFalse) {
			return []string{"no value is valid"}
		}
		return nil
	}
	if slices.ContainsFunc(from, (*load.Schema).IsFalse) {
		return nil // from admits nothing: nothing to carry over
	}
	var why []string
	if s.Types != nil {
		if w := typesImplied(from, s.Types); w != "" {
			why = append(why, w)
		}
	}
	if s.HasEnum {
		if w := enumImplied(from, s); w != "" {
			why = append(why, w)
		}
	}
	why = append(why, limitImplied(from, s.Minimum, true, "minimum", func(f *load.Schema) *load.Bound { return f.Minimum })...)
	why = append(why, limitImplied(from, s.Maximum, false, "maximum", func(f *load.Schema) *load.Bound { return f.Maximum })...)
	for _, b := range lengthBounds {
		if w := boundImplied(from, s, b.kw, b.min); w != "" {
			why = append(why, w)
		}
	}
	if v, ok := s.Keywords["multipleOf"]; ok && !multipleImplied(from, v) {
		why = append(why, "multipleOf "+jsonString(v)+" added")
	}
	if v, ok := s.Keywords["pattern"]; ok && !sameIn(from, "pattern", v) {
		why = append(why, "pattern "+jsonString(v)+" added")
	}
	if s.Format != "" && slices.Contains(n.assert, s.Format) && !slices.ContainsFunc(from, func(f *load.Schema) bool { return f.Format == s.Format }) {
		why = append(why, fmt.Sprintf("format %q asserted", s.Format))
	}
	if s.Keywords["uniqueItems"] == true && !slices.ContainsFunc(from, func(f *load.Schema) bool { return f.Keywords["uniqueItems"] == true }) {
		why = append(why, "uniqueItems added")
	}
	why = append(why, n.itemsImplied(from, s)...)
	if !root {
		why = append(why, n.objectImplied(from, s)...)
	}
	for _, kw := range load.SortedKeys(s.Keywords) {
		if handledKeywords[kw] || !slices.Contains(assertions, kw) {
			continue
		}
		if !sameIn(from, kw, s.Keywords[kw]) {
			why = append(why, kw+" added or changed")
		}
	}
	return why
}

// typesImplied says whether the types of from admit only types ts admits.
func typesImplied(from []*load.Schema, ts []string) string {
	var have []string // the types from admits: the intersection of its "type"s
	constrained := false
	for _, f := range from {
		if f.Types == nil {
			continue
		}
		if !constrained {
			have, constrained = slices.Clone(f.Types), true
			continue
		}
		have = slices.DeleteFunc(have, func(t string) bool { return !typeAdmits(f.Types, t) })
	}
	if !constrained {
		return fmt.Sprintf("type %s added", strings.Join(ts, ", "))
	}
	for _, t := range have {
		if !typeAdmits(ts, t) {
			return fmt.Sprintf("type %s no longer admitted", t)
		}
	}
	return ""
}

func typeAdmits(ts []string, t string) bool {
	return slices.Contains(ts, t) || t == "integer" && slices.Contains(ts, "number")
}

// enumImplied says whether every value the enums of from admit is one of
// s's.
func enumImplied(from []*load.Schema, s *load.Schema) string {
	kw := "enum"
	if s.IsConst {
		kw = "const"
	}
	var have []string
	constrained := false
	for _, f := range from {
		if !f.HasEnum {
			continue
		}
		vals := jsonStrings(f.Enum)
		if !constrained {
			have, constrained = vals, true
			continue
		}
		have = slices.DeleteFunc(have, func(v string) bool { return !slices.Contains(vals, v) })
	}
	if !constrained {
		return kw + " added"
	}
	allowed := jsonStrings(s.Enum)
	var gone []string
	for _, v := range have {
		if !slices.Contains(allowed, v) {
			gone = append(gone, v)
		}
	}
	if len(gone) == 0 {
		return ""
	}
	if s.IsConst {
		return "const " + strings.Join(allowed, ", ") + " instead of " + strings.Join(gone, ", ")
	}
	return "enum value " + strings.Join(gone, ", ") + " removed"
}

// limitImplied says whether a minimum (lower) or maximum of s is implied
// by the tightest of from.
func limitImplied(from []*load.Schema, b *load.Bound, lower bool, kw string, of func(*load.Schema) *load.Bound) []string {
	if b == nil {
		return nil
	}
	name := func(b *load.Bound) string {
		if b.Exclusive {
			return "exclusive" + strings.ToUpper(kw[:1]) + kw[1:]
		}
		return kw
	}
	want, ok := new(big.Rat).SetString(string(b.Value))
	if !ok {
		return []string{name(b) + " " + string(b.Value)}
	}
	var tightest *load.Bound
	for _, f := range from {
		fb := of(f)
		if fb == nil {
			continue
		}
		if boundImplies(fb, b, want, lower) {
			return nil
		}
		tightest = fb
	}
	if tightest == nil {
		return []string{fmt.Sprintf("%s %s added", name(b), b.Value)}
	}
	verb := "raised"
	if !lower {
		verb = "lowered"
	}
	if name(tightest) != name(b) {
		return []string{fmt.Sprintf("%s %s changed to %s %s", name(tightest), tightest.Value, name(b), b.Value)}
	}
	return []string{fmt.Sprintf("%s %s from %s to %s", name(b), verb, tightest.Value, b.Value)}
}

// boundImplies reports whether values within bound have lie within want
// (whose value is w).
func boundImplies(have, want *load.Bound, w *big.Rat, lower bool) bool {
	h, ok := new(big.Rat).SetString(string(have.Value))
	if !ok {
		return false
	}
	d := h.Cmp(w)
	if d == 0 {
		return have.Exclusive || !want.Exclusive
	}
	return (d > 0) == lower
}

// boundImplied says whether a length or count bound of s is implied by
// one of from.
func boundImplied(from []*load.Schema, s *load.Schema, kw string, min bool) string {
	v, ok := s.Keywords[kw]
	if !ok {
		return ""
	}
	want, ok := ExactNumber(v)
	if !ok {
		if sameIn(from, kw, v) {
			return ""
		}
		return kw + " " + jsonString(v)
	}
	var was any
	for _, f := range from {
		fv, ok := f.Keywords[kw]
		if !ok {
			continue
		}
		if h, ok := ExactNumber(fv); ok && (h.Cmp(want) == 0 || (h.Cmp(want) > 0) == min) {
			return ""
		}
		was = fv
	}
	if was == nil {
		return kw + " " + jsonString(v) + " added"
	}
	verb := "raised"
	if !min {
		verb = "lowered"
	}
	return fmt.Sprintf("%s %s from %s to %s", kw, verb, jsonString(was), jsonString(v))
}

// multipleImplied reports whether a multiple of some multipleOf of from
// is always a multiple of v.
func multipleImplied(from []*load.Schema, v any) bool {
	m, ok := ExactNumber(v)
	if !ok || m.Sign() == 0 {
		return sameIn(from, "multipleOf", v)
	}
	for _, f := range from {
		if fv, ok := f.Keywords["multipleOf"]; ok {
			if h, ok := ExactNumber(fv); ok && new(big.Rat).Quo(h, m).IsInt() {
				return true
			}
		}
	}
	return false
}

// itemsImplied compares the schemas of an array's elements.
func (n narrower) itemsImplied(from []*load.Schema, s *load.Schema) []string {
	tuple := func(f *load.Schema) bool { return len(f.PrefixItems) > 0 }
	if tuple(s) || slices.ContainsFunc(from, tuple) && s.Items != nil {
		// A tuple: its positions must be written alike.
		var why []string
		for _, kw := range []string{"prefixItems", "items", "additionalItems"} {
			if v, ok := s.Keywords[kw]; ok && !sameIn(from, kw, v) {
				why = append(why, kw+" changed")
			}
		}
		return why
	}
	if s.Items == nil || assertsNothing(s.Items) {
		return nil
	}
	var items []*load.Schema
	for _, f := range from {
		if f.Items != nil {
			items = append(items, f.Items)
		}
	}
	if len(items) == 0 {
		return []string{"items now has a schema"}
	}
	var why []string
	for _, w := range n.compare(conjuncts(items...), conjuncts(s.Items), false) {
		why = append(why, "items: "+w)
	}
	return why
}

// objectImplied compares the properties of an object below the root,
// whose Go type the two versions share.
func (n narrower) objectImplied(from []*load.Schema, s *load.Schema) []string {
	var why []string
	for _, p := range s.Properties {
		if assertsNothing(p.Schema) {
			continue
		}
		decls := declarations(from, p.Name)
		if len(decls) == 0 {
			why = append(why, fmt.Sprintf("property %s now has a schema", strconv.Quote(p.Name)))
			continue
		}
		for _, w := range n.compare(decls, conjuncts(p.Schema), false) {
			why = append(why, fmt.Sprintf("property %s: %s", strconv.Quote(p.Name), w))
		}
	}
	for _, r := range s.Required {
		if !slices.ContainsFunc(from, func(f *load.Schema) bool { return slices.Contains(f.Required, r) }) {
			why = append(why, fmt.Sprintf("%s is now required", strconv.Quote(r)))
		}
	}
	if a := s.AdditionalProperties; a != nil && !assertsNothing(a) {
		var addl []*load.Schema
		closedLike := false
		for _, f := range from {
			if f.AdditionalProperties == nil {
				continue
			}
			addl = append(addl, f.AdditionalProperties)
			// A closed object of from whose properties s declares too
			// has no property that s's additionalProperties sees.
			if f.AdditionalProperties.IsFalse() && len(f.PatternProperties) == 0 &&
				!slices.ContainsFunc(f.Properties, func(fp *load.Named) bool {
					return !slices.ContainsFunc(s.Properties, func(sp *load.Named) bool { return sp.Name == fp.Name })
				}) {
				closedLike = true
			}
		}
		switch {
		case closedLike:
		case a.IsFalse() || len(addl) == 0:
			why = append(why, "additionalProperties added or closed")
		default:
			for _, w := range n.compare(conjuncts(addl...), conjuncts(a), false) {
				why = append(why, "additionalProperties: "+w)
			}
		}
	}
	return why
}

// sameIn reports whether some conjunct of from writes keyword kw as v.
func sameIn(from []*load.Schema, kw string, v any) bool {
	want := jsonString(v)
	return slices.ContainsFunc(from, func(f *load.Schema) bool {
		fv, ok := f.Keywords[kw]
		return ok && jsonString(fv) == want
	})
}

// jsonString renders a decoded JSON value canonically: keys sorted.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func jsonStrings(vs []any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = jsonString(v)
	}
	return out
}

// ExactNumber reads a decoded JSON number (json.Number, float64, int or
// int64) exactly, for comparing schema bounds; false for anything else.
func ExactNumber(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(string(x))
	case float64:
		r := new(big.Rat)
		if r.SetFloat64(x) == nil {
			return nil, false
		}
		return r, true
	case int:
		return new(big.Rat).SetInt64(int64(x)), true
	case int64:
		return new(big.Rat).SetInt64(x), true
	}
	return nil, false
}
