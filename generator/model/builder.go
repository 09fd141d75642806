package model

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/names"
)

// builder holds the state of one Build. Nothing in it outlives the call.
type builder struct {
	s          *load.Schemas
	errs       load.ErrorList
	err        error                  // a cancelled context; ends the build
	factByNode map[*load.Schema]*Fact // the schema each fact's type is declared at
	types      map[string]*Type       // declared types by schema location
	declared   []*Type                // in declaration order
	resolving  map[string]bool        // $ref locations followed since the last named type, to catch cycles
	inline     map[*load.Schema]bool  // inline schemas being typed, which have no name yet
	narrowing  map[*load.Schema]bool  // schemas narrowedRef is deciding on
	renames    []Renamed              // Go names changed to resolve collisions
	imported   map[*load.Fact]*Import // bound imported facts whose types are generated here
	// implied are the JSON types of the union that an inline oneOf/anyOf
	// branch without "type" sits in: a value must be of them to be valid
	// at all, so the branch's Go type may assume them.
	implied map[*load.Schema][]string
	// leftOut are the defaults of vendored files that their schema
	// refuses, left out of the generated code (see checkValues), each in
	// dropped.
	leftOut map[*load.Schema]bool
	dropped []DroppedDefault
}

func newBuilder(s *load.Schemas) *builder {
	return &builder{
		s:          s,
		factByNode: map[*load.Schema]*Fact{},
		types:      map[string]*Type{},
		resolving:  map[string]bool{},
		inline:     map[*load.Schema]bool{},
		narrowing:  map[*load.Schema]bool{},
		imported:   map[*load.Fact]*Import{},
		implied:    map[*load.Schema][]string{},
		leftOut:    map[*load.Schema]bool{},
	}
}

// isDefinition reports whether ptr is where a reusable definition lives: a
// file's root or an entry of $defs. Each becomes exactly one named Go type.
func isDefinition(ptr string) bool {
	if ptr == "" {
		return true
	}
	tokens, _ := load.Tokens(ptr)
	n := len(tokens)
	return n >= 2 && (tokens[n-2] == "$defs" || tokens[n-2] == "definitions")
}

// typeOf returns the Go type of schema n, declaring the named types it
// needs. A location is declared once, so a definition reached from many
// facts is one Go type, and a recursive reference finds the type that is
// being built.
func (b *builder) typeOf(n *load.Schema) Ref {
	switch {
	case n.Bool != nil:
		// true admits anything; false nothing ({"properties": {"x":
		// false}} forbids x), which validation enforces.
		return Ref{Kind: Raw, schema: n}
	case n.Keywords == nil:
		return Ref{Kind: Raw, schema: n}
	case isPureRef(n):
		return b.follow(n)
	}
	if t, ok := b.types[n.Location()]; ok {
		return Ref{Kind: Named, Type: t, Nullable: t.nullable}
	}
	if base := b.narrowedRef(n); base != nil && b.factByNode[n] == nil {
		r := b.follow(base)
		r.schema, r.narrowed = n, true
		return r
	}
	v := b.flatten(n)
	if ts := b.implied[n]; ts != nil && !v.hasType {
		v.types, v.hasType = ts, true
	}
	if b.factByNode[n] != nil && !v.hasType && len(v.union) == 0 && v.objectKeywords() {
		// A fact's payload must be a named Go type, which raw JSON is not;
		// a payload schema that speaks only of members, as many published
		// schemas do at their root, is read as the object it describes.
		// Elsewhere such keywords imply no type (raw JSON).
		v.types, v.hasType = []string{"object"}, true
	}
	if !isDefinition(n.Pointer) && b.factByNode[n] == nil {
		// An inline schema has no name until shape gives it one, so one
		// met again while it is being typed would be an infinite Go type.
		if b.inline[n] {
			b.errs.Add(n.Doc.Errorf(n.Pointer, "this schema contains itself (through $ref or allOf) with no named type in between, only arrays or maps, which would be an infinite Go type; move it into $defs, where it becomes a named type"))
			return Ref{Kind: Raw}
		}
		b.inline[n] = true
		defer delete(b.inline, n)
		r := b.shape(v, nil)
		if r.Kind != Named && r.wrapper == nil {
			r.schema = n
		}
		return r
	}
	// Declare first, so that recursive references find the type.
	t := b.declare(n, v.nullable)
	var r Ref
	b.withinNamed(func() { r = b.shape(v, t) })
	if r.Kind == Named && r.Type == t {
		return r
	}
	// A definition of a scalar, slice or map gets a name of its own; one
	// that is another declared type, time.Time or raw JSON becomes an alias,
	// which keeps that type's methods (MarshalJSON, Validate).
	t.Kind = Defined
	if r.Kind == Named || r.Kind == Time || r.Kind == Raw {
		t.Kind = Alias
	}
	t.nullable = r.Nullable
	r.Nullable = false
	if r.wrapper == nil {
		r.schema = n
	}
	t.Base = r
	return Ref{Kind: Named, Type: t, Nullable: t.nullable}
}

// declare registers a named type for schema n.
func (b *builder) declare(n *load.Schema, nullable bool) *Type {
	t := &Type{
		GoName:   b.nameFor(n),
		Source:   n.Doc.Path,
		Pointer:  n.Pointer,
		Doc:      docOf(n),
		schema:   n,
		nullable: nullable,
	}
	b.types[n.Location()] = t
	b.declared = append(b.declared, t)
	return t
}

func docOf(n *load.Schema) Doc {
	return Doc{Description: n.Description, Deprecated: n.Deprecated}
}

// shape decides the Go type of a merged schema. t is the type already
// declared for a definition, or nil; an object, enum or union needs a named
// type and declares one if t is nil.
func (b *builder) shape(v *view, t *Type) Ref {
	named := func(kind TypeKind) *Type {
		if t == nil {
			t = b.declare(v.at, v.nullable)
		}
		t.Kind = kind
		return t
	}
	nullable := v.nullable
	switch {
	case v.union != nil:
		if len(v.props) > 0 {
			b.errs.Add(v.at.Doc.Errorf(v.at.Pointer, "%s next to properties cannot be one Go type; put the shared properties into each branch (allOf) instead", v.unionKind))
		}
		return b.union(v, named)
	case v.hasEnum:
		if r, ok := b.enum(v, named); ok {
			return r
		}
	}
	types := v.types
	if len(types) == 0 {
		types = inferTypes(v)
	}
	if len(types) == 2 && (types[0] == "integer" && types[1] == "number" || types[0] == "number" && types[1] == "integer") {
		types = []string{"number"}
	}
	if len(types) != 1 {
		// Several JSON types (or none said): keep the JSON as it is.
		return Ref{Kind: Raw, Nullable: nullable}
	}
	switch types[0] {
	case "string":
		if v.format == "date-time" {
			return Ref{Kind: Time, Nullable: nullable}
		}
		return Ref{Kind: String, Nullable: nullable}
	case "integer":
		return Ref{Kind: Int, Nullable: nullable}
	case "number":
		return Ref{Kind: Float, Nullable: nullable}
	case "boolean":
		return Ref{Kind: Bool, Nullable: nullable}
	case "array":
		elem := Ref{Kind: Raw}
		if v.items != nil && !v.prefixItems {
			elem = b.typeOf(v.items)
		}
		return Ref{Kind: Slice, Elem: &elem, Nullable: nullable}
	case "object":
		if len(v.props) > 0 || !hasMembers(v) {
			st := named(Struct)
			b.withinNamed(func() { b.fields(st, v) })
			return Ref{Kind: Named, Type: st, Nullable: nullable}
		}
		m := b.members(v)
		return Ref{Kind: Map, Elem: &m.elem, Nullable: nullable, patterns: m.patterns, membersWhy: m.why}
	}
	return Ref{Kind: Raw, Nullable: nullable}
}

// inferTypes returns the JSON type of a schema that does not say, when
// its values have one: those of an enum or const. Other keywords do not
// imply a type: properties, items, minLength or format apply only to values
// of their type and let every other value through, so a schema of them
// alone admits any JSON value (raw JSON; the embedded schema checks them).
func inferTypes(v *view) []string {
	if v.hasEnum && len(v.enum) > 0 {
		return enumTypes(v.enum)
	}
	return nil
}

// enumTypes returns the one JSON type all values share, if they share one.
func enumTypes(values []any) []string {
	var typ string
	for _, e := range values {
		var t string
		switch x := e.(type) {
		case string:
			t = "string"
		case bool:
			t = "boolean"
		case json.Number:
			t = "number"
			if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil && typ != "number" {
				t = "integer"
			}
		default:
			return nil
		}
		switch {
		case typ == "" || typ == t:
			typ = t
		case typ == "integer" && t == "number", typ == "number" && t == "integer":
			typ = "number"
		default:
			return nil
		}
	}
	return []string{typ}
}

// fields fills a struct type from the merged properties.
func (b *builder) fields(t *Type, v *view) {
	for _, p := range v.props {
		decl := p.decls[0]
		ref := b.typeOf(decl)
		for _, other := range p.decls[1:] {
			if other.Keywords != nil && (!isStructural(other) || narrows(other, ref)) {
				continue // only narrows the values; the embedded schema checks it
			}
			if r := b.typeOf(other); !r.Equal(ref) {
				b.errs.Add(other.Doc.Errorf(other.Pointer, "property %s has a different type here than in %s", strconv.Quote(p.name), decl.Location()))
			}
		}
		if len(p.decls) > 1 && ref.Kind != Named {
			ref.also = p.decls[1:]
		}
		f := &Field{
			GoName:   names.Field(p.name),
			JSONName: p.name,
			Type:     ref,
			Required: v.required[p.name],
			Source:   decl.Doc.Path,
			Pointer:  decl.Pointer,
			Doc:      docOf(decl),
			decls:    len(p.decls),
			schema:   decl,
		}
		if decl.HasDefault && !b.leftOut[decl] {
			f.Default = decl.Default
		}
		if why := badTagName(p.name); why != "" {
			b.errs.Add(decl.Doc.KeyErrorf(decl.Pointer, "property %s: %s", strconv.Quote(p.name), why))
		}
		t.Fields = append(t.Fields, f)
	}
	if len(v.props) > 0 && hasMembers(v) {
		// The members the properties do not declare are kept (verbatim,
		// in an open object), so that a payload survives decoding and
		// encoding.
		m := b.members(v)
		t.Extra, t.Patterns, t.membersWhy = &m.elem, m.patterns, m.why
	}
}

// badTagName explains why a property name cannot be written in a Go struct
// tag, which encoding/json reads: no quotes, backslashes, commas or back
// quotes, nothing invisible.
func badTagName(name string) string {
	if name == "" {
		return "an empty property name cannot be a Go struct tag"
	}
	for _, r := range name {
		switch {
		case r == '"' || r == '\\' || r == ',' || r == '`' || r < ' ' || r == 0x7f:
			return "the name contains " + strconv.QuoteRune(r) + ", which a Go struct tag cannot hold; rename the property"
		case !strconv.IsPrint(r) && r != ' ':
			return "the name contains the invisible character " + strconv.QuoteRune(r) + "; rename the property"
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", r):
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r > 0x7f:
		default:
			return "the name contains " + strconv.QuoteRune(r) + ", which encoding/json does not accept in a field tag; rename the property"
		}
	}
	return ""
}

// enum makes a named string or integer type with one constant per value.
// Other enums (numbers, booleans, mixed) keep their plain type.
func (b *builder) enum(v *view, named func(TypeKind) *Type) (Ref, bool) {
	base, ok := EnumBase(v.enum, v.types, v.format)
	if !ok {
		return Ref{}, false
	}
	t := named(Enum)
	t.Base = Ref{Kind: base}
	t.constant = v.at.IsConst && len(v.at.AllOf) == 0 && v.at.Ref == nil
	t.Values = nil
	for _, e := range v.enum {
		val := e
		if n, ok := e.(json.Number); ok {
			val, _ = strconv.ParseInt(n.String(), 10, 64)
		}
		t.Values = append(t.Values, &EnumValue{Value: val})
	}
	return Ref{Kind: Named, Type: t, Nullable: v.nullable}, true
}

// EnumBase returns the kind of the Go type declared for an enum (or a
// const) of values, in a schema whose "type" is types (without "null";
// nil when it says none) and whose "format" is format: String for
// strings, Int for integers. It returns false for the enums that keep
// their plain type (numbers, booleans, mixed values, date-times, none).
// Each version of a fact that declares an enum of its own kind thus has a
// Go type of its own for it, which warren diff names in its advice.
func EnumBase(values []any, types []string, format string) (Kind, bool) {
	if len(values) == 0 {
		return 0, false
	}
	allStrings, allInts := true, true
	for _, e := range values {
		switch x := e.(type) {
		case string:
			allInts = false
		case json.Number:
			allStrings = false
			if _, err := strconv.ParseInt(x.String(), 10, 64); err != nil {
				allInts = false
			}
		default:
			allStrings, allInts = false, false
		}
	}
	declared := func(want string) bool { return len(types) == 0 || len(types) == 1 && types[0] == want }
	switch {
	case allStrings && declared("string") && format != "date-time":
		return String, true
	case allInts && declared("integer"):
		return Int, true
	}
	return 0, false
}

// union makes a struct with one pointer field per oneOf/anyOf branch. A
// single branch plus null is just that branch, nullable.
func (b *builder) union(v *view, named func(TypeKind) *Type) Ref {
	var t *Type
	if len(v.union) > 1 {
		// Declared before its branches, which may hold it again (an
		// inline anyOf whose branch is an allOf of the schema around it).
		t = named(Union)
	}
	var variants []*Variant
	for i, br := range v.union {
		if len(v.types) > 0 {
			b.implied[br] = v.types
		}
		var r Ref
		if t != nil {
			b.withinNamed(func() { r = b.typeOf(br) })
		} else {
			r = b.typeOf(br)
		}
		r.Nullable = false
		name := variantName(r)
		if titled := br.Has("title"); r.Kind == Named && r.Type.Source == br.Doc.Path && r.Type.Pointer == br.Pointer && !titled {
			// An inline branch without a title: its type is named after
			// the union (UnionOption2); the field needs only the number.
			name = "Option" + strconv.Itoa(i+1)
		}
		variants = append(variants, &Variant{GoName: name, Type: r, Location: br.Location()})
	}
	if len(variants) == 1 {
		r := variants[0].Type
		r.Nullable = v.nullable
		r.wrapper, r.branch = v.at, v.union[0]
		return r
	}
	t.Variants = variants
	t.OneOf = v.unionKind == "oneOf"
	return Ref{Kind: Named, Type: t, Nullable: v.nullable}
}

func variantName(r Ref) string {
	switch r.Kind {
	case Named:
		return r.Type.GoName
	case String:
		return "String"
	case Int:
		return "Integer"
	case Float:
		return "Number"
	case Bool:
		return "Boolean"
	case Time:
		return "DateTime"
	case Slice:
		return "Array"
	case Map:
		return "Object"
	}
	return "Value"
}

// nameFor names the type declared at n: its title, else the name of the
// definition, file or fact it belongs to, followed by the path to it
// (OrderPlaced + lines + items -> OrderPlacedLinesItem).
func (b *builder) nameFor(n *load.Schema) string {
	if f := b.factByNode[n]; f != nil {
		return f.GoName
	}
	if title := n.Title; title != "" && names.Type(title) != "" {
		return names.Type(title)
	}
	if n.Pointer == "" {
		return names.Type(strings.TrimSuffix(path.Base(n.Doc.Path), ".json"))
	}
	tokens, _ := load.Tokens(n.Pointer)
	k := len(tokens)
	last := tokens[k-1]
	parentAt := func(drop int) string {
		parent := n.Doc.SchemaAt(load.Pointer(tokens[:k-drop]...))
		if parent == nil {
			return names.Type(strings.TrimSuffix(path.Base(n.Doc.Path), ".json"))
		}
		return b.nameFor(parent)
	}
	if k >= 2 {
		switch tokens[k-2] {
		case "$defs", "definitions":
			return names.Type(last)
		case "properties":
			return parentAt(2) + names.Camel(last)
		case "patternProperties", "dependentSchemas":
			return parentAt(2) + "Value"
		case "allOf":
			return parentAt(2)
		case "oneOf", "anyOf":
			i, _ := strconv.Atoi(last)
			return parentAt(2) + "Option" + strconv.Itoa(i+1)
		case "prefixItems", "items":
			if _, err := strconv.Atoi(last); err == nil {
				return parentAt(2) + "Item" + last // a tuple's position
			}
			// A keyword of the items' schema (items of items,
			// additionalProperties of items): named below.
		}
	}
	switch last {
	case "items", "additionalItems", "contains", "unevaluatedItems":
		return parentAt(1) + "Item"
	case "additionalProperties", "unevaluatedProperties", "propertyNames":
		return parentAt(1) + "Value"
	}
	return parentAt(1) + names.Camel(last)
}
