package gogen

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/model"
)

// The types of a schema file written directly in gofmt's layout (gofile):
// the same declarations as genTypes writes through jennifer, for the
// kinds almost every file is made of, the facts and nested objects
// written as Shapes and the enums written as data. A file with any other
// kind (a union, a defined type, a struct with spelled-out methods, a
// fact whose ordering key needs a function) is left to genTypes: ok is
// false. The tests render every file both ways and compare (VerifyLayout).

// typesDirect writes the types declared from one schema file, in file
// order, as genTypes does.
func (e *emitter) typesDirect(g *gofile, types []*model.Type) {
	if len(types) == 0 {
		g.ok = false
	}
	for _, t := range types {
		if !g.ok {
			return
		}
		if !e.direct(t) {
			g.ok = false
			return
		}
		if t.Fact != nil {
			e.factDirect(g, t.Fact)
		}
		g.decl()
		g.doc(0, docLines(typeDocParagraphs(t)...))
		switch t.Kind {
		case model.Struct:
			e.structDirect(g, t)
			e.tableDirect(g, t)
		case model.Enum:
			e.enumDirect(g, t)
		}
	}
}

// direct reports whether typesDirect knows how to write t.
func (e *emitter) direct(t *model.Type) bool {
	switch {
	case t.Kind == model.Struct && e.tabled(t) && len(t.Fields) > 0:
	case t.Kind == model.Enum && e.dataEnums[t]:
	default:
		return false
	}
	return t.Fact == nil || t.Fact.OrderingKey == "" || orderingKeyOf(t.Fact) == nil
}

// factDirect writes the routing-key constant and the runtime.Fact
// descriptor (genFact).
func (e *emitter) factDirect(g *gofile, fact *model.Fact) {
	if fact.Newest == nil {
		g.decl()
		g.doc(0, docLines(fmt.Sprintf("%s is %s's routing key.", fact.RoutingKeyConst(), fact.GoName)))
		g.line(0, "const "+fact.RoutingKeyConst()+" = "+quote(fact.RoutingKey))
	}
	g.decl()
	g.doc(0, docLines(fmt.Sprintf("%s describes %s to the runtime.", fact.VarName(), fact.GoName), deprecated(fact.Deprecated)))
	g.line(0, "var "+fact.VarName()+" = "+g.q(runtimePath, "Fact")+"{")
	// in order of name, as jennifer writes a Dict
	if fact.OrderingKey != "" {
		g.row(1, quote(fact.OrderingKey)+",", "OrderingKey:")
	}
	if fact.Priority != 0 {
		g.row(1, strconv.Itoa(fact.Priority)+",", "Priority:")
	}
	g.row(1, routingKeyConst(fact)+",", "RoutingKey:")
	g.row(1, schemaSetVar+".Validator("+quote(fact.Location())+"),", "Validate:")
	g.row(1, strconv.Itoa(fact.Version)+",", "Version:")
	g.line(0, "}")
}

// structDirect writes a struct and its default constants (genStruct).
func (e *emitter) structDirect(g *gofile, t *model.Type) {
	g.line(0, "type "+t.GoName+" struct {")
	for i, fl := range t.Fields {
		if i > 0 && (fl.Doc.Description != "" || fl.Doc.Deprecated || fl.Default != nil) {
			g.blank()
		}
		g.doc(1, docLines(fl.Doc.Description, defaultDoc(fl), deprecated(fl.Doc.Deprecated)))
		g.row(1, structTag(jsonTag(fl)), fl.GoName, e.fieldTypeText(g, fl))
	}
	if t.Extra != nil {
		if len(t.Fields) > 0 {
			g.blank()
		}
		// never patternProperties here: a Shape does not describe them
		g.row(1, structTag("-")+" // "+extraComment, model.ExtraField, "map[string]"+e.elemText(g, *t.Extra))
	}
	g.line(0, "}")
	e.defaultsDirect(g, t)
}

// structTag is a field's tag as jennifer writes it.
func structTag(json string) string {
	s := "json:" + strconv.Quote(json)
	if strconv.CanBackquote(s) {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

// defaultsDirect writes the constants of a struct's defaults
// (genDefaults).
func (e *emitter) defaultsDirect(g *gofile, t *model.Type) {
	var one *model.Field
	n, typed := 0, 0
	for _, fl := range t.Fields {
		if fl.DefaultConst != "" {
			one = fl
			n++
			if fl.Type.Kind == model.Named {
				typed++
			}
		}
	}
	if n == 0 {
		return
	}
	g.decl()
	if n == 1 {
		g.doc(0, docLines(fmt.Sprintf("The schema's default of %s.%s.", t.GoName, one.GoName)))
		spec := one.DefaultConst
		if one.Type.Kind == model.Named {
			spec += " " + one.Type.Type.GoName
		}
		g.line(0, "const "+spec+" = "+literalText(one.Type, one.Default))
		return
	}
	if typed > 0 && typed < n {
		g.ok = false // gofmt keeps an empty type column: genDefaults's
		return
	}
	g.doc(0, docLines(fmt.Sprintf("Defaults of %s's properties, from the schema.", t.GoName)))
	g.line(0, "const (")
	for _, fl := range t.Fields {
		if fl.DefaultConst == "" {
			continue
		}
		value := "= " + literalText(fl.Type, fl.Default)
		if fl.Type.Kind == model.Named {
			g.row(1, value, fl.DefaultConst, fl.Type.Type.GoName)
		} else {
			g.row(1, value, fl.DefaultConst)
		}
	}
	g.line(0, ")")
}

// literalText is literal's text.
func literalText(r model.Ref, v any) string {
	for r.Kind == model.Named && r.Type.Kind != model.Enum {
		r = r.Type.Base
	}
	switch x := v.(type) {
	case string:
		return quote(x)
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		if r.Kind == model.Float {
			fl, _ := x.Float64()
			return floatLit(fl)
		}
		i, _ := strconv.ParseInt(x.String(), 10, 64)
		return strconv.FormatInt(i, 10)
	}
	panic(fmt.Sprintf("gogen: default %v is not a scalar", v)) // model.defaultFits excludes it
}

// tableDirect writes t's CodecFields, its methods and its Shape
// (tableCodec).
func (e *emitter) tableDirect(g *gofile, t *model.Type) {
	c := &valueCodec{assert: e.m.AssertFormats, inline: true, dataEnums: e.dataEnums}
	props, ptrs, _ := c.shape(t)
	shape := "shapeOf" + t.GoName
	list := "f"
	if len(ptrs) > 0 {
		list = "append(f, " + strings.Join(ptrs, ", ") + ")"
	}
	g.decl()
	g.fn("func (v *"+t.GoName+") CodecFields(f []any) (*"+g.q(codecPath, "Shape")+", []any)", "return &"+shape+", "+list)
	if !e.bare[t] {
		if e.selfCoded[t] {
			g.decl()
			g.comment(0, "DecodeJSON reads v from d and checks it against its schema in the same pass.")
			g.fn("func (v *"+t.GoName+") DecodeJSON(d *"+g.q(jxPath, "Decoder")+") error", "return "+g.q(codecPath, "Decode")+"(d, v)")
			g.decl()
			g.comment(0, "EncodeJSON writes v as JSON. It does not check v; Validate does.")
			g.fn("func (v *"+t.GoName+") EncodeJSON(e *"+g.q(jxPath, "Encoder")+")", g.q(codecPath, "Encode")+"(e, v)")
		}
		g.decl()
		g.comment(0, "Validate checks v against its schema, as decoding does.")
		g.fn("func (v *"+t.GoName+") Validate() error", "return "+g.q(codecPath, "Check")+"(v)")
		if !t.Inline() {
			g.decl()
			g.comment(0, "MarshalJSON writes v as JSON. It does not check v; Validate does.")
			g.fn("func (v "+t.GoName+") MarshalJSON() ([]byte, error)", "return "+g.q(codecPath, "MarshalObject")+"(&v)")
			g.decl()
			g.comment(0, "UnmarshalJSON decodes data, checking it against its schema in the same pass.")
			g.fn("func (v *"+t.GoName+") UnmarshalJSON(data []byte) error", "return "+g.q(codecPath, "Unmarshal")+"(data, v)")
		}
	}
	g.decl()
	open := ""
	if t.Extra != nil {
		open = "Open: true, "
	}
	g.line(0, "var "+shape+" = "+g.q(codecPath, "Shape")+"{"+open+"Props: []"+g.q(codecPath, "Prop")+"{")
	for _, p := range props {
		g.line(1, g.frag(p)+",")
	}
	g.line(0, "}}")
}

// enumDirect writes an enum written as data: its type, its constants and
// its values (genEnum, enumCodec).
func (e *emitter) enumDirect(g *gofile, t *model.Type) {
	g.line(0, "type "+t.GoName+" "+e.typeText(g, t.Base))
	g.decl()
	g.doc(0, docLines(fmt.Sprintf("Values of %s.", t.GoName)))
	g.line(0, "const (")
	for _, v := range t.Values {
		g.row(1, "= "+enumText(v.Value), v.GoName, t.GoName)
	}
	g.line(0, ")")
	var shown []string
	for _, v := range t.Values {
		b, _ := json.Marshal(v.Value)
		shown = append(shown, string(b))
	}
	set, elem := "Strings", "string"
	if t.Base.Kind == model.Int {
		set, elem = "Ints", "int64"
	}
	sorted := sortedValues(t)
	want := "one of " + strings.Join(shown, ", ")
	if len(shown) == 1 {
		want = "the constant " + shown[0]
	}
	g.decl()
	g.line(0, "var valuesOf"+t.GoName+" = "+g.q(codecPath, set)+"{Sorted: []"+elem+"{"+strings.Join(sorted, ", ")+"}, Expected: "+quote(want)+"}")
}

// enumText is enumLit's text.
func enumText(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return quote(x)
	}
	return fmt.Sprintf("%#v", v)
}

// fieldTypeText is fieldType's text.
func (e *emitter) fieldTypeText(g *gofile, fl *model.Field) string {
	if fl.NullOrAbsent() {
		return g.q(schemasetPath, "Nullable") + "[" + e.typeText(g, fl.Type) + "]"
	}
	if fl.IsPointer() {
		return "*" + e.typeText(g, fl.Type)
	}
	return e.typeText(g, fl.Type)
}

// elemText is elemExpr's text.
func (e *emitter) elemText(g *gofile, r model.Ref) string {
	if r.Nullable && !r.HasNil() {
		return "*" + e.typeText(g, r)
	}
	return e.typeText(g, r)
}

// typeText is typeExpr's text.
func (e *emitter) typeText(g *gofile, r model.Ref) string {
	switch r.Kind {
	case model.String:
		return "string"
	case model.Int:
		return "int64"
	case model.Float:
		return "float64"
	case model.Bool:
		return "bool"
	case model.Time:
		return g.q(timePath, "Time")
	case model.Raw:
		return g.q(jsonPath, "RawMessage")
	case model.Named:
		return r.Type.GoName
	case model.Slice:
		return "[]" + e.elemText(g, *r.Elem)
	case model.Map:
		return "map[string]" + e.elemText(g, *r.Elem)
	}
	panic(fmt.Sprintf("gogen: unknown kind %d", r.Kind))
}

// sortedValues are the literals of an enum's values, sorted and without
// repeats: the Sorted of its codec.Strings or codec.Ints.
func sortedValues(t *model.Type) []string {
	var sorted []string
	if t.Base.Kind == model.Int {
		var is []int64
		for _, v := range t.Values {
			is = append(is, v.Value.(int64))
		}
		slices.Sort(is)
		for _, i := range slices.Compact(is) {
			sorted = append(sorted, strconv.FormatInt(i, 10))
		}
		return sorted
	}
	var ss []string
	for _, v := range t.Values {
		ss = append(ss, v.Value.(string))
	}
	slices.Sort(ss)
	for _, s := range slices.Compact(ss) {
		sorted = append(sorted, quote(s))
	}
	return sorted
}
