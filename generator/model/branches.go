package model

import (
	"maps"
	"slices"

	"github.com/warrenbus/warren/generator/load"
)

// Branches is a oneOf or anyOf beside a struct's properties whose branches
// only require some of them, re-stating a declared property as true, {}
// or its own $ref, or the object's type: {"anyOf": [{"required": ["a"]},
// {"required": ["b"]}]}. It shapes no Go type; generated code checks that
// a value has every property of at least one branch (anyOf), or of exactly
// one (oneOf).
type Branches struct {
	OneOf bool
	// Sets are, per branch, the optional fields it requires; a required
	// field is always there and is left out, so an empty set always holds.
	// A branch that matches nothing (false) is left out.
	Sets [][]*Field
}

// branchKeywords are the keywords a branch of [Branches] may assert, its
// properties and type only saying again what the struct's own do.
var branchKeywords = []string{"required", "properties", "type"}

// Branches returns the required-property unions beside the properties of
// a struct, or says why generated code cannot check one ("" when it can).
func (t *Type) Branches() ([]Branches, string) {
	n := t.schema
	var out []Branches
	for _, u := range []struct {
		kw       string
		branches []*load.Schema
	}{{"oneOf", n.OneOf}, {"anyOf", n.AnyOf}} {
		if len(u.branches) == 0 || !applies(n, u.kw) {
			continue
		}
		if t.nullable {
			// null satisfies every branch of required properties.
			return nil, at(n, u.kw) + ": beside an object that may be null"
		}
		b := Branches{OneOf: u.kw == "oneOf"}
		optional := map[string]bool{}
		for _, br := range u.branches {
			if br.IsFalse() {
				continue
			}
			set, why := t.branchSet(br)
			if why != "" {
				return nil, why
			}
			for _, f := range set {
				optional[f.JSONName] = true
			}
			b.Sets = append(b.Sets, set)
		}
		if len(optional) > 64 {
			return nil, at(n, u.kw) + ": more than 64 properties required by its branches"
		}
		out = append(out, b)
	}
	return out, ""
}

// branchSet returns the optional fields a branch requires, or says why the
// branch is more than required properties.
func (t *Type) branchSet(br *load.Schema) ([]*Field, string) {
	if br.Keywords == nil {
		return nil, "" // true
	}
	if br.Draft == load.Draft4 && br.Has("const") {
		return nil, at(br, "const") + ": not a keyword of draft-04"
	}
	for _, kw := range slices.Sorted(maps.Keys(br.Keywords)) {
		if slices.Contains(assertions, kw) && !slices.Contains(branchKeywords, kw) {
			return nil, at(br, kw) + ": not translated in a branch beside properties"
		}
	}
	if br.Types != nil && !slices.Contains(br.Types, "object") {
		return nil, at(br, "type") + ": not the object's type"
	}
	for _, p := range br.Properties {
		i := slices.IndexFunc(t.Fields, func(f *Field) bool { return f.JSONName == p.Name })
		if i < 0 || !sameDeclaration(p.Schema, t.Fields[i].schema) {
			return nil, at(p.Schema, "") + ": a property a branch beside properties declares anew"
		}
	}
	var set []*Field
	for _, name := range br.Required {
		i := slices.IndexFunc(t.Fields, func(f *Field) bool { return f.JSONName == name })
		if i < 0 {
			return nil, at(br, "required") + ": requires an undeclared property " + name
		}
		if f := t.Fields[i]; !f.Required && !slices.Contains(set, f) {
			set = append(set, f)
		}
	}
	return set, ""
}
