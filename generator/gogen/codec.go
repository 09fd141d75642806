package gogen

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/model"
)

// genCodec writes the methods with which a declared type decodes and
// checks itself in one pass (DecodeJSON), encodes itself (EncodeJSON),
// checks a value built in Go (Validate), and the encoding/json methods
// that delegate to them; then the rule variables they use. A type whose
// schema uses a keyword the generated code does not translate
// (model.Type.Inexact) is checked by the embedded schema instead.
func (e *emitter) genCodec(f *jen.File, t *model.Type) {
	if t.Kind == model.Alias {
		return // the aliased type's methods are its own
	}
	if e.tabled(t) {
		e.tableCodec(f, t)
		return
	}
	why := t.Inexact()
	c := &valueCodec{assert: e.m.AssertFormats, lenient: why != ""}
	var dec, enc, val []jen.Code
	switch t.Kind {
	case model.Struct:
		dec, enc, val = c.structCodec(t)
	case model.Enum:
		dec, enc, val = c.enumCodec(t)
		if e.dataEnums[t] {
			// The Shapes around it read, write and check it by its
			// values alone (bareEnums).
			f.Line()
			f.Var().Add(c.vars[0])
			return
		}
	case model.Union:
		dec, enc, val = c.unionCodec(t)
	case model.Defined:
		dec, enc, val = c.definedCodec(t)
	}
	if why != "" {
		validator := jen.Id(schemaSetVar).Dot("Validator").Call(jen.Lit(t.Location()))
		dec = append([]jen.Code{errReturn(codecID("Checked").Call(jen.Op("&").Id("d"), validator), func(err jen.Code) jen.Code { return err })}, dec...)
		// The lenient checks of the values (what JSON cannot hold, see
		// check), then the embedded schema in place of the last return.
		val = append(val[:len(val)-1:len(val)-1], jen.Return(codecID("CheckedValue").Call(jen.Id("v"), validator)))
	}
	recv := func(ptr bool) jen.Code {
		if ptr {
			return jen.Id("v").Op("*").Id(t.GoName)
		}
		return jen.Id("v").Id(t.GoName)
	}
	f.Line()
	decDoc := "DecodeJSON reads v from d and checks it against its schema in the same pass."
	if why != "" {
		decDoc = fmt.Sprintf("DecodeJSON reads v from d and checks it with the embedded schema, which the generated code cannot follow exactly here (%s).", why)
	}
	for _, cm := range docComment(decDoc) {
		f.Add(cm)
	}
	f.Func().Params(recv(true)).Id("DecodeJSON").Params(decoderParam()).Error().Add(body(dec...))
	// A struct's methods take a pointer whichever way it is written, as
	// a Shape's do (tableCodec): a schema edit that makes warren spell a
	// fact out must not change what calling code may write. On a value,
	// each would also have a pointer twin for the compiler to write, and
	// would be copied to be walked. So do an inline enum's, which only
	// the methods of the types around it call. An enum or defined type of
	// a fact or definition, a string, number, list or map that users
	// convert to and check (Status(s).Validate()), keeps them on the
	// value.
	ptr := receiverIsPointer(t)
	f.Line()
	f.Comment("EncodeJSON writes v as JSON. It does not check v; Validate does.")
	f.Func().Params(recv(ptr)).Id("EncodeJSON").Params(encoderParam()).Add(body(enc...))
	f.Line()
	f.Comment("Validate checks v against its schema: what DecodeJSON checks.")
	f.Func().Params(recv(ptr)).Id("Validate").Params().Error().Add(body(val...))
	if !t.Inline() {
		// An inline type is reached through the types around it, whose
		// methods call its own: it has no encoding/json methods, which
		// would be compiled for every nested object, enum and union.
		e.genJSONMethods(f, t)
	}
	switch len(c.vars) {
	case 0:
	case 1:
		f.Line()
		f.Var().Add(c.vars[0])
	default:
		f.Line()
		f.Var().Defs(c.vars...)
	}
}

// receiverIsPointer reports whether t's EncodeJSON and Validate take a
// pointer (see genCodec); DecodeJSON and UnmarshalJSON always do, and
// MarshalJSON never does.
func receiverIsPointer(t *model.Type) bool {
	return t.Kind == model.Struct || t.Kind == model.Union || t.Inline() && t.Kind == model.Enum
}

// genJSONMethods writes MarshalJSON and UnmarshalJSON, which delegate to
// EncodeJSON and DecodeJSON.
func (e *emitter) genJSONMethods(f *jen.File, t *model.Type) {
	var pre []jen.Code
	switch {
	case t.Kind == model.Struct && t.Extra != nil:
		pre = append(pre, jen.If(jen.Err().Op(":=").Add(codecID("ExtraClash").Call(jen.Id("v").Dot(model.ExtraField), jen.Id(propertiesVar(t)))), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())))
	case t.Kind == model.Union:
		pre = append(pre, jen.If(jen.Err().Op(":=").Add(unionCount(t)), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())))
	}
	if t.Kind == model.Enum || t.Kind == model.Defined && t.Base.Kind != model.Slice && t.Base.Kind != model.Map {
		// encoding/json writes a string or number as EncodeJSON does.
		e.genUnmarshal(f, t)
		return
	}
	// MarshalJSON stays on the value, so that encoding/json finds it on
	// a value it cannot address (json.Marshal(v)); it reaches EncodeJSON
	// through v's address when that takes a pointer.
	self := jen.Id("v")
	if receiverIsPointer(t) {
		self = jen.Op("&").Id("v")
	}
	f.Line()
	f.Comment("MarshalJSON encodes v with EncodeJSON.")
	f.Func().Params(jen.Id("v").Id(t.GoName)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Add(body(
		append(pre, jen.Return(codecID("Marshal").Call(self), jen.Nil()))...))
	e.genUnmarshal(f, t)
}

func (e *emitter) genUnmarshal(f *jen.File, t *model.Type) {
	f.Line()
	f.Comment("UnmarshalJSON decodes data, checking it against its schema in the same pass.")
	f.Func().Params(jen.Id("v").Op("*").Id(t.GoName)).Id("UnmarshalJSON").Params(jen.Id("data").Index().Byte()).Error().Add(body(
		jen.Return(codecID("Unmarshal").Call(jen.Id("data"), jen.Id("v")))))
}

func propertiesVar(t *model.Type) string { return "propertiesOf" + t.GoName }
func requiredVar(t *model.Type) string   { return "requiredOf" + t.GoName }

func unionCount(t *model.Type) jen.Code {
	var set []jen.Code
	for _, v := range t.Variants {
		set = append(set, jen.Id("v").Dot(v.GoName).Op("!=").Nil())
	}
	return codecID("UnionCount").Call(codecID("CountSet").Call(set...), jen.Lit(t.OneOf))
}

// errReturn is: if err := x; err != nil { return wrap(err) }.
func errReturn(x jen.Code, wrap func(jen.Code) jen.Code) jen.Code {
	return jen.If(jen.Err().Op(":=").Add(x), jen.Err().Op("!=").Nil()).Block(jen.Return(wrap(jen.Err())))
}

func atField(name string) func(jen.Code) jen.Code {
	return func(err jen.Code) jen.Code { return codecID("AtField").Call(err, jen.Lit(name)) }
}

func (c *valueCodec) structCodec(t *model.Type) (dec, enc, val []jen.Code) {
	var cases []jen.Code
	var required []string
	for _, fl := range t.Fields {
		name := ruleName(t.GoName, fl.GoName)
		body := []jen.Code{}
		if fl.Required && !c.lenient { // a lenient type's schema checked them
			body = append(body, jen.Id("o").Dot("Seen").Op("|=").Lit(1).Op("<<").Lit(len(required)))
			required = append(required, fl.JSONName)
		}
		body = append(body, c.fieldDec(fl, name)...)
		cases = append(cases, jen.Case(jen.Lit(fl.JSONName)).Block(body...))
		enc = append(enc, c.fieldEnc(fl)...)
		val = append(val, c.fieldCheck(fl, name)...)
	}
	if t.Extra != nil {
		extra := jen.Op("&").Id("v").Dot(model.ExtraField)
		dec := c.elemDec(*t.Extra, ruleName(t.GoName, "extra"))
		read := codecID("Extra").Call(jen.Id("d"), jen.Id("o").Dot("Key").Call(), extra, dec)
		checked := false // the names, by CheckKeys or EachValue
		if len(t.Patterns) > 0 {
			keys := c.keysRule(t.Patterns, ruleName(t.GoName, "keys"))
			read = codecID("PatternExtra").Call(jen.Id("d"), jen.Id("o").Dot("Key").Call(), jen.Op("&").Add(keys), extra, dec)
			if !c.lenient {
				val = append(val, errReturn(codecID("CheckKeys").Call(jen.Op("&").Add(keys), jen.Id("v").Dot(model.ExtraField)), func(err jen.Code) jen.Code { return err }))
				checked = true
			}
		}
		cases = append(cases, jen.Default().Block(jen.Err().Op("=").Add(read)))
		enc = append(enc, codecID("WriteExtra").Call(jen.Id("e"), jen.Id("v").Dot(model.ExtraField), c.elemEnc(*t.Extra)))
		val = append([]jen.Code{errReturn(codecID("ExtraClash").Call(jen.Id("v").Dot(model.ExtraField), jen.Id(propertiesVar(t))), func(err jen.Code) jen.Code { return err })}, val...)
		if each := c.elemCheck(*t.Extra, ruleName(t.GoName, "extra")); each != nil {
			val = append(val, errReturn(codecID("EachValue").Call(jen.Id("v").Dot(model.ExtraField), each), func(err jen.Code) jen.Code { return err }))
		} else if !checked {
			val = append(val, errReturn(codecID("CheckNames").Call(jen.Id("v").Dot(model.ExtraField)), func(err jen.Code) jen.Code { return err }))
		}
	} else if c.lenient {
		// The reference validator has accepted the object, and so
		// refused every member a closed struct does not declare (those
		// patternProperties or other keywords admit are in Extra).
		cases = append(cases, jen.Default().Block(jen.Err().Op("=").Id("d").Dot("Skip").Call()))
	} else {
		cases = append(cases, jen.Default().Block(jen.Err().Op("=").Add(codecID("Unknown").Call())))
	}
	// The unions of required properties beside the fields: checked once
	// the fields are read, from which of them are there.
	var branches []jen.Code
	if !c.lenient {
		branches = c.branchChecks(t)
	}
	// The members are read in a loop of the method's own (codec.Obj), not
	// in a function literal called for each: one function less per type
	// to compile, and no call per member.
	dec = []jen.Code{
		jen.Op("*").Id("v").Op("=").Id(t.GoName).Values(),
		jen.Id("o").Op(":=").Add(codecID("Members").Call(jen.Id("d"))),
		jen.For(jen.Id("o").Dot("Next").Call()).Block(
			jen.Var().Err().Error(),
			jen.Switch(jen.String().Call(jen.Id("o").Dot("Key").Call())).Block(cases...),
			jen.Id("o").Dot("Check").Call(jen.Err()),
		),
	}
	end := jen.Id("o").Dot("End").Call(jen.Nil())
	if len(required) > 0 {
		c.vars = append(c.vars, jen.Id(requiredVar(t)).Op("=").Index().String().ValuesFunc(func(g *jen.Group) {
			for _, r := range required {
				g.Lit(r)
			}
		}))
		end = jen.Id("o").Dot("End").Call(jen.Id(requiredVar(t)))
	}
	checks := append([]jen.Code{end}, branches...)
	dec = append(dec, checksThen(checks[:len(checks)-1], checks[len(checks)-1])...)
	val = append(val, checksThen(branches, jen.Nil())...)
	enc = append([]jen.Code{jen.Id("e").Dot("ObjStart").Call()}, append(enc, jen.Id("e").Dot("ObjEnd").Call())...)
	return dec, enc, val
}

// checksThen returns the error of the first check that fails, else last.
func checksThen(checks []jen.Code, last jen.Code) []jen.Code {
	var stmts []jen.Code
	for _, chk := range checks {
		stmts = append(stmts, errReturn(chk, func(err jen.Code) jen.Code { return err }))
	}
	return append(stmts, jen.Return(last))
}

// branchChecks declares the codec.Branches of each union of required
// properties beside t's fields (model.Type.Branches) and returns the
// checks of a value against them, expressions of type error.
func (c *valueCodec) branchChecks(t *model.Type) []jen.Code {
	all, _ := t.Branches() // an inexact type is lenient and never asks
	var checks []jen.Code
	for _, b := range all {
		var names []*model.Field
		for _, fl := range t.Fields {
			if slices.ContainsFunc(b.Sets, func(set []*model.Field) bool { return slices.Contains(set, fl) }) {
				names = append(names, fl)
			}
		}
		var present []jen.Code
		for _, fl := range names {
			present = append(present, presentExpr(fl))
		}
		id := "requiredAnyOf" + t.GoName
		if b.OneOf {
			id = "requiredOneOf" + t.GoName
		}
		d := jen.Dict{
			jen.Id("Names"): jen.Index().String().ValuesFunc(func(g *jen.Group) {
				for _, fl := range names {
					g.Lit(fl.JSONName)
				}
			}),
			jen.Id("Sets"): jen.Index().Uint64().ValuesFunc(func(g *jen.Group) {
				for _, set := range b.Sets {
					var mask uint64
					for i, fl := range names {
						if slices.Contains(set, fl) {
							mask |= 1 << i
						}
					}
					g.Op("0b" + strconv.FormatUint(mask, 2))
				}
			}),
		}
		if b.OneOf {
			d[jen.Id("OneOf")] = jen.True()
		}
		c.vars = append(c.vars, jen.Id(id).Op("=").Qual(codecPath, "Branches").Values(d))
		checks = append(checks, jen.Id(id).Dot("Check").Call(present...))
	}
	return checks
}

// presentExpr reports whether an optional field's property is there: it
// is written when encoding, and was read when decoding.
func presentExpr(fl *model.Field) jen.Code {
	x := jen.Id("v").Dot(fl.GoName)
	if fl.NullOrAbsent() {
		return x.Dot("Present")
	}
	return x.Op("!=").Nil() // a pointer, or a slice, map or raw JSON whose nil is absent
}

// fieldDec reads the value of one property into its field.
func (c *valueCodec) fieldDec(fl *model.Field, name string) []jen.Code {
	dst := jen.Id("v").Dot(fl.GoName)
	r := fl.Type
	one := func(x jen.Code) []jen.Code { return []jen.Code{x} }
	switch {
	case fl.NullOrAbsent():
		return one(jen.List(dst, jen.Err()).Op("=").Add(codecID("Nullable").Call(jen.Id("d"), c.decFn(r, name))))
	case fl.IsPointer() && r.Nullable:
		return one(jen.List(dst, jen.Err()).Op("=").Add(codecID("NullPtr").Call(jen.Id("d"), c.decFn(r, name))))
	case fl.IsPointer() && resolve(r).Kind == model.Named:
		// Not codec.Ptr(d, codec.Dec[T]): generic code is compiled once
		// for each struct type it is given.
		return []jen.Code{
			jen.Add(dst).Op("=").New(typeExpr(r)),
			jen.Err().Op("=").Add(dst).Dot("DecodeJSON").Call(jen.Id("d")),
		}
	case fl.IsPointer():
		return one(jen.List(dst, jen.Err()).Op("=").Add(codecID("Ptr").Call(jen.Id("d"), c.decFn(r, name))))
	case r.Nullable && resolve(r).Kind != model.Raw: // a slice or map: nil is null
		// Raw JSON keeps a null as the text null, so that an optional
		// property that is null stays apart from one that is absent (nil).
		return one(jen.List(dst, jen.Err()).Op("=").Add(codecID("OrNull").Call(jen.Id("d"), c.decFn(r, name))))
	case resolve(r).Kind == model.Named:
		return one(jen.Err().Op("=").Add(dst).Dot("DecodeJSON").Call(jen.Id("d")))
	}
	if elem, ok := c.structSlice(r); ok {
		// Each element decodes itself in place, in a loop of the
		// method's own (not codec.Slice(d, codec.Dec[T]), compiled once
		// for each struct type).
		last := jen.Add(dst).Index(jen.Len(dst).Op("-").Lit(1))
		return []jen.Code{
			jen.Id("a").Op(":=").Add(codecID("Elements").Call(jen.Id("d"))),
			jen.For(jen.Add(dst).Op("=").Add(typeExpr(r)).Values(), jen.Id("a").Dot("Next").Call(), jen.Empty()).Block(
				jen.Add(dst).Op("=").Append(dst, jen.Add(typeExpr(elem)).Values()),
				jen.Id("a").Dot("Check").Call(jen.Add(last).Dot("DecodeJSON").Call(jen.Id("d"))),
			),
			jen.Err().Op("=").Id("a").Dot("End").Call(),
		}
	}
	return one(jen.List(dst, jen.Err()).Op("=").Add(c.decCall(r, name)))
}

// structSlice reports whether r is a slice of a generated struct (or
// union) type, not null, whose array has no rule of its own: its items
// are decoded and checked by the items' own methods, in loops of the
// struct's methods. It returns the items' type.
func (c *valueCodec) structSlice(r model.Ref) (model.Ref, bool) {
	r = resolve(r)
	if r.Kind != model.Slice || r.Nullable || !r.Check(c.assert).IsZero() {
		return model.Ref{}, false
	}
	elem := *r.Elem
	if elem.Nullable || elem.Kind != model.Named || elem.Type.Kind != model.Struct && elem.Type.Kind != model.Union {
		return model.Ref{}, false
	}
	return elem, true
}

// fieldEnc writes one property, or nothing when it is absent.
func (c *valueCodec) fieldEnc(fl *model.Field) []jen.Code {
	x := jen.Id("v").Dot(fl.GoName)
	start := jen.Id("e").Dot("FieldStart").Call(jen.Lit(fl.JSONName))
	null := jen.Id("e").Dot("Null").Call()
	r := fl.Type
	switch {
	case fl.NullOrAbsent():
		return []jen.Code{jen.If(jen.Add(x).Dot("Present")).Block(start, jen.If(jen.Op("!").Add(x).Dot("Valid")).Block(null).Else().Block(c.enc(r, jen.Add(x).Dot("Value"), false)...))}
	case fl.IsPointer() && fl.Required:
		return []jen.Code{start, jen.If(jen.Add(x).Op("==").Nil()).Block(null).Else().Block(c.enc(r, x, true)...)}
	case fl.IsPointer():
		return []jen.Code{jen.If(jen.Add(x).Op("!=").Nil()).Block(append([]jen.Code{start}, c.enc(r, x, true)...)...)}
	case fl.Optional() && r.HasNil():
		return []jen.Code{jen.If(jen.Add(x).Op("!=").Nil()).Block(append([]jen.Code{start}, c.enc(r, x, false)...)...)}
	case r.Nullable && r.HasNil():
		return []jen.Code{start, jen.If(jen.Add(x).Op("==").Nil()).Block(null).Else().Block(c.enc(r, x, false)...)}
	}
	return append([]jen.Code{start}, c.enc(r, x, false)...)
}

// fieldCheck checks one field of a value built in Go, or is empty.
func (c *valueCodec) fieldCheck(fl *model.Field, name string) []jen.Code {
	x := jen.Id("v").Dot(fl.GoName)
	r := fl.Type
	wrap := atField(fl.JSONName)
	switch {
	case fl.NullOrAbsent():
		if chk := c.check(r, jen.Add(x).Dot("Value"), false, name); chk != nil {
			return []jen.Code{jen.If(jen.Add(x).Dot("Valid")).Block(errReturn(chk, wrap))}
		}
	case fl.IsPointer():
		chk := c.check(r, x, true, name)
		var stmts []jen.Code
		if fl.Required && !r.Nullable && !c.lenient { // else the embedded schema refuses the null written
			stmts = append(stmts, jen.If(jen.Add(x).Op("==").Nil()).Block(jen.Return(wrap(codecID("Expect").Call(jen.Lit("a value, not nil"))))))
		}
		if chk != nil {
			stmts = append(stmts, jen.If(jen.Add(x).Op("!=").Nil()).Block(errReturn(chk, wrap)))
		}
		return stmts
	default:
		if _, ok := c.structSlice(r); ok {
			return []jen.Code{jen.For(jen.Id("i").Op(":=").Range().Add(x)).Block(
				errReturn(jen.Add(x).Index(jen.Id("i")).Dot("Validate").Call(), func(err jen.Code) jen.Code {
					return wrap(codecID("AtIndex").Call(err, jen.Id("i")))
				}),
			)}
		}
		chk := c.check(r, x, false, name)
		if chk == nil {
			return nil
		}
		if (fl.Optional() || r.Nullable) && c.nilFails(r) {
			// nil is an absent property (or null): its schema's
			// constraints (minItems, say) apply only to a value.
			return []jen.Code{jen.If(jen.Add(x).Op("!=").Nil()).Block(errReturn(chk, wrap))}
		}
		return []jen.Code{errReturn(chk, wrap)}
	}
	return nil
}

// nilFails reports whether the check of a value of r, whose Go type has a
// nil, may refuse nil: an array's rule (minItems) and a declared type's
// Validate. Items, map values and raw JSON are checked one by one, and
// nil has none.
func (c *valueCodec) nilFails(r model.Ref) bool {
	switch r = resolve(r); r.Kind {
	case model.Slice:
		return !r.Check(c.assert).IsZero()
	case model.Named:
		return true
	}
	return false
}

func (c *valueCodec) enumCodec(t *model.Type) (dec, enc, val []jen.Code) {
	// self is the value: an inline enum's methods take a pointer
	// (receiverIsPointer).
	self := func() jen.Code {
		if receiverIsPointer(t) {
			return jen.Op("*").Id("v")
		}
		return jen.Id("v")
	}
	read, write := "StrEnum", jen.Id("e").Dot("Str").Call(jen.String().Call(self()))
	if t.Base.Kind == model.Int {
		read, write = "IntEnum", jen.Id("e").Dot("Int64").Call(jen.Int64().Call(self()))
	}
	var names, shown []string
	for _, v := range t.Values {
		names = append(names, v.GoName)
		b, _ := json.Marshal(v.Value)
		shown = append(shown, string(b))
	}
	want := "one of " + strings.Join(shown, ", ")
	if len(shown) == 1 {
		want = "the constant " + shown[0]
	}
	if len(names) == 0 {
		refuse := func() jen.Code { return jen.Return(codecID("Expect").Call(jen.Lit("no value (the enum is empty)"))) }
		// Not t's Validate as a method value: an inline enum's is on a pointer.
		dec = []jen.Code{jen.Return(codecID(read).Call(jen.Id("d"), jen.Id("v"), jen.Func().Params(jen.Id(t.GoName)).Error().Block(refuse())))}
		return dec, []jen.Code{write}, []jen.Code{refuse()}
	}
	// The values are data the method looks up (codec.Strings), not a
	// switch of its own to compile for every enum type.
	set, elem := "Strings", jen.String()
	if t.Base.Kind == model.Int {
		set, elem = "Ints", jen.Int64()
	}
	var sorted []jen.Code
	for _, lit := range sortedValues(t) {
		sorted = append(sorted, jen.Op(lit))
	}
	id := "valuesOf" + t.GoName
	dec = []jen.Code{jen.Return(jen.Id(id).Dot("Read").Call(jen.Id("d"), jen.Parens(jen.Op("*").Add(elem)).Call(jen.Id("v"))))}
	c.vars = append(c.vars, jen.Id(id).Op("=").Add(codecID(set)).Values(
		jen.Id("Sorted").Op(":").Index().Add(elem).Values(sorted...),
		jen.Id("Expected").Op(":").Lit(want),
	))
	val = []jen.Code{jen.Return(jen.Id(id).Dot("Check").Call(jen.Add(elem).Call(self())))}
	return dec, []jen.Code{write}, val
}

func (c *valueCodec) definedCodec(t *model.Type) (dec, enc, val []jen.Code) {
	base := t.Base
	name := t.GoName
	conv := jen.Add(typeExpr(base)).Call(jen.Id("v"))
	if base.Kind == model.Slice || base.Kind == model.Map {
		conv = jen.Parens(typeExpr(base)).Call(jen.Id("v"))
	}
	dec = []jen.Code{
		jen.List(jen.Id("x"), jen.Err()).Op(":=").Add(c.decCall(base, name)),
		jen.Op("*").Id("v").Op("=").Id(t.GoName).Call(jen.Id("x")),
		jen.Return(jen.Err()),
	}
	enc = c.enc(base, conv, false)
	switch chk := c.check(base, conv, false, name); {
	case chk == nil:
		val = []jen.Code{jen.Return(jen.Nil())}
	case c.lenient: // the embedded schema's check takes the last return's place
		val = []jen.Code{errReturn(chk, func(err jen.Code) jen.Code { return err }), jen.Return(jen.Nil())}
	default:
		val = []jen.Code{jen.Return(chk)}
	}
	return dec, enc, val
}

func (c *valueCodec) unionCodec(t *model.Type) (dec, enc, val []jen.Code) {
	dec = []jen.Code{
		jen.List(jen.Id("raw"), jen.Err()).Op(":=").Add(codecID("Raw")).Call(jen.Id("d")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Op("*").Id("v").Op("=").Id(t.GoName).Values(),
		// The branches tried, and why each that does not match does not:
		// the error of a value that matches none says it of each.
		jen.Var().Id("u").Qual(codecPath, "Union"),
	}
	enc = []jen.Code{jen.Var().Id("set").Index().Func().Params(jen.Op("*").Qual(jxPath, "Encoder"))}
	for i, vr := range t.Variants {
		tmp := jen.Id("v" + strconv.Itoa(i+1))
		r := vr.Type
		var try jen.Code
		if resolve(r).Kind == model.Named {
			try = jen.Add(tmp).Dot("DecodeJSON")
		} else {
			try = jen.Func().Params(decoderParam()).Params(jen.Err().Error()).Block(
				jen.List(tmp, jen.Err()).Op("=").Add(c.decCall(r, ruleName(t.GoName, vr.GoName))),
				jen.Return(jen.Err()),
			)
		}
		if vr.Type.Inexact() != "" {
			// The branch's own code does not check it exactly: ask
			// the embedded schema whether the value is this branch.
			try = codecID("MatchesReference").Call(jen.Id(schemaSetVar).Dot("Validator").Call(jen.Lit(vr.Location)), try)
		}
		set := jen.Op("&").Add(tmp)
		if r.HasNil() {
			set = tmp
		}
		dec = append(dec,
			jen.Var().Add(tmp).Add(typeExpr(r)),
			jen.If(jen.Id("u").Dot("Match").Call(jen.Id("raw"), jen.Lit(branchSchema(vr.Location)), try)).Block(
				jen.Id("v").Dot(vr.GoName).Op("=").Add(set),
			))
		x := jen.Id("v").Dot(vr.GoName)
		enc = append(enc, jen.If(jen.Add(x).Op("!=").Nil()).Block(
			jen.Id("set").Op("=").Append(jen.Id("set"), jen.Func().Params(encoderParam()).Block(c.enc(r, x, !r.HasNil())...)),
		))
	}
	if c.lenient {
		// The reference validator has counted the branches.
		dec = append(dec, jen.Return(jen.Nil()))
	} else {
		dec = append(dec, jen.Return(jen.Id("u").Dot("Count").Call(jen.Lit(t.OneOf))))
	}
	enc = append(enc, codecID("WriteUnion").Call(jen.Id("e"), jen.Id("set")))
	if !c.lenient { // the embedded schema counts the branches
		val = append(val, errReturn(unionCount(t), func(err jen.Code) jen.Code { return err }))
	}
	// Each branch set is checked as a value of its own, as decoding only
	// sets the branches the JSON matches; Revalidate cannot see what its
	// JSON does not hold (NaN, written as null).
	for _, vr := range t.Variants {
		x := jen.Id("v").Dot(vr.GoName)
		if chk := c.check(vr.Type, x, !vr.Type.HasNil(), ruleName(t.GoName, vr.GoName)); chk != nil {
			val = append(val, jen.If(jen.Add(x).Op("!=").Nil()).Block(errReturn(chk, func(err jen.Code) jen.Code { return err })))
		}
	}
	val = append(val, jen.Return(codecID("Revalidate").Call(jen.Id("v"), jen.New(jen.Id(t.GoName)))))
	return dec, enc, val
}

// branchSchema names a union's branch in errors by its place in the
// union's schema, "oneOf/1", from its location
// ("order.json#/properties/payment/oneOf/1"): what a schema's author
// finds it by, where the Go field's name is the generator's choice. A
// location with no such step is named whole.
func branchSchema(location string) string {
	_, ptr, _ := strings.Cut(location, "#")
	if i := max(strings.LastIndex(ptr, "/oneOf/"), strings.LastIndex(ptr, "/anyOf/")); i >= 0 {
		return ptr[i+1:]
	}
	return location
}
