package model

import (
	"fmt"
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

// assertFormats are the formats validation checks (see [AssertedFormats]).
func (b *builder) assertFormats() []string { return AssertedFormats(b.s.Manifest) }

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
	"type": true, "enum": true, "const": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, // judged as minimum and maximum
	"items": true, "prefixItems": true, "additionalItems": true,
	"properties": true, "required": true, "additionalProperties": true,
	"allOf": true, "$ref": true, // conjuncts follows them
}

func init() {
	for _, kw := range ConstraintKeywords {
		handledKeywords[kw] = true
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
	why = append(why, n.constraintsImplied(from, s)...)
	why = append(why, n.itemsImplied(from, s)...)
	if !root {
		why = append(why, n.objectImplied(from, s)...)
	}
	for _, kw := range load.SortedKeys(s.Keywords) {
		if handledKeywords[kw] || !slices.Contains(assertions, kw) {
			continue
		}
		if !sameIn(from, s, kw) {
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

// constraints are the keywords of s that [JudgeConstraint] judges.
func (n narrower) constraints(s *load.Schema) Constraints {
	return Constraints{Minimum: s.Minimum, Maximum: s.Maximum, Keywords: s.Keywords, Format: s.Format, FormatAsserted: slices.Contains(n.assert, s.Format)}
}

// constraintsImplied returns what the keywords of s that [JudgeConstraint]
// judges assert that no conjunct of from does: a keyword of s is implied
// when, judged against some conjunct, it does not narrow (the same
// maxLength or a lower one, a divisor of its multipleOf, the same
// pattern, a format nobody asserts). Otherwise it is said as diff says
// it, against the last conjunct that writes the keyword, or as added.
func (n narrower) constraintsImplied(from []*load.Schema, s *load.Schema) []string {
	to := n.constraints(s)
	var why []string
	for _, kw := range ConstraintKeywords {
		if !to.writes(kw) {
			continue // s asserts nothing by it
		}
		judged := JudgeConstraint(kw, Constraints{}, to) // added
		implied := false
		for _, f := range from {
			fc := n.constraints(f)
			c := JudgeConstraint(kw, fc, to)
			if !c.Narrowing.Narrows() {
				implied = true
				break
			}
			if fc.writes(kw) {
				judged = c
			}
		}
		if !implied {
			why = append(why, judged.What)
		}
	}
	return why
}

// itemsImplied compares the schemas of an array's elements.
func (n narrower) itemsImplied(from []*load.Schema, s *load.Schema) []string {
	tuple := func(f *load.Schema) bool { return len(f.PrefixItems) > 0 }
	if tuple(s) || slices.ContainsFunc(from, tuple) && s.Items != nil {
		// A tuple: its positions must be written alike.
		var why []string
		for _, kw := range []string{"prefixItems", "items", "additionalItems"} {
			if s.Has(kw) && !sameIn(from, s, kw) {
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

// sameIn reports whether some conjunct of from writes keyword kw as s
// does, its $refs leading to schemas that say the same (SameKeyword): two
// versions' files each write "#/$defs/s", which may say different things.
func sameIn(from []*load.Schema, s *load.Schema, kw string) bool {
	return slices.ContainsFunc(from, func(f *load.Schema) bool {
		return f.Has(kw) && SameKeyword(f, s, kw)
	})
}

func jsonStrings(vs []any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = CanonicalJSON(v)
	}
	return out
}
