package model

import (
	"reflect"
	"slices"
	"strconv"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/runtime/codec"
)

// The members of an object that its properties do not declare are kept,
// never dropped: patternProperties and additionalProperties say which ones
// are valid, and a decoded value holds every valid member, so that it
// encodes back to the same JSON. They go into one map (a Map, or a
// Struct's Extra field), whose values have one Go type: the schema every
// such member has, when all of patternProperties and additionalProperties
// are the same schema; else raw JSON, checked by the embedded schema.

// members is what holds the undeclared members of an object.
type members struct {
	elem     Ref      // the type of their values
	patterns []string // the patterns their names must match (additionalProperties: false); nil: any name
	why      string   // why generated code cannot check them exactly; "" when it can
}

// hasMembers reports whether an object may have members its properties do
// not declare.
func hasMembers(v *view) bool {
	return !v.additionalFalse || v.admitsOthers || len(v.patternProps) > 0 || v.additional != nil
}

// members types the undeclared members of the object v.
func (b *builder) members(v *view) members {
	var kinds []Ref // the schemas a member may have to satisfy, typed
	for _, pp := range v.patternProps {
		kinds = append(kinds, b.typeOf(pp.Schema))
	}
	closed := v.additionalFalse && !v.admitsOthers
	switch {
	case v.additional != nil:
		kinds = append(kinds, b.typeOf(v.additional))
	case !closed:
		kinds = append(kinds, Ref{Kind: Raw}) // anything, verbatim
	}
	m := members{elem: kinds[0]}
	if closed {
		for _, pp := range v.patternProps {
			m.patterns = append(m.patterns, pp.Name)
		}
	}
	for _, k := range kinds[1:] {
		if !sameValues(k, m.elem) {
			// A member may match several patterns, and is then all of
			// their schemas: no one Go type says which.
			m.elem = Ref{Kind: Raw}
			m.why = at(v.at, "patternProperties") + ": members of different schemas, kept as raw JSON"
			return m
		}
	}
	if len(v.patternProps) > 0 {
		// Generated code checks only its own schema on a declared
		// property; a pattern's applies too, where the name matches.
		for _, p := range v.props {
			for _, pp := range v.patternProps {
				if codec.Regexp(pp.Name).Check(p.name) == nil {
					m.why = at(v.at, "patternProperties") + ": " + strconv.Quote(pp.Name) + " matches the declared property " + strconv.Quote(p.name)
					return m
				}
			}
		}
	}
	// Members that other keywords admit beside unevaluatedProperties
	// (if/then, dependentSchemas) are raw JSON; those keywords send the
	// type to the embedded schema.
	return m
}

// sameValues reports whether two types of members check the same values:
// the same Go type, from schemas whose constraints agree (an exact one
// each), so one value type and one rule serve both.
func sameValues(a, b Ref) bool {
	if !a.Equal(b) || a.Inexact() != "" || b.Inexact() != "" {
		return false
	}
	if a.Kind == Named && !a.narrowed && a.wrapper == nil {
		return true // one declared type: its own rules
	}
	// Formats are compared as written: which are asserted is the
	// manifest's to say, the same for both.
	if !reflect.DeepEqual(a.Check(nil), b.Check(nil)) || formatOf(a) != formatOf(b) {
		return false
	}
	if a.Elem != nil {
		return sameValues(*a.Elem, *b.Elem)
	}
	return true
}

func formatOf(r Ref) string {
	if r.schema == nil {
		return ""
	}
	return r.schema.Format
}

// evaluators are the keywords next to unevaluatedProperties that may
// evaluate a member neither the schema's properties nor its
// patternProperties and additionalProperties declare, which it then
// admits.
var evaluators = []string{"if", "then", "else", "dependentSchemas", "dependencies", "oneOf", "anyOf"}

// evaluatesOthers reports whether schema n, or a schema it includes
// (allOf, $ref), has one of the evaluators.
func evaluatesOthers(n *load.Schema, seen map[*load.Schema]bool) bool {
	if n == nil || n.Keywords == nil || seen[n] {
		return false
	}
	seen[n] = true
	if slices.ContainsFunc(evaluators, func(kw string) bool { return applies(n, kw) }) {
		return true
	}
	return evaluatesOthers(n.Ref, seen) || slices.ContainsFunc(n.AllOf, func(m *load.Schema) bool { return evaluatesOthers(m, seen) })
}
