package schemadiff

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// view is the effective schema at one place: the schema's own keywords,
// then those of its $ref target, then those of its allOf members, merged
// into what a value must satisfy to satisfy them all (see merge). It
// reads the loader's typed schema nodes, on which every difference
// between drafts is settled (draft-04 boolean exclusive bounds, tuple
// items, $ref siblings ignored up to draft-07), so two files of different
// drafts compare by meaning. Comparing views rather
// than raw JSON means that moving properties into a shared definition, or
// splitting a schema into allOf parts, is not reported as a change.
type view struct {
	at       loc
	never    bool                    // the schema is false: nothing is valid
	kw       map[string]any          // keywords without a typed field -> value: the strictest, or the first (see meet)
	kwAt     map[string]*load.Schema // keyword -> schema object whose value the view holds (typed ones too)
	props    map[string]*load.Schema // property name -> its schema (see conjunction)
	required map[string]loc          // required name -> where it is required
	types    map[string]bool         // nil when no schema on the way says "type"
	typeAt   loc                     // where the (first) type keyword is
	enum     []any                   // enum, or the const value; see hasEnum
	hasEnum  bool
	isConst  bool
	// enumKw is the keyword the enum is written as: "enum", "const", or
	// "oneOf"/"anyOf" of branches that only list values (see normalize).
	enumKw string
	// valueBranches are the branches of a oneOf or anyOf (the key) folded
	// into the enum, for their annotations.
	valueBranches map[string][]*load.Schema
	// typesFromEnum says that types are those of the enum's values: the
	// schema says no type.
	typesFromEnum bool
	// written is the type as written when it reads otherwise ("number"
	// with multipleOf 1 is "integer"), for messages; "" when it does not.
	written  string
	format   string // the first format on the way (see formats)
	min, max *load.Bound
	addl     *load.Schema // additionalProperties; nil when absent or true
	items    *load.Schema // the schema of array elements after prefix; nil when absent or true
	prefix   []*load.Schema
	oneOf    []*load.Schema
	anyOf    []*load.Schema
	annot    map[string]any        // title, description, deprecated, default
	unres    map[string]loc        // $refs that could not be followed -> where
	seen     map[*load.Schema]bool // schema objects merged, to stop at cycles
	ordered  []string              // property names in a stable order

	// from lists, per keyword, every schema on the way that writes it, in
	// merge order ("minimum" and "maximum" stand for their exclusive
	// forms; not kept for what join joins): where a value held from
	// several places comes from, and what is compared of a keyword that
	// cannot be merged into one.
	from map[string][]*load.Schema
	// patterns and formats are every pattern and format on the way, each
	// once: a value must match them all, and no single one says that.
	patterns []string
	formats  []string
	// The schemas written for one place of the payload by several
	// schemas on the way, joined into one by the Dir (conjunction) once
	// the view is merged.
	propParts   map[string][]*load.Schema
	addlParts   []*load.Schema
	prefixParts [][]*load.Schema
	itemParts   []*load.Schema
}

// typed are the keywords the view reads from the loader's typed fields;
// notCompared are those that do not describe payloads (identifiers,
// containers of definitions reached through $ref, comments) or that the
// fact comparison handles itself (x-routing-key, x-version).
var (
	typed = map[string]bool{
		"type": true, "enum": true, "const": true, "format": true,
		"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
		"properties": true, "required": true, "additionalProperties": true,
		"items": true, "prefixItems": true, "additionalItems": true,
		"allOf": true, "anyOf": true, "oneOf": true, "$ref": true,
		"title": true, "description": true, "deprecated": true, "default": true,
	}
	notCompared = map[string]bool{
		"$schema": true, "$id": true, "id": true, "$anchor": true, "$dynamicAnchor": true,
		"$defs": true, "definitions": true, "$comment": true, "examples": true,
		"readOnly": true, "writeOnly": true, "$vocabulary": true,
	}
)

func (d *Dir) view(s *load.Schema) *view {
	v := &view{
		at:        locOf(s),
		kw:        map[string]any{},
		kwAt:      map[string]*load.Schema{},
		props:     map[string]*load.Schema{},
		required:  map[string]loc{},
		annot:     map[string]any{},
		unres:     map[string]loc{},
		seen:      map[*load.Schema]bool{},
		from:      map[string][]*load.Schema{},
		propParts: map[string][]*load.Schema{},
	}
	v.merge(s)
	v.join(d)
	v.ordered = slices.Sorted(maps.Keys(v.props))
	v.normalize()
	return v
}

// join turns the schemas that several schemas on the way wrote for one
// place (a property, additionalProperties, the array's elements) into
// one, and gathers their patterns and formats.
func (v *view) join(d *Dir) {
	for name, parts := range v.propParts {
		if len(parts) > 0 {
			v.props[name] = d.conjunction(parts) // a property of true alone keeps its true
		}
	}
	if i := slices.IndexFunc(v.addlParts, (*load.Schema).IsFalse); i >= 0 {
		v.addl = v.addlParts[i] // nothing more is allowed, whatever the others say
	} else if len(v.addlParts) > 0 {
		v.addl = d.conjunction(v.addlParts)
	}
	if _, ok := v.kwAt["items"]; ok {
		v.prefix = make([]*load.Schema, len(v.prefixParts))
		for i, parts := range v.prefixParts {
			v.prefix[i] = d.conjunction(parts)
		}
		v.items = d.conjunction(v.itemParts)
	}
	for _, s := range v.from["pattern"] {
		if p, ok := s.Keywords["pattern"].(string); ok && !matchesEverything(p) && !slices.Contains(v.patterns, p) {
			v.patterns = append(v.patterns, p)
			if len(v.patterns) == 1 {
				v.kw["pattern"], v.kwAt["pattern"] = p, s
			}
		}
	}
	for _, s := range v.from["format"] {
		if !slices.Contains(v.formats, s.Format) {
			v.formats = append(v.formats, s.Format)
		}
	}
}

// conjunction returns a schema that accepts the values every one of parts
// accepts: the one part, or a node that says nothing but an allOf of them,
// written nowhere (its place is the first part's). The Dir keeps one node
// per set of parts, so that comparing a recursive schema meets the same
// pair of schemas again and stops. No parts is no schema: anything.
func (d *Dir) conjunction(parts []*load.Schema) *load.Schema {
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return parts[0]
	}
	var key strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&key, "%p,", p)
	}
	d.conjMu.Lock()
	defer d.conjMu.Unlock()
	if s, ok := d.conj[key.String()]; ok {
		return s
	}
	s := &load.Schema{Doc: parts[0].Doc, Pointer: parts[0].Pointer, Draft: parts[0].Draft, Keywords: map[string]any{}, AllOf: parts}
	// Extensions are read from a property's schema (x-renamed-from):
	// the first part's that says one.
	for _, p := range parts {
		for k, x := range p.Keywords {
			if _, ok := s.Keywords[k]; !ok && strings.HasPrefix(k, "x-") {
				s.Keywords[k] = x
			}
		}
	}
	if d.conj == nil {
		d.conj = map[string]*load.Schema{}
	}
	d.conj[key.String()] = s
	return s
}

// appendPart adds schema p to the parts of one place, unless it says
// nothing (absent or true) or is there already.
func appendPart(parts []*load.Schema, p *load.Schema) []*load.Schema {
	if isAny(p) || slices.Contains(parts, p) {
		return parts
	}
	return append(parts, p)
}

// locOf is where a schema node is written.
func locOf(s *load.Schema) loc {
	if s == nil || s.Doc == nil {
		return loc{}
	}
	return loc{s.Doc.Path, s.Pointer}
}

// once records that keyword k is defined by s, unless an earlier schema
// on the way defined it; it reports whether s's value wins.
func (v *view) once(k string, s *load.Schema) bool {
	if _, ok := v.kwAt[k]; ok {
		return false
	}
	v.kwAt[k] = s
	return true
}

// merge adds schema s, reached on the way, to the view. A value must
// satisfy every schema on the way (its own keywords, its $ref, its allOf
// members), so what they say together is kept: properties and required
// united, types intersected, the strictest bound (the highest minimum,
// minLength, ...; the lowest maximum, maxLength, ...), the least common
// multiple of multipleOf, the values every enum and const admit, every
// pattern and format, and the schemas written for one property, for
// additionalProperties or for the array's elements joined into one. What
// cannot be merged into one value (not, if, a second oneOf, ...) keeps
// its first value, and unclassified compares every place that writes it.
func (v *view) merge(s *load.Schema) {
	if s == nil || v.seen[s] {
		return
	}
	v.seen[s] = true
	if s.Bool != nil {
		if !*s.Bool {
			v.never = true
		}
		return
	}
	if s.Keywords == nil {
		return
	}
	if s.RefText != "" && s.Ref == nil {
		v.unres[s.RefText] = locOf(s)
	}
	if s.RefAlone && s.Ref != nil {
		v.merge(s.Ref) // up to draft-07 the keywords beside $ref are ignored
		return
	}
	// Own keywords first: they come first where a first value is kept.
	for _, p := range s.Properties {
		if _, ok := v.props[p.Name]; !ok {
			v.props[p.Name] = p.Schema
		}
		v.propParts[p.Name] = appendPart(v.propParts[p.Name], p.Schema)
	}
	for i, name := range s.Required {
		if _, dup := v.required[name]; !dup {
			v.required[name] = loc{s.Doc.Path, load.AppendIndex(load.Append(s.Pointer, "required"), i)}
		}
	}
	if s.Types != nil {
		v.mergeTypes(s.Types, loc{s.Doc.Path, load.Append(s.Pointer, "type")})
	}
	v.mergeTyped(s)
	for _, k := range slices.Sorted(maps.Keys(s.Keywords)) {
		if typed[k] || notCompared[k] || strings.HasPrefix(k, "x-") {
			continue
		}
		v.from[k] = append(v.from[k], s)
		if v.once(k, s) {
			v.kw[k] = s.Keywords[k]
		} else {
			v.meet(k, s)
		}
	}
	v.merge(s.Ref)
	for _, m := range s.AllOf {
		v.merge(m)
	}
}

// meet merges the value of untyped keyword k of s into the value an
// earlier schema on the way gave it: the stricter count bound, the least
// common multiple, uniqueItems if either says so. Any other keyword keeps
// its first value (patterns are gathered by join); from lists every one.
func (v *view) meet(k string, s *load.Schema) {
	val := s.Keywords[k]
	switch {
	case k == "multipleOf":
		if m, ok := leastCommonMultiple(v.kw[k], val); ok {
			if canon(m) == canon(val) {
				v.kwAt[k] = s
			}
			v.kw[k] = m
		}
	case k == "uniqueItems":
		if val == true && v.kw[k] != true {
			v.kw[k], v.kwAt[k] = val, s
		}
	default:
		i := slices.IndexFunc(model.CountBounds, func(b model.CountBound) bool { return b.Keyword == k })
		if i < 0 {
			return
		}
		n, ok1 := model.ExactNumber(val)
		was, ok2 := model.ExactNumber(v.kw[k])
		if ok1 && ok2 && (n.Cmp(was) > 0) == model.CountBounds[i].Lower && n.Cmp(was) != 0 {
			v.kw[k], v.kwAt[k] = val, s
		}
	}
}

// leastCommonMultiple is the multipleOf that a value meets when it meets
// multipleOf a and multipleOf b: for p/q and r/s in lowest terms,
// lcm(p, r)/gcd(q, s). It is written as a JSON number; false when either
// is no positive number.
func leastCommonMultiple(a, b any) (json.Number, bool) {
	x, ok1 := model.ExactNumber(a)
	y, ok2 := model.ExactNumber(b)
	if !ok1 || !ok2 || x.Sign() <= 0 || y.Sign() <= 0 {
		return "", false
	}
	g := new(big.Int).GCD(nil, nil, x.Num(), y.Num())
	num := new(big.Int).Mul(x.Num(), new(big.Int).Quo(y.Num(), g))
	den := new(big.Int).GCD(nil, nil, x.Denom(), y.Denom())
	return decimal(new(big.Rat).SetFrac(num, den))
}

// decimal writes r as a JSON number, false when it has no finite decimal
// form (a denominator with other factors than 2 and 5).
func decimal(r *big.Rat) (json.Number, bool) {
	if r.IsInt() {
		return json.Number(r.Num().String()), true
	}
	scaled := new(big.Rat).Set(r)
	ten := big.NewRat(10, 1)
	for digits := 1; digits <= 1000; digits++ {
		scaled.Mul(scaled, ten)
		if scaled.IsInt() {
			return json.Number(r.FloatString(digits)), true
		}
	}
	return "", false
}

// stricter reports whether bound a admits fewer values than bound b,
// which the view holds: a minimum (lower) higher, or as high and
// exclusive where b is not; a maximum the other way round. A bound that
// is no number is not compared.
func stricter(a, b *load.Bound, lower bool) bool {
	x, ok1 := model.ExactNumber(a.Value)
	y, ok2 := model.ExactNumber(b.Value)
	if !ok1 || !ok2 {
		return false
	}
	if d := x.Cmp(y); d != 0 {
		return (d > 0) == lower
	}
	return a.Exclusive && !b.Exclusive
}

// mergeTyped merges the typed keywords of s into the view (see merge).
func (v *view) mergeTyped(s *load.Schema) {
	if s.HasEnum {
		k := "enum"
		if s.IsConst {
			k = "const"
		}
		if !v.hasEnum {
			v.once(k, s)
			v.enum, v.hasEnum, v.isConst, v.enumKw = s.Enum, true, s.IsConst, k
		} else {
			// A value must be in both: the values of the first that the
			// second lists. Within a const, it is a const.
			keep := canonSet(s.Enum)
			v.enum = slices.DeleteFunc(slices.Clone(v.enum), func(x any) bool { return !keep[canon(x)] })
			if s.IsConst && !v.isConst {
				v.isConst, v.enumKw = true, k
				v.once(k, s)
			}
			v.isConst = v.isConst && len(v.enum) == 1
		}
	}
	if s.Format != "" {
		v.from["format"] = append(v.from["format"], s)
		if v.once("format", s) {
			v.format = s.Format
		}
	}
	if s.Minimum != nil {
		v.from["minimum"] = append(v.from["minimum"], s)
		if v.once("minimum", s) || stricter(s.Minimum, v.min, true) {
			v.min, v.kwAt["minimum"] = s.Minimum, s
		}
	}
	if s.Maximum != nil {
		v.from["maximum"] = append(v.from["maximum"], s)
		if v.once("maximum", s) || stricter(s.Maximum, v.max, false) {
			v.max, v.kwAt["maximum"] = s.Maximum, s
		}
	}
	if s.Has("additionalProperties") {
		if v.once("additionalProperties", s) || s.AdditionalProperties.IsFalse() && !slices.ContainsFunc(v.addlParts, (*load.Schema).IsFalse) {
			v.kwAt["additionalProperties"] = s // where it is closed, if anywhere
		}
		v.addlParts = appendPart(v.addlParts, s.AdditionalProperties)
	}
	if s.Items != nil || len(s.PrefixItems) > 0 {
		v.once("items", s)
		v.mergeItems(s.PrefixItems, s.Items)
	}
	if len(s.OneOf) > 0 {
		v.from["oneOf"] = append(v.from["oneOf"], s)
		if v.once("oneOf", s) {
			v.oneOf = s.OneOf
		}
	}
	if len(s.AnyOf) > 0 {
		v.from["anyOf"] = append(v.from["anyOf"], s)
		if v.once("anyOf", s) {
			v.anyOf = s.AnyOf
		}
	}
	for _, k := range []string{"title", "description", "deprecated", "default"} {
		if s.Has(k) && v.once(k, s) {
			v.annot[k] = s.Keywords[k]
		}
	}
}

// mergeItems adds the tuple (prefix) and the elements after it (items)
// of a schema on the way to those of the schemas before: a position is
// held by every schema's prefix there, or, past a schema's prefix, by its
// items.
func (v *view) mergeItems(prefix []*load.Schema, items *load.Schema) {
	parts := make([][]*load.Schema, max(len(v.prefixParts), len(prefix)))
	for i := range parts {
		if i < len(v.prefixParts) {
			parts[i] = v.prefixParts[i]
		} else {
			parts[i] = slices.Clone(v.itemParts)
		}
		if i < len(prefix) {
			parts[i] = appendPart(parts[i], prefix[i])
		} else {
			parts[i] = appendPart(parts[i], items)
		}
	}
	v.prefixParts = parts
	v.itemParts = appendPart(v.itemParts, items)
}

// mergeTypes intersects type sets: every allOf member must hold, and an
// "integer" meets a "number" as "integer".
func (v *view) mergeTypes(types []string, at loc) {
	set := map[string]bool{}
	for _, t := range types {
		set[t] = true
	}
	if v.types == nil {
		v.types, v.typeAt = set, at
		return
	}
	both := map[string]bool{}
	for t := range v.types {
		if admits(set, t) {
			both[t] = true
		}
	}
	for t := range set {
		if admits(v.types, t) {
			both[t] = true
		}
	}
	v.types = both
}

// admits reports whether a type set accepts every value of type t.
func admits(set map[string]bool, t string) bool {
	return set[t] || (t == "integer" && set["number"])
}

// closed reports whether the object rejects, or checks against a schema,
// properties it does not list: a property one side adds or keeps is then
// judged by the other side's additionalProperties.
func (v *view) closed() bool {
	if v.addl != nil && !(v.addl.Bool != nil && *v.addl.Bool) {
		return true
	}
	// Closed by any schema on the way.
	return slices.ContainsFunc(v.from["unevaluatedProperties"], func(s *load.Schema) bool { return s.Keywords["unevaluatedProperties"] != true })
}

// keywordAt is the position of keyword k in the view, for reports.
func (v *view) keywordAt(k string) loc {
	s, ok := v.kwAt[k]
	if !ok {
		return v.at
	}
	if (k == "minimum" || k == "maximum") && !s.Has(k) {
		k = "exclusive" + strings.ToUpper(k[:1]) + k[1:] // 2019-09 and later write the exclusive bound alone
	}
	if k == "items" && !s.Has("items") {
		k = "prefixItems"
	}
	return loc{s.Doc.Path, load.Append(s.Pointer, k)}
}

// raw is a schema as written, for comparing branches and keyword values.
func raw(s *load.Schema) any {
	switch {
	case s == nil:
		return nil
	case s.Bool != nil:
		return *s.Bool
	}
	return s.Keywords
}

// branchLoc is the place of the i-th branch of keyword k in the view.
func (v *view) branchLoc(k string, i int) loc {
	at := v.keywordAt(k)
	return loc{at.file, load.Append(at.ptr, strconv.Itoa(i))}
}
