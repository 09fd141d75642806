package gogen

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
)

// genTypes writes the types declared from one schema file, in file order.
func (e *emitter) genTypes(f *jen.File, types []*model.Type) {
	for _, t := range types {
		if t.Fact != nil {
			e.genFact(f, t.Fact)
		}
		for _, c := range typeDoc(t) {
			f.Add(c)
		}
		switch t.Kind {
		case model.Struct:
			e.genStruct(f, t)
		case model.Enum:
			e.genEnum(f, t)
		case model.Union:
			e.genUnion(f, t)
		case model.Defined:
			f.Type().Id(t.GoName).Add(typeExpr(t.Base))
		case model.Alias:
			f.Type().Id(t.GoName).Op("=").Add(typeExpr(t.Base))
		}
		e.genCodec(f, t)
	}
}

// typeDoc is a type's doc comment: what it is and where it comes from, then
// the schema's description, then a deprecation notice.
func typeDoc(t *model.Type) []jen.Code { return docComment(typeDocParagraphs(t)...) }

// typeDocParagraphs are typeDoc's paragraphs.
func typeDocParagraphs(t *model.Type) []string {
	var first string
	if t.Fact != nil {
		first = fmt.Sprintf("%s is the payload of %s facts (schema %s, version %d).", t.GoName, t.Fact.RoutingKey, t.Fact.Location(), t.Fact.Version)
	} else {
		first = fmt.Sprintf("%s is generated from %s.", t.GoName, t.Location())
	}
	switch t.Kind {
	case model.Union:
		var branches []string
		for _, v := range t.Variants {
			branches = append(branches, v.GoName)
		}
		if t.OneOf {
			first += fmt.Sprintf(" It holds exactly one of %s (oneOf): decoding sets the field of the branch whose schema the JSON matches, encoding writes that branch.", strings.Join(branches, ", "))
		} else {
			first += fmt.Sprintf(" It holds at least one of %s (anyOf): decoding sets the field of every branch whose schema the JSON matches, encoding merges them.", strings.Join(branches, ", "))
		}
	}
	return []string{first, t.Doc.Description, deprecated(t.Doc.Deprecated)}
}

// extraComment follows the field that keeps the properties a schema does
// not declare (without patternProperties).
const extraComment = "properties the schema does not declare"

func deprecated(d bool) string {
	if !d {
		return ""
	}
	return "Deprecated: the schema marks this as deprecated."
}

// genFact writes the routing-key constant and the runtime.Fact descriptor.
func (e *emitter) genFact(f *jen.File, fact *model.Fact) {
	if fact.Newest == nil {
		e.genRoutingKey(f, fact)
	}
	for _, c := range docComment(fmt.Sprintf("%s describes %s to the runtime.", fact.VarName(), fact.GoName), deprecated(fact.Deprecated)) {
		f.Add(c)
	}
	f.Var().Id(fact.VarName()).Op("=").Qual(runtimePath, "Fact").Values(factFields(fact))
	f.Line()
}

// genRoutingKey writes the routing-key constant of a fact (of its newest
// version: its versions share it).
func (e *emitter) genRoutingKey(f *jen.File, fact *model.Fact) {
	for _, c := range docComment(fmt.Sprintf("%s is %s's routing key.", fact.RoutingKeyConst(), fact.GoName)) {
		f.Add(c)
	}
	f.Const().Id(fact.RoutingKeyConst()).Op("=").Lit(fact.RoutingKey)
	f.Line()
}

// genStruct writes a struct, its default constants, and, when it keeps
// additional properties, the JSON methods that merge them.
func (e *emitter) genStruct(f *jen.File, t *model.Type) {
	f.Type().Id(t.GoName).StructFunc(func(g *jen.Group) {
		for i, fl := range t.Fields {
			if i > 0 && (fl.Doc.Description != "" || fl.Doc.Deprecated || fl.Default != nil) {
				g.Line()
			}
			for _, c := range docComment(fl.Doc.Description, defaultDoc(fl), deprecated(fl.Doc.Deprecated)) {
				g.Add(c)
			}
			g.Id(fl.GoName).Add(fieldType(fl)).Tag(map[string]string{"json": jsonTag(fl)})
		}
		if t.Extra != nil {
			if len(t.Fields) > 0 {
				g.Line() // not aligned with the declared fields
			}
			if len(t.Patterns) > 0 {
				for _, c := range docComment(model.ExtraField + " holds the properties whose names match the schema's patternProperties.") {
					g.Add(c)
				}
				g.Id(model.ExtraField).Map(jen.String()).Add(elemExpr(*t.Extra)).Tag(map[string]string{"json": "-"})
			} else {
				// A trailing comment: the field says what it holds
				// where it stands, without a line of its own.
				g.Id(model.ExtraField).Map(jen.String()).Add(elemExpr(*t.Extra)).Tag(map[string]string{"json": "-"}).Comment(extraComment)
			}
		}
	})
	e.genDefaults(f, t)
	if t.Extra != nil && !e.tabled(t) {
		e.genExtraMethods(f, t)
	}
}

func defaultDoc(fl *model.Field) string {
	if fl.Default == nil {
		return ""
	}
	b, err := json.Marshal(fl.Default)
	if err != nil {
		return ""
	}
	s := "Default: " + string(b)
	if fl.DefaultConst != "" {
		s += " (" + fl.DefaultConst + "); a decoded value is not filled in when the property is absent."
	} else {
		s += "; a decoded value is not filled in when the property is absent."
	}
	return s
}

func (e *emitter) genDefaults(f *jen.File, t *model.Type) {
	var defs []jen.Code
	var one *model.Field
	for _, fl := range t.Fields {
		if fl.DefaultConst == "" {
			continue
		}
		one = fl
		defs = append(defs, jen.Id(fl.DefaultConst).Add(constType(fl.Type)).Op("=").Add(literal(fl.Type, fl.Default)))
	}
	if len(defs) == 0 {
		return
	}
	f.Line()
	if len(defs) == 1 {
		for _, c := range docComment(fmt.Sprintf("The schema's default of %s.%s.", t.GoName, one.GoName)) {
			f.Add(c)
		}
		f.Const().Add(defs[0])
		return
	}
	for _, c := range docComment(fmt.Sprintf("Defaults of %s's properties, from the schema.", t.GoName)) {
		f.Add(c)
	}
	f.Const().Defs(defs...)
}

// constType is the declared type of a default constant: the field's named
// type when it has one, else untyped.
func constType(r model.Ref) jen.Code {
	if r.Kind == model.Named {
		return jen.Id(r.Type.GoName)
	}
	return jen.Null()
}

// literal renders a scalar JSON default as a Go literal of the field's type.
func literal(r model.Ref, v any) jen.Code {
	for r.Kind == model.Named && r.Type.Kind != model.Enum {
		r = r.Type.Base
	}
	switch x := v.(type) {
	case string:
		return jen.Lit(x)
	case bool:
		return jen.Lit(x)
	case json.Number:
		if r.Kind == model.Float {
			fl, _ := x.Float64()
			return jen.Lit(fl)
		}
		i, _ := strconv.ParseInt(x.String(), 10, 64)
		return intLit(i)
	}
	panic(fmt.Sprintf("gogen: default %v is not a scalar", v)) // model.defaultFits excludes it
}

func jsonTag(fl *model.Field) string {
	name := fl.JSONName
	if name == "-" {
		name = "-," // a bare "-" would mean "skip this field"
	}
	if fl.Optional() {
		return strings.TrimSuffix(name, ",") + ",omitzero"
	}
	return name
}

// genExtraMethods writes the list of declared property names of a struct
// that keeps additional properties, which no additional one may take.
func (e *emitter) genExtraMethods(f *jen.File, t *model.Type) {
	known := propertiesVar(t)
	f.Line()
	for _, c := range docComment(fmt.Sprintf("%s are the property names %s declares; the others are additional.", known, t.GoName)) {
		f.Add(c)
	}
	f.Var().Id(known).Op("=").Index().String().ValuesFunc(func(g *jen.Group) {
		for _, fl := range t.Fields {
			g.Lit(fl.JSONName)
		}
	})
}

// genEnum writes a string or integer type with one constant per value.
func (e *emitter) genEnum(f *jen.File, t *model.Type) {
	f.Type().Id(t.GoName).Add(typeExpr(t.Base))
	f.Line()
	for _, c := range docComment(fmt.Sprintf("Values of %s.", t.GoName)) {
		f.Add(c)
	}
	f.Const().DefsFunc(func(g *jen.Group) {
		for _, v := range t.Values {
			g.Id(v.GoName).Id(t.GoName).Op("=").Add(enumLit(v.Value))
		}
	})
}

// genUnion writes a struct with one field per branch; its methods
// (genCodec) pick branches by schema when decoding and merge them when
// encoding.
func (e *emitter) genUnion(f *jen.File, t *model.Type) {
	f.Type().Id(t.GoName).StructFunc(func(g *jen.Group) {
		for _, v := range t.Variants {
			g.Id(v.GoName).Add(variantType(v))
		}
	})
}

func variantType(v *model.Variant) jen.Code {
	if v.Type.HasNil() {
		return typeExpr(v.Type)
	}
	return jen.Op("*").Add(typeExpr(v.Type))
}

// fieldType is a struct field's type: a pointer when the value may be null
// or absent, unless the type has a nil of its own.
func fieldType(fl *model.Field) jen.Code {
	if fl.NullOrAbsent() {
		return jen.Qual(schemasetPath, "Nullable").Types(typeExpr(fl.Type))
	}
	if fl.IsPointer() {
		return jen.Op("*").Add(typeExpr(fl.Type))
	}
	return typeExpr(fl.Type)
}

// elemExpr is the type of a slice element or map value.
func elemExpr(r model.Ref) jen.Code {
	if r.Nullable && !r.HasNil() {
		return jen.Op("*").Add(typeExpr(r))
	}
	return typeExpr(r)
}

// typeExpr renders a type without the pointer that nullability may add.
func typeExpr(r model.Ref) jen.Code {
	switch r.Kind {
	case model.String:
		return jen.String()
	case model.Int:
		return jen.Int64()
	case model.Float:
		return jen.Float64()
	case model.Bool:
		return jen.Bool()
	case model.Time:
		return jen.Qual(timePath, "Time")
	case model.Raw:
		return jen.Qual(jsonPath, "RawMessage")
	case model.Named:
		return jen.Id(r.Type.GoName)
	case model.Slice:
		return jen.Index().Add(elemExpr(*r.Elem))
	case model.Map:
		return jen.Map(jen.String()).Add(elemExpr(*r.Elem))
	}
	panic(fmt.Sprintf("gogen: unknown kind %d", r.Kind))
}

// intLit renders an untyped integer constant (jen.Lit(int64(1)) would
// write int64(1), which does not convert to a named type implicitly).
func intLit(i int64) jen.Code { return jen.Op(strconv.FormatInt(i, 10)) }

func enumLit(v any) jen.Code {
	if i, ok := v.(int64); ok {
		return intLit(i)
	}
	return jen.Lit(v)
}

// factFields are the fields of a fact's runtime.Fact literal; the ordering
// key and priority only when the schema declares them.
func factFields(fact *model.Fact) jen.Dict {
	d := jen.Dict{
		jen.Id("RoutingKey"): jen.Id(routingKeyConst(fact)),
		jen.Id("Version"):    jen.Lit(fact.Version),
		jen.Id("Validate"):   jen.Id(schemaSetVar).Dot("Validator").Call(jen.Lit(fact.Location())),
	}
	if fact.OrderingKey != "" {
		d[jen.Id("OrderingKey")] = jen.Lit(fact.OrderingKey)
		if key := orderingKeyOf(fact); key != nil {
			d[jen.Id("KeyOf")] = key
		}
	}
	if fact.Priority != 0 {
		d[jen.Id("Priority")] = jen.Lit(fact.Priority)
	}
	return d
}

// routingKeyConst names a fact's routing-key constant: its newest
// version's.
func routingKeyConst(fact *model.Fact) string {
	if fact.Newest != nil {
		return fact.Newest.RoutingKeyConst()
	}
	return fact.RoutingKeyConst()
}

// orderingKeyOf renders the function that reads a fact's ordering key from
// a value of its payload type, spelled as the header carries it, so the
// publisher never parses the JSON it wrote to find the key. Other payloads
// (raw JSON) report false and are read from their bytes. nil when a field
// on the way is a pointer (a cycle forced it), which the bytes handle.
func orderingKeyOf(fact *model.Fact) jen.Code {
	x := jen.Id("v")
	for _, f := range fact.OrderingKeyPath {
		if f.IsPointer() {
			return nil
		}
		x = x.Dot(f.GoName)
	}
	// A key of an enum or a named definition is converted to its scalar.
	named := fact.OrderingKeyPath[len(fact.OrderingKeyPath)-1].Type.Kind == model.Named
	scalar := func(conv *jen.Statement) jen.Code {
		if named {
			return conv.Call(x)
		}
		return x
	}
	var spelled jen.Code
	switch fact.OrderingKeyKind() {
	case model.String:
		spelled = scalar(jen.String())
	case model.Int:
		spelled = jen.Qual("strconv", "FormatInt").Call(scalar(jen.Int64()), jen.Lit(10))
	case model.Bool:
		spelled = jen.Qual("strconv", "FormatBool").Call(scalar(jen.Bool()))
	default:
		return nil
	}
	return jen.Func().Params(jen.Id("payload").Any()).Params(jen.String(), jen.Bool()).Block(
		jen.List(jen.Id("v"), jen.Id("ok")).Op(":=").Id("payload").Assert(jen.Op("*").Id(fact.GoName)),
		jen.If(jen.Op("!").Id("ok")).Block(jen.Return(jen.Lit(""), jen.False())),
		jen.Return(spelled, jen.True()),
	)
}
