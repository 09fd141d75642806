package schemadiff

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// view is the effective schema at one place: the schema's own keywords,
// then those of its $ref target, then those of its allOf members, merged
// the way the generator merges them (properties and required united, own
// keywords winning otherwise). It reads the loader's typed schema nodes,
// on which every difference between drafts is settled (draft-04 boolean
// exclusive bounds, tuple items, $ref siblings ignored up to draft-07), so
// two files of different drafts compare by meaning. Comparing views rather
// than raw JSON means that moving properties into a shared definition, or
// splitting a schema into allOf parts, is not reported as a change.
type view struct {
	at       loc
	never    bool                    // the schema is false: nothing is valid
	kw       map[string]any          // keywords without a typed field -> value, first definition wins
	kwAt     map[string]*load.Schema // keyword -> schema object that defines it (typed ones too)
	props    map[string]*load.Schema // property name -> its schema
	required map[string]loc          // required name -> where it is required
	types    map[string]bool         // nil when no schema on the way says "type"
	typeAt   loc                     // where the (first) type keyword is
	enum     []any                   // enum, or the const value; see hasEnum
	hasEnum  bool
	isConst  bool
	// enumKw is the keyword the enum is written as: "enum", "const", or
	// "oneOf"/"anyOf" of branches that only list values (see normalize).
	enumKw string
	// valueBranches are the branches of a oneOf or anyOf (the key) folded
	// into the enum, for their annotations.
	valueBranches map[string][]*load.Schema
	// typesFromEnum says that types are those of the enum's values: the
	// schema says no type.
	typesFromEnum bool
	// written is the type as written when it reads otherwise ("number"
	// with multipleOf 1 is "integer"), for messages; "" when it does not.
	written  string
	format   string
	min, max *load.Bound
	addl     *load.Schema // additionalProperties; nil when absent
	items    *load.Schema // the schema of array elements after prefix; nil when absent
	prefix   []*load.Schema
	oneOf    []*load.Schema
	anyOf    []*load.Schema
	annot    map[string]any        // title, description, deprecated, default
	unres    map[string]loc        // $refs that could not be followed -> where
	seen     map[*load.Schema]bool // schema objects merged, to stop at cycles
	ordered  []string              // property names in a stable order
}

// typed are the keywords the view reads from the loader's typed fields;
// notCompared are those that do not describe payloads (identifiers,
// containers of definitions reached through $ref, comments) or that the
// fact comparison handles itself (x-routing-key, x-version).
var (
	typed = map[string]bool{
		"type": true, "enum": true, "const": true, "format": true,
		"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
		"properties": true, "required": true, "additionalProperties": true,
		"items": true, "prefixItems": true, "additionalItems": true,
		"allOf": true, "anyOf": true, "oneOf": true, "$ref": true,
		"title": true, "description": true, "deprecated": true, "default": true,
	}
	notCompared = map[string]bool{
		"$schema": true, "$id": true, "id": true, "$anchor": true, "$dynamicAnchor": true,
		"$defs": true, "definitions": true, "$comment": true, "examples": true,
		"readOnly": true, "writeOnly": true, "$vocabulary": true,
	}
)

func (d *Dir) view(s *load.Schema) *view {
	v := &view{
		at:       locOf(s),
		kw:       map[string]any{},
		kwAt:     map[string]*load.Schema{},
		props:    map[string]*load.Schema{},
		required: map[string]loc{},
		annot:    map[string]any{},
		unres:    map[string]loc{},
		seen:     map[*load.Schema]bool{},
	}
	v.merge(s)
	v.ordered = slices.Sorted(maps.Keys(v.props))
	v.normalize()
	return v
}

// locOf is where a schema node is written.
func locOf(s *load.Schema) loc {
	if s == nil || s.Doc == nil {
		return loc{}
	}
	return loc{s.Doc.Path, s.Pointer}
}

// once records that keyword k is defined by s, unless an earlier schema
// on the way defined it; it reports whether s's value wins.
func (v *view) once(k string, s *load.Schema) bool {
	if _, ok := v.kwAt[k]; ok {
		return false
	}
	v.kwAt[k] = s
	return true
}

func (v *view) merge(s *load.Schema) {
	if s == nil || v.seen[s] {
		return
	}
	v.seen[s] = true
	if s.Bool != nil {
		if !*s.Bool {
			v.never = true
		}
		return
	}
	if s.Keywords == nil {
		return
	}
	if s.RefText != "" && s.Ref == nil {
		v.unres[s.RefText] = locOf(s)
	}
	if s.RefAlone && s.Ref != nil {
		v.merge(s.Ref) // up to draft-07 the keywords beside $ref are ignored
		return
	}
	// Own keywords first so that they win over referenced ones.
	for _, p := range s.Properties {
		if _, ok := v.props[p.Name]; !ok {
			v.props[p.Name] = p.Schema
		}
	}
	for i, name := range s.Required {
		if _, dup := v.required[name]; !dup {
			v.required[name] = loc{s.Doc.Path, load.AppendIndex(load.Append(s.Pointer, "required"), i)}
		}
	}
	if s.Types != nil {
		v.mergeTypes(s.Types, loc{s.Doc.Path, load.Append(s.Pointer, "type")})
	}
	v.mergeTyped(s)
	for _, k := range slices.Sorted(maps.Keys(s.Keywords)) {
		if typed[k] || notCompared[k] || strings.HasPrefix(k, "x-") {
			continue
		}
		if v.once(k, s) {
			v.kw[k] = s.Keywords[k]
		}
	}
	v.merge(s.Ref)
	for _, m := range s.AllOf {
		v.merge(m)
	}
}

// mergeTyped takes the typed keywords of s that no earlier schema set.
func (v *view) mergeTyped(s *load.Schema) {
	if s.HasEnum {
		k := "enum"
		if s.IsConst {
			k = "const"
		}
		if !v.hasEnum && v.once(k, s) {
			v.enum, v.hasEnum, v.isConst, v.enumKw = s.Enum, true, s.IsConst, k
		}
	}
	if s.Format != "" && v.once("format", s) {
		v.format = s.Format
	}
	if s.Minimum != nil && v.once("minimum", s) {
		v.min = s.Minimum
	}
	if s.Maximum != nil && v.once("maximum", s) {
		v.max = s.Maximum
	}
	if s.Has("additionalProperties") && v.once("additionalProperties", s) {
		v.addl = s.AdditionalProperties
	}
	if (s.Items != nil || len(s.PrefixItems) > 0) && v.once("items", s) {
		v.items, v.prefix = s.Items, s.PrefixItems
	}
	if len(s.OneOf) > 0 && v.once("oneOf", s) {
		v.oneOf = s.OneOf
	}
	if len(s.AnyOf) > 0 && v.once("anyOf", s) {
		v.anyOf = s.AnyOf
	}
	for _, k := range []string{"title", "description", "deprecated", "default"} {
		if s.Has(k) && v.once(k, s) {
			v.annot[k] = s.Keywords[k]
		}
	}
}

// mergeTypes intersects type sets: every allOf member must hold, and an
// "integer" meets a "number" as "integer".
func (v *view) mergeTypes(types []string, at loc) {
	set := map[string]bool{}
	for _, t := range types {
		set[t] = true
	}
	if v.types == nil {
		v.types, v.typeAt = set, at
		return
	}
	both := map[string]bool{}
	for t := range v.types {
		if admits(set, t) {
			both[t] = true
		}
	}
	for t := range set {
		if admits(v.types, t) {
			both[t] = true
		}
	}
	v.types = both
}

// admits reports whether a type set accepts every value of type t.
func admits(set map[string]bool, t string) bool {
	return set[t] || (t == "integer" && set["number"])
}

// closed reports whether the object rejects, or checks against a schema,
// properties it does not list: a property one side adds or keeps is then
// judged by the other side's additionalProperties.
func (v *view) closed() bool {
	if v.addl != nil && !(v.addl.Bool != nil && *v.addl.Bool) {
		return true
	}
	if u, ok := v.kw["unevaluatedProperties"]; ok && u != true {
		return true
	}
	return false
}

// keywordAt is the position of keyword k in the view, for reports.
func (v *view) keywordAt(k string) loc {
	s, ok := v.kwAt[k]
	if !ok {
		return v.at
	}
	if (k == "minimum" || k == "maximum") && !s.Has(k) {
		k = "exclusive" + strings.ToUpper(k[:1]) + k[1:] // 2019-09 and later write the exclusive bound alone
	}
	if k == "items" && !s.Has("items") {
		k = "prefixItems"
	}
	return loc{s.Doc.Path, load.Append(s.Pointer, k)}
}

// raw is a schema as written, for comparing branches and keyword values.
func raw(s *load.Schema) any {
	switch {
	case s == nil:
		return nil
	case s.Bool != nil:
		return *s.Bool
	}
	return s.Keywords
}

// branchLoc is the place of the i-th branch of keyword k in the view.
func (v *view) branchLoc(k string, i int) loc {
	at := v.keywordAt(k)
	return loc{at.file, load.Append(at.ptr, strconv.Itoa(i))}
}
