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

// comparer walks the old and the new schema of one fact side by side and
// records what changed.
type comparer struct {
	old, new *Dir
	fact     string                   // routing key the changes are filed under
	out      []Change                 // changes found so far
	seen     map[[2]*load.Schema]bool // schema pairs already compared (cycles, shared definitions)
	// sameSide is set when both versions compared are of the new
	// directory (two versions side by side): the older's places are
	// then on the new side too.
	sameSide bool
}

// oldSide is the side the older schema's places are on.
func (c *comparer) oldSide() Side {
	if c.sameSide {
		return New
	}
	return Old
}

// add records a change that breaks what its rule says.
func (c *comparer) add(rule, path string, p Pos, format string, args ...any) {
	c.addBreaks(rule, ruleOf[rule].Breaks, path, p, format, args...)
}

// addBreaks records a change of a rule whose directions depend on the
// schema around it.
func (c *comparer) addBreaks(rule string, breaks Direction, path string, p Pos, format string, args ...any) {
	c.out = append(c.out, Change{
		Rule:    rule,
		Breaks:  breaks,
		Fact:    c.fact,
		Path:    path,
		Pos:     p,
		Message: fmt.Sprintf(format, args...),
	})
}

// at returns the position of keyword k, preferring the new side, where a
// reviewer fixes things, and falling back to the old side for removals.
func (c *comparer) at(ov, nv *view, k string) Pos {
	if _, ok := nv.kwAt[k]; ok {
		return c.new.pos(New, nv.keywordAt(k))
	}
	if _, ok := ov.kwAt[k]; ok {
		return c.old.pos(c.oldSide(), ov.keywordAt(k))
	}
	return c.new.pos(New, nv.at)
}

// compare compares two schemas found at path (a JSON pointer from the
// fact's root, through $refs).
func (c *comparer) compare(path string, o, n *load.Schema) {
	key := [2]*load.Schema{o, n}
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	ov, nv := c.old.view(o), c.new.view(n)
	if ov.never != nv.never {
		if nv.never {
			c.add(ConstraintTightened, path, c.new.pos(New, nv.at), "the schema is now false: no value is valid")
		} else {
			c.add(ConstraintLoosened, path, c.new.pos(New, nv.at), "the schema is no longer false")
		}
		return
	}
	if !c.types(path, ov, nv) {
		return // a different kind of value: comparing its keywords says nothing more
	}
	c.properties(path, ov, nv)
	c.required(path, ov, nv)
	c.additionalProperties(path, ov, nv)
	c.items(path, ov, nv)
	c.enum(path, ov, nv)
	c.valueBranches(path, ov, nv, "oneOf")
	c.valueBranches(path, ov, nv, "anyOf")
	c.constraints(path, ov, nv)
	c.branches(path, ov, nv, "oneOf")
	c.branches(path, ov, nv, "anyOf")
	c.moreBranches(path, ov, nv, "oneOf")
	c.moreBranches(path, ov, nv, "anyOf")
	c.annotations(path, ov, nv)
	c.unclassified(path, ov, nv)
}

// types compares the "type" keywords. It returns false when the kind of
// value changed so much that the rest of the schemas cannot be compared.
func (c *comparer) types(path string, ov, nv *view) bool {
	ot, nt := ov.types, nv.types
	switch {
	case ot == nil && nt == nil:
		return true
	case ov.hasEnum && nv.hasEnum:
		// Each side accepts the values of its enum (a const, or branches
		// that list values), less those its type refuses: enum compares
		// exactly those, and the types follow from them.
		return true
	case ot == nil && nv.typesFromEnum, nt == nil && ov.typesFromEnum:
		// An enum without a type, added or removed where no type was
		// said: enum says what it admits.
		return true
	}
	pos := c.new.pos(New, nv.typeAt)
	if nt == nil {
		c.add(TypeWidened, path, c.old.pos(c.oldSide(), ov.typeAt), "type %s removed: any JSON value is accepted now", ov.typeText())
		return true
	}
	if ot == nil {
		c.add(TypeNarrowed, path, pos, "type %s added: any JSON value was accepted before", nv.typeText())
		return true
	}
	narrowed, widened := subset(nt, ot), subset(ot, nt)
	switch {
	case narrowed && widened:
		return true
	case narrowed:
		c.add(TypeNarrowed, path, pos, "type narrowed from %s to %s", ov.typeText(), nv.typeText())
		return true
	case widened:
		c.add(TypeWidened, path, pos, "type widened from %s to %s: consumers built from the old schema reject the new values", ov.typeText(), nv.typeText())
		return true
	}
	c.add(TypeChanged, path, pos, "type changed from %s to %s", ov.typeText(), nv.typeText())
	return false
}

// typeText is the view's type for messages: what it accepts, and what is
// written when that reads otherwise; an enum's type is its values'.
func (v *view) typeText() string {
	switch {
	case v.written != "":
		return v.written
	case v.typesFromEnum:
		return fmtTypes(v.types) + " (the type of its " + v.enumKw + ")"
	}
	return fmtTypes(v.types)
}

// subset reports whether every value of a type in a is accepted by b.
func subset(a, b map[string]bool) bool {
	for t := range a {
		if !admits(b, t) {
			return false
		}
	}
	return true
}

func fmtTypes(set map[string]bool) string {
	ts := slices.Sorted(maps.Keys(set))
	if len(ts) == 1 {
		return fmt.Sprintf("%q", ts[0])
	}
	quoted := make([]string, len(ts))
	for i, t := range ts {
		quoted[i] = fmt.Sprintf("%q", t)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

func (c *comparer) properties(path string, ov, nv *view) {
	renamedTo := c.probableRenames(ov, nv)
	renamedFrom := map[string]string{}
	for from, to := range renamedTo {
		renamedFrom[to] = from
	}
	for _, name := range ov.ordered {
		op := ov.props[name]
		p := appendPtr(path, "properties", name)
		np, ok := nv.props[name]
		if !ok {
			c.propertyRemoved(p, name, ov, nv, op, renamedTo[name])
			continue
		}
		c.compare(p, op, np)
	}
	for _, name := range nv.ordered {
		if _, ok := ov.props[name]; ok {
			continue
		}
		np := nv.props[name]
		p := appendPtr(path, "properties", name)
		_, req := nv.required[name]
		switch {
		case req && ov.closed():
			c.addBreaks(RequiredPropertyAdded, Both, p, c.new.pos(New, locOf(np)), "new property %q is required: facts written without it fail new consumers, and old consumers reject it on their closed object", name)
		case req:
			c.addBreaks(RequiredPropertyAdded, Backward, p, c.new.pos(New, locOf(np)), "new property %q is required: facts written without it fail new consumers", name)
		case ov.closed():
			c.addBreaks(PropertyAdded, Forward, p, c.new.pos(New, locOf(np)), "new optional property %q on a closed object: consumers built from the old schema reject facts that carry it", name)
		case renamedFrom[name] != "":
			from := renamedFrom[name]
			c.addBreaks(PropertyAdded, Neither, p, c.new.pos(New, locOf(np)), "new optional property %q, of type %s like %q, which was removed beside it: probably a rename, whose cost to readers the removal of %q says", name, fmtTypes(nv.typesOf(c.new, name)), from, from)
		default:
			c.addBreaks(PropertyAdded, Neither, p, c.new.pos(New, locOf(np)), "new optional property %q", name)
		}
	}
}

// probableRenames pairs the properties an open object lost with those it
// gained, both optional, when one of each has a type (the same on both
// sides) that no other property lost or gained has: a property renamed in
// place. On the wire that is two compatible changes, a removal and an
// addition the open object accepts both ways, and no consumer fails; but
// every reader loses the value without a word, old consumers reading new
// facts and new ones reading old facts. It returns the old name -> the
// new one. A rename declared with x-renamed-from, with the fact's older
// version kept beside the new one, is carried across by the generated
// casts, and is no loss.
func (c *comparer) probableRenames(ov, nv *view) map[string]string {
	if ov.closed() || nv.closed() {
		return nil // a closed object breaks on both changes, and says so
	}
	byType := func(from, to *view, side *Dir) map[string][]string {
		out := map[string][]string{}
		for _, name := range from.ordered {
			if _, kept := to.props[name]; kept {
				continue
			}
			if _, req := from.required[name]; req {
				continue
			}
			if t := from.typesOf(side, name); len(t) > 0 {
				k := fmtTypes(t)
				out[k] = append(out[k], name)
			}
		}
		return out
	}
	removed, added := byType(ov, nv, c.old), byType(nv, ov, c.new)
	out := map[string]string{}
	for t, names := range removed {
		if len(names) != 1 || len(added[t]) != 1 {
			continue // which became which cannot be told
		}
		from, to := names[0], added[t][0]
		if declared, _ := nv.props[to].Keywords["x-renamed-from"].(string); declared == from && c.versionsSideBySide() {
			continue
		}
		out[from] = to
	}
	return out
}

// versionsSideBySide reports whether the new directory keeps older
// versions of the fact beside its newest: a rename declared with
// x-renamed-from is then carried across by the generated casts.
func (c *comparer) versionsSideBySide() bool {
	f := c.new.Fact(c.fact)
	return f != nil && len(f.Older) > 0
}

// renameLoss says what a property renamed in place costs its readers, and
// how to rename it without the loss.
func renameLoss(from, to string) string {
	return fmt.Sprintf("Compatible on the wire, but readers lose the value without an error: consumers built from the old schema find no %q in new facts, and consumers built from the new schema find no %q in facts written under the old one (queued, in poison, in an outbox). To rename it without the loss, keep %q beside %q, and fill both, until every consumer reads %q; or ship the rename as a new version beside the old one, with \"x-renamed-from\": %q on %q and both versions published (warren.json \"versions\"): the generated upcast and downcast carry the value across",
		from, to, from, to, to, from, to)
}

// typesOf returns the types property name of the view accepts, its $refs
// and allOf followed; nil when nothing says.
func (v *view) typesOf(d *Dir, name string) map[string]bool {
	return d.view(v.props[name]).types
}

// propertyRemoved judges a property that is gone by what each side's
// consumers check: an old consumer rejects new facts without it only if it
// was required; a new consumer rejects old facts that carry it only if its
// object is closed.
//
// renamedTo is the property that probably replaces it (see
// probableRenames), "" for none.
func (c *comparer) propertyRemoved(p, name string, ov, nv *view, op *load.Schema, renamedTo string) {
	_, wasRequired := ov.required[name]
	var breaks Direction
	var why []string
	if wasRequired {
		breaks |= Forward
		why = append(why, "consumers built from the old schema require it")
	}
	if nv.closed() {
		breaks |= Backward
		why = append(why, "facts written under the old schema carry it and the object is closed")
	}
	msg := fmt.Sprintf("property %q was removed", name)
	if len(why) > 0 {
		msg += ": " + strings.Join(why, "; ")
	} else {
		msg += " from an open object where it was optional"
		if renamedTo != "" {
			msg += fmt.Sprintf("; %q, of type %s like it, was added beside it: probably a rename. %s", renamedTo, fmtTypes(ov.typesOf(c.old, name)), renameLoss(name, renamedTo))
		}
	}
	c.addBreaks(PropertyRemoved, breaks, p, c.old.pos(c.oldSide(), locOf(op)), "%s", msg)
}

func (c *comparer) required(path string, ov, nv *view) {
	for _, name := range slices.Sorted(maps.Keys(nv.required)) {
		if _, ok := ov.required[name]; ok {
			continue
		}
		_, inOld := ov.props[name]
		_, inNew := nv.props[name]
		pos := c.new.pos(New, nv.required[name])
		switch {
		case inOld && inNew:
			c.add(PropertyMadeRequired, appendPtr(path, "properties", name), pos, "optional property %q is now required: facts written without it fail new consumers", name)
		case inNew:
			// A new property; properties() reported it.
		default:
			c.add(ConstraintTightened, path, pos, "%q is now required", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ov.required)) {
		if _, ok := nv.required[name]; ok {
			continue
		}
		_, inOld := ov.props[name]
		np, inNew := nv.props[name]
		switch {
		case inNew:
			c.add(PropertyMadeOptional, appendPtr(path, "properties", name), c.new.pos(New, locOf(np)), "required property %q is now optional: consumers built from the old schema reject facts that omit it", name)
		case inOld:
			// Removed; properties() reported it.
		default:
			c.add(ConstraintLoosened, path, c.old.pos(c.oldSide(), ov.required[name]), "%q is no longer required", name)
		}
	}
}

func (c *comparer) additionalProperties(path string, ov, nv *view) {
	const k = "additionalProperties"
	o, n := ov.addl, nv.addl
	oClosed, nClosed := o != nil && o.IsFalse(), n != nil && n.IsFalse()
	pos := c.at(ov, nv, k)
	switch {
	case !oClosed && nClosed:
		c.add(AdditionalPropertiesClosed, path, pos, "additionalProperties is now false: facts written with properties not listed fail new consumers")
	case oClosed && !nClosed:
		c.add(AdditionalPropertiesOpened, path, pos, "additionalProperties is no longer false: consumers built from the old schema reject facts with properties not listed")
	case oClosed && nClosed:
	default:
		c.subschema(appendPtr(path, k), ov, nv, k, o, n)
	}
}

func (c *comparer) items(path string, ov, nv *view) {
	const k = "items"
	if len(ov.prefix) != len(nv.prefix) {
		c.add(UnclassifiedChange, path, c.at(ov, nv, k), "the array's tuple changed from %d to %d positions: warren cannot tell whether this accepts more or less, so it counts as breaking both ways", len(ov.prefix), len(nv.prefix))
		return
	}
	for i := range ov.prefix {
		c.compare(appendPtr(path, "prefixItems", strconv.Itoa(i)), ov.prefix[i], nv.prefix[i])
	}
	if ov.items != nil && !isAny(ov.items) && (nv.items == nil || isAny(nv.items)) {
		c.add(TypeWidened, path, c.at(ov, nv, k), "items no longer has a schema: array elements may be any JSON value")
		return
	}
	c.subschema(appendPtr(path, k), ov, nv, k, ov.items, nv.items)
}

// isAny reports whether a schema accepts anything: absent or true.
func isAny(s *load.Schema) bool { return s == nil || s.Bool != nil && *s.Bool }

// subschema compares a keyword whose value is a schema (items,
// additionalProperties). An absent keyword or `true` accepts anything.
func (c *comparer) subschema(path string, ov, nv *view, k string, o, n *load.Schema) {
	switch oAny, nAny := isAny(o), isAny(n); {
	case oAny && nAny:
	case oAny:
		c.add(ConstraintTightened, path, c.at(ov, nv, k), "%s now has a schema: values must match it", k)
	case nAny:
		c.add(ConstraintLoosened, path, c.at(ov, nv, k), "%s no longer has a schema", k)
	default:
		c.compare(path, o, n)
	}
}

// enum compares enum and const, which the loader reads as one list of
// values (a const is an enum of one).
func (c *comparer) enum(path string, ov, nv *view) {
	k := nv.enumKw
	if !nv.hasEnum {
		k = ov.enumKw
	}
	o, n := ov.enum, nv.enum
	pos := c.at(ov, nv, k)
	from := len(c.out)
	defer func() {
		if ov.enumType() || nv.enumType() {
			for i := range c.out[from:] {
				c.out[from+i].enumType = true
			}
		}
	}()
	switch {
	case !ov.hasEnum && !nv.hasEnum:
	case !ov.hasEnum && nv.isConst:
		c.add(ConstraintTightened, path, pos, "const %s added", fmtValues(n))
	case !ov.hasEnum:
		c.add(ConstraintTightened, path, pos, "enum added: only %s accepted now", fmtValues(n))
	case !nv.hasEnum && ov.isConst:
		c.add(ConstraintLoosened, path, pos, "const %s removed", fmtValues(o))
	case !nv.hasEnum:
		c.add(ConstraintLoosened, path, pos, "enum removed: any value of the type is accepted now")
	case ov.isConst && nv.isConst:
		if canon(o[0]) != canon(n[0]) {
			c.add(ConstraintChanged, path, pos, "const changed from %s to %s", canon(o[0]), canon(n[0]))
		}
	default:
		oSet, nSet := canonSet(o), canonSet(n)
		for _, v := range o {
			if !nSet[canon(v)] {
				c.add(EnumValueRemoved, path, pos, "enum value %s removed: facts written with it fail new consumers", canon(v))
			}
		}
		for _, v := range n {
			if !oSet[canon(v)] {
				c.add(EnumValueAdded, path, pos, "enum value %s added: consumers built from the old schema reject facts that use it", canon(v))
			}
		}
	}
}

// enumType reports whether the generator declares the view's enum as a
// Go type of its own (model.EnumBase), judged by the same values, types
// and format.
func (v *view) enumType() bool {
	if !v.hasEnum {
		return false
	}
	values := slices.DeleteFunc(slices.Clone(v.enum), func(x any) bool { return x == nil })
	var types []string
	if !v.typesFromEnum {
		for t := range v.types {
			if t != "null" {
				types = append(types, t)
			}
		}
	}
	_, ok := model.EnumBase(values, types, v.format)
	return ok
}

// valueBranches compares the branches of a oneOf or anyOf (k) that both
// sides folded into their enum (see normalize), paired by the values they
// list: enum compared the values, this what is said of them (a title, a
// description).
func (c *comparer) valueBranches(path string, ov, nv *view, k string) {
	o, n := ov.valueBranches[k], nv.valueBranches[k]
	if len(o) == 0 || len(n) == 0 {
		return
	}
	key := func(b *load.Schema) string {
		vals, _ := valuesOnly(b)
		return fmtValues(slices.SortedFunc(slices.Values(vals), func(a, b any) int { return strings.Compare(canon(a), canon(b)) }))
	}
	used := make([]bool, len(o))
	for j, nb := range n {
		for i, ob := range o {
			if !used[i] && key(ob) == key(nb) {
				used[i] = true
				c.compare(appendPtr(path, k, strconv.Itoa(j)), ob, nb)
				break
			}
		}
	}
}

func fmtValues(vs []any) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = canon(v)
	}
	return strings.Join(s, ", ")
}

func canonSet(vs []any) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[canon(v)] = true
	}
	return m
}
