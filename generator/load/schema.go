package load

import (
	"encoding/json"
	"net/url"
	"strings"
)

// Schema is one schema of a file (an object or a boolean), read under its
// file's draft: every keyword whose meaning changed between drafts is
// settled here, so that the model, the linter and the differ read the same
// meaning from every draft. Doc and Pointer say where it is written, for
// errors and for the embedded schema that validates it at run time.
//
// Only what shapes Go types or is read by warren's checks has a field;
// Keywords keeps the object as written for everything else.
type Schema struct {
	Doc      *Document
	Pointer  string
	Draft    *Draft
	Keywords map[string]any // the schema object; nil for a boolean schema
	Bool     *bool          // set for a boolean schema (true: anything, false: nothing)

	Base   string // absolute URI that relative references resolve against
	ID     string // the absolute URI this schema declares ($id, or id in draft-04), "" if none
	Anchor string // plain-name fragment it declares ($anchor, or a fragment-only $id before 2019-09)

	// Ref is what $ref points at, once the directory is loaded; nil if
	// there is no $ref or it does not resolve (which load reports).
	// RefAlone says the keywords next to it are ignored (up to draft-07).
	Ref      *Schema
	RefText  string
	RefAlone bool

	Types   []string // "type" as a list; nil when absent
	Enum    []any    // enum, or the one const value; nil when neither
	HasEnum bool     // enum or const is present (an empty enum admits nothing)
	IsConst bool     // it is a const
	Format  string

	Properties           []*Named // in file order
	Required             []string
	AdditionalProperties *Schema  // nil when absent
	PatternProperties    []*Named // sorted by pattern
	DependentSchemas     []*Named // dependentSchemas, or dependencies with a schema value
	DependentRequired    map[string][]string

	// PrefixItems are the schemas of the first elements of a tuple
	// (prefixItems, or an array "items" before 2020-12); Items is the
	// schema of every other element (items, or additionalItems after a
	// tuple). Either may be empty.
	PrefixItems []*Schema
	Items       *Schema

	AllOf, AnyOf, OneOf []*Schema
	Not                 *Schema
	Defs                []*Named // $defs and definitions, sorted by name

	// Numeric bounds, exclusiveness settled (draft-04 writes a boolean).
	Minimum, Maximum *Bound

	Title       string
	Description string
	Deprecated  bool
	Default     any
	HasDefault  bool

	children []*Schema // every subschema, in walk order
	// settled says the schema's $ref has been resolved (or reported) and
	// its dynamic references refused: once, whichever tree reaches it.
	settled bool
}

// Named is a subschema under a name: a property, a pattern, a definition.
type Named struct {
	Name   string
	Schema *Schema
}

// Bound is a numeric limit.
type Bound struct {
	Value     json.Number
	Exclusive bool
}

// Location returns "file#pointer" (just "file" for a root).
func (s *Schema) Location() string {
	if s.Pointer == "" {
		return s.Doc.Path
	}
	return s.Doc.Path + "#" + s.Pointer
}

// IsFalse reports whether the schema is the boolean false: no value.
func (s *Schema) IsFalse() bool { return s.Bool != nil && !*s.Bool }

// Has reports whether the schema object has keyword kw.
func (s *Schema) Has(kw string) bool {
	_, ok := s.Keywords[kw]
	return ok
}

// Extension returns an "x-" keyword's value.
func (s *Schema) Extension(kw string) (any, bool) {
	v, ok := s.Keywords[kw]
	return v, ok
}

// Property returns the declared property name, or nil.
func (s *Schema) Property(name string) *Schema {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// Subschemas returns the schemas written directly inside s (a property's,
// an allOf member, items, ...), in walk order; their own subschemas are
// theirs.
func (s *Schema) Subschemas() []*Schema { return s.children }

// Walk calls fn for s and every subschema below it, parents first. If fn
// returns false, Walk does not descend into that schema.
func (s *Schema) Walk(fn func(*Schema) bool) {
	if !fn(s) {
		return
	}
	for _, c := range s.children {
		c.Walk(fn)
	}
}

// readSchema builds the Schema of v, found at ptr in doc, and of every
// subschema below it. base is the URI relative references resolve against
// at this point; ids collects every $id and anchor declared, for
// resolving references across files. A subschema that doc has read already
// (doc.nodes: a schema read where no keyword holds one, which the new one
// holds) is that schema, not a copy: each place of a file is one Schema,
// so that what is settled of it (its $ref, a default left out) holds
// whichever way it is reached. The caller holds doc.mu, or has doc to
// itself.
func readSchema(doc *Document, d *Draft, ptr string, v any, base string, ids map[string]*Schema) *Schema {
	s := &Schema{Doc: doc, Pointer: ptr, Draft: d, Base: base}
	switch x := v.(type) {
	case bool:
		s.Bool = &x
		return s
	case map[string]any:
		s.Keywords = x
	default:
		return s
	}
	s.readIdentity(ids)
	sub := func(kw string, val any, tokens ...string) *Schema {
		p := Append(ptr, kw)
		for _, t := range tokens {
			p = Append(p, t)
		}
		c, ok := doc.nodes[p]
		if !ok {
			c = readSchema(doc, d, p, val, s.Base, ids)
		}
		s.children = append(s.children, c)
		return c
	}
	s.readApplicators(sub)
	s.readValidation()
	return s
}

// readIdentity settles $id/id, anchors and $ref.
func (s *Schema) readIdentity(ids map[string]*Schema) {
	d, obj := s.Draft, s.Keywords
	if id, ok := obj[d.idKeyword()].(string); ok {
		if frag, isAnchor := strings.CutPrefix(id, "#"); isAnchor && d.Version < 2019 {
			s.Anchor = frag
		} else if u, err := resolveURI(s.Base, id); err == nil {
			u.Fragment, u.RawFragment = "", ""
			s.ID, s.Base = u.String(), u.String()
			ids[s.ID] = s
		}
	}
	if kw := d.anchorKeyword(); kw != "" {
		if a, ok := obj[kw].(string); ok {
			s.Anchor = a
		}
	}
	if d.Version >= 2020 && s.Anchor == "" {
		// A $dynamicAnchor is also a plain anchor.
		if a, ok := obj["$dynamicAnchor"].(string); ok {
			s.Anchor = a
		}
	}
	if s.Anchor != "" {
		ids[s.Base+"#"+s.Anchor] = s
	}
	if ref, ok := obj["$ref"].(string); ok {
		s.RefText, s.RefAlone = ref, d.refIsAlone()
	}
}

// resolveURI resolves ref against base.
func resolveURI(base, ref string) (*url.URL, error) {
	b, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil, err
	}
	return b.ResolveReference(r), nil
}

// readApplicators reads the keywords that hold subschemas.
func (s *Schema) readApplicators(sub func(kw string, v any, tokens ...string) *Schema) {
	d, obj := s.Draft, s.Keywords
	named := func(kw string) []*Named {
		m, _ := obj[kw].(map[string]any)
		var out []*Named
		for _, name := range SortedKeys(m) {
			out = append(out, &Named{Name: name, Schema: sub(kw, m[name], name)})
		}
		return out
	}
	list := func(kw string) []*Schema {
		arr, _ := obj[kw].([]any)
		var out []*Schema
		for i, v := range arr {
			out = append(out, sub(kw, v, itoa(i)))
		}
		return out
	}
	one := func(kw string) *Schema {
		switch v := obj[kw].(type) {
		case map[string]any, bool:
			return sub(kw, v)
		}
		return nil
	}
	if props := named("properties"); props != nil {
		// Generated structs keep the author's field order.
		byName := make(map[string]*Named, len(props))
		for _, p := range props {
			byName[p.Name] = p
		}
		for _, name := range s.Doc.Keys(Append(s.Pointer, "properties")) {
			s.Properties = append(s.Properties, byName[name])
		}
	}
	s.PatternProperties = named("patternProperties")
	s.AdditionalProperties = one("additionalProperties")
	s.Defs = append(named("$defs"), named("definitions")...)
	s.AllOf, s.AnyOf, s.OneOf = list("allOf"), list("anyOf"), list("oneOf")
	s.Not = one("not")
	if d.tupleItems() {
		if _, tuple := obj["items"].([]any); tuple {
			s.PrefixItems = list("items")
			s.Items = one("additionalItems")
		} else {
			s.Items = one("items")
		}
	} else {
		s.PrefixItems = list("prefixItems")
		s.Items = one("items")
	}
	s.readDependencies(sub, named)
	for _, kw := range d.otherSubschemas() {
		one(kw)
	}
}

// readDependencies reads dependentSchemas and dependentRequired, and the
// draft-04..07 "dependencies" that holds both.
func (s *Schema) readDependencies(sub func(kw string, v any, tokens ...string) *Schema, named func(string) []*Named) {
	obj := s.Keywords
	s.DependentRequired = map[string][]string{}
	addRequired := func(name string, v any) {
		arr, _ := v.([]any)
		for _, x := range arr {
			if str, ok := x.(string); ok {
				s.DependentRequired[name] = append(s.DependentRequired[name], str)
			}
		}
		if s.DependentRequired[name] == nil {
			s.DependentRequired[name] = []string{}
		}
	}
	if s.Draft.Version >= 2019 {
		s.DependentSchemas = named("dependentSchemas")
		m, _ := obj["dependentRequired"].(map[string]any)
		for name, v := range m {
			addRequired(name, v)
		}
	}
	if m, ok := obj["dependencies"].(map[string]any); ok && s.Draft.Version <= 2019 {
		for _, name := range SortedKeys(m) {
			if _, isList := m[name].([]any); isList {
				addRequired(name, m[name])
				continue
			}
			s.DependentSchemas = append(s.DependentSchemas, &Named{Name: name, Schema: sub("dependencies", m[name], name)})
		}
	}
	if len(s.DependentRequired) == 0 {
		s.DependentRequired = nil
	}
}

// readValidation reads the assertions and annotations the generator uses.
func (s *Schema) readValidation() {
	obj := s.Keywords
	switch t := obj["type"].(type) {
	case string:
		s.Types = []string{t}
	case []any:
		s.Types = []string{}
		for _, x := range t {
			if str, ok := x.(string); ok {
				s.Types = append(s.Types, str)
			}
		}
	}
	if e, ok := obj["enum"].([]any); ok {
		s.Enum, s.HasEnum = e, true
	}
	if c, ok := obj["const"]; ok && s.Draft.Version >= 6 {
		if s.HasEnum {
			// Both: the values of the enum equal to the const.
			var both []any
			for _, e := range s.Enum {
				if sameScalar(e, c) {
					both = append(both, e)
				}
			}
			s.Enum = both
		} else {
			s.Enum, s.HasEnum, s.IsConst = []any{c}, true, true
		}
	}
	s.Format, _ = obj["format"].(string)
	req, _ := obj["required"].([]any)
	for _, r := range req {
		if str, ok := r.(string); ok {
			s.Required = append(s.Required, str)
		}
	}
	s.Minimum = s.bound("minimum", "exclusiveMinimum")
	s.Maximum = s.bound("maximum", "exclusiveMaximum")
	s.Title, _ = obj["title"].(string)
	s.Description, _ = obj["description"].(string)
	s.Deprecated, _ = obj["deprecated"].(bool)
	s.Default, s.HasDefault = obj["default"]
}

// bound reads a minimum or maximum with its exclusiveness: draft-04 writes
// {"minimum": 0, "exclusiveMinimum": true}, later drafts
// {"exclusiveMinimum": 0}; both may appear, and the tighter one counts.
func (s *Schema) bound(inclusive, exclusive string) *Bound {
	obj := s.Keywords
	n, hasN := obj[inclusive].(json.Number)
	if s.Draft.booleanExclusive() {
		if !hasN {
			return nil
		}
		ex, _ := obj[exclusive].(bool)
		return &Bound{Value: n, Exclusive: ex}
	}
	e, hasE := obj[exclusive].(json.Number)
	switch {
	case hasN && hasE:
		// The exclusive bound wins unless the inclusive one is tighter.
		if tighter(n, e, inclusive == "minimum") {
			return &Bound{Value: n}
		}
		return &Bound{Value: e, Exclusive: true}
	case hasE:
		return &Bound{Value: e, Exclusive: true}
	case hasN:
		return &Bound{Value: n}
	}
	return nil
}

// tighter reports whether inclusive bound a excludes more than exclusive
// bound b (for a minimum: a > b).
func tighter(a, b json.Number, isMin bool) bool {
	af, err1 := a.Float64()
	bf, err2 := b.Float64()
	if err1 != nil || err2 != nil {
		return false
	}
	if isMin {
		return af > bf
	}
	return af < bf
}

// sameScalar compares two scalar JSON values as decoded here.
func sameScalar(a, b any) bool {
	switch a.(type) {
	case map[string]any, []any:
		return false
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return a == b
}

func itoa(i int) string { return AppendIndex("", i)[1:] }
