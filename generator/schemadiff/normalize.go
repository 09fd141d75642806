package schemadiff

import (
	"encoding/json"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/internal/pattern"
)

// normalize rewrites a merged view so that schemas that accept the same
// values compare alike, and keywords that accept every value are no
// change:
//
//   - a oneOf or anyOf whose every branch only lists values (a const or an
//     enum, with annotations) is the enum of those values: for anyOf every
//     value of a branch, for oneOf those of exactly one branch;
//   - an enum (or a const) admits the types of its values: without "type"
//     they are its type, and a value that "type" refuses is no value of
//     the enum, since no value can be both;
//   - "number" with a multipleOf that is a whole number accepts integers
//     alone, and an integer is a multiple of 1 (of 1/2, ...): "integer" is
//     "number" with multipleOf 1, and such a multipleOf beside "integer"
//     says nothing;
//   - a bound of a schema that admits integers alone is read as the
//     inclusive bound of the integers it admits (exclusiveMinimum 0 is
//     minimum 1, maximum 9.5 is maximum 9, and beside multipleOf 5,
//     minimum 1 is minimum 5), and its multipleOf as the integer the
//     integers it admits are multiples of (multipleOf 2.5 is multipleOf
//     5): where both sides admit integers alone, see integerConstraints;
//   - a lower count bound of 0 (minLength, minItems, minProperties), a
//     minContains of 1 (its default) or minContains and maxContains
//     without contains (which they qualify), and a pattern that matches
//     every string (".*", "", "^.*") accept every value: they are no
//     keyword.
func (v *view) normalize() {
	v.foldValueBranches("oneOf")
	v.foldValueBranches("anyOf")
	v.typesOfEnum()
	v.integerMultiples()
	v.dropVacuous()
}

// foldValueBranches turns the oneOf or anyOf (k) of a view into the enum
// it amounts to, when every branch only lists values. An enum of the
// view's own is intersected with it: a value must satisfy both. The
// branches are kept in valueBranches, so that the annotations of the
// branches of one value are still compared.
func (v *view) foldValueBranches(k string) {
	branches := v.oneOf
	if k == "anyOf" {
		branches = v.anyOf
	}
	if len(branches) == 0 {
		return
	}
	count := map[string]int{}
	first := map[string]any{}
	var order []string
	for _, b := range branches {
		vals, ok := valuesOnly(b)
		if !ok {
			return
		}
		inBranch := map[string]bool{}
		for _, x := range vals {
			c := canon(x)
			if inBranch[c] {
				continue
			}
			inBranch[c] = true
			count[c]++
			if _, seen := first[c]; !seen {
				first[c] = x
				order = append(order, c)
			}
		}
	}
	var vals []any
	for _, c := range order {
		if k == "anyOf" || count[c] == 1 { // under oneOf, a value two branches list matches both, and fails
			vals = append(vals, first[c])
		}
	}
	if v.hasEnum {
		keep := canonSet(vals)
		vals = slices.DeleteFunc(slices.Clone(v.enum), func(x any) bool { return !keep[canon(x)] })
	} else {
		v.enumKw, v.hasEnum, v.isConst = k, true, false
	}
	v.enum = vals
	if v.valueBranches == nil {
		v.valueBranches = map[string][]*load.Schema{}
	}
	v.valueBranches[k] = branches
	if k == "anyOf" {
		v.anyOf = nil
	} else {
		v.oneOf = nil
	}
}

// valuesOnly returns the values a schema lists (its const or enum, less
// those its type refuses), when that is all it says: annotations aside,
// it has no other keyword; a $ref alone is followed.
func valuesOnly(s *load.Schema) ([]any, bool) {
	for seen := map[*load.Schema]bool{}; s != nil && s.Ref != nil && refAlone(s); s = s.Ref {
		if seen[s] {
			return nil, false
		}
		seen[s] = true
	}
	if s == nil || s.Bool != nil || s.Keywords == nil || !s.HasEnum || s.RefText != "" {
		return nil, false
	}
	for k := range s.Keywords {
		if k != "enum" && k != "const" && k != "type" && !quiet(k) {
			return nil, false
		}
	}
	if s.Types == nil {
		return s.Enum, true
	}
	types := map[string]bool{}
	for _, t := range s.Types {
		types[t] = true
	}
	return slices.DeleteFunc(slices.Clone(s.Enum), func(x any) bool { return !admits(types, valueType(x)) }), true
}

// refAlone reports whether a schema says nothing but its $ref.
func refAlone(s *load.Schema) bool {
	if s.RefAlone {
		return true
	}
	for k := range s.Keywords {
		if k != "$ref" && !quiet(k) {
			return false
		}
	}
	return true
}

// quiet reports whether keyword k says nothing of the values accepted:
// an annotation, an identifier, definitions, an extension.
func quiet(k string) bool {
	switch k {
	case "title", "description", "deprecated", "default":
		return true
	}
	return notCompared[k] || strings.HasPrefix(k, "x-")
}

// valueType is the JSON type of a decoded value: a number without a
// fraction is an "integer", as JSON Schema counts it.
func valueType(x any) string {
	switch x := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	default:
		if r, ok := model.ExactNumber(x); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	}
}

// typesOfEnum gives a view with an enum the types its values have, when
// it says no type, and drops the values its type refuses otherwise.
func (v *view) typesOfEnum() {
	if !v.hasEnum {
		return
	}
	if v.types != nil {
		v.enum = slices.DeleteFunc(slices.Clone(v.enum), func(x any) bool { return !admits(v.types, valueType(x)) })
		return
	}
	set := map[string]bool{}
	for _, x := range v.enum {
		set[valueType(x)] = true
	}
	if set["number"] {
		delete(set, "integer") // a number admits the integers
	}
	v.types, v.typeAt, v.typesFromEnum = set, v.keywordAt(v.enumKw), true
}

// integerMultiples reads "number" with a whole multipleOf as "integer",
// and drops a multipleOf that every integer satisfies beside "integer".
func (v *view) integerMultiples() {
	m, ok := v.kw["multipleOf"]
	if !ok || v.types == nil {
		return
	}
	r, ok := model.ExactNumber(m)
	if !ok || r.Sign() <= 0 {
		return
	}
	if r.IsInt() && v.types["number"] {
		types := maps.Clone(v.types)
		delete(types, "number")
		types["integer"] = true
		v.written = fmtTypes(types) + " (" + fmtTypes(v.types) + " with multipleOf " + canon(m) + ")"
		v.types = types
	}
	if v.types["integer"] && !v.types["number"] && new(big.Rat).Inv(r).IsInt() {
		delete(v.kw, "multipleOf")
	}
}

// dropVacuous drops the keywords that accept every value.
func (v *view) dropVacuous() {
	for _, k := range []string{"minLength", "minItems", "minProperties"} {
		if r, ok := model.ExactNumber(v.kw[k]); ok && r.Sign() == 0 {
			delete(v.kw, k)
		}
	}
	if _, ok := v.kw["contains"]; !ok {
		delete(v.kw, "minContains")
		delete(v.kw, "maxContains")
	} else if r, ok := model.ExactNumber(v.kw["minContains"]); ok && r.Cmp(big.NewRat(1, 1)) == 0 {
		delete(v.kw, "minContains")
	}
	if p, ok := v.kw["pattern"].(string); ok && matchesEverything(p) {
		delete(v.kw, "pattern")
	}
}

// assertion finds what makes a pattern's match depend on where it is
// tried, or on what it matched before: anchors, word boundaries,
// lookarounds and backreferences. It is written broadly (an escaped "$"
// counts too): a pattern it finds is judged as written.
var assertion = regexp.MustCompile(`[\^$]|\\[bBk1-9]|\(\?<?[=!]`)

// matchesEverything reports whether pattern p, which JSON Schema does not
// anchor, matches every string. Without anchors, boundaries, lookarounds
// or backreferences, a pattern that matches the empty string matches it
// at the start of any string; a leading "^" is met there too.
func matchesEverything(p string) bool {
	rest := strings.TrimPrefix(p, "^")
	if assertion.MatchString(rest) {
		return false
	}
	re, err := pattern.Compile(rest)
	if err != nil {
		return false
	}
	ok, err := re.Match("")
	return err == nil && ok
}

// integerOnly reports whether the only numbers the view admits are
// integers: its bounds and multipleOf are then read for integers.
func (v *view) integerOnly() bool {
	return v.types["integer"] && !v.types["number"]
}

// integerConstraints reads the numeric keywords of a schema that admits
// integers alone for the integers they admit, so that two ways of writing
// the same set of integers compare alike: multipleOf p/q (in lowest
// terms) admits the integers that are multiples of p, so it is
// multipleOf p (none for 1); a minimum is the least integer it admits,
// inclusive (exclusiveMinimum 0 and minimum 0.5 are minimum 1), and a
// maximum the greatest; with toStep, raised (a minimum) or lowered (a
// maximum) to a multiple of that multipleOf. It is exact only where no
// other number is admitted, so it is applied only when both sides of a
// comparison admit integers alone: a side that admits 0.5 reads
// exclusiveMinimum 0 as it is written. It returns the keywords it read
// otherwise than written.
func integerConstraints(c model.Constraints, toStep bool) (model.Constraints, map[string]bool) {
	read := map[string]bool{}
	step := integerStep(c)
	if m, ok := c.Keywords["multipleOf"]; ok && step != nil && canon(m) != step.String() {
		c.Keywords = maps.Clone(c.Keywords)
		read["multipleOf"] = true
		if step.Cmp(big.NewInt(1)) == 0 {
			delete(c.Keywords, "multipleOf")
		} else {
			c.Keywords["multipleOf"] = json.Number(step.String())
		}
	}
	if step == nil || !toStep {
		step = big.NewInt(1)
	}
	bound := func(b *load.Bound, lower bool) *load.Bound {
		r, ok := model.ExactNumber(b.Value)
		if !ok {
			return b
		}
		var n *big.Int
		switch {
		case lower && b.Exclusive:
			n = new(big.Int).Add(floor(r), big.NewInt(1))
		case lower:
			n = new(big.Int).Neg(floor(new(big.Rat).Neg(r))) // the ceiling
		case b.Exclusive:
			n = new(big.Int).Sub(new(big.Int).Neg(floor(new(big.Rat).Neg(r))), big.NewInt(1))
		default:
			n = floor(r)
		}
		// To a multiple of step: up for a minimum, down for a maximum.
		q, m := new(big.Int).DivMod(n, step, new(big.Int))
		if m.Sign() != 0 && lower {
			q.Add(q, big.NewInt(1))
		}
		n = q.Mul(q, step)
		if b.Exclusive || new(big.Rat).SetInt(n).Cmp(r) != 0 {
			return &load.Bound{Value: json.Number(n.String())}
		}
		return b
	}
	if c.Minimum != nil {
		if b := bound(c.Minimum, true); b != c.Minimum {
			c.Minimum, read["minimum"] = b, true
		}
	}
	if c.Maximum != nil {
		if b := bound(c.Maximum, false); b != c.Maximum {
			c.Maximum, read["maximum"] = b, true
		}
	}
	return c, read
}

// integerStep is the integer whose multiples are the integers a
// multipleOf admits: the numerator of multipleOf in lowest terms; 1 for
// none, nil for one that is no positive number.
func integerStep(c model.Constraints) *big.Int {
	m, ok := c.Keywords["multipleOf"]
	if !ok {
		return big.NewInt(1)
	}
	r, ok := model.ExactNumber(m)
	if !ok || r.Sign() <= 0 {
		return nil
	}
	return new(big.Int).Set(r.Num())
}

// sameMultiple reports whether two schemas that admit integers alone
// admit the multiples of the same integer.
func sameMultiple(a, b model.Constraints) bool {
	x, y := integerStep(a), integerStep(b)
	return x != nil && y != nil && x.Cmp(y) == 0
}

// floor is the greatest integer not above r.
func floor(r *big.Rat) *big.Int {
	q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // Euclidean: rounds down for a positive divisor
	return q
}
