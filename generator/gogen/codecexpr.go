package gogen

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// Expressions that decode, encode and check one value of a model.Ref in
// generated code. Decoding composes the decode functions of runtime/codec
// (func(*jx.Decoder) (T, error)); encoding writes statements; checks are
// package-level rule variables (codec.String, codec.Int, ...) named after
// where the value sits, declared once by the type's emitter.

const (
	codecPath = "github.com/warrenbus/warren/runtime/codec"
	jxPath    = "github.com/go-faster/jx"
	mathPath  = "math"
)

// valueCodec emits the code of the values of one declared type.
type valueCodec struct {
	assert []string
	vars   []jen.Code      // rule variables, declared after the type's methods
	named  map[string]bool // the names in vars
	depth  int             // nesting of loop variables
	// inline: rules are written where they are used (in a codec.Shape),
	// not declared as variables.
	inline bool
	// lenient: the type is checked by the reference validator, and its
	// generated decoding only fills the Go value.
	lenient bool
	// dataEnums are the inline enums without methods (see bareEnums):
	// a Shape lists their field as its string or integer, with the enum's
	// values as its Rule.
	dataEnums map[*model.Type]bool
	// checkOnly: shape only says whether a struct can be a Shape, and
	// builds none of its text.
	checkOnly bool
}

func codecID(name string) *jen.Statement { return jen.Qual(codecPath, name) }

func decoderParam() jen.Code { return jen.Id("d").Op("*").Qual(jxPath, "Decoder") }
func encoderParam() jen.Code { return jen.Id("e").Op("*").Qual(jxPath, "Encoder") }

// resolve looks through aliases of time.Time and raw JSON, which have no
// methods of their own.
func resolve(r model.Ref) model.Ref {
	for r.Kind == model.Named && r.Type.Kind == model.Alias && r.Type.Base.Kind != model.Named {
		r = r.Type.Base
	}
	return r
}

// decCall is a call reading a value of r (not null) from d.
func (c *valueCodec) decCall(r model.Ref, name string) jen.Code {
	r = resolve(r)
	switch r.Kind {
	case model.Slice:
		rule := c.rule(r, name)
		if rule == nil {
			return codecID("Slice").Call(jen.Id("d"), c.elemDec(*r.Elem, ruleName(name, "item")))
		}
		if comparableJSON(*r.Elem) {
			return codecID("DistinctOf").Call(jen.Id("d"), jen.Op("&").Add(rule), c.elemDec(*r.Elem, ruleName(name, "item")))
		}
		return codecID("ArrayOf").Call(jen.Id("d"), jen.Op("&").Add(rule), c.elemDec(*r.Elem, ruleName(name, "item")), c.uniqueEnc(r))
	case model.Map:
		if rule := c.rule(r, name); rule != nil {
			return codecID("PatternMap").Call(jen.Id("d"), jen.Op("&").Add(rule), c.elemDec(*r.Elem, ruleName(name, "value")))
		}
		return codecID("Map").Call(jen.Id("d"), c.elemDec(*r.Elem, ruleName(name, "value")))
	}
	return jen.Add(c.decFn(r, name)).Call(jen.Id("d"))
}

// decFn is a function value reading a value of r (not null).
func (c *valueCodec) decFn(r model.Ref, name string) jen.Code {
	r = resolve(r)
	rule := func(method, plain string) jen.Code {
		if v := c.rule(r, name); v != nil {
			return jen.Add(v).Dot(method)
		}
		return codecID(plain)
	}
	switch r.Kind {
	case model.String:
		return rule("Str", "Str")
	case model.Int:
		return rule("Int", "Int64")
	case model.Float:
		return rule("Float", "Float64")
	case model.Bool:
		return rule("Bool", "Bool")
	case model.Time:
		return rule("Time", "Time")
	case model.Raw:
		return rule("Raw", "Raw")
	case model.Named:
		return codecID("Dec").Types(typeExpr(r))
	}
	return jen.Func().Params(decoderParam()).Params(typeExpr(r), jen.Error()).Block(jen.Return(c.decCall(r, name)))
}

// elemDec reads a slice element or map value: null too, when allowed.
func (c *valueCodec) elemDec(r model.Ref, name string) jen.Code {
	if !r.Nullable {
		return c.decFn(r, name)
	}
	wrap := "OrNull"
	if !r.HasNil() {
		wrap = "NullPtr"
	}
	return jen.Func().Params(decoderParam()).Params(elemExpr(r), jen.Error()).Block(
		jen.Return(codecID(wrap).Call(jen.Id("d"), c.decFn(r, name))))
}

// deref is *x for a pointer to a value that is not of a declared type,
// whose methods take the pointer as it is.
func deref(r model.Ref, x jen.Code, ptr bool) jen.Code {
	if ptr && resolve(r).Kind != model.Named {
		return jen.Op("*").Add(x)
	}
	return x
}

// enc writes x, a value of r (or, with ptr, a non-nil pointer to one)
// that is not null; nil slices and maps are written empty.
func (c *valueCodec) enc(r model.Ref, x jen.Code, ptr bool) []jen.Code {
	x = deref(r, x, ptr)
	r = resolve(r)
	e := jen.Id("e")
	one := func(c jen.Code) []jen.Code { return []jen.Code{c} }
	switch r.Kind {
	case model.String:
		return one(e.Dot("Str").Call(x))
	case model.Int:
		return one(e.Dot("Int64").Call(x))
	case model.Float:
		return one(codecID("WriteFloat").Call(jen.Id("e"), x))
	case model.Bool:
		return one(e.Dot("Bool").Call(x))
	case model.Time:
		return one(codecID("WriteTime").Call(jen.Id("e"), x))
	case model.Raw:
		return one(codecID("WriteRaw").Call(jen.Id("e"), x))
	case model.Named:
		return one(jen.Add(x).Dot("EncodeJSON").Call(jen.Id("e")))
	case model.Slice:
		c.depth++
		item := jen.Id("x" + strconv.Itoa(c.depth))
		body := c.elemEncStmt(*r.Elem, item)
		c.depth--
		return []jen.Code{
			jen.Id("e").Dot("ArrStart").Call(),
			jen.For(jen.List(jen.Id("_"), item).Op(":=").Range().Add(x)).Block(body...),
			jen.Id("e").Dot("ArrEnd").Call(),
		}
	case model.Map:
		return []jen.Code{
			jen.Id("e").Dot("ObjStart").Call(),
			codecID("WriteExtra").Call(jen.Id("e"), x, c.elemEnc(*r.Elem)),
			jen.Id("e").Dot("ObjEnd").Call(),
		}
	}
	panic("gogen: cannot encode kind " + strconv.Itoa(int(r.Kind)))
}

// elemEncStmt writes x, a slice element or map value, null when nil and
// nullable.
func (c *valueCodec) elemEncStmt(r model.Ref, x jen.Code) []jen.Code {
	if !r.Nullable {
		return c.enc(r, x, false)
	}
	return []jen.Code{jen.If(jen.Add(x).Op("==").Nil()).Block(jen.Id("e").Dot("Null").Call()).Else().Block(c.enc(r, x, !r.HasNil())...)}
}

// comparableJSON reports whether items of the Go type of r are equal
// exactly when their JSON values are: strings, integers, numbers,
// booleans and the enums and defined types of them, not null.
func comparableJSON(r model.Ref) bool {
	if r.Nullable {
		return false
	}
	for r.Kind == model.Named && (r.Type.Kind == model.Enum || r.Type.Kind == model.Defined) {
		r = r.Type.Base
	}
	switch r.Kind {
	case model.String, model.Int, model.Float, model.Bool:
		return true
	}
	return false
}

// uniqueEnc writes an item of the slice r to compare items, when its
// rule asks for unique items; nil otherwise.
func (c *valueCodec) uniqueEnc(r model.Ref) jen.Code {
	if !r.Check(c.assert).UniqueItems {
		return jen.Nil()
	}
	return c.elemEnc(*r.Elem)
}

// elemEnc is a function value writing a slice element or map value.
func (c *valueCodec) elemEnc(r model.Ref) jen.Code {
	if !r.Nullable {
		// A writer of the value's own signature, where there is one (jx's
		// own return a bool).
		switch resolve(r).Kind {
		case model.Float:
			if r.Kind == model.Float {
				return codecID("WriteFloat")
			}
		case model.Time:
			if r.Kind == model.Time {
				return codecID("WriteTime")
			}
		case model.Raw:
			if r.Kind == model.Raw {
				return codecID("WriteRaw")
			}
		}
	}
	c.depth++
	x := jen.Id("x" + strconv.Itoa(c.depth))
	body := c.elemEncStmt(r, x)
	c.depth--
	return jen.Func().Params(encoderParam(), jen.Add(x).Add(elemExpr(r))).Block(body...)
}

// check is an expression of type error checking x, a value of r that is
// not null (or, with ptr, a non-nil pointer to one), or nil when there is
// nothing to check. A string, number, date-time or raw JSON value, and
// the names of a map, are always checked: a value built in Go may hold
// what JSON cannot (text that is not UTF-8, NaN, the year 10000), which
// a rule's Check refuses, and the codec's function of the kind
// (faithfulCheck) without one. A lenient type checks only that: the
// embedded schema checks the rest.
func (c *valueCodec) check(r model.Ref, x jen.Code, ptr bool, name string) jen.Code {
	x = deref(r, x, ptr)
	r = resolve(r)
	switch r.Kind {
	case model.String, model.Int, model.Float, model.Raw, model.Bool, model.Time:
		if r.Kind != model.Time { // a date-time's rule is its text's, checked on decoding
			if v := c.checkRule(r, name); v != nil {
				return jen.Add(v).Dot("Check").Call(x)
			}
		}
		if fn := faithfulCheck(r.Kind); fn != "" {
			return codecID(fn).Call(x)
		}
	case model.Named:
		return jen.Add(x).Dot("Validate").Call()
	case model.Slice:
		each := c.elemCheck(*r.Elem, ruleName(name, "item"))
		arr := c.checkRule(r, name)
		items := func() jen.Code {
			if comparableJSON(*r.Elem) {
				return codecID("Distinct").Call(jen.Op("&").Add(arr), x)
			}
			return codecID("Items").Call(jen.Op("&").Add(arr), x, c.uniqueEnc(r))
		}
		switch {
		case each != nil && arr != nil:
			return jen.Func().Params().Error().Block(
				jen.If(jen.Err().Op(":=").Add(items()), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
				jen.Return(codecID("Each").Call(x, each)),
			).Call()
		case each != nil:
			return codecID("Each").Call(x, each)
		case arr != nil:
			return items()
		}
	case model.Map:
		// Each of these checks the names too (codec.CheckNames).
		each := c.elemCheck(*r.Elem, ruleName(name, "value"))
		keys := c.checkRule(r, name)
		switch {
		case each != nil && keys != nil:
			return jen.Func().Params().Error().Block(
				jen.If(jen.Err().Op(":=").Add(codecID("CheckKeys").Call(jen.Op("&").Add(keys), x)), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
				jen.Return(codecID("EachValue").Call(x, each)),
			).Call()
		case each != nil:
			return codecID("EachValue").Call(x, each)
		case keys != nil:
			return codecID("CheckKeys").Call(jen.Op("&").Add(keys), x)
		}
		return codecID("CheckNames").Call(x)
	}
	return nil
}

// faithfulCheck names the codec's function checking that a value of kind
// k built in Go can be written as JSON, "" for a kind whose every value
// can.
func faithfulCheck(k model.Kind) string {
	switch k {
	case model.String:
		return "CheckText"
	case model.Float:
		return "CheckFloat"
	case model.Time:
		return "CheckTime"
	case model.Raw:
		return "CheckRaw"
	}
	return ""
}

// checkRule is the rule that check applies to a value of r: none in a
// lenient type, whose values the embedded schema checks.
func (c *valueCodec) checkRule(r model.Ref, name string) *jen.Statement {
	if c.lenient {
		return nil
	}
	return c.rule(r, name)
}

// elemCheck is a function value checking a slice element or map value,
// or nil when there is nothing to check: the codec's function of the
// kind itself when that is all (codec.Each(v.Tags, codec.CheckText)).
func (c *valueCodec) elemCheck(r model.Ref, name string) jen.Code {
	if fn := faithfulCheck(resolve(r).Kind); fn != "" && !r.Nullable && (resolve(r).Kind == model.Time || c.checkRule(r, name) == nil) {
		return codecID(fn)
	}
	c.depth++
	defer func() { c.depth-- }()
	x := jen.Id("x" + strconv.Itoa(c.depth))
	chk := c.check(r, x, r.Nullable && !r.HasNil(), name)
	if chk == nil {
		return nil
	}
	body := []jen.Code{jen.Return(chk)}
	if r.Nullable {
		body = append([]jen.Code{jen.If(jen.Add(x).Op("==").Nil()).Block(jen.Return(jen.Nil()))}, body...)
	}
	return jen.Func().Params(jen.Add(x).Add(elemExpr(r))).Error().Block(body...)
}

// ruleName names the rule of the value at part (a field, a variant, or
// "item", "value", "extra") of the value named name. Go names of types,
// fields and variants have no '_' and start with a capital, so joining
// with '_' and the lower-case parts keeps the names of two places apart
// (a field Bar's items and a field BarItem; a type Ay's field BeeCee and
// a type AyBee's field Cee): rule variables are package-level.
func ruleName(name, part string) string { return name + "_" + part }

// rule declares the rule variable of a string, number or array value
// named name (once), and returns it; nil when r checks nothing.
func (c *valueCodec) rule(r model.Ref, name string) *jen.Statement {
	ck := r.Check(c.assert)
	if ck.IsZero() {
		return nil
	}
	id := "check" + name
	if c.named[id] {
		return jen.Id(id)
	}
	lit := ruleLit(r.Kind, ck)
	if lit == nil {
		return nil
	}
	if c.inline {
		return lit.jen()
	}
	if c.named == nil {
		c.named = map[string]bool{}
	}
	c.named[id] = true
	c.vars = append(c.vars, jen.Id(id).Op("=").Add(lit.jen()))
	return jen.Id(id)
}

// inlineRule is the rule of a value of r written where it is used (in a
// codec.Shape); nil when r checks nothing.
func (c *valueCodec) inlineRule(r model.Ref) frag {
	if c.checkOnly {
		return nil
	}
	ck := r.Check(c.assert)
	if ck.IsZero() {
		return nil
	}
	return ruleLit(r.Kind, ck)
}

// ruleLit is the literal of the rule ck of a value of kind k, its fields
// on one line in order of name; nil when the kind has no rule for ck.
func ruleLit(k model.Kind, ck model.Check) frag {
	var w fragWriter
	var fields []field
	switch k {
	case model.String, model.Time:
		if ck.Enum != nil && k == model.String {
			fields = append(fields, field{"Enum", enumLitOf(ck.Enum)})
		}
		if ck.Format != "" {
			fields = append(fields, field{"Format", frag{qual(codecPath, "FormatOf"), raw("(" + quote(ck.Format) + ")")}})
		}
		fields = append(fields, field{"MaxLength", text(strconv.FormatInt(ck.MaxLength, 10))})
		if ck.MinLength > 0 {
			fields = append(fields, field{"MinLength", text(strconv.FormatInt(ck.MinLength, 10))})
		}
		if ck.HasPattern {
			fields = append(fields, field{"Pattern", frag{qual(codecPath, "Regexp"), raw("(" + quote(ck.Pattern) + ")")}})
		}
		w.qual(codecPath, "String")
	case model.Raw:
		if ck.Enum != nil {
			fields = append(fields, field{"Enum", enumLitOf(ck.Enum)})
		}
		if ck.Types != nil {
			quoted := make([]string, len(ck.Types))
			for i, t := range ck.Types {
				quoted[i] = quote(t)
			}
			fields = append(fields, field{"Types", text("[]string{" + strings.Join(quoted, ", ") + "}")})
		}
		w.qual(codecPath, "Any")
	case model.Bool:
		if ck.Enum == nil {
			return nil
		}
		fields = append(fields, field{"Enum", enumLitOf(ck.Enum)})
		w.qual(codecPath, "Flag")
	case model.Int:
		return intRule(ck)
	case model.Float:
		return floatRule(ck)
	case model.Map:
		if ck.Patterns == nil {
			return nil
		}
		return keysLit(ck.Patterns)
	case model.Slice:
		fields = append(fields, field{"MaxItems", text(strconv.FormatInt(ck.MaxItems, 10))})
		if ck.MinItems > 0 {
			fields = append(fields, field{"MinItems", text(strconv.FormatInt(ck.MinItems, 10))})
		}
		if ck.UniqueItems {
			fields = append(fields, field{"Unique", text("true")})
		}
		w.qual(codecPath, "Array")
	default:
		return nil
	}
	w.keyed(fields)
	return w.frag()
}

// keysRule declares the rule for the names of a struct's undeclared
// members (model.Type.Patterns), once, and returns it.
func (c *valueCodec) keysRule(patterns []string, name string) *jen.Statement {
	id := "check" + name
	if !c.named[id] {
		if c.named == nil {
			c.named = map[string]bool{}
		}
		c.named[id] = true
		c.vars = append(c.vars, jen.Id(id).Op("=").Add(keysLit(patterns).jen()))
	}
	return jen.Id(id)
}

// keysLit is a codec.Keys of the patterns.
func keysLit(patterns []string) frag {
	var w fragWriter
	w.qual(codecPath, "Keys")
	w.raw("{Patterns: []*")
	w.qual(codecPath, "Pattern")
	w.raw("{")
	for i, p := range patterns {
		if i > 0 {
			w.raw(", ")
		}
		w.qual(codecPath, "Regexp")
		w.raw("(" + quote(p) + ")")
	}
	w.raw("}}")
	return w.frag()
}

// intRule makes the bounds of an integer inclusive integers: x > 2.5 is
// x >= 3.
func intRule(ck model.Check) frag {
	lo, hi := frag{qual(mathPath, "MinInt64")}, frag{qual(mathPath, "MaxInt64")}
	if b := ck.Minimum; b != nil {
		if i, ok := model.IntBound(b, true); ok {
			lo = ratLit(i)
		}
	}
	if b := ck.Maximum; b != nil {
		if i, ok := model.IntBound(b, false); ok {
			hi = ratLit(i)
		}
	}
	fields := []field{{"Max", hi}, {"Min", lo}}
	if ck.MultipleOf != "" {
		// v is a multiple of p/q (in lowest terms) when p divides v. A p
		// beyond int64 is left to the embedded schema, which the type
		// checks against too (model's beyondInt64).
		if p, ok := model.IntMultiple(ck.MultipleOf); ok {
			fields = append(fields, field{"MultipleOf", text(strconv.FormatInt(p, 10))})
		}
	}
	var w fragWriter
	w.qual(codecPath, "Int")
	w.keyed(fields)
	return w.frag()
}

// ratLit writes an integer, clamped to int64.
func ratLit(i *big.Int) frag {
	switch {
	case i.Cmp(big.NewInt(minInt64)) < 0:
		return frag{qual(mathPath, "MinInt64")}
	case i.Cmp(big.NewInt(maxInt64)) > 0:
		return frag{qual(mathPath, "MaxInt64")}
	}
	return text(strconv.FormatInt(i.Int64(), 10))
}

const (
	minInt64 = -1 << 63
	maxInt64 = 1<<63 - 1
)

func floatRule(ck model.Check) frag {
	lo, hi := frag{qual(mathPath, "Inf"), raw("(-1)")}, frag{qual(mathPath, "Inf"), raw("(1)")}
	var fields []field
	if ck.Enum != nil {
		fields = append(fields, field{"Enum", enumLitOf(ck.Enum)})
	}
	if b := ck.Maximum; b != nil && b.Exclusive {
		fields = append(fields, field{"ExclusiveMax", text("true")})
	}
	if b := ck.Minimum; b != nil && b.Exclusive {
		fields = append(fields, field{"ExclusiveMin", text("true")})
	}
	if b := ck.Maximum; b != nil {
		hi = floatBound(b)
	}
	if b := ck.Minimum; b != nil {
		lo = floatBound(b)
	}
	fields = append(fields, field{"Max", hi}, field{"Min", lo})
	if ck.MultipleOf != "" {
		fields = append(fields, field{"MultipleOf", frag{qual(codecPath, "Rat"), raw("(" + quote(ck.MultipleOf.String()) + ")")}})
	}
	var w fragWriter
	w.qual(codecPath, "Float")
	w.keyed(fields)
	return w.frag()
}

// floatBound is a bound as a float64: a bound beyond float64's range
// (1e400) is an infinity, which every float64 is below (or above), as
// every value a float64 holds is below 1e400.
func floatBound(b *load.Bound) frag {
	f, _ := strconv.ParseFloat(b.Value.String(), 64)
	switch {
	case math.IsInf(f, 1):
		return frag{qual(mathPath, "Inf"), raw("(1)")}
	case math.IsInf(f, -1):
		return frag{qual(mathPath, "Inf"), raw("(-1)")}
	}
	return text(floatLit(f))
}

// enumLitOf declares the values of an enum, as JSON texts.
func enumLitOf(values []json.RawMessage) frag {
	var w fragWriter
	w.qual(codecPath, "EnumOf")
	w.raw("(")
	for i, v := range values {
		if i > 0 {
			w.raw(", ")
		}
		w.raw(quote(string(v)))
	}
	w.raw(")")
	return w.frag()
}

// body is the body of a function. One statement is written on one line,
// which gofmt keeps when the whole function fits in its 100 columns and
// breaks into the usual three lines when it does not: most generated
// methods are one call, and a line each instead of three is a third of
// the type's file.
func body(stmts ...jen.Code) jen.Code {
	if len(stmts) != 1 {
		return jen.Block(stmts...)
	}
	return jen.Custom(jen.Options{Open: "{", Close: "}"}, stmts...)
}
