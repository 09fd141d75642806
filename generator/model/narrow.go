package model

import (
	"slices"

	"github.com/warrenbus/warren/generator/load"
)

// narrowedRef returns the $ref member of an allOf that only narrows the
// schema it refers to ({"allOf": [{"$ref": "common.json#/definitions/issue"},
// {"properties": {"state": {"enum": ["closed"]}}}]}), or nil. Such a schema
// keeps the shared Go type: validation enforces the narrowing.
func (b *builder) narrowedRef(n *load.Schema) *load.Schema {
	// Deciding types the shared object's properties, and one of them can
	// be n itself (a property of the object n's allOf refers to that
	// refers back to n): met again while deciding, n is not a narrowing.
	if b.narrowing[n] {
		return nil
	}
	b.narrowing[n] = true
	defer delete(b.narrowing, n)
	var base *load.Schema
	for _, m := range n.AllOf {
		if isPureRef(m) && m.Ref != nil {
			if base != nil {
				return nil
			}
			base = m
		}
	}
	if base == nil || n.RefText != "" || slices.ContainsFunc(reshaping, func(kw string) bool { return kw != "allOf" && applies(n, kw) }) {
		return nil
	}
	shared := b.flatten(base.Ref)
	for _, m := range n.AllOf {
		if m == base {
			continue
		}
		if m.Keywords == nil || slices.ContainsFunc(reshaping, func(kw string) bool { return kw != "properties" && applies(m, kw) }) {
			return nil
		}
		for _, p := range m.Properties {
			decl := shared.byName[p.Name]
			if decl == nil || p.Schema.Keywords == nil || isStructural(p.Schema) && !narrows(p.Schema, b.typeOf(decl.decls[0])) {
				return nil
			}
		}
	}
	return base
}

// narrowing keywords are those an allOf member may use on a property of a
// shared ($ref'd) object without changing its Go type: it only restricts
// the values (a "state" narrowed to "closed"), which validation enforces.
var reshaping = []string{"$ref", "properties", "items", "prefixItems", "additionalItems", "additionalProperties", "patternProperties", "oneOf", "anyOf", "allOf"}

// narrows reports whether schema s, another declaration of a property
// whose Go type is ref, only restricts its values: it reshapes nothing and
// every JSON type it names is one ref holds.
func narrows(s *load.Schema, ref Ref) bool {
	if slices.ContainsFunc(reshaping, func(kw string) bool { return applies(s, kw) }) {
		return false
	}
	holds := jsonTypes(ref)
	for _, t := range s.Types {
		if t != "null" && holds != nil && !slices.Contains(holds, t) {
			return false
		}
	}
	return true
}

// jsonTypes lists the JSON types a Go type holds (besides null); nil means
// any.
func jsonTypes(r Ref) []string {
	switch r.Kind {
	case String, Time:
		return []string{"string"}
	case Int:
		return []string{"integer"}
	case Float:
		return []string{"number", "integer"}
	case Bool:
		return []string{"boolean"}
	case Slice:
		return []string{"array"}
	case Map:
		return []string{"object"}
	case Named:
		switch r.Type.Kind {
		case Struct:
			return []string{"object"}
		case Enum, Defined:
			return jsonTypes(r.Type.Base)
		}
	}
	return nil
}

// typesWithin reports whether every JSON type in held (nil: any) is one
// of allowed, where "number" includes "integer": the type keyword next to
// a union adds nothing to the branches' own Go types.
func typesWithin(held, allowed []string) bool {
	if held == nil {
		return false
	}
	for _, h := range held {
		if !slices.Contains(allowed, h) && (h != "integer" || !slices.Contains(allowed, "number")) {
			return false
		}
	}
	return true
}
