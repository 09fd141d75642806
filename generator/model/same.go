package model

import (
	"maps"
	"slices"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// Two schemas can be written alike and still say different things: a
// `{"$ref": "#/$defs/line"}` in two versions of a fact, or in two
// revisions of one file, leads to whatever each one's line says. Comparing
// the text of a keyword such as "not", "patternProperties" or a oneOf
// branch misses a change made where its $refs lead; SameKeyword follows
// them.

// SameKeyword reports whether keyword kw says the same of every value in
// schema a as in schema b: absent from both, or written alike but for its
// annotations, with every $ref below it leading to schemas that say the
// same (see [SameSchema]). It is conservative: a difference it cannot
// judge counts as one.
func SameKeyword(a, b *load.Schema, kw string) bool {
	return (&sameness{}).keyword(a, b, kw)
}

// SameSchema reports whether a and b say the same of every value: the
// same draft, every keyword but annotations, identifiers and definitions
// (which matter only where a $ref leads, and are compared there) written
// alike, and the same of their subschemas and $ref targets.
func SameSchema(a, b *load.Schema) bool { return (&sameness{}).schema(a, b) }

// sameness compares schemas that may refer to themselves: a pair met
// again while it is being compared is taken to be the same, so the
// answer is whether any difference can be found.
type sameness struct {
	assumed map[[2]*load.Schema]bool
}

// sameIgnored are the keys that say nothing of values: identifiers ($ref
// is compared by where it leads), containers of definitions and
// annotations. So are extensions ("x-...").
var sameIgnored = map[string]bool{
	"$schema": true, "$id": true, "id": true, "$anchor": true, "$dynamicAnchor": true, "$ref": true,
	"$defs": true, "definitions": true, "$comment": true, "$vocabulary": true,
	"title": true, "description": true, "examples": true, "default": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

func (c *sameness) schema(a, b *load.Schema) bool {
	switch {
	case a == b:
		return true
	case a == nil || b == nil, (a.Bool == nil) != (b.Bool == nil):
		return false
	case a.Bool != nil:
		return *a.Bool == *b.Bool
	}
	key := [2]*load.Schema{a, b}
	if c.assumed[key] {
		return true
	}
	if c.assumed == nil {
		c.assumed = map[[2]*load.Schema]bool{}
	}
	c.assumed[key] = true
	if a.Draft != b.Draft && (a.Draft == nil || b.Draft == nil || a.Draft.Version != b.Draft.Version) {
		return false // keywords mean other things in other drafts
	}
	if (a.RefText == "") != (b.RefText == "") {
		return false
	}
	if a.RefText != "" {
		if a.Ref == nil || b.Ref == nil {
			if a.Ref != b.Ref || a.RefText != b.RefText {
				return false
			}
		} else if !c.schema(a.Ref, b.Ref) {
			return false
		}
	}
	keys := slices.Sorted(maps.Keys(a.Keywords))
	for k := range b.Keywords {
		if _, ok := a.Keywords[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if sameIgnored[k] || strings.HasPrefix(k, "x-") {
			continue
		}
		if !c.keyword(a, b, k) {
			return false
		}
	}
	return true
}

// keyword compares keyword kw of a and b: its value with the subschemas
// in it masked, then those subschemas pair by pair.
func (c *sameness) keyword(a, b *load.Schema, kw string) bool {
	if a == nil || b == nil {
		return a == b
	}
	va, okA := a.Keywords[kw]
	vb, okB := b.Keywords[kw]
	if okA != okB {
		return false
	}
	if !okA {
		return true
	}
	subA, subB := subschemasOf(a, kw), subschemasOf(b, kw)
	if len(subA) != len(subB) || CanonicalJSON(masked(va, "", subA)) != CanonicalJSON(masked(vb, "", subB)) {
		return false
	}
	for _, rel := range slices.Sorted(maps.Keys(subA)) {
		if !c.schema(subA[rel], subB[rel]) {
			return false
		}
	}
	return true
}

// subschemasOf returns the subschemas written in keyword kw of s, by
// their pointer relative to the keyword ("" for the keyword's own value,
// "/^x" for a pattern's, "/0" for a branch).
func subschemasOf(s *load.Schema, kw string) map[string]*load.Schema {
	base := load.Append(s.Pointer, kw)
	out := map[string]*load.Schema{}
	for _, sub := range s.Subschemas() {
		if rel, ok := strings.CutPrefix(sub.Pointer, base); ok && (rel == "" || rel[0] == '/') {
			out[rel] = sub
		}
	}
	return out
}

// sameSchemaMark stands for a subschema in a masked keyword value.
const sameSchemaMark = "\x00schema"

// masked returns v, found at rel below its keyword, with every subschema
// of subs replaced by a mark: they are compared as schemas.
func masked(v any, rel string, subs map[string]*load.Schema) any {
	if _, ok := subs[rel]; ok {
		return sameSchemaMark
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = masked(e, load.Append(rel, k), subs)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = masked(e, load.AppendIndex(rel, i), subs)
		}
		return out
	}
	return v
}
