package model

import (
	"slices"

	"github.com/warrenbus/warren/generator/load"
)

// The model reads schemas through the loader's typed view (load.Schema),
// in which each file's draft is already settled: draft-04's id and boolean
// exclusiveMinimum, definitions as well as $defs, tuple items, dependencies
// and whether keywords next to a $ref count.

// annotations may sit next to a $ref without changing what it means for
// the Go type.
var annotations = map[string]bool{
	"$ref": true, "$comment": true, "$schema": true, "title": true, "description": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$id": true, "id": true, "$anchor": true, "$defs": true, "definitions": true,
}

// isPureRef reports whether s is a $ref plus annotations: the type is the
// target's type. Up to draft-07 the keywords next to a $ref are ignored, so
// every $ref is pure there.
func isPureRef(s *load.Schema) bool {
	if s.RefText == "" {
		return false
	}
	if s.RefAlone {
		return true
	}
	for k := range s.Keywords {
		if !annotations[k] && !isExtension(k) {
			return false
		}
	}
	return true
}

func isExtension(keyword string) bool { return len(keyword) > 2 && keyword[:2] == "x-" }

// structural keywords shape a Go type; a subschema without any of them only
// constrains values (required, not, minimum, ...), which the embedded
// schema enforces.
var structural = []string{"type", "properties", "items", "prefixItems", "additionalItems", "$ref", "enum", "const", "oneOf", "anyOf", "allOf", "additionalProperties", "patternProperties", "format"}

func isStructural(s *load.Schema) bool {
	return slices.ContainsFunc(structural, func(kw string) bool { return applies(s, kw) })
}

// applies reports whether keyword kw of s says anything about values: it
// is there, and it is not an anyOf that a branch satisfies whatever the
// value ([assertsNothing]), which is what an anyOf with an open-ended
// branch ({"$comment": "any shell"} beside an enum of known shells) means.
func applies(s *load.Schema, kw string) bool {
	if !s.Has(kw) {
		return false
	}
	return kw != "anyOf" || !slices.ContainsFunc(s.AnyOf, assertsNothing)
}

// assertsNothing reports whether every value satisfies s: true, {}, or a
// schema of annotations ($comment, title, description, examples, default,
// deprecated, readOnly, ...) and keywords no draft asserts with.
func assertsNothing(s *load.Schema) bool {
	if s.Keywords == nil {
		return s.Bool != nil && *s.Bool
	}
	for kw := range s.Keywords {
		if slices.Contains(assertions, kw) {
			return false
		}
	}
	return true
}

// isNull reports whether a schema admits only null: {"type": "null"},
// {"const": null} or {"enum": [null]}.
func isNull(s *load.Schema) bool {
	if len(s.Types) == 1 && s.Types[0] == "null" {
		return true
	}
	return s.HasEnum && len(s.Enum) == 1 && s.Enum[0] == nil
}

// property is one declared property with the schema that declares it; a
// property declared by several allOf members keeps every declaration.
type property struct {
	name  string
	decls []*load.Schema
}

// view is a schema with its allOf members (and a $ref that has sibling
// keywords) merged in: the keywords that decide the Go type.
type view struct {
	at       *load.Schema // the schema being typed
	types    []string     // from "type", without "null"
	nullable bool         // "null" in "type", null in enum, or a null branch of oneOf/anyOf
	hasType  bool

	props    []*property
	byName   map[string]*property
	required map[string]bool

	additional      *load.Schema // additionalProperties when it is a schema object
	additionalFalse bool         // additionalProperties: false, or unevaluatedProperties: false
	// admitsOthers: closed by unevaluatedProperties: false, beside
	// keywords that may evaluate members it does not declare
	// (additionalProperties: true, if/then, dependentSchemas, ...), which
	// are valid then.
	admitsOthers bool
	patternProps []*load.Named // patternProperties: pattern and schema

	items       *load.Schema // the schema of every element, when there is no tuple
	prefixItems bool         // a tuple (prefixItems, or items as an array before 2020-12)

	enum    []any
	hasEnum bool // enum or const

	format string

	union     []*load.Schema // oneOf or anyOf branches that shape a type
	unionKind string         // "oneOf" or "anyOf"
	unions    []pendingUnion // every oneOf and anyOf, settled once all is merged
}

// pendingUnion is a oneOf or anyOf met while merging: whether it shapes a
// type depends on the properties and types of the whole view.
type pendingUnion struct {
	at       *load.Schema
	kw       string
	branches []*load.Schema
}

// objectKeywords reports whether v says anything of an object's members.
func (v *view) objectKeywords() bool {
	return len(v.props) > 0 || v.additional != nil || v.additionalFalse || len(v.patternProps) > 0
}

// flatten builds the view of the schema n.
func (b *builder) flatten(n *load.Schema) *view {
	v := &view{at: n, byName: map[string]*property{}, required: map[string]bool{}}
	b.merge(v, n, map[*load.Schema]bool{})
	for _, u := range v.unions {
		b.mergeUnion(v, u.at, u.kw, u.branches)
	}
	return v
}

// merge adds schema n, with its $ref target and allOf members, to v. seen
// holds the schemas on the current allOf/$ref path, to report cycles
// instead of looping.
func (b *builder) merge(v *view, n *load.Schema, seen map[*load.Schema]bool) {
	if seen[n] {
		b.errs.Add(n.Doc.Errorf(n.Pointer, "allOf/$ref cycle: this schema includes itself"))
		return
	}
	seen[n] = true
	defer delete(seen, n)

	if n.Keywords == nil {
		return // true adds nothing; false admits nothing, which validation enforces
	}
	// A $ref with sibling keywords applies both, like allOf (from
	// 2019-09; before, the siblings do not count).
	if n.Ref != nil {
		b.merge(v, n.Ref, seen)
	}
	if n.RefText != "" && n.RefAlone {
		return
	}
	for _, m := range n.AllOf {
		b.merge(v, m, seen)
	}
	if n.Types != nil {
		b.mergeTypes(v, n, n.Types)
	}
	b.mergeObject(v, n)
	if n.Items != nil && len(n.PrefixItems) == 0 {
		v.items = n.Items
	}
	if len(n.PrefixItems) > 0 {
		v.prefixItems = true
	}
	if n.HasEnum {
		b.mergeEnum(v, n.Enum)
	}
	if n.Format != "" && v.format == "" {
		v.format = n.Format
	}
	if len(n.OneOf) > 0 {
		v.unions = append(v.unions, pendingUnion{n, "oneOf", n.OneOf})
	}
	if len(n.AnyOf) > 0 && applies(n, "anyOf") {
		v.unions = append(v.unions, pendingUnion{n, "anyOf", n.AnyOf})
	}
}

// mergeObject adds the object keywords of n to v.
func (b *builder) mergeObject(v *view, n *load.Schema) {
	for _, np := range n.Properties {
		p := v.byName[np.Name]
		if p == nil {
			p = &property{name: np.Name}
			v.byName[np.Name] = p
			v.props = append(v.props, p)
		}
		p.decls = append(p.decls, np.Schema)
	}
	for _, r := range n.Required {
		v.required[r] = true
	}
	if ap := n.AdditionalProperties; ap != nil {
		switch {
		case ap.Bool != nil:
			v.additionalFalse = v.additionalFalse || !*ap.Bool
			v.admitsOthers = v.admitsOthers || *ap.Bool // beside unevaluatedProperties: false
		default:
			v.additional = ap
		}
	}
	switch up, ok := n.Keywords["unevaluatedProperties"].(bool); {
	case ok && !up:
		v.additionalFalse = true
		v.admitsOthers = v.admitsOthers || evaluatesOthers(n, map[*load.Schema]bool{})
	case ok:
		v.admitsOthers = true // in an allOf member, it evaluates every member
	}
	v.patternProps = append(v.patternProps, n.PatternProperties...)
}

// mergeUnion records the branches of a oneOf or anyOf that shape a type;
// a branch that admits only null makes the whole nullable instead.
func (b *builder) mergeUnion(v *view, n *load.Schema, kw string, branches []*load.Schema) {
	if slices.ContainsFunc(branches, assertsNothing) {
		// A branch that takes every value: an anyOf then says nothing
		// (applies), and a oneOf only "none of the others", a constraint
		// the embedded schema checks. Neither decides the Go type.
		return
	}
	var shaping []*load.Schema
	nullBranch := false
	for _, br := range branches {
		switch {
		case br.IsFalse():
			// Matches nothing, so it adds no values (the embedded
			// schema checks the union).
		case isNull(br):
			nullBranch = true
		case isStructural(br) && !restates(br, v):
			shaping = append(shaping, br)
		default:
			// A branch that only constrains values ({required: [a]},
			// {minimum: 2}) lets through every value it does not
			// constrain, of any type: the union's values are not those
			// of its other branches, and it shapes no type.
			return
		}
	}
	if len(shaping) == 0 {
		return
	}
	if v.union != nil {
		b.errs.Add(n.Doc.Errorf(load.Append(n.Pointer, kw), "a schema with both oneOf and anyOf (or several of them through allOf) cannot be one Go type; nest one inside a branch of the other"))
		return
	}
	v.union, v.unionKind = shaping, kw
	v.nullable = v.nullable || nullBranch
}

// restates reports whether a union branch says of the declared properties
// and the type only what the schema beside it says (properties: {a: true},
// a: {}, or a's own $ref; the same type), so that with its other keywords
// it only constrains values ({"properties": {"a": true}, "required":
// ["a"]} requires a): it shapes no type.
func restates(br *load.Schema, v *view) bool {
	if br.Keywords == nil || br.RefText != "" {
		return false
	}
	for kw := range br.Keywords {
		switch kw {
		case "properties":
			for _, p := range br.Properties {
				decl := v.byName[p.Name]
				if decl == nil || !sameDeclaration(p.Schema, decl.decls[0]) {
					return false
				}
			}
		case "type":
			if !typesWithin(v.types, br.Types) || v.nullable && !slices.Contains(br.Types, "null") {
				return false
			}
		default:
			if slices.Contains(structural, kw) {
				return false
			}
		}
	}
	return true
}

// sameDeclaration reports whether s, a property's schema in a union
// branch, admits every value the declaration decl beside the union admits:
// it admits every value, or it is decl's own $ref.
func sameDeclaration(s, decl *load.Schema) bool {
	if assertsNothing(s) {
		return true
	}
	return isPureRef(s) && isPureRef(decl) && s.Ref != nil && s.Ref == decl.Ref
}

func (b *builder) mergeTypes(v *view, n *load.Schema, ts []string) {
	var types []string
	for _, s := range ts {
		if s == "null" {
			continue
		}
		types = append(types, s)
	}
	nullable := len(types) < len(ts)
	if !v.hasType {
		v.types, v.nullable, v.hasType = types, v.nullable || nullable, true
		return
	}
	// allOf intersects: the value must satisfy every member's type.
	var both []string
	for _, t := range v.types {
		if slices.Contains(types, t) || t == "integer" && slices.Contains(types, "number") {
			both = append(both, t)
		} else if t == "number" && slices.Contains(types, "integer") {
			both = append(both, "integer")
		}
	}
	if len(both) == 0 && len(v.types) > 0 && len(types) > 0 {
		b.errs.Add(n.Doc.Errorf(load.Append(n.Pointer, "type"), "type %v contradicts type %v of the schema it is combined with (allOf/$ref): no value can satisfy both", types, v.types))
	}
	v.types = both
	v.nullable = v.nullable && nullable
}

func (b *builder) mergeEnum(v *view, values []any) {
	var vals []any
	nullable := false
	for _, e := range values {
		if e == nil {
			nullable = true
			continue
		}
		vals = append(vals, e)
	}
	if v.hasEnum {
		// allOf intersects enums: keep the values both allow.
		var both []any
		for _, a := range v.enum {
			if slices.ContainsFunc(vals, func(x any) bool { return sameJSON(a, x) }) {
				both = append(both, a)
			}
		}
		vals = both
	}
	v.enum, v.hasEnum = vals, true
	if nullable && !v.hasType {
		v.nullable = true
	}
}

// sameJSON compares two scalar JSON values.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any, []any:
		return false
	default:
		return x == b
	}
}
