package model

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/warrenbus/warren/generator/load"
)

// Generated code decodes and validates a value in one pass: the Go type
// says its shape (required properties, closed objects, where null may be,
// enum values) and a [Check] the rest of what its schema asserts. Where a
// schema uses a keyword, or a shape, that generated code does not translate
// exactly, [Type.Inexact] says so and the type's generated code asks the
// embedded schema (the reference validator) instead.

// Check is what a scalar, string or array value must satisfy beyond its Go
// type: the constraints of the schema it was typed from.
type Check struct {
	MinLength, MaxLength int64  // in code points; -1 when absent
	Pattern              string // ECMA-262 regular expression; "" when absent
	HasPattern           bool
	Format               string // an asserted format; "" when none
	Minimum, Maximum     *load.Bound
	MultipleOf           json.Number // "" when absent
	MinItems, MaxItems   int64       // -1 when absent
	UniqueItems          bool
	// Enum are the values an enum or const allows, as JSON, for the Go
	// types that are not an Enum of their own (numbers, raw JSON); nil
	// when there is none.
	Enum []json.RawMessage
	// Types are the JSON types a value kept as raw JSON may have ("type"
	// with several); nil when any.
	Types []string
	// Patterns are those one of which each member name of a map must
	// match (patternProperties beside additionalProperties: false); nil
	// when any name may be.
	Patterns []string
}

// IsZero reports whether the check checks nothing.
func (c Check) IsZero() bool {
	return c.MinLength < 0 && c.MaxLength < 0 && !c.HasPattern && c.Format == "" && c.Minimum == nil && c.Maximum == nil &&
		c.MultipleOf == "" && c.MinItems < 0 && c.MaxItems < 0 && !c.UniqueItems && c.Enum == nil && c.Types == nil && c.Patterns == nil
}

// Check returns what a value of r must satisfy beyond its Go type. A
// Named ref has none of its own: its type checks itself.
func (r Ref) Check(assert []string) Check {
	c := r.checkOf(r.schema, assert)
	c.Patterns = r.patterns
	for _, n := range r.also {
		// Another allOf member's declaration of the property: Inexact
		// makes sure no keyword is in two of them.
		o := r.checkOf(n, assert)
		c.MinLength, c.MaxLength = max(c.MinLength, o.MinLength), orLimit(c.MaxLength, o.MaxLength)
		c.MinItems, c.MaxItems = max(c.MinItems, o.MinItems), orLimit(c.MaxItems, o.MaxItems)
		if o.HasPattern {
			c.Pattern, c.HasPattern = o.Pattern, true
		}
		c.Format = cmp.Or(c.Format, o.Format)
		c.Minimum, c.Maximum = cmp.Or(c.Minimum, o.Minimum), cmp.Or(c.Maximum, o.Maximum)
		c.MultipleOf = cmp.Or(c.MultipleOf, o.MultipleOf)
		c.UniqueItems = c.UniqueItems || o.UniqueItems
		if o.Enum != nil {
			c.Enum = o.Enum
		}
	}
	return c
}

func orLimit(a, b int64) int64 {
	if a < 0 {
		return b
	}
	return a
}

func (r Ref) checkOf(n *load.Schema, assert []string) Check {
	c := Check{MinLength: -1, MaxLength: -1, MinItems: -1, MaxItems: -1}
	if n == nil || n.Keywords == nil || r.Kind == Named {
		return c
	}
	c.MinLength, c.MaxLength = count(n, "minLength"), count(n, "maxLength")
	c.MinItems, c.MaxItems = count(n, "minItems"), count(n, "maxItems")
	c.Pattern, c.HasPattern = n.Keywords["pattern"].(string)
	c.Minimum, c.Maximum = n.Minimum, n.Maximum
	c.MultipleOf, _ = n.Keywords["multipleOf"].(json.Number)
	c.UniqueItems, _ = n.Keywords["uniqueItems"].(bool)
	if f := n.Format; (r.Kind == String || r.Kind == Time) && (f == "regex" || slices.Contains(assert, f)) {
		c.Format = f // the reference always checks "regex" (schemaset.knownFormats)
	}
	if r.Kind == Raw && n.Types != nil {
		c.Types = n.Types
	}
	if n.HasEnum && (r.Kind == String || r.Kind == Float || r.Kind == Raw || r.Kind == Bool) {
		c.Enum = []json.RawMessage{}
		for _, v := range n.Enum {
			b, err := json.Marshal(v)
			if err == nil {
				c.Enum = append(c.Enum, b)
			}
		}
	}
	return c
}

func count(n *load.Schema, kw string) int64 {
	v, ok := n.Keywords[kw].(json.Number)
	if !ok {
		return -1
	}
	i, err := strconv.ParseInt(v.String(), 10, 64)
	if err != nil {
		f, _ := v.Float64() // 2.0 is a valid count
		return int64(f)
	}
	return i
}

// assertions are the keywords that the reference validator applies, in
// some draft; every other keyword is an annotation to it.
var assertions = []string{
	"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
	"maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
	"maxProperties", "minProperties", "required", "dependentRequired", "dependencies", "format",
	"properties", "patternProperties", "additionalProperties", "items", "prefixItems", "additionalItems",
	"contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "allOf", "anyOf", "oneOf",
	"not", "if", "then", "else", "dependentSchemas", "$ref", "$dynamicRef", "$recursiveRef",
}

// translated lists, per kind of Go type, the keywords generated code
// checks exactly for it; some only in some shapes, which Inexact checks
// too: patternProperties (members), a struct's oneOf and anyOf (Branches),
// the type beside a union (typesWithin).
var translated = map[string][]string{
	"string": {"type", "minLength", "maxLength", "pattern", "format", "enum", "const"},
	"number": {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format", "enum", "const"},
	"bool":   {"type", "format", "enum", "const"},
	"array":  {"type", "items", "minItems", "maxItems", "uniqueItems", "format"},
	"map":    {"type", "additionalProperties", "patternProperties", "format"},
	"struct": {"type", "properties", "required", "additionalProperties", "patternProperties", "format", "oneOf", "anyOf"},
	"enum":   {"type", "enum", "const", "format"},
	"union":  {"type", "oneOf", "anyOf", "format"},
	"time":   {"type", "format"},
	"raw":    {"type", "enum", "const"},
}

// Inexact says why generated code cannot check values of t exactly as its
// schema says (the keyword and where it is), or "" when it can. Generated
// code for an inexact type validates with the embedded schema.
func (t *Type) Inexact() string { return t.inexact(map[*Type]bool{}) }

// inexact is Inexact for a type reached from the types in seen. A type
// met again inside itself (a struct whose field is a one-branch union of
// that struct) adds nothing: the outer call answers for it.
func (t *Type) inexact(seen map[*Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	defer delete(seen, t)
	switch t.Kind {
	case Struct:
		if why := t.structInexact(); why != "" {
			return why
		}
		if len(t.schema.Required) > 64 || len(slices.DeleteFunc(slices.Clone(t.Fields), (*Field).Optional)) > 64 {
			return at(t.schema, "required") + ": more than 64 required properties"
		}
		for _, r := range t.schema.Required {
			if !slices.ContainsFunc(t.Fields, func(f *Field) bool { return f.JSONName == r }) {
				return at(t.schema, "required") + ": requires an undeclared property"
			}
		}
		for _, f := range t.Fields {
			if why := f.Type.inexact(seen); why != "" {
				return why
			}
		}
		if t.Extra != nil {
			return t.Extra.inexact(seen)
		}
	case Enum:
		if t.schema.Draft == load.Draft4 && t.schema.Has("const") {
			return at(t.schema, "const") + ": not a keyword of draft-04"
		}
		return nodeInexact(t.schema, "enum", nil)
	case Union:
		if why := nodeInexact(t.schema, "union", nil); why != "" {
			return why
		}
		shaping := len(t.schema.OneOf) + len(t.schema.AnyOf)
		for _, br := range append(slices.Clip(t.schema.OneOf), t.schema.AnyOf...) {
			if br.Keywords != nil && isNull(br) {
				shaping--
			}
		}
		if shaping != len(t.Variants) {
			return at(t.schema, "oneOf/anyOf") + ": a branch that only constrains values"
		}
		for _, v := range t.Variants {
			if why := v.Type.inexact(seen); why != "" {
				return why
			}
			if ts := t.schema.Types; ts != nil && !typesWithin(jsonTypes(v.Type), ts) {
				return at(t.schema, "type") + ": a branch holds values of other types"
			}
		}
	case Defined, Alias:
		base := t.Base
		base.Nullable = t.nullable // null is the uses' to allow
		return base.inexact(seen)
	}
	return ""
}

// structInexact checks the keywords of a struct's schema. An allOf (or a
// $ref with siblings) of plain object schemas is exact: the struct has the
// properties and required names of all of them, each property declared
// once, and none of them closes the object (additionalProperties there
// would close it to that member's properties only).
func (t *Type) structInexact() string {
	n := t.schema
	if len(n.AllOf) == 0 && (n.RefText == "" || isPureRef(n)) {
		if why := cmp.Or(nodeInexact(n, "struct", nil), t.membersWhy); why != "" {
			return why
		}
		_, why := t.Branches()
		return why
	}
	if n.Has("additionalProperties") {
		return at(n, "additionalProperties") + ": next to allOf (it closes the object to this schema's own properties)"
	}
	// unevaluatedProperties: false closes the object to the properties of
	// all members: the struct's fields, as the model has it.
	if u, ok := n.Keywords["unevaluatedProperties"]; ok && (u != false || n.Draft.Version < 2019) {
		return at(n, "unevaluatedProperties") + ": next to allOf, or in a draft without it"
	}
	required := map[string]bool{}
	if why := objectMember(n, required, map[*load.Schema]bool{}); why != "" {
		return why
	}
	for _, f := range t.Fields {
		if f.decls > 1 && len(f.Type.also) == 0 {
			return at(n, "allOf") + ": property " + strconv.Quote(f.JSONName) + " declared by several members"
		}
		delete(required, f.JSONName)
	}
	for name := range required {
		return at(n, "required") + ": requires an undeclared property " + strconv.Quote(name)
	}
	return ""
}

// memberKeywords are those a plain object member of an allOf may assert.
var memberKeywords = []string{"type", "properties", "required", "allOf", "$ref"}

// objectMember checks one schema of an allOf tree (the struct's own, a
// member, a $ref target) and collects its required names.
func objectMember(n *load.Schema, required map[string]bool, seen map[*load.Schema]bool) string {
	if n.Keywords == nil {
		if n.IsFalse() {
			return at(n, "") + ": the schema false"
		}
		return ""
	}
	if seen[n] {
		return at(n, "") + ": an allOf/$ref cycle"
	}
	seen[n] = true
	if n.RefText != "" && n.RefAlone {
		// Up to draft-07 the keywords next to a $ref do not count.
		if n.Ref == nil {
			return at(n, "$ref") + ": unresolved"
		}
		return objectMember(n.Ref, required, seen)
	}
	for kw := range n.Keywords {
		if slices.Contains(assertions, kw) && !slices.Contains(memberKeywords, kw) && (kw != "unevaluatedProperties" || len(seen) > 1) && applies(n, kw) {
			return at(n, kw) + ": not translated in an allOf"
		}
	}
	if n.Types != nil && !slices.Equal(n.Types, []string{"object"}) {
		return at(n, "type") + ": not an object type in an allOf"
	}
	if n.Draft == load.Draft4 && n.Has("const") {
		return at(n, "const") + ": not a keyword of draft-04"
	}
	for _, r := range n.Required {
		required[r] = true
	}
	if n.RefText != "" {
		if n.Ref == nil {
			return at(n, "$ref") + ": unresolved"
		}
		if why := objectMember(n.Ref, required, seen); why != "" {
			return why
		}
	}
	for _, m := range n.AllOf {
		if why := objectMember(m, required, seen); why != "" {
			return why
		}
	}
	return ""
}

// Inexact says why values of r are not checked exactly by their Go type
// and Check, or "": for a Named ref, whether its type's code is exact.
func (r Ref) Inexact() string {
	if r.Kind == Named && !r.narrowed && r.wrapper == nil {
		return r.Type.Inexact()
	}
	return r.inexact(map[*Type]bool{})
}

// inexact says why values of r are not checked exactly by their Go type
// and Check, or "".
func (r Ref) inexact(seen map[*Type]bool) string {
	if r.narrowed {
		return at(r.schema, "allOf") + ": narrows a shared type"
	}
	if r.wrapper != nil {
		return r.unwrapped(seen)
	}
	if len(r.also) > 0 {
		if why := r.alsoInexact(); why != "" {
			return why
		}
	}
	if r.Elem != nil {
		if why := r.Elem.inexact(seen); why != "" {
			return why
		}
	}
	n := r.schema
	switch r.Kind {
	case Named:
		if r.Type.Kind == Alias {
			return r.Type.inexact(seen) // an alias has no code of its own
		}
		return "" // the type says for itself
	case String:
		return nodeInexact(n, "string", r.allowsNull)
	case Int:
		if n != nil && n.HasEnum {
			return at(n, "enum") + ": not translated for an integer that is not an enum type"
		}
		if why := beyondInt64(n); why != "" {
			return why
		}
		return nodeInexact(n, "number", r.allowsNull)
	case Float:
		return nodeInexact(n, "number", r.allowsNull)
	case Bool:
		return nodeInexact(n, "bool", r.allowsNull)
	case Slice:
		if n != nil && len(n.PrefixItems) > 0 {
			return at(n, "prefixItems") + ": a tuple"
		}
		return nodeInexact(n, "array", r.allowsNull)
	case Map:
		return cmp.Or(nodeInexact(n, "map", r.allowsNull), r.membersWhy)
	case Time:
		return nodeInexact(n, "time", r.allowsNull)
	}
	return nodeInexact(n, "raw", nil) // any JSON value: nothing may be asserted
}

// alsoInexact checks the other declarations of a property in an allOf:
// they may only add constraints of a string, number or boolean that no
// other declaration sets.
func (r Ref) alsoInexact() string {
	kind := map[Kind]string{String: "string", Int: "number", Float: "number", Bool: "bool"}[r.Kind]
	if kind == "" || r.Kind == Int && slices.ContainsFunc(r.also, func(n *load.Schema) bool { return n.HasEnum }) {
		return at(r.also[0], "") + ": a property declared by several allOf members"
	}
	set := map[string]bool{}
	for _, n := range append([]*load.Schema{r.schema}, r.also...) {
		if n == nil || n.Keywords == nil {
			continue
		}
		if why := nodeInexact(n, kind, nil); why != "" {
			return why
		}
		if r.Kind == Int {
			if why := beyondInt64(n); why != "" {
				return why
			}
		}
		for kw := range n.Keywords {
			if kw == "type" || !slices.Contains(assertions, kw) {
				continue
			}
			if kw == "exclusiveMinimum" {
				kw = "minimum" // one bound each way: load.Bound settles them per schema
			} else if kw == "exclusiveMaximum" {
				kw = "maximum"
			}
			if set[kw] {
				return at(n, kw) + ": set by two allOf members' declarations of one property"
			}
			set[kw] = true
		}
	}
	return ""
}

// unwrapped says why a oneOf/anyOf of one branch and null, typed as the
// branch, is not checked exactly, or "".
func (r Ref) unwrapped(seen map[*Type]bool) string {
	w := r.wrapper
	if why := nodeInexact(w, "union", nil); why != "" {
		return why
	}
	branches := append(slices.Clip(w.OneOf), w.AnyOf...)
	for _, br := range branches {
		if br != r.branch && (br.Keywords == nil || !isNull(br)) {
			return at(w, "oneOf/anyOf") + ": a branch that only constrains values"
		}
	}
	if len(w.OneOf) > 1 && r.branchAllowsNull() {
		return at(w, "oneOf") + ": null matches two branches"
	}
	if ts := w.Types; ts != nil && !typesWithin(jsonTypes(r), ts) {
		return at(w, "type") + ": the branch holds values of other types"
	}
	inner := r
	inner.wrapper, inner.Nullable = nil, false
	if inner.Kind == Named {
		return inner.Type.inexact(seen)
	}
	inner.Nullable = r.branchAllowsNull()
	return inner.inexact(seen)
}

// branchAllowsNull reports whether the one branch of a wrapped union
// admits null by itself.
func (r Ref) branchAllowsNull() bool {
	if r.Kind == Named {
		return r.Type.nullable
	}
	return r.branch.Keywords == nil || schemaAllowsNull(r.branch)
}

func (r Ref) allowsNull() bool { return r.Nullable || r.HasNil() && r.Kind == Raw }

// nodeInexact reports the first keyword of n that generated code does not
// check for a Go type of the given kind, or a null that the Go type and
// the schema disagree on.
func nodeInexact(n *load.Schema, kind string, nullable func() bool) string {
	if n == nil || n.Keywords == nil {
		if n != nil && n.IsFalse() {
			return at(n, "") + ": the schema false"
		}
		return ""
	}
	if n.RefText != "" && !isPureRef(n) {
		return at(n, "$ref") + ": keywords next to $ref"
	}
	if n.Draft == load.Draft4 && n.Has("const") {
		return at(n, "const") + ": not a keyword of draft-04"
	}
	var kws []string
	for kw := range n.Keywords {
		kws = append(kws, kw)
	}
	sort.Strings(kws)
	for _, kw := range kws {
		if slices.Contains(assertions, kw) && !slices.Contains(translated[kind], kw) && applies(n, kw) {
			return at(n, kw) + ": not translated for a " + kind
		}
	}
	if nullable != nil {
		if allows := schemaAllowsNull(n); allows != nullable() {
			return at(n, "type") + fmt.Sprintf(": null allowed by the schema (%v) and by the Go type (%v) differ", allows, !allows)
		}
	}
	return ""
}

// schemaAllowsNull reports whether a schema without applicators admits null.
func schemaAllowsNull(n *load.Schema) bool {
	if n.Types != nil && !slices.Contains(n.Types, "null") {
		return false
	}
	if n.HasEnum && !slices.Contains(n.Enum, nil) {
		return false
	}
	return n.Types != nil || n.HasEnum // no type at all: the Go type narrows (docs/CONFORMANCE.md)
}

func at(n *load.Schema, kw string) string {
	if n == nil {
		return kw
	}
	if kw == "" {
		return n.Location()
	}
	return n.Location() + " " + kw
}
