package schemadiff

import (
	"maps"
	"slices"
	"strconv"

	"github.com/warrenbus/warren/generator/model"
)

// handled lists the untyped keywords compare looks at by name; any other
// keyword that changed is reported by unclassified.
var handled = map[string]bool{}

func init() {
	for _, kw := range model.ConstraintKeywords {
		handled[kw] = true
	}
}

// constraintRule files a judged keyword under its rule.
var constraintRule = map[model.Narrowing]string{
	model.Tightened:  ConstraintTightened,
	model.Loosened:   ConstraintLoosened,
	model.Changed:    ConstraintChanged,
	model.Annotation: FormatAnnotation,
	model.Unjudged:   UnclassifiedChange,
}

// constraints compares the keywords that bound, divide, match or format
// a value, as the generator judges them when a change ships as a version
// (model.JudgeConstraint): a tightened keyword here is one whose upcast
// is hand-written there.
func (c *comparer) constraints(path string, ov, nv *view) {
	for _, j := range model.JudgeConstraints(c.constraintsOf(c.old, ov), c.constraintsOf(c.new, nv)) {
		msg := j.What
		if j.Why != "" {
			msg += ": " + j.Why
		}
		rule := constraintRule[j.Narrowing]
		c.addBreaks(rule, narrowingBreaks(j.Narrowing, rule), path, c.at(ov, nv, j.Keyword), "%s", msg)
	}
}

// constraintsOf are the judged keywords of a view of side d.
func (c *comparer) constraintsOf(d *Dir, v *view) model.Constraints {
	return model.Constraints{Minimum: v.min, Maximum: v.max, Keywords: v.kw, Format: v.format, FormatAsserted: v.format != "" && d.asserts(v.format)}
}

// narrowingBreaks is the directions a judged keyword breaks: fewer values
// accepted break consumers built from the new schema on old facts, more
// accepted those built from the old schema on new facts.
func narrowingBreaks(n model.Narrowing, rule string) Direction {
	switch n {
	case model.Tightened:
		return Backward
	case model.Loosened:
		return Forward
	case model.Changed:
		return Both
	case model.Annotation:
		return Neither
	}
	return ruleOf[rule].Breaks
}

// branches compares oneOf or anyOf. Branches written alike on both sides
// are paired first, so inserting a branch does not misalign the rest, and
// are compared as schemas too, since a branch written alike can lead
// somewhere else ({"$ref": "#/$defs/card"} where the card changed); the
// remaining branches pair up in order and are compared as schemas, and
// whatever is left over was added or removed.
func (c *comparer) branches(path string, ov, nv *view, k string) {
	o, n := ov.oneOf, nv.oneOf
	if k == "anyOf" {
		o, n = ov.anyOf, nv.anyOf
	}
	pos := c.at(ov, nv, k)
	switch {
	case len(o) == 0 && len(n) == 0:
		return
	case len(o) == 0:
		c.add(ConstraintTightened, path, pos, "%s added: values must match its branches", k)
		return
	case len(n) == 0:
		c.add(TypeWidened, path, pos, "%s removed: values need not match its branches any more", k)
		return
	}
	usedNew := make([]bool, len(n))
	var restOld []int
	for i, ob := range o {
		found := false
		for j, nb := range n {
			if !usedNew[j] && canon(raw(ob)) == canon(raw(nb)) {
				usedNew[j], found = true, true
				c.compare(appendPtr(path, k, strconv.Itoa(j)), ob, nb)
				break
			}
		}
		if !found {
			restOld = append(restOld, i)
		}
	}
	var restNew []int
	for j := range n {
		if !usedNew[j] {
			restNew = append(restNew, j)
		}
	}
	for len(restOld) > 0 && len(restNew) > 0 {
		i, j := restOld[0], restNew[0]
		restOld, restNew = restOld[1:], restNew[1:]
		c.compare(appendPtr(path, k, strconv.Itoa(j)), o[i], n[j])
	}
	for _, i := range restOld {
		c.add(BranchRemoved, appendPtr(path, k, strconv.Itoa(i)), c.old.pos(c.oldSide(), ov.branchLoc(k, i)),
			"%s branch %d removed: facts written to match only it fail new consumers", k, i)
	}
	for _, j := range restNew {
		msg, breaks := "%s branch %d added: consumers built from the old schema reject facts that match only it", Forward
		if k == "oneOf" {
			msg, breaks = msg+"; an old fact that also matches another branch now fails oneOf", Both
		}
		c.addBreaks(BranchAdded, breaks, appendPtr(path, k, strconv.Itoa(j)), c.new.pos(New, nv.branchLoc(k, j)), msg, k, j)
	}
}

func (c *comparer) annotations(path string, ov, nv *view) {
	for _, k := range []string{"description", "title", "deprecated", "default"} {
		o, oHas := ov.annot[k]
		n, nHas := nv.annot[k]
		if oHas == nHas && canon(o) == canon(n) {
			continue
		}
		pos := c.at(ov, nv, k)
		switch k {
		case "description":
			c.add(DescriptionChanged, path, pos, "description changed")
		case "title":
			c.add(TitleChanged, path, pos, "title changed from %s to %s: generated Go names follow it", orNone(o, oHas), orNone(n, nHas))
		case "deprecated":
			if n == true {
				c.add(DeprecatedChanged, path, pos, "now deprecated")
			} else {
				c.add(DeprecatedChanged, path, pos, "no longer deprecated")
			}
		case "default":
			c.add(DefaultChanged, path, pos, "default changed from %s to %s", orNone(o, oHas), orNone(n, nHas))
		}
	}
}

// unclassified reports changes to keywords compare has no rule for
// (patternProperties, not, if/then/else, dependentRequired, ...). Whether
// such a change accepts less cannot be told in general, so it counts as
// breaking and asks for a human look.
func (c *comparer) unclassified(path string, ov, nv *view) {
	keys := map[string]bool{}
	for k := range ov.kw {
		keys[k] = true
	}
	for k := range nv.kw {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if handled[k] {
			continue
		}
		o, oHas := ov.kw[k]
		n, nHas := nv.kw[k]
		if oHas == nHas && canon(o) == canon(n) {
			if !oHas || model.SameKeyword(ov.kwAt[k], nv.kwAt[k], k) {
				continue
			}
			// Written alike, but a $ref in it leads to a schema that
			// changed.
			c.add(UnclassifiedChange, path, c.at(ov, nv, k), "%s is written as before, but a schema its $refs lead to changed: warren cannot tell whether this accepts more or less, so it counts as breaking both ways", k)
			continue
		}
		c.add(UnclassifiedChange, path, c.at(ov, nv, k), "%s changed from %s to %s: warren cannot tell whether this accepts more or less, so it counts as breaking both ways", k, orNone(o, oHas), orNone(n, nHas))
	}
	refs := map[string]bool{}
	for r := range ov.unres {
		refs[r] = true
	}
	for r := range nv.unres {
		refs[r] = true
	}
	for _, r := range slices.Sorted(maps.Keys(refs)) {
		oat, inOld := ov.unres[r]
		nat, inNew := nv.unres[r]
		if inOld && inNew {
			continue
		}
		if inNew {
			c.add(UnclassifiedChange, path, c.new.pos(New, nat), "$ref %q cannot be followed, so warren cannot compare it", r)
		} else {
			c.add(UnclassifiedChange, path, c.old.pos(c.oldSide(), oat), "$ref %q cannot be followed, so warren cannot compare it", r)
		}
	}
}

func orNone(v any, has bool) string {
	if !has {
		return "(none)"
	}
	return canon(v)
}

// canon renders a JSON value canonically (model.CanonicalJSON), so that
// values are compared by meaning, not spelling: 1 and 1.0 are the same
// number.
func canon(v any) string { return model.CanonicalJSON(v) }
