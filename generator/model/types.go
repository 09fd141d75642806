package model

import "github.com/warrenbus/warren/generator/load"

// Kind says which Go type expression a [Ref] stands for.
type Kind int

// The kinds of Go type expressions.
const (
	String Kind = iota // string
	Int                // int64
	Float              // float64
	Bool               // bool
	Time               // time.Time (format: date-time)
	Raw                // json.RawMessage: any JSON value, kept verbatim
	Named              // a type declared in the generated package (Ref.Type)
	Slice              // []Elem
	Map                // map[string]Elem
)

// Ref is a Go type expression: a scalar, a declared type, or a slice or map
// of another Ref. Nullable means the JSON value may be null; the emitter
// renders it as a pointer, except for slices, maps and raw JSON, whose nil
// already encodes as null.
type Ref struct {
	Kind     Kind
	Type     *Type // Kind == Named
	Elem     *Ref  // Kind == Slice or Map
	Nullable bool  // the schema allows null

	schema   *load.Schema // the schema typed, for its checks; nil for a Named ref
	narrowed bool         // an allOf narrowing a shared type, whose narrowing the Go type lacks
	// wrapper is the oneOf/anyOf schema of a union with one branch (and
	// null), which is typed as that branch: branch.
	wrapper, branch *load.Schema
	// also are the other allOf members' declarations of a property,
	// which only narrow it (the property's Ref is typed from the first).
	also []*load.Schema
	// patterns and membersWhy are a Map's: the names its members must
	// match (patternProperties beside additionalProperties: false), and
	// why generated code cannot check the members exactly.
	patterns   []string
	membersWhy string
}

// Equal reports whether r and o denote the same Go type.
func (r Ref) Equal(o Ref) bool {
	if r.Kind != o.Kind || r.Type != o.Type || r.Nullable != o.Nullable {
		return false
	}
	if r.Elem == nil || o.Elem == nil {
		return r.Elem == o.Elem
	}
	return r.Elem.Equal(*o.Elem)
}

// HasNil reports whether the Go type has a nil value that encodes as JSON
// null (slices, maps, raw JSON), so that it needs no pointer to be optional
// or nullable.
func (r Ref) HasNil() bool {
	switch r.Kind {
	case Slice, Map, Raw:
		return true
	case Named:
		return r.Type.Kind == Defined && r.Type.Base.HasNil() || r.Type.Kind == Alias && r.Type.Base.HasNil()
	}
	return false
}

// TypeKind says what a declared type is.
type TypeKind int

// The kinds of declared types.
const (
	Struct  TypeKind = iota // an object with properties
	Enum                    // a string or integer type with one constant per value
	Union                   // oneOf/anyOf: one pointer field per variant
	Defined                 // a named definition of a scalar, slice or map: type SKU string
	Alias                   // a named definition of time.Time or json.RawMessage: type At = time.Time
)

func (k TypeKind) String() string {
	return [...]string{"struct", "enum", "union", "defined type", "alias"}[k]
}

// Type is a type declared in the generated package. Every JSON Schema
// definition reached from a fact (a file's root, an entry of $defs) becomes
// exactly one Type, shared by every fact that uses it; inline objects, enums
// and unions become Types named after where they sit.
type Type struct {
	Kind    TypeKind
	GoName  string // the declared name, unique in the package
	Source  string // schema file it comes from, relative to the schema directory
	Pointer string // JSON pointer of its schema in Source
	Doc     Doc    // description, deprecation

	Fields []*Field // Struct: properties in file order (allOf members first)
	// Extra is the type of the members a Struct's properties do not
	// declare (additionalProperties, patternProperties); nil when the
	// object is closed to them. The emitter adds a map field for it.
	Extra *Ref
	// Patterns are the patternProperties one of which each of those
	// members' names must match, when additionalProperties is false; nil
	// when any name may be.
	Patterns []string

	Base   Ref          // Enum: String or Int; Defined and Alias: the underlying type
	Values []*EnumValue // Enum: in schema order

	Variants []*Variant // Union: in schema order
	OneOf    bool       // Union: exactly one variant must match (oneOf); else at least one (anyOf)

	Fact *Fact // set on the root type of a fact

	schema     *load.Schema // the schema the type is declared at
	nullable   bool         // the definition itself admits null, so every use is nullable
	constant   bool         // Enum: written as a const, not an enum
	membersWhy string       // why generated code cannot check the Extra members exactly; "" when it can
}

// Methods returns the names of the methods generated code declares on the
// type, which no field may take: every declared type but an alias decodes,
// encodes and validates itself (runtime/codec).
func (t *Type) Methods() []string {
	switch t.Kind {
	case Alias:
		return nil
	case Struct:
		return []string{"CodecFields", "DecodeJSON", "EncodeJSON", "MarshalJSON", "UnmarshalJSON", "Validate"}
	}
	return []string{"DecodeJSON", "EncodeJSON", "MarshalJSON", "UnmarshalJSON", "Validate"}
}

// Inline reports whether the type's schema sits inside another's (a
// property, an item, a branch), not at a file's root or an entry of $defs:
// only the generated code of the types around it reaches it.
func (t *Type) Inline() bool { return t.Fact == nil && !isDefinition(t.Pointer) }

// Location returns "source#pointer", which identifies the type's schema in
// the embedded schema set.
func (t *Type) Location() string { return location(t.Source, t.Pointer) }

func location(source, pointer string) string {
	if pointer == "" {
		return source
	}
	return source + "#" + pointer
}

// Doc is what becomes a doc comment.
type Doc struct {
	Description string // the schema's description, verbatim
	Deprecated  bool   // deprecated: true
}

// Field is one property of a Struct.
type Field struct {
	GoName   string // exported field name
	JSONName string // the property name, as in the schema
	Type     Ref
	Required bool   // listed in required: no omitzero, no pointer unless nullable
	Source   string // schema file declaring the property (an allOf member may live elsewhere)
	Pointer  string // JSON pointer of the property's schema in Source
	Doc      Doc
	// Default is the property's default as decoded JSON, nil when none.
	// DefaultConst names the constant the emitter declares for a scalar
	// default ("" when the default is not a scalar of the field's type).
	Default      any
	DefaultConst string

	// forcePointer breaks a cycle of structs that contain each other by
	// value, which Go cannot lay out.
	forcePointer bool
	decls        int          // schemas declaring the property (allOf members)
	schema       *load.Schema // the first of them
}

// Optional reports whether the field may be absent.
func (f *Field) Optional() bool { return !f.Required }

// IsPointer reports whether the field's Go type is a pointer: when it may be
// null or absent, unless its type has a nil of its own.
func (f *Field) IsPointer() bool {
	return (f.Type.Nullable || !f.Required || f.forcePointer) && !f.Type.HasNil() && !f.NullOrAbsent()
}

// NullOrAbsent reports whether the field may be absent and may be null,
// and must tell the two apart: its Go type is schemaset.Nullable. Raw JSON
// needs no help (absent is nil, null is the JSON null).
func (f *Field) NullOrAbsent() bool {
	return !f.Required && f.Type.Nullable && !isRaw(f.Type)
}

func isRaw(r Ref) bool {
	for r.Kind == Named && r.Type.Kind == Alias {
		r = r.Type.Base
	}
	return r.Kind == Raw
}

// EnumValue is one constant of an Enum.
type EnumValue struct {
	GoName string // TypeName + value in camel case
	Value  any    // string or int64
}

// Variant is one branch of a Union.
type Variant struct {
	GoName   string // the field name in the union struct
	Type     Ref    // never nullable: null is modelled on the union's uses
	Location string // "source#pointer" of the branch schema, matched at decode time
}
