package schemadiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// bounds are the numeric keywords that limit a value from one side. For a
// lower bound, raising it accepts less; for an upper bound, lowering it.
var bounds = []struct {
	kw    string
	lower bool
}{
	{"minLength", true}, {"maxLength", false},
	{"minItems", true}, {"maxItems", false},
	{"minProperties", true}, {"maxProperties", false},
	{"minContains", true}, {"maxContains", false},
}

// handled lists the untyped keywords compare looks at by name; any other
// keyword that changed is reported by unclassified.
var handled = map[string]bool{"multipleOf": true, "pattern": true, "uniqueItems": true}

func init() {
	for _, b := range bounds {
		handled[b.kw] = true
	}
}

func (c *comparer) constraints(path string, ov, nv *view) {
	c.limit(path, ov, nv, "minimum", ov.min, nv.min, true)
	c.limit(path, ov, nv, "maximum", ov.max, nv.max, false)
	for _, b := range bounds {
		c.bound(path, ov, nv, b.kw, b.lower)
	}
	c.multipleOf(path, ov, nv)
	{
		const k = "pattern"
		o, oHas := ov.kw[k]
		n, nHas := nv.kw[k]
		pos := c.at(ov, nv, k)
		switch {
		case !oHas && !nHas:
		case !oHas:
			c.add(ConstraintTightened, path, pos, "%s %s added", k, canon(n))
		case !nHas:
			c.add(ConstraintLoosened, path, pos, "%s %s removed", k, canon(o))
		case canon(o) != canon(n):
			c.add(ConstraintChanged, path, pos, "%s changed from %s to %s: warren cannot prove that either accepts every value the other does", k, canon(o), canon(n))
		}
	}
	c.format(path, ov, nv)
	if o, n := ov.kw["uniqueItems"] == true, nv.kw["uniqueItems"] == true; o != n {
		if n {
			c.add(ConstraintTightened, path, c.at(ov, nv, "uniqueItems"), "uniqueItems is now true: arrays with repeated elements fail")
		} else {
			c.add(ConstraintLoosened, path, c.at(ov, nv, "uniqueItems"), "uniqueItems is no longer true")
		}
	}
}

// format compares format, which consumers check only when their
// manifest's assertFormats lists it; otherwise it is an annotation, and
// changing it breaks nobody.
func (c *comparer) format(path string, ov, nv *view) {
	o, n := ov.format, nv.format
	if o == n {
		return
	}
	oAsserted, nAsserted := o != "" && c.old.asserts(o), n != "" && c.new.asserts(n)
	var breaks Direction
	if oAsserted {
		breaks |= Forward // old consumers check o; new facts need not satisfy it
	}
	if nAsserted {
		breaks |= Backward // new consumers check n; old facts need not satisfy it
	}
	rule := map[Direction]string{Neither: FormatAnnotation, Forward: ConstraintLoosened, Backward: ConstraintTightened, Both: ConstraintChanged}[breaks]
	what := fmt.Sprintf("format changed from %q to %q", o, n)
	switch {
	case o == "":
		what = fmt.Sprintf("format %q added", n)
	case n == "":
		what = fmt.Sprintf("format %q removed", o)
	}
	why := "an annotation on both sides: neither manifest lists it in assertFormats"
	switch breaks {
	case Forward:
		why = "consumers built from the old schema assert it"
	case Backward:
		why = "consumers built from the new schema assert it (assertFormats)"
	case Both:
		why = "consumers on both sides assert their format"
	}
	c.addBreaks(rule, breaks, path, c.at(ov, nv, "format"), "%s: %s", what, why)
}

// limit compares a minimum or a maximum, exclusive or not as the loader
// settled it: a raised minimum, or one made exclusive, accepts less.
func (c *comparer) limit(path string, ov, nv *view, k string, o, n *load.Bound, lower bool) {
	name := func(b *load.Bound) string {
		if b.Exclusive {
			return "exclusive" + strings.ToUpper(k[:1]) + k[1:]
		}
		return k
	}
	pos := c.at(ov, nv, k)
	switch {
	case o == nil && n == nil:
		return
	case o == nil:
		c.add(ConstraintTightened, path, pos, "%s %s added", name(n), canon(n.Value))
		return
	case n == nil:
		c.add(ConstraintLoosened, path, pos, "%s %s removed", name(o), canon(o.Value))
		return
	}
	or, ok1 := model.ExactNumber(o.Value)
	nr, ok2 := model.ExactNumber(n.Value)
	if !ok1 || !ok2 {
		return
	}
	d := nr.Cmp(or)
	if d == 0 {
		switch {
		case n.Exclusive && !o.Exclusive:
			c.add(ConstraintTightened, path, pos, "%s %s is now exclusive", k, canon(n.Value))
		case o.Exclusive && !n.Exclusive:
			c.add(ConstraintLoosened, path, pos, "%s %s is no longer exclusive", k, canon(n.Value))
		}
		return
	}
	verb := "raised"
	if d < 0 {
		verb = "lowered"
	}
	msg := fmt.Sprintf("%s %s from %s to %s", name(n), verb, canon(o.Value), canon(n.Value))
	if name(o) != name(n) {
		msg = fmt.Sprintf("%s %s changed to %s %s", name(o), canon(o.Value), name(n), canon(n.Value))
	}
	// Equal values aside, the exclusive side of one value is between it
	// and the next: (d > 0) == lower tells tighter whatever exclusiveness.
	if (d > 0) == lower {
		c.add(ConstraintTightened, path, pos, "%s", msg)
	} else {
		c.add(ConstraintLoosened, path, pos, "%s", msg)
	}
}

func (c *comparer) bound(path string, ov, nv *view, k string, lower bool) {
	o, oHas := ov.kw[k]
	n, nHas := nv.kw[k]
	pos := c.at(ov, nv, k)
	switch {
	case !oHas && !nHas:
	case !oHas:
		c.add(ConstraintTightened, path, pos, "%s %s added", k, canon(n))
	case !nHas:
		c.add(ConstraintLoosened, path, pos, "%s %s removed", k, canon(o))
	default:
		or, ok1 := model.ExactNumber(o)
		nr, ok2 := model.ExactNumber(n)
		if !ok1 || !ok2 {
			if canon(o) != canon(n) {
				c.add(UnclassifiedChange, path, pos, "%s changed from %s to %s, which is not a number", k, canon(o), canon(n))
			}
			return
		}
		d := nr.Cmp(or)
		if d == 0 {
			return
		}
		verb := "raised"
		if d < 0 {
			verb = "lowered"
		}
		if (d > 0) == lower {
			c.add(ConstraintTightened, path, pos, "%s %s from %s to %s", k, verb, canon(o), canon(n))
		} else {
			c.add(ConstraintLoosened, path, pos, "%s %s from %s to %s", k, verb, canon(o), canon(n))
		}
	}
}

// multipleOf: a new divisor that is a multiple of the old one accepts a
// subset of the old values (multiples of 4 are multiples of 2); the other
// way round accepts a superset; anything else loses values each way.
func (c *comparer) multipleOf(path string, ov, nv *view) {
	const k = "multipleOf"
	o, oHas := ov.kw[k]
	n, nHas := nv.kw[k]
	pos := c.at(ov, nv, k)
	switch {
	case !oHas && !nHas:
		return
	case !oHas:
		c.add(ConstraintTightened, path, pos, "multipleOf %s added", canon(n))
		return
	case !nHas:
		c.add(ConstraintLoosened, path, pos, "multipleOf %s removed", canon(o))
		return
	}
	or, ok1 := model.ExactNumber(o)
	nr, ok2 := model.ExactNumber(n)
	if !ok1 || !ok2 || or.Sign() == 0 || nr.Sign() == 0 {
		if canon(o) != canon(n) {
			c.add(UnclassifiedChange, path, pos, "multipleOf changed from %s to %s, which is not a positive number", canon(o), canon(n))
		}
		return
	}
	if or.Cmp(nr) == 0 {
		return
	}
	if new(big.Rat).Quo(or, nr).IsInt() {
		c.add(ConstraintLoosened, path, pos, "multipleOf changed from %s to %s, which divides it", canon(o), canon(n))
		return
	}
	if new(big.Rat).Quo(nr, or).IsInt() {
		c.add(ConstraintTightened, path, pos, "multipleOf changed from %s to %s, a multiple of it", canon(o), canon(n))
		return
	}
	c.add(ConstraintChanged, path, pos, "multipleOf changed from %s to %s: each accepts values the other rejects", canon(o), canon(n))
}

// branches compares oneOf or anyOf. Branches equal on both sides are paired
// first, so inserting a branch does not misalign the rest; the remaining
// branches pair up in order and are compared as schemas, and whatever is
// left over was added or removed.
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

// canon renders a JSON value canonically (object keys sorted, numbers in
// their shortest form), so that values are compared by meaning, not
// spelling: 1 and 1.0 are the same number.
func canon(v any) string {
	var b bytes.Buffer
	writeCanon(&b, v)
	return b.String()
}

func writeCanon(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanon(b, k)
			b.WriteByte(':')
			writeCanon(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanon(b, e)
		}
		b.WriteByte(']')
	default:
		if r, ok := model.ExactNumber(v); ok {
			if r.IsInt() {
				b.WriteString(r.Num().String())
			} else {
				f, _ := r.Float64()
				b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
			}
			return
		}
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false) // patterns keep their '<', '>' and '&'
		if err := enc.Encode(v); err != nil {
			fmt.Fprintf(b, "%v", v)
			return
		}
		b.Truncate(b.Len() - 1) // Encode ends with a newline

	}
}
