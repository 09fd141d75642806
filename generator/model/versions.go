package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// A fact with several versions side by side (see load/versions.go) is one
// Fact, its newest version, whose Older holds a Fact per older version:
// each with a Go type of its own, named after the newest with its
// version (OrderPlacedV1), so that the code written against the newest
// keeps its names as versions are added. Consumers read every version
// as the one their handler takes through a chain of upcasts, one per
// step; the publisher may publish older versions too, through downcasts.

// Cast turns a fact of one version into the adjacent one: an upcast
// (From is the older) or a downcast (From is the newer).
type Cast struct {
	From, To *Fact
	// Generated is set when the change is mechanical and the generated
	// code converts; otherwise the user writes the cast (Method), and
	// Why says what is not mechanical.
	Generated bool
	Why       string
	Steps     []CastStep // Generated: how each field of To gets its value
	Extra     bool       // Generated: AdditionalProperties is copied as is
	// Narrowed says, when the fields carry over but the schema of To
	// accepts fewer of their values than that of From (maxLength lowered,
	// minimum raised, pattern added, enum value removed, ...), what
	// narrows: the cast is then written by hand, and must map the values
	// To refuses.
	Narrowed []string
}

// Method returns the name of the method a hand-written cast implements.
func (c *Cast) Method() string {
	verb := "Upcast"
	if c.From.Version > c.To.Version {
		verb = "Downcast"
	}
	return verb + c.From.GoName
}

// CastStep sets one field of the cast's result from a field of its input.
type CastStep struct {
	To, From *Field
	// Widen converts an integer into a number; Pointer takes the address
	// of a required value for an optional field.
	Widen, Pointer bool
}

// Versions returns every version of the fact, oldest first, itself last.
func (f *Fact) Versions() []*Fact {
	out := append([]*Fact{}, f.Older...)
	return append(out, f)
}

// VersionedName returns the Go name of version n of a fact whose newest
// version is named base.
func VersionedName(base string, n int) string { return base + "V" + strconv.Itoa(n) }

// addOlder creates the Facts of lf's older versions, registered so that
// their root types are named after them.
func (b *builder) addOlder(f *Fact, lf *load.Fact) {
	for _, lo := range lf.Older {
		o := &Fact{
			RoutingKey: f.RoutingKey, Version: lo.Version, Source: lo.Path(), Pointer: lo.Schema.Pointer,
			Description: lo.Description, Deprecated: lo.Deprecated, GoName: VersionedName(f.GoName, lo.Version),
			decl: lo, Older: append([]*Fact{}, f.Older...), Newest: f, Import: f.Import,
		}
		node := payloadNode(lo.Schema)
		if prev, ok := b.factByNode[node]; ok {
			b.errs.Add(lo.KeyDoc.Errorf(lo.KeyPointer, "fact %s version %d: its payload schema %s is already the payload of fact %s", lo.RoutingKey, lo.Version, node.Location(), prev.RoutingKey))
			continue
		}
		b.factByNode[node] = o
		f.Older = append(f.Older, o)
	}
}

// allVersions returns the facts with their older versions.
func allVersions(facts []*Fact) []*Fact {
	var out []*Fact
	for _, f := range facts {
		out = append(out, f.Older...)
		out = append(out, f)
	}
	return out
}

// buildCasts works out, once the types are built, how each version is
// read as the next (Upcast) and, for the versions the publisher
// publishes besides the newest, how the newer is written as the older
// (Downcast). A version that declares x-upcast "generated" for a change
// that is not mechanical is an error naming both files.
func (b *builder) buildCasts(facts []*Fact) {
	for _, f := range facts {
		vs := f.Versions()
		for i := 1; i < len(vs); i++ {
			from, to := vs[i-1], vs[i]
			if from.Type == nil || to.Type == nil {
				continue
			}
			c := castOf(from, to, b.assertFormats())
			switch to.decl.Upcast {
			case "manual":
				c = &Cast{From: from, To: to, Why: "x-upcast is \"manual\""}
			case "generated":
				if !c.Generated {
					b.errs.Add(to.decl.Doc.Errorf("/x-upcast", "fact %s version %d declares x-upcast \"generated\", but the change from version %d (%s) is not mechanical: %s; drop the keyword to write the upcaster by hand", f.RoutingKey, to.Version, from.Version, from.Source, c.Why))
				}
			}
			to.Upcast = c
		}
		if f.Import != nil {
			continue
		}
		published := b.s.Manifest.PublishedVersions(f.RoutingKey, f.Version)
		for i := len(vs) - 1; i > 0; i-- {
			if published[0] >= vs[i].Version {
				break
			}
			from, to := vs[i], vs[i-1]
			if from.Type != nil && to.Type != nil {
				to.Downcast = castOf(from, to, b.assertFormats())
			}
		}
		f.Publish = published
	}
}

// castOf says how a value of from's type becomes one of to's: field by
// field when every field of to is a field of from (same name, or one
// declared with x-renamed-from) of the same or a wider type, or an
// optional field from lacks, and the schema of to accepts every value
// of from that the fields carry over (see narrowedValues: a maxLength
// lowered keeps the Go type, but a generated cast would poison each fact
// whose value no longer fits); otherwise by hand, with the reason.
// assert are the formats validation checks.
func castOf(from, to *Fact, assert []string) *Cast {
	c := &Cast{From: from, To: to}
	up := from.Version < to.Version
	ft, tt := from.Type, to.Type
	if ft.Kind != Struct || tt.Kind != Struct {
		c.Why = "only objects are converted property by property"
		return c
	}
	// renamed maps a property of the newer version to the older's name.
	newer, older := tt, ft
	if !up {
		newer, older = ft, tt
	}
	oldName := func(nf *Field) string {
		if nf.schema != nil {
			if n, ok := nf.schema.Keywords["x-renamed-from"].(string); ok {
				return n
			}
		}
		return nf.JSONName
	}
	var why []string
	used := map[*Field]bool{}
	for _, tf := range tt.Fields {
		var src *Field
		if up {
			src = fieldNamed(older, oldName(tf))
		} else {
			for _, nf := range newer.Fields {
				if oldName(nf) == tf.JSONName {
					src = nf
				}
			}
		}
		if src == nil {
			if tf.Required {
				why = append(why, fmt.Sprintf("required property %s has no value in version %d", strconv.Quote(tf.JSONName), from.Version))
			}
			continue
		}
		used[src] = true
		step, ok := widen(src, tf)
		if !ok {
			why = append(why, typeChange(src, tf, from, to))
			continue
		}
		c.Steps = append(c.Steps, step)
	}
	if up {
		for _, sf := range ft.Fields {
			if !used[sf] {
				why = append(why, fmt.Sprintf("property %s is removed", strconv.Quote(sf.JSONName)))
			}
		}
	}
	switch {
	case tt.Extra == nil:
	case ft.Extra != nil && ft.Extra.Equal(*tt.Extra):
		c.Extra = true
	case ft.Extra != nil:
		why = append(why, "additional properties change type")
	}
	if len(why) == 0 {
		if c.Narrowed = narrowedValues(from, to, c.Steps, assert); len(c.Narrowed) > 0 {
			verb := "upcast"
			if !up {
				verb = "downcast"
			}
			why = append(why, fmt.Sprintf("%s: the %s must map the values version %d refuses", strings.Join(c.Narrowed, "; "), verb, to.Version))
		}
	}
	if len(why) > 0 {
		c.Steps, c.Extra = nil, false
		c.Why = strings.Join(why, "; ")
		return c
	}
	c.Generated = true
	return c
}

// typeChange says why the value of field src does not fit field dst of
// a cast from version from to version to. A type declared inside each
// version's file (an enum, an object, ...) is a Go type of its own in each
// version, named after it (OrderPlacedV1Status, OrderPlacedStatus), which
// a generated cast does not convert even where the two agree: saying that,
// and for an enum which values each version has and which the cast must
// map, tells the reader what the hand-written cast is about, where "changes
// type" would point at a type nobody changed.
func typeChange(src, dst *Field, from, to *Fact) string {
	name := strconv.Quote(dst.JSONName)
	ft, tt, ok := ownTypes(src, dst)
	if !ok {
		return fmt.Sprintf("property %s changes type", name)
	}
	// Said the same way whichever way the cast goes: older first.
	older, newer, ov, nv := ft, tt, from.Version, to.Version
	if ov > nv {
		older, newer, ov, nv = tt, ft, nv, ov
	}
	own := fmt.Sprintf("a Go type of its own in each version (%s in version %d, %s in version %d), which generated casts do not convert", older.GoName, ov, newer.GoName, nv)
	if ft.Kind != Enum {
		return fmt.Sprintf("property %s has %s", name, own)
	}
	kind := "an enum"
	if older.constant && newer.constant {
		kind = "a const"
	}
	msg := fmt.Sprintf("property %s is %s with %s", name, kind, own)
	added, removed := enumMinus(newer, older), enumMinus(older, newer)
	switch {
	case len(added) == 0 && len(removed) == 0:
		return msg + "; both versions accept the same values, and one definition that both $ref is one Go type, which generated casts copy"
	case kind == "a const":
		msg += fmt.Sprintf("; version %d changes it from %s to %s", nv, strings.Join(removed, ", "), strings.Join(added, ", "))
	case len(removed) == 0:
		msg += fmt.Sprintf("; version %d adds %s", nv, strings.Join(added, ", "))
	case len(added) == 0:
		msg += fmt.Sprintf("; version %d removes %s", nv, strings.Join(removed, ", "))
	default:
		msg += fmt.Sprintf("; version %d adds %s and removes %s", nv, strings.Join(added, ", "), strings.Join(removed, ", "))
	}
	// The values of from that to refuses: those the cast must map.
	if refused := enumMinus(ft, tt); len(refused) > 0 {
		verb := "upcast"
		if from.Version > to.Version {
			verb = "downcast"
		}
		msg += fmt.Sprintf("; the %s must map %s, which version %d refuses, to a value it accepts", verb, strings.Join(refused, ", "), to.Version)
	}
	return msg
}

// ownTypes returns the declared types of src and dst when they differ in
// those alone: two types of one kind (two enums of one base), in the same
// slices or maps, and a value of src fits dst but for them (see widen).
func ownTypes(src, dst *Field) (*Type, *Type, bool) {
	if src.NullOrAbsent() != dst.NullOrAbsent() || src.Type.Nullable && !dst.Type.Nullable || src.IsPointer() && !dst.IsPointer() {
		return nil, nil, false
	}
	a, b := src.Type, dst.Type
	for a.Kind == b.Kind && (a.Kind == Slice || a.Kind == Map) {
		a, b = *a.Elem, *b.Elem
		if a.Nullable != b.Nullable {
			return nil, nil, false
		}
	}
	if a.Kind != Named || b.Kind != Named || a.Type == b.Type || a.Type.Kind != b.Type.Kind {
		return nil, nil, false
	}
	if a.Type.Kind == Enum && a.Type.Base.Kind != b.Type.Base.Kind {
		return nil, nil, false
	}
	return a.Type, b.Type, true
}

// enumMinus returns the values of enum a that enum b lacks, as JSON, in
// a's order.
func enumMinus(a, b *Type) []string {
	var out []string
	for _, v := range a.Values {
		if !slices.ContainsFunc(b.Values, func(w *EnumValue) bool { return CanonicalJSON(w.Value) == CanonicalJSON(v.Value) }) {
			out = append(out, CanonicalJSON(v.Value))
		}
	}
	return out
}

func fieldNamed(t *Type, json string) *Field {
	for _, f := range t.Fields {
		if f.JSONName == json {
			return f
		}
	}
	return nil
}

// widen reports whether field from's value fits field to, and how: the
// same Go type, an integer becoming a number, null or absence becoming
// allowed.
func widen(from, to *Field) (CastStep, bool) {
	s := CastStep{To: to, From: from}
	if from.NullOrAbsent() || to.NullOrAbsent() {
		return s, from.NullOrAbsent() == to.NullOrAbsent() && from.Type.Equal(to.Type)
	}
	if from.Type.Nullable && !to.Type.Nullable {
		return s, false
	}
	fb, tb := from.Type, to.Type
	fb.Nullable, tb.Nullable = false, false
	switch {
	case fb.Equal(tb):
	case fb.Kind == Int && tb.Kind == Float:
		s.Widen = true
	default:
		return s, false
	}
	switch fp, tp := from.IsPointer(), to.IsPointer(); {
	case fp == tp:
	case !fp && tp:
		s.Pointer = true
	default:
		return s, false
	}
	return s, true
}

// ManualUpcasts returns the upcasts the user writes for consumers that
// read the fact at this version, in version order.
func (f *Fact) ManualUpcasts() []*Cast {
	var out []*Cast
	for _, v := range f.Versions() {
		if v.Upcast != nil && !v.Upcast.Generated {
			out = append(out, v.Upcast)
		}
	}
	return out
}

// ManualDowncasts returns the downcasts the user writes for the
// publisher of the fact, newest first.
func (f *Fact) ManualDowncasts() []*Cast {
	var out []*Cast
	vs := f.Versions()
	for i := len(vs) - 1; i >= 0; i-- {
		if c := vs[i].Downcast; c != nil && !c.Generated {
			out = append(out, c)
		}
	}
	return out
}

// Downcasts returns the casts that write f, the newest version of a
// fact, as each older version down to version oldest, newest first: the
// publisher's own where the manifest publishes those versions, and
// otherwise those it would take once they are published, judged as
// buildCasts judges them. assert are the formats validation checks
// ([AssertedFormats] of the manifest). warren diff names them in the
// advice to publish older versions, so that the advice and the generated
// Downcasters cannot disagree.
func (f *Fact) Downcasts(oldest int, assert []string) []*Cast {
	vs := f.Versions()
	var out []*Cast
	for i := len(vs) - 1; i > 0 && vs[i-1].Version >= oldest; i-- {
		from, to := vs[i], vs[i-1]
		c := to.Downcast
		if c == nil {
			if from.Type == nil || to.Type == nil {
				break
			}
			c = castOf(from, to, assert)
		}
		out = append(out, c)
	}
	return out
}

// PublishesOlder reports whether the publisher publishes an older version
// of the fact besides, or instead of, the newest.
func (f *Fact) PublishesOlder() bool {
	return len(f.Publish) > 1 || len(f.Publish) == 1 && f.Publish[0] != f.Version
}

// pinVersions gives each consumer the version of each fact its manifest
// entry reads ("versions"), when it is not the newest.
func (b *builder) pinVersions(consumers []*Consumer) {
	for _, c := range consumers {
		lc := b.s.Manifest.Consumer(c.Name)
		if lc == nil {
			continue
		}
		for i, f := range c.Facts {
			n := lc.VersionOf(f.RoutingKey)
			if n == 0 || n == f.Version {
				continue
			}
			for _, o := range f.Older {
				if o.Version == n {
					c.Facts[i] = o
				}
			}
		}
	}
}

// UpcasterName returns the name of the interface of the fact's
// hand-written upcasts.
func (f *Fact) UpcasterName() string { return f.GoName + "Upcaster" }

// DowncasterName returns the name of the interface of the fact's
// hand-written downcasts.
func (f *Fact) DowncasterName() string { return f.GoName + "Downcaster" }

// Latest returns the newest version of the fact: f itself, or the fact
// whose older version f is. Readers that show one version per fact (the
// catalogue, AsyncAPI) name a consumer's fact by it.
func (f *Fact) Latest() *Fact {
	if f.Newest != nil {
		return f.Newest
	}
	return f
}
