package model

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/names"
)

// nameConstants names the constants the emitter declares: one per enum
// value, one per scalar default.
func (b *builder) nameConstants() {
	// Constants share the package with the types: OrderState + "1" must
	// not take the name of a type OrderState1.
	types := map[string]bool{}
	for _, t := range b.declared {
		types[t.GoName] = true
	}
	for _, t := range b.declared {
		taken := map[string]bool{}
		for i, v := range t.Values {
			v.GoName = names.EnumValue(t.GoName, fmt.Sprint(v.Value))
			if v.GoName == "" || taken[v.GoName] || types[v.GoName] {
				// A value of symbols only ("*"), or told apart from
				// another by symbols only ("+1", "1").
				name := t.GoName + names.Spelled(fmt.Sprint(v.Value))
				if taken[name] || types[name] {
					name = numbered(name, func(n string) bool { return taken[n] || types[n] })
				}
				b.renamed(t.Source, enumPointer(t, i), "constant for enum value "+enumLiteral(v.Value), v.GoName, name)
				v.GoName = name
			}
			taken[v.GoName] = true
		}
		for _, f := range t.Fields {
			if f.Default != nil && defaultFits(f.Type, f.Default) {
				f.DefaultConst = names.DefaultConst(t.GoName, f.GoName)
			}
		}
	}
}

// enumPointer is where the i-th value of an enum type is written: its
// "enum", or its "const".
func enumPointer(t *Type, i int) string {
	if t.constant {
		return load.Append(t.Pointer, "const")
	}
	return load.AppendIndex(load.Append(t.Pointer, "enum"), i)
}

// defaultFits reports whether a default can be a Go constant of the
// field's type: a string, integer, number or boolean of the right kind, or
// a value of an enum.
func defaultFits(r Ref, d any) bool {
	for r.Kind == Named && (r.Type.Kind == Defined || r.Type.Kind == Enum) {
		if r.Type.Kind == Enum {
			return slices.ContainsFunc(r.Type.Values, func(v *EnumValue) bool { return sameJSON(v.Value, enumJSON(d)) })
		}
		r = r.Type.Base
	}
	switch x := d.(type) {
	case string:
		return r.Kind == String
	case bool:
		return r.Kind == Bool
	case json.Number:
		if r.Kind == Float {
			_, err := x.Float64()
			return err == nil
		}
		_, err := strconv.ParseInt(x.String(), 10, 64)
		return r.Kind == Int && err == nil
	}
	return false
}

// enumJSON turns a decoded JSON scalar into the form EnumValue.Value uses.
func enumJSON(d any) any {
	if n, ok := d.(json.Number); ok {
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return i
		}
	}
	return d
}

// breakValueCycles turns a required struct field into a pointer when the
// field's struct contains the outer struct by value (directly or through
// other structs): Go cannot lay out a type that contains itself.
func (b *builder) breakValueCycles() {
	for _, t := range b.sortedTypes() {
		for _, f := range t.Fields {
			if inner := valueStruct(f); inner != nil && containsByValue(inner, t, map[*Type]bool{}) {
				f.forcePointer = true
			}
		}
	}
}

// valueStruct returns the struct a field holds by value, if any.
func valueStruct(f *Field) *Type {
	if f.IsPointer() || f.Type.Kind != Named {
		return nil
	}
	t := f.Type.Type
	for t.Kind == Alias && t.Base.Kind == Named {
		t = t.Base.Type
	}
	if t.Kind != Struct {
		return nil
	}
	return t
}

func containsByValue(from, target *Type, seen map[*Type]bool) bool {
	if from == target {
		return true
	}
	if seen[from] {
		return false
	}
	seen[from] = true
	for _, f := range from.Fields {
		if inner := valueStruct(f); inner != nil && containsByValue(inner, target, seen) {
			return true
		}
	}
	return false
}

// ident is one package-level identifier of the generated code and where
// it comes from.
type ident struct {
	what string         // "type", "enum constant", ...
	doc  *load.Document // where it comes from
	ptr  string
	fix  string // how the user can rename it
}

func (id ident) String() string {
	if id.doc == nil {
		return id.what // a name every generated package declares
	}
	line, col, _ := id.doc.Position(id.ptr)
	where := fmt.Sprintf("%s:%d:%d", id.doc.Path, line, col)
	if id.ptr != "" {
		where += " " + id.ptr
	}
	return id.what + " from " + where
}

// validate checks the whole model before anything is emitted: every
// package-level name is a usable identifier and is declared once, generated
// file names do not collide, no alias refers to itself.
func (b *builder) validate(m *Model) {
	b.breakValueCycles()
	seen := map[string]ident{}
	claim := func(name string, id ident) {
		if name == "" {
			return // reported where the name was made
		}
		if names.IsReserved(name) || !isExported(name) {
			b.errs.Add(id.doc.Errorf(id.ptr, "Go name %s of this %s is not a usable identifier", strconv.Quote(name), id.what))
			return
		}
		if prev, ok := seen[name]; ok {
			b.errs.Add(id.doc.Errorf(id.ptr, "Go name %s of this %s is already taken by the %s; %s", strconv.Quote(name), id.what, prev, renameFix(id, prev)))
			return
		}
		seen[name] = id
	}
	for name, what := range map[string]string{
		names.TopologyVar:          "topology variable",
		names.DeclareFunc:          "function that declares the topology",
		names.PublisherType:        "publisher type",
		names.PublisherConstructor: "publisher constructor",
		names.OutboxWriterType:     "outbox writer type",
		names.OutboxWriterNew:      "outbox writer constructor",
		names.OutboxRelayNew:       "outbox relay constructor",
	} {
		seen[name] = ident{what: what + " " + name + " that every generated package declares"}
	}
	// A fact whose type's name is taken: its variable, routing-key
	// constant and handler method are named after it, and would only
	// repeat the one mistake.
	collided := map[*Fact]bool{}
	for _, t := range b.sortedTypes() {
		doc, _ := b.s.Doc(t.Source)
		id := ident{what: t.Kind.String(), doc: doc, ptr: t.Pointer, fix: titleFix}
		if t.Fact != nil {
			id = factTypeIdent(t)
		}
		claim(t.GoName, id)
		if t.Fact != nil && seen[t.GoName] != id {
			collided[t.Fact] = true
		}
		for i, v := range t.Values {
			ptr := enumPointer(t, i)
			if v.GoName == "" {
				b.errs.Add(doc.Errorf(ptr, "enum value %s has no letter or digit to name its Go constant after", enumLiteral(v.Value)))
				continue
			}
			claim(v.GoName, ident{fmt.Sprintf("enum value %s", enumLiteral(v.Value)), doc, ptr, "enum constants are named after the type and the value: change the type's \"title\" or the values"})
		}
		b.checkFields(t, doc, claim)
		b.checkVariants(t, doc)
		if t.Kind == Alias && aliasLoops(t) {
			b.errs.Add(doc.Errorf(t.Pointer, "definition %s is only another name for itself (through $ref/oneOf); give it a type", t.GoName))
		}
	}
	for _, f := range allVersions(m.Facts) {
		if f.GoPackage() != "" {
			continue // declared by the producer's package
		}
		if collided[f] {
			continue
		}
		doc, ptr := f.decl.KeyDoc, f.decl.KeyPointer
		claim(f.VarName(), ident{"fact variable of " + f.RoutingKey, doc, ptr, titleFix})
		claim(f.RoutingKeyConst(), ident{"routing-key constant of " + f.RoutingKey, doc, ptr, titleFix})
	}
	for _, c := range m.Consumers {
		fix := "rename the consumer or set a \"title\" on the other"
		claim(c.HandlerName(), ident{"handler interface of consumer " + strconv.Quote(c.Name), b.s.Manifest.Doc, load.Pointer("consumers", c.Name), fix})
		claim(c.ConstructorName(), ident{"constructor of consumer " + strconv.Quote(c.Name), b.s.Manifest.Doc, load.Pointer("consumers", c.Name), fix})
		if c.Batched {
			claim(c.BatchName(), ident{"batch type of consumer " + strconv.Quote(c.Name), b.s.Manifest.Doc, load.Pointer("consumers", c.Name), fix})
		}
	}
	b.claimRequests(m, claim)
	b.claimSagas(m, claim)
	files := map[string]string{}
	for _, t := range b.sortedTypes() {
		name := names.File(t.Source)
		if prev, ok := files[name]; ok && prev != t.Source {
			b.errs.Addf(t.Source, "", "generated file name %s is also the one of %s; rename one of the schema files", name, prev)
		}
		files[name] = t.Source
	}
}

func (b *builder) checkFields(t *Type, doc *load.Document, claim func(string, ident)) {
	fieldAt := map[string]*Field{}
	for _, f := range t.Fields {
		fdoc, _ := b.s.Doc(f.Source)
		if f.DefaultConst != "" {
			claim(f.DefaultConst, ident{"default of property " + strconv.Quote(f.JSONName), fdoc, load.Append(f.Pointer, "default"), titleFix})
		}
		if f.GoName == "" {
			continue
		}
		if prev, ok := fieldAt[f.GoName]; ok {
			b.errs.Add(fdoc.KeyErrorf(f.Pointer, "properties %s and %s both become Go field %s of %s; rename one", strconv.Quote(prev.JSONName), strconv.Quote(f.JSONName), f.GoName, t.GoName))
			continue
		}
		fieldAt[f.GoName] = f
	}
	for _, m := range t.Methods() {
		if f, ok := fieldAt[m]; ok {
			fdoc, _ := b.s.Doc(f.Source)
			b.errs.Add(fdoc.KeyErrorf(f.Pointer, "property %s becomes Go field %s, the name of a method %s has; rename the property", strconv.Quote(f.JSONName), m, t.GoName))
		}
	}
	if t.Extra != nil {
		if f, ok := fieldAt[ExtraField]; ok {
			fdoc, _ := b.s.Doc(f.Source)
			b.errs.Add(fdoc.KeyErrorf(f.Pointer, "property %s becomes Go field %s, which holds the additionalProperties of %s; rename the property", strconv.Quote(f.JSONName), ExtraField, t.GoName))
		}
	}
}

const titleFix = "set a \"title\" to rename one"

// retitleFix is the fix of a name the user set as a "title", which
// setting a title cannot fix.
const retitleFix = "change this \"title\""

// factTypeIdent is the type of a fact, at what named it: its "title"
// (in its file, or its entry of warren.json's "facts"), else its routing
// key.
func factTypeIdent(t *Type) ident {
	d := t.Fact.decl
	id := ident{what: t.Kind.String(), doc: d.KeyDoc, ptr: d.KeyPointer, fix: titleFix}
	if d.Title != "" && names.Type(d.Title) == t.GoName {
		id.ptr, id.fix = "/title", retitleFix
		if d.InManifest() {
			id.ptr = load.Append(d.KeyPointer, "title")
		}
	}
	return id
}

// renameFix says how to give id, which collides with prev, a name of its
// own: a title where a name was derived, another title where one was set.
func renameFix(id, prev ident) string {
	prevTitled := prev.fix == titleFix || prev.fix == retitleFix
	switch {
	case id.fix != retitleFix && id.fix != titleFix && !prevTitled:
		// Neither takes a "title": the other is a name every generated
		// package declares, or another consumer, saga or responder.
		rename, _, _ := strings.Cut(id.fix, " or ")
		if prev.doc == nil {
			return rename
		}
		return "rename one of them"
	case id.fix != retitleFix && prev.fix == retitleFix:
		// The other's name is a title already: setting one is no fix.
		return strings.Replace(id.fix, `set a "title" on the other`, `change the other's "title"`, 1)
	case id.fix != retitleFix:
		return id.fix
	case prev.fix == retitleFix:
		return "rename one of the titles"
	case prev.doc == nil: // a name every generated package declares
		return retitleFix
	}
	return retitleFix + ", or set one on the other"
}

// ExtraField is the name of the map field that holds a struct's additional
// properties when additionalProperties is a schema.
const ExtraField = "AdditionalProperties"

func (b *builder) checkVariants(t *Type, doc *load.Document) {
	at := map[string]*Variant{}
	for _, v := range t.Variants {
		if slices.Contains(t.Methods(), v.GoName) {
			b.errs.Add(doc.Errorf(t.Pointer, "branch %s of %s becomes Go field %s, the name of a method of the union; give the branch another title", v.Location, t.GoName, v.GoName))
		}
		if prev, ok := at[v.GoName]; ok {
			b.errs.Add(doc.Errorf(t.Pointer, "branches %s and %s of %s both become Go field %s; give them distinct titles", prev.Location, v.Location, t.GoName, v.GoName))
			continue
		}
		at[v.GoName] = v
	}
}

func aliasLoops(t *Type) bool {
	seen := map[*Type]bool{}
	for t.Kind == Alias && t.Base.Kind == Named {
		if seen[t] {
			return true
		}
		seen[t] = true
		t = t.Base.Type
	}
	return false
}

func isExported(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return unicode.IsUpper(r)
}

func enumLiteral(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// sortedTypes orders the declared types by schema file, then by where their
// schema starts in the file, so each generated file reads like its schema.
func (b *builder) sortedTypes() []*Type {
	type typeAt struct {
		t   *Type
		off int // looked up once, not once per comparison
	}
	order := make([]typeAt, len(b.declared))
	for i, t := range b.declared {
		doc, _ := b.s.Doc(t.Source)
		order[i] = typeAt{t, doc.Offset(t.Pointer)}
	}
	slices.SortStableFunc(order, func(x, y typeAt) int {
		return cmp.Or(cmp.Compare(x.t.Source, y.t.Source), cmp.Compare(x.off, y.off), cmp.Compare(x.t.GoName, y.t.GoName))
	})
	out := make([]*Type, len(order))
	for i, x := range order {
		out[i] = x.t
	}
	return out
}
