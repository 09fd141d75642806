package gogen

import (
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
)

// A struct whose properties are all of the kinds runtime/codec's loops
// know (codec.Shape) is written as data: the Shape of its properties, a
// CodecFields method listing pointers to its fields, and Validate calling
// codec.Check. The runtime decodes and encodes it through CodecFields
// (codec.DecodeValue, codec.EncodeValue); it has DecodeJSON and EncodeJSON
// (codec.Decode, codec.Encode) only when spelled-out code calls them
// (selfCodedStructs). Its package then compiles a few small functions per
// struct, whatever its number of properties, instead of code spelled out
// per property in each method. Any other struct (unions of required
// properties beside its fields, patternProperties, a type checked by the
// embedded schema, maps, nullable items, more than 64 properties) keeps
// the spelled-out methods of structCodec.

// tabled reports whether t is written as a codec.Shape.
func (e *emitter) tabled(t *model.Type) bool {
	if ok, known := e.isTabled[t]; known {
		return ok
	}
	if t.Kind != model.Struct || t.Inexact() != "" {
		return false
	}
	_, _, ok := (&valueCodec{assert: e.m.AssertFormats, checkOnly: true}).shape(t)
	return ok
}

// shape returns the elements of t's Shape literal, each on one line, and
// the pointers its CodecFields lists; ok is false when a property is of a
// kind the Shape cannot describe.
func (c *valueCodec) shape(t *model.Type) (props []frag, ptrs []string, ok bool) {
	if len(t.Fields) > 64 {
		return nil, nil, false
	}
	if all, _ := t.Branches(); len(all) > 0 {
		return nil, nil, false
	}
	if x := t.Extra; x != nil && (x.Kind != model.Raw || x.Nullable || len(t.Patterns) > 0 || !x.Check(c.assert).IsZero()) {
		return nil, nil, false
	}
	for _, fl := range t.Fields {
		ptr, rule, item, ok := c.shapeField(fl)
		if !ok {
			return nil, nil, false
		}
		if c.checkOnly {
			continue
		}
		fields := []field{{"Name", text(quote(fl.JSONName))}}
		if fl.Required {
			fields = append(fields, field{"Required", text("true")})
		}
		if fl.Type.Nullable {
			fields = append(fields, field{"Null", text("true")})
		}
		if rule != nil {
			fields = append(fields, field{"Rule", append(text("&"), rule...)})
		}
		if item != nil {
			fields = append(fields, field{"Item", append(text("&"), item...)})
		}
		var w fragWriter
		w.keyed(fields)
		props = append(props, w.frag())
		ptrs = append(ptrs, ptr)
	}
	if t.Extra != nil {
		ptrs = append(ptrs, "&v."+model.ExtraField)
	}
	return props, ptrs, true
}

// shapeField returns what CodecFields lists for a field and the rules of
// its Prop.
func (c *valueCodec) shapeField(fl *model.Field) (ptr string, rule, item frag, ok bool) {
	addr := "&v." + fl.GoName
	r := resolve(fl.Type)
	switch r.Kind {
	case model.String, model.Int, model.Float, model.Bool, model.Time:
		return addr, c.inlineRule(r), nil, true
	case model.Raw:
		if fl.NullOrAbsent() || fl.IsPointer() {
			return "", nil, nil, false
		}
		return addr, c.inlineRule(r), nil, true
	case model.Named:
		switch {
		case fl.NullOrAbsent() || r.HasNil():
			return "", nil, nil, false
		case fl.IsPointer():
			return addr, nil, nil, true // a **T
		case c.dataEnums[r.Type]:
			base := "string"
			if r.Type.Base.Kind == model.Int {
				base = "int64"
			}
			return "(*" + base + ")(" + addr + ")", text("valuesOf" + r.Type.GoName), nil, true
		}
		return addr, nil, nil, true
	case model.Slice:
		elem := *r.Elem
		if elem.Nullable || fl.NullOrAbsent() || fl.IsPointer() {
			return "", nil, nil, false
		}
		arr := c.inlineRule(r)
		switch er := resolve(elem); er.Kind {
		case model.String, model.Int, model.Float, model.Bool:
			if elem.Kind == model.Named { // a defined type of a scalar
				return "", nil, nil, false
			}
			return addr, arr, c.inlineRule(er), true
		case model.Named:
			return addr, arr, nil, true // a *[]T
		}
	}
	return "", nil, nil, false
}

// tableCodec writes t's Shape and its methods; see tabled.
func (e *emitter) tableCodec(f *jen.File, t *model.Type) {
	c := &valueCodec{assert: e.m.AssertFormats, inline: true, dataEnums: e.dataEnums}
	props, ptrs, _ := c.shape(t)
	shape := "shapeOf" + t.GoName
	// Every method but MarshalJSON takes a pointer, as a spelled-out
	// struct's do (receiverIsPointer): on a value, each would have a
	// pointer twin for the compiler to write. MarshalJSON stays on the
	// value, so that encoding/json finds it on a value it cannot address
	// (json.Marshal(v)).
	recv := jen.Id("v").Op("*").Id(t.GoName)
	self := jen.Id("v")
	list := jen.Code(jen.Id("f"))
	if len(ptrs) > 0 {
		list = jen.Append(jen.Id("f"), jen.Op(strings.Join(ptrs, ", ")))
	}
	// No doc comment: the package doc says what CodecFields is for, once
	// (codecFieldsDoc), as generated protobuf code leaves its plumbing
	// methods undocumented.
	f.Line()
	f.Func().Params(jen.Id("v").Op("*").Id(t.GoName)).Id("CodecFields").Params(jen.Id("f").Index().Any()).Params(jen.Op("*").Add(codecID("Shape")), jen.Index().Any()).Add(body(
		jen.Return(jen.Op("&").Id(shape), list),
	))
	if e.bare[t] {
		// Only the codec's loops reach it (bareStructs).
		e.genShape(f, t, props)
		return
	}
	if e.selfCoded[t] {
		f.Line()
		f.Comment("DecodeJSON reads v from d and checks it against its schema in the same pass.")
		f.Func().Params(jen.Id("v").Op("*").Id(t.GoName)).Id("DecodeJSON").Params(decoderParam()).Error().Add(body(
			jen.Return(codecID("Decode").Call(jen.Id("d"), jen.Id("v"))), // which zeroes v first
		))
		f.Line()
		f.Comment("EncodeJSON writes v as JSON. It does not check v; Validate does.")
		f.Func().Params(recv).Id("EncodeJSON").Params(encoderParam()).Add(body(codecID("Encode").Call(jen.Id("e"), self)))
	}
	f.Line()
	f.Comment("Validate checks v against its schema, as decoding does.")
	f.Func().Params(recv).Id("Validate").Params().Error().Add(body(jen.Return(codecID("Check").Call(self))))
	if !t.Inline() {
		f.Line()
		f.Comment("MarshalJSON writes v as JSON. It does not check v; Validate does.")
		f.Func().Params(jen.Id("v").Id(t.GoName)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Add(body(
			jen.Return(codecID("MarshalObject").Call(jen.Op("&").Id("v")))))
		e.genUnmarshal(f, t)
	}
	e.genShape(f, t, props)
}

// genShape writes t's Shape variable.
func (e *emitter) genShape(f *jen.File, t *model.Type, props []frag) {
	shape := "shapeOf" + t.GoName
	f.Line()
	open := []jen.Code{}
	if t.Extra != nil {
		open = append(open, jen.Id("Open").Op(":").True())
	}
	items := make([]jen.Code, len(props))
	for i, p := range props {
		items[i] = p.jen()
	}
	f.Var().Id(shape).Op("=").Add(codecID("Shape")).Values(append(open,
		jen.Id("Props").Op(":").Index().Add(codecID("Prop")).Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, items...))...)
}

// bareStructs returns the inline structs written as a Shape that are
// reached only as an optional property (a **T field) or as the items of an
// array (a *[]T field) of structs that are Shapes too. runtime/codec walks
// them by their CodecFields alone, each from a new value, so they need no
// DecodeJSON, EncodeJSON or Validate: three functions fewer to compile for
// each, which is most of a nested object's cost. Any other use (a
// required property, read twice from a zero struct by its DecodeJSON; a
// union, map or spelled-out method calling its methods; an alias) keeps
// them.
func (e *emitter) bareStructs() map[*model.Type]bool {
	uses := e.namedUses()
	walked := map[*model.Type]int{} // uses as a **T or []T field
	for _, t := range e.m.Types {
		if !e.tabled(t) {
			continue
		}
		for _, fl := range t.Fields {
			r := fl.Type
			switch {
			case r.Kind == model.Named && fl.IsPointer():
				walked[r.Type]++
			case r.Kind == model.Slice && r.Elem.Kind == model.Named && !r.Elem.Nullable && !fl.NullOrAbsent() && !fl.IsPointer():
				walked[r.Elem.Type]++
			}
		}
	}
	bare := map[*model.Type]bool{}
	for t, n := range uses {
		// (A file's root is never bare, whatever refers to it: a request's
		// payload is one, which its responder decodes by DecodeJSON.)
		if t.Kind == model.Struct && t.Inline() && t.Pointer != "" && e.tabled(t) && walked[t] == n {
			bare[t] = true
		}
	}
	return bare
}

// selfCodedStructs returns the structs written as a Shape that spelled-out
// code refers to: a struct or union with methods of its own, an alias, a
// map's values. That code calls their DecodeJSON and EncodeJSON, so they
// keep them. The others are reached only as fields and items of Shapes,
// which runtime/codec walks by their CodecFields, and by the runtime
// (publishing, consuming, requests), which reads and writes them through
// codec.DecodeValue and codec.EncodeValue: two functions and about six
// lines fewer for each, a fact's own struct among them.
func (e *emitter) selfCodedStructs() map[*model.Type]bool {
	uses := e.namedUses()
	walked := map[*model.Type]int{} // uses as fields and items of Shapes
	for _, t := range e.m.Types {
		if !e.tabled(t) {
			continue
		}
		for _, fl := range t.Fields {
			switch r := fl.Type; {
			case r.Kind == model.Named:
				walked[r.Type]++
			case r.Kind == model.Slice && r.Elem.Kind == model.Named:
				walked[r.Elem.Type]++
			}
		}
	}
	coded := map[*model.Type]bool{}
	for _, t := range e.m.Types {
		if e.tabled(t) && uses[t] > walked[t] {
			coded[t] = true
		}
	}
	return coded
}

// namedUses counts, for every named type, the places of the model that
// refer to it: fields, additional properties, bases and union variants,
// and the elements of slices and maps among them.
func (e *emitter) namedUses() map[*model.Type]int {
	uses := map[*model.Type]int{}
	var count func(r *model.Ref)
	count = func(r *model.Ref) {
		if r == nil {
			return
		}
		if r.Kind == model.Named {
			uses[r.Type]++
		}
		count(r.Elem)
	}
	for _, t := range e.m.Types {
		for _, fl := range t.Fields {
			count(&fl.Type)
		}
		count(t.Extra)
		count(&t.Base)
		for _, v := range t.Variants {
			count(&v.Type)
		}
	}
	return uses
}

// bareEnums returns the inline enums of strings or integers, with one
// value or more, whose every use is a field of a struct written as a
// Shape, neither a pointer nor nullable. The Shape lists such a field as
// its string or integer and names the enum's values (codec.Strings,
// codec.Ints) as its Rule, so runtime/codec reads, writes and checks it
// without the enum's methods: it has none, three functions and about 14
// lines fewer per enum. Any other use (a pointer, an item, a map value, a
// union branch, a spelled-out struct calling its methods) keeps them.
func (e *emitter) bareEnums() map[*model.Type]bool {
	uses := e.namedUses()
	asData := map[*model.Type]int{}
	for _, t := range e.m.Types {
		if !e.tabled(t) {
			continue
		}
		for _, fl := range t.Fields {
			if fl.Type.Kind == model.Named && !fl.NullOrAbsent() && !fl.IsPointer() && !fl.Type.Nullable {
				asData[fl.Type.Type]++
			}
		}
	}
	enums := map[*model.Type]bool{}
	for t, n := range uses {
		if t.Kind == model.Enum && t.Inline() && len(t.Values) > 0 && (t.Base.Kind == model.String || t.Base.Kind == model.Int) && asData[t] == n {
			enums[t] = true
		}
	}
	return enums
}
