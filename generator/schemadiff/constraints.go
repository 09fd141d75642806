package schemadiff

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
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
// is hand-written there, in the same words. Two readings go further than
// the generator's, which reads each schema as written:
//
//   - a value that several schemas on the way write (merge keeps the
//     strictest) is judged as merged, and the message says what the side
//     writes; several patterns or formats on a side are judged as sets
//     (judgeSets);
//   - where both sides admit integers alone, a keyword is judged again
//     for the integers it admits (integerConstraints): one that admits the
//     same integers is no change (exclusiveMinimum 0 and minimum 1), and
//     one whose verdict differs for integers is reported as read for
//     them, its message saying what each side writes.
func (c *comparer) constraints(path string, ov, nv *view) {
	o, n := c.constraintsOf(c.old, ov), c.constraintsOf(c.new, nv)
	patterns := len(ov.patterns) > 1 || len(nv.patterns) > 1
	if patterns {
		o.Keywords, n.Keywords = maps.Clone(o.Keywords), maps.Clone(n.Keywords)
		delete(o.Keywords, "pattern")
		delete(n.Keywords, "pattern")
	}
	formats := len(ov.formats) > 1 || len(nv.formats) > 1
	if formats {
		o.Format, n.Format = "", ""
	}
	integers := ov.integerOnly() && nv.integerOnly()
	var oi, ni model.Constraints
	var oRead, nRead map[string]bool
	if integers {
		// Bounds are raised or lowered to a multiple only where both
		// sides divide alike: each side's own would make the bounds of
		// two different sets of integers, whose order says nothing.
		same := sameMultiple(o, n)
		oi, oRead = integerConstraints(o, same)
		ni, nRead = integerConstraints(n, same)
	}
	for _, kw := range model.ConstraintKeywords {
		j := model.JudgeConstraint(kw, o, n)
		oj, nj, read := o, n, false
		if integers {
			ij := model.JudgeConstraint(kw, oi, ni)
			switch {
			case ij.Narrowing == model.Same:
				continue
			case ij.Narrowing != j.Narrowing:
				j, oj, nj, read = ij, oi, ni, true
			}
		}
		if j.Narrowing == model.Same {
			continue
		}
		var notes []string
		if kw != "pattern" && kw != "format" { // a pattern or format written twice is a set: judgeSets
			for _, side := range []struct {
				name string
				v    *view
				c    model.Constraints
				read bool
			}{{"old", ov, oj, read && oRead[kw]}, {"new", nv, nj, read && nRead[kw]}} {
				if note := writtenNote(kw, side.name, side.v, side.c, side.read); note != "" {
					notes = append(notes, note)
				}
			}
		}
		what := j.What
		if len(notes) > 0 {
			what += " (" + strings.Join(notes, "; ") + ")"
		}
		c.addJudged(path, ov, nv, kw, j.Narrowing, what, j.Why)
	}
	if patterns {
		narrowing, what, why := judgeSets("pattern", ov.patterns, nv.patterns, ov.patterns, nv.patterns)
		c.addJudged(path, ov, nv, "pattern", narrowing, what, why)
	}
	if formats {
		asserted := func(d *Dir, fs []string) []string {
			return slices.DeleteFunc(slices.Clone(fs), func(f string) bool { return !d.asserts(f) })
		}
		narrowing, what, why := judgeSets("format", ov.formats, nv.formats, asserted(c.old, ov.formats), asserted(c.new, nv.formats))
		c.addJudged(path, ov, nv, "format", narrowing, what, why)
	}
}

// addJudged records a judged keyword under its rule; nothing when it is
// the same.
func (c *comparer) addJudged(path string, ov, nv *view, kw string, n model.Narrowing, what, why string) {
	if n == model.Same {
		return
	}
	msg := what
	if why != "" {
		msg += ": " + why
	}
	rule := constraintRule[n]
	c.addBreaks(rule, narrowingBreaks(n, rule), path, c.at(ov, nv, kw), "%s", msg)
}

// constraintsOf are the judged keywords of a view of side d.
func (c *comparer) constraintsOf(d *Dir, v *view) model.Constraints {
	return model.Constraints{Minimum: v.min, Maximum: v.max, Keywords: v.kw, Format: v.format, FormatAsserted: v.format != "" && d.asserts(v.format)}
}

// writtenNote says what side writes of judged keyword kw where the
// judgement reads something else: the strictest of the values several
// schemas on the way write, or (read) a keyword read for the integers it
// admits. "" where the side writes kw once, as judged, or not at all, or
// writes a value that admits everything (minLength 0), which counts as
// none.
func writtenNote(kw, side string, v *view, judged model.Constraints, read bool) string {
	text := func(s *load.Schema) string {
		switch kw {
		case "minimum":
			return boundText(kw, s.Minimum)
		case "maximum":
			return boundText(kw, s.Maximum)
		}
		return kw + " " + canon(s.Keywords[kw])
	}
	var written []string
	for _, s := range v.from[kw] {
		if t := text(s); !slices.Contains(written, t) {
			written = append(written, t)
		}
	}
	var is string
	switch kw {
	case "minimum":
		if judged.Minimum != nil {
			is = boundText(kw, judged.Minimum)
		}
	case "maximum":
		if judged.Maximum != nil {
			is = boundText(kw, judged.Maximum)
		}
	default:
		if x, ok := judged.Keywords[kw]; ok {
			is = kw + " " + canon(x)
		}
	}
	switch {
	case len(written) == 0, len(written) == 1 && written[0] == is, is == "" && !read:
		return ""
	case is == "":
		is = "no " + kw
	}
	what := written[0]
	if len(written) > 1 {
		what = "both " + strings.Join(written, " and ")
	}
	if read {
		of := "an integer"
		if m, ok := judged.Keywords["multipleOf"]; ok && kw != "multipleOf" {
			of = "an integer of multipleOf " + canon(m)
		}
		return fmt.Sprintf("the %s schema writes %s, which for %s is %s", side, what, of, is)
	}
	return fmt.Sprintf("the %s schema writes %s, which together are %s", side, what, is)
}

// boundText names a bound as model.JudgeConstraint does:
// "exclusiveMinimum 0", "maximum 10".
func boundText(kw string, b *load.Bound) string {
	if b.Exclusive {
		kw = "exclusive" + strings.ToUpper(kw[:1]) + kw[1:]
	}
	return kw + " " + canon(b.Value)
}

// judgeSets judges keyword kw (pattern, format) where a side has several
// values, all of which a value must meet: old and new as written, and
// those that count (oldCounted, newCounted: every pattern; the formats
// each side asserts, the others being annotations). Counting more values
// accepts fewer; dropping some, more; both, each side refuses values the
// other accepts, as far as warren can prove.
func judgeSets(kw string, old, new, oldCounted, newCounted []string) (model.Narrowing, string, string) {
	list := func(vs []string) string {
		q := make([]string, len(vs))
		for i, x := range vs {
			q[i] = strconv.Quote(x)
		}
		return strings.Join(q, " and ")
	}
	minus := func(a, b []string) []string {
		return slices.DeleteFunc(slices.Clone(a), func(x string) bool { return slices.Contains(b, x) })
	}
	if len(minus(old, new)) == 0 && len(minus(new, old)) == 0 {
		return model.Same, "", ""
	}
	what := fmt.Sprintf("%ss changed from %s to %s", kw, orNothing(list(old)), orNothing(list(new)))
	added, dropped := minus(newCounted, oldCounted), minus(oldCounted, newCounted)
	switch {
	case len(added) == 0 && len(dropped) == 0:
		return model.Annotation, what, "an annotation: neither manifest lists the formats changed in assertFormats"
	case len(dropped) == 0:
		return model.Tightened, what, fmt.Sprintf("a value must now meet %s too", list(added))
	case len(added) == 0:
		return model.Loosened, what, fmt.Sprintf("a value need no longer meet %s", list(dropped))
	}
	return model.Changed, what, fmt.Sprintf("a value must now meet %s, and need no longer meet %s: warren cannot prove that either side accepts every value the other does", list(added), list(dropped))
}

func orNothing(s string) string {
	if s == "" {
		return "none"
	}
	return s
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

// moreBranches compares the oneOf or anyOf (k) that schemas on the way
// write after the first, which branches (or the enum it folded into)
// compared: a value must match one branch of each, which no single list
// of branches says.
func (c *comparer) moreBranches(path string, ov, nv *view, k string) {
	if len(ov.from[k]) > 1 || len(nv.from[k]) > 1 {
		c.unmerged(path, ov, nv, k, 1)
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
		if len(ov.from[k]) > 1 || len(nv.from[k]) > 1 {
			c.unmerged(path, ov, nv, k, 0)
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

// unmerged compares keyword k where several schemas on the way write it
// on a side and their values cannot be merged into one (not, if, a
// second oneOf): every value from the first-th on, place by place, with
// the $refs in them followed. A change to any is reported, since
// warren cannot tell whether it accepts more or less.
func (c *comparer) unmerged(path string, ov, nv *view, k string, first int) {
	o, n := ov.from[k][min(first, len(ov.from[k])):], nv.from[k][min(first, len(nv.from[k])):]
	same := len(o) == len(n)
	for i := 0; same && i < len(o); i++ {
		same = model.SameKeyword(o[i], n[i], k)
	}
	if same {
		return
	}
	values := func(ss []*load.Schema) string {
		vs := make([]any, len(ss))
		for i, s := range ss {
			vs[i] = s.Keywords[k]
		}
		return canon(vs)
	}
	what := "written in several of the schemas a value must satisfy here (its own keywords, its $ref, its allOf members)"
	if first > 0 {
		what = "written again in more of the schemas a value must satisfy here (its own keywords, its $ref, its allOf members) than the first, which is compared on its own"
	}
	c.add(UnclassifiedChange, path, c.at(ov, nv, k), "%s is %s, and warren does not merge them into one: they changed from %s to %s, and warren cannot tell whether this accepts more or less, so it counts as breaking both ways", k, what, values(o), values(n))
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
