package model

import (
	"slices"
	"strconv"

	"github.com/warrenbus/warren/generator/load"
)

// node is one schema: a document and a JSON pointer into it, with the
// value found there. The value is looked up once, when the node is made:
// the passes ask for it many times, and a lookup splits the pointer.
type node struct {
	doc *load.Document
	ptr string
	val any // the value at ptr; nil if there is none
}

func nodeAt(doc *load.Document, ptr string) node {
	v, _ := doc.Lookup(ptr)
	return node{doc, ptr, v}
}

func (n node) value() any { return n.val }

func (n node) object() map[string]any {
	obj, _ := n.val.(map[string]any)
	return obj
}

// at returns the node below n at the given property names or indexes.
func (n node) at(tokens ...string) node {
	p, v := n.ptr, n.val
	for _, t := range tokens {
		p = load.Append(p, t)
		switch x := v.(type) {
		case map[string]any:
			v = x[t]
		case []any:
			i, err := strconv.Atoi(t)
			v = nil
			if err == nil && i >= 0 && i < len(x) {
				v = x[i]
			}
		default:
			v = nil
		}
	}
	return node{n.doc, p, v}
}

func (n node) location() string { return location(n.doc.Path, n.ptr) }

// annotations may sit next to a $ref without changing what it means for
// the Go type.
var annotations = map[string]bool{
	"$ref": true, "$comment": true, "$schema": true, "title": true, "description": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// isPureRef reports whether obj is a $ref plus annotations: the type is the
// target's type.
func isPureRef(obj map[string]any) bool {
	if _, ok := obj["$ref"].(string); !ok {
		return false
	}
	for k := range obj {
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
var structural = []string{"type", "properties", "items", "prefixItems", "$ref", "enum", "const", "oneOf", "anyOf", "allOf", "additionalProperties", "patternProperties", "format"}

func isStructural(obj map[string]any) bool {
	return slices.ContainsFunc(structural, func(k string) bool { _, ok := obj[k]; return ok })
}

// isNull reports whether a schema admits only null: {"type": "null"} or
// {"const": null}.
func isNull(obj map[string]any) bool {
	if t, ok := obj["type"].(string); ok && t == "null" {
		return true
	}
	c, ok := obj["const"]
	return ok && c == nil
}

// property is one declared property with the schema that declares it; a
// property declared by several allOf members keeps every declaration.
type property struct {
	name  string
	decls []node
}

// view is a schema with its allOf members (and a $ref that has sibling
// keywords) merged in: the keywords that decide the Go type.
type view struct {
	at       node     // the schema being typed
	types    []string // from "type", without "null"
	nullable bool     // "null" in "type", null in enum, or a null branch of oneOf/anyOf
	hasType  bool

	props    []*property
	byName   map[string]*property
	required map[string]bool

	additional      *node // additionalProperties when it is a schema object
	additionalFalse bool  // additionalProperties: false
	patternProps    []node

	items       *node // items when it is a schema (object or true)
	prefixItems bool

	enum    []any
	hasEnum bool // enum or const

	format string

	union     []node // oneOf or anyOf branches that shape a type
	unionKind string // "oneOf" or "anyOf"
}

// flatten builds the view of the schema at n. seen holds the locations on
// the current allOf/$ref path, to report cycles instead of looping.
func (b *builder) flatten(n node) *view {
	v := &view{at: n, byName: map[string]*property{}, required: map[string]bool{}}
	b.merge(v, n, map[string]bool{})
	return v
}

func (b *builder) merge(v *view, n node, seen map[string]bool) {
	loc := n.location()
	if seen[loc] {
		b.errs.Add(n.doc.Errorf(n.ptr, "allOf/$ref cycle: this schema includes itself"))
		return
	}
	seen[loc] = true
	defer delete(seen, loc)

	obj := n.object()
	if obj == nil {
		if bv, ok := n.value().(bool); ok && !bv {
			b.errs.Add(n.doc.Errorf(n.ptr, "schema false admits no value; it cannot be a Go type"))
		}
		return
	}
	// A $ref with sibling keywords applies both, like allOf.
	if ref, ok := obj["$ref"].(string); ok {
		if t, err := b.s.Resolve(n.doc, ref); err == nil {
			b.merge(v, nodeAt(t.Doc, t.Pointer), seen)
		}
	}
	if members, ok := obj["allOf"].([]any); ok {
		for i := range members {
			b.merge(v, n.at("allOf", strconv.Itoa(i)), seen)
		}
	}

	switch t := obj["type"].(type) {
	case string:
		b.mergeTypes(v, n, []any{t})
	case []any:
		b.mergeTypes(v, n, t)
	}
	if props, ok := obj["properties"].(map[string]any); ok && props != nil {
		for _, name := range n.doc.Keys(load.Append(n.ptr, "properties")) {
			p := v.byName[name]
			if p == nil {
				p = &property{name: name}
				v.byName[name] = p
				v.props = append(v.props, p)
			}
			p.decls = append(p.decls, n.at("properties", name))
		}
	}
	if req, ok := obj["required"].([]any); ok {
		for _, r := range req {
			v.required[r.(string)] = true
		}
	}
	switch ap := obj["additionalProperties"].(type) {
	case bool:
		v.additionalFalse = v.additionalFalse || !ap
	case map[string]any:
		an := n.at("additionalProperties")
		v.additional = &an
	}
	if pp, ok := obj["patternProperties"].(map[string]any); ok {
		for _, k := range load.SortedKeys(pp) {
			v.patternProps = append(v.patternProps, n.at("patternProperties", k))
		}
	}
	switch obj["items"].(type) {
	case map[string]any, bool:
		in := n.at("items")
		v.items = &in
	}
	if _, ok := obj["prefixItems"]; ok {
		v.prefixItems = true
	}
	if e, ok := obj["enum"].([]any); ok {
		b.mergeEnum(v, n, "enum", e)
	}
	if c, ok := obj["const"]; ok {
		b.mergeEnum(v, n, "const", []any{c})
	}
	if f, ok := obj["format"].(string); ok && v.format == "" {
		v.format = f
	}
	for _, kw := range []string{"oneOf", "anyOf"} {
		branches, ok := obj[kw].([]any)
		if !ok {
			continue
		}
		var shaping []node
		nullBranch := false
		for i, br := range branches {
			bo, _ := br.(map[string]any)
			switch {
			case isNull(bo):
				nullBranch = true
			case bo == nil || isStructural(bo):
				shaping = append(shaping, n.at(kw, strconv.Itoa(i)))
			}
		}
		if len(shaping) == 0 {
			continue // only constrains values, e.g. oneOf: [{required: [a]}, {required: [b]}]
		}
		if v.union != nil {
			b.errs.Add(n.doc.Errorf(load.Append(n.ptr, kw), "a schema with both oneOf and anyOf (or several of them through allOf) cannot be one Go type; nest one inside a branch of the other"))
			continue
		}
		v.union, v.unionKind = shaping, kw
		v.nullable = v.nullable || nullBranch
	}
}

func (b *builder) mergeTypes(v *view, n node, ts []any) {
	var types []string
	for _, t := range ts {
		s, _ := t.(string)
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
		b.errs.Add(n.doc.Errorf(load.Append(n.ptr, "type"), "type %v contradicts type %v of the schema it is combined with (allOf/$ref): no value can satisfy both", types, v.types))
	}
	v.types = both
	v.nullable = v.nullable && nullable
}

func (b *builder) mergeEnum(v *view, n node, kw string, values []any) {
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
