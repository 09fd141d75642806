package codec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/schemaset"
)

// A generated struct is decoded, encoded and checked by the loops of this
// file, from data: a [Shape] describing its properties, declared once
// per type, and the pointers to its fields that its CodecFields method
// lists in the same order. A type compiles that one method and three
// one-line methods calling [Decode], [Encode] and [Check], whatever its
// number of properties; what a property of each kind does (reading it,
// its bounds, format, pattern and required bit, writing it, checking a
// value built in Go) is written once, here. Nothing is reflected upon:
// each field is told apart by the type of its pointer, in a type switch.
//
//	var shapeOfMoney = codec.Shape{Props: []codec.Prop{
//		{Name: "amount", Required: true, Rule: &checkMoney_Amount},
//		{Name: "currency", Required: true},
//	}}
//
//	func (v *Money) CodecFields(f []any) (*codec.Shape, []any) {
//		return &shapeOfMoney, append(f, &v.Amount, &v.Currency)
//	}

// Struct is implemented by *T for generated structs that describe
// themselves to [Decode], [Encode] and [Check].
type Struct interface {
	// CodecFields returns the type's Shape and appends to f a pointer
	// to each field, in the order of the Shape's Props, then the
	// pointer to the map of additional properties when Extra is
	// ExtraRaw.
	CodecFields(f []any) (*Shape, []any)
}

// Shape describes the properties of a generated struct.
type Shape struct {
	Props []Prop
	// Open keeps the members the object does not declare as raw JSON,
	// in the struct's last field, a map[string]json.RawMessage; else
	// they are refused (additionalProperties: false).
	Open bool
}

// Prop is one property of a Shape. The Go type of its field says how
// it is read and written: a string, integer, number, boolean, date-time
// or raw JSON, a pointer to one (absent, or null when Null), a
// schemaset.Nullable of one (absent, null or a value), a slice of strings,
// integers, numbers or booleans, a generated type, a pointer to one (nil
// when absent) or a slice of them.
type Prop struct {
	Name     string
	Required bool // listed in required
	Null     bool // the schema allows null
	// Rule checks the value beyond its Go type: a *String, *Int, *Float,
	// *Flag or *Any for a scalar, an *Array for a slice, the *Strings or
	// *Ints of an enum whose field is listed as its string or integer;
	// nil for none.
	Rule any
	// Item checks each item of a slice (*String, *Int, *Float, *Flag);
	// nil for none.
	Item any
}

// scratch holds the field pointers of the structs being read or written,
// nested ones after those of the structs around them, so that listing
// them allocates nothing; and the text of the strings decoding reads
// (see [scratch.str]).
type scratch struct {
	fields []any
	text   []byte
	strs   []string // what the *string fields of one decode point to
}

var scratchPool = sync.Pool{New: func() any { return &scratch{fields: make([]any, 0, 64)} }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	clear(s.fields[:cap(s.fields)]) // keep no pointer into a caller's value
	s.fields = s.fields[:0]
	s.strs = nil // the value decoded keeps them
	scratchPool.Put(s)
}

// Strings decoded are cut from slabs of textSlab bytes rather than
// allocated one by one; a longer one than textLong is allocated alone.
const (
	textSlab = 1024
	textLong = 128
)

// str returns b as a string. The bytes are copied to the end of the
// current slab, s.text, which only ever grows within its capacity: the
// bytes of a string handed out are never written again, so the string is
// as immutable as any other, however long it is kept. A full slab is left
// to the strings cut from it (the garbage collector frees it with the
// last) and a new one started. A slab carries on from one decode to the
// next with the scratch: a value kept keeps the slabs its strings were cut
// from (one or two, for a value with less text than a slab), other values'
// text in them included.
func (s *scratch) str(b []byte) string {
	n := len(b)
	switch {
	case n == 0:
		return ""
	case n > textLong:
		return string(b)
	case cap(s.text)-len(s.text) < n:
		s.text = make([]byte, 0, textSlab)
	}
	i := len(s.text)
	s.text = append(s.text, b...)
	return unsafe.String(&s.text[i], n)
}

// fields lists v's fields on s; release them with s.drop(base).
func (s *scratch) list(v Struct) (obj *Shape, fields []any, base int) {
	base = len(s.fields)
	obj, s.fields = v.CodecFields(s.fields)
	return obj, s.fields[base:len(s.fields):len(s.fields)], base
}

func (s *scratch) drop(base int) { s.fields = s.fields[:base] }

// Decode zeroes v, then reads the object next in d into it, checking it
// against its schema in the same pass: a generated DecodeJSON.
//
//go:noinline
func Decode(d *jx.Decoder, v Struct) error {
	reflect.ValueOf(v).Elem().SetZero()
	s := getScratch()
	err := decodeObject(d, v, s)
	putScratch(s)
	return err
}

func decodeObject(d *jx.Decoder, v Struct, s *scratch) error {
	obj, fields, base := s.list(v)
	err := readMembers(d, obj, fields, s)
	s.drop(base)
	return err
}

func readMembers(d *jx.Decoder, obj *Shape, fields []any, s *scratch) error {
	props := obj.Props
	var seen uint64 // bit i: props[i] was read
	next := 0       // members mostly come in the order of the properties
	o := Members(d)
	for o.Next() {
		key := o.Key()
		i := -1
		for j := range props {
			k := next + j
			if k >= len(props) {
				k -= len(props)
			}
			if props[k].Name == string(key) {
				i = k
				break
			}
		}
		var err error
		switch {
		case i >= 0:
			again := seen&(1<<i) != 0
			seen |= 1 << i
			next = i + 1
			err = decodeField(d, &props[i], fields[i], again, s)
		case obj.Open:
			err = Extra(d, key, fields[len(props)].(*map[string]json.RawMessage), Raw)
		default:
			err = Unknown()
		}
		o.Check(err)
	}
	if o.err != nil {
		return o.err
	}
	if err := o.it.Err(); err != nil {
		return Wrap(err, "an object")
	}
	for i := range props {
		if props[i].Required && seen&(1<<i) == 0 {
			return Expect("required property " + strconv.Quote(props[i].Name))
		}
	}
	return nil
}

// decodeField reads one property's value into its field f. again: the
// member came before (a nested struct is then zeroed by its DecodeJSON
// first, as a property read twice keeps the last value).
func decodeField(d *jx.Decoder, p *Prop, f any, again bool, s *scratch) error {
	var err error
	switch f := f.(type) {
	case *string:
		*f, err = readStr(d, p.Rule, s)
	case *int64:
		*f, err = readInt(d, p.Rule, s)
	case *float64:
		*f, err = readFloat(d, p.Rule, s)
	case *bool:
		*f, err = readBool(d, p.Rule, s)
	case *time.Time:
		*f, err = readTime(d, p.Rule, s)
	case *json.RawMessage:
		*f, err = readRaw(d, p.Rule, s)
	case **string:
		*f, err = readStrPtr(d, p, s)
	case **int64:
		*f, err = readPtr(d, p, readInt, s)
	case **float64:
		*f, err = readPtr(d, p, readFloat, s)
	case **bool:
		*f, err = readPtr(d, p, readBool, s)
	case **time.Time:
		*f, err = readPtr(d, p, readTime, s)
	case *schemaset.Nullable[string]:
		*f, err = readNullable(d, p.Rule, readStr, s)
	case *schemaset.Nullable[int64]:
		*f, err = readNullable(d, p.Rule, readInt, s)
	case *schemaset.Nullable[float64]:
		*f, err = readNullable(d, p.Rule, readFloat, s)
	case *schemaset.Nullable[bool]:
		*f, err = readNullable(d, p.Rule, readBool, s)
	case *schemaset.Nullable[time.Time]:
		*f, err = readNullable(d, p.Rule, readTime, s)
	case *[]string:
		*f, err = readSlice(d, p, readStr, s)
	case *[]int64:
		*f, err = readSlice(d, p, readInt, s)
	case *[]float64:
		*f, err = readSlice(d, p, readFloat, s)
	case *[]bool:
		*f, err = readSlice(d, p, readBool, s)
	case Struct:
		if again {
			// Read twice: the last value wins, from a zero struct
			// (Decode zeroes it first).
			return DecodeValue(d, f)
		}
		return decodeObject(d, f, s)
	case Decoder:
		return f.DecodeJSON(d)
	default:
		if o, ok := optOf(f); ok {
			return decodeOpt(d, p, o, s)
		}
		if l, ok := listOf(f); ok {
			return decodeList(d, p, l, s)
		}
		panic("codec: a field of unknown type " + typeOf(f))
	}
	return err
}

// readStr reads a string: its text cut from the scratch's slab, or, for
// an enum's value, the enum's own string.
func readStr(d *jx.Decoder, rule any, s *scratch) (string, error) {
	b, err := strBytes(d)
	if err != nil {
		return "", err
	}
	switch r := rule.(type) {
	case *String:
		v := s.str(b)
		return v, r.rules(v)
	case *Strings: // an enum's field, listed as its string
		if v, ok := r.find(b); ok {
			return v, nil
		}
		return s.str(b), Expect(r.Expected)
	}
	return s.str(b), nil
}

func readInt(d *jx.Decoder, rule any, _ *scratch) (int64, error) {
	switch r := rule.(type) {
	case *Int:
		return r.Int(d)
	case *Ints: // an enum's field, listed as its integer
		i, err := Int64(d)
		if err != nil {
			return i, err
		}
		return i, r.Check(i)
	}
	return Int64(d)
}

func readFloat(d *jx.Decoder, rule any, _ *scratch) (float64, error) {
	if r, ok := rule.(*Float); ok {
		return r.Float(d)
	}
	return Float64(d)
}

func readBool(d *jx.Decoder, rule any, _ *scratch) (bool, error) {
	if r, ok := rule.(*Flag); ok {
		return r.Bool(d)
	}
	return Bool(d)
}

// readTime reads a date-time, its text checked first (see
// [String.Time]); no string is kept.
func readTime(d *jx.Decoder, rule any, s *scratch) (time.Time, error) {
	b, err := strBytes(d)
	if err != nil {
		return time.Time{}, err
	}
	if r, ok := rule.(*String); ok {
		if err := r.checkText(b, s); err != nil {
			return time.Time{}, err
		}
	}
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		return time.Time{}, Wrap(err, "a date-time (RFC 3339)")
	}
	return t, nil
}

func readRaw(d *jx.Decoder, rule any, _ *scratch) (json.RawMessage, error) {
	if r, ok := rule.(*Any); ok {
		return r.Raw(d)
	}
	return Raw(d)
}

// readPtr reads a value into a new pointer; null is nil when p allows it.
func readPtr[T any](d *jx.Decoder, p *Prop, read func(*jx.Decoder, any, *scratch) (T, error), s *scratch) (*T, error) {
	if p.Null && IsNull(d) {
		return nil, nil
	}
	v, err := read(d, p.Rule, s)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func readNullable[T any](d *jx.Decoder, rule any, read func(*jx.Decoder, any, *scratch) (T, error), s *scratch) (schemaset.Nullable[T], error) {
	if IsNull(d) {
		return schemaset.Null[T](), nil
	}
	v, err := read(d, rule, s)
	return schemaset.Some(v), err
}

// readSlice reads an array of scalars; null is nil when p allows it.
// Room for four items is made at the first, rather than for one, two,
// then four.
func readSlice[T comparable](d *jx.Decoder, p *Prop, read func(*jx.Decoder, any, *scratch) (T, error), s *scratch) ([]T, error) {
	if p.Null && IsNull(d) {
		return nil, nil
	}
	if err := want(d, jx.Array, "an array"); err != nil {
		return nil, err
	}
	it, err := d.ArrIter()
	if err != nil {
		return nil, Wrap(err, "an array")
	}
	var out []T
	for it.Next() {
		v, err := read(d, p.Item, s)
		if err != nil {
			return nil, AtIndex(err, len(out))
		}
		if out == nil {
			out = make([]T, 0, 4)
		}
		out = append(out, v)
	}
	if err := it.Err(); err != nil {
		return nil, Wrap(err, "an array")
	}
	if out == nil {
		out = []T{}
	}
	if r, ok := p.Rule.(*Array); ok {
		return out, Distinct(r, out)
	}
	return out, nil
}

// Encode writes v as a JSON object: a generated EncodeJSON.
//
//go:noinline
func Encode(e *jx.Encoder, v Struct) {
	s := getScratch()
	encodeObject(e, v, s)
	putScratch(s)
}

func encodeObject(e *jx.Encoder, v Struct, s *scratch) {
	obj, fields, base := s.list(v)
	e.ObjStart()
	for i := range obj.Props {
		encodeField(e, &obj.Props[i], fields[i], s)
	}
	if obj.Open {
		WriteExtra(e, *fields[len(obj.Props)].(*map[string]json.RawMessage), WriteRaw)
	}
	e.ObjEnd()
	s.drop(base)
}

// encodeField writes one property, or nothing when it is absent: an
// optional pointer, slice or raw value that is nil, a Nullable that is
// not Present. A required pointer that is nil is written as null.
func encodeField(e *jx.Encoder, p *Prop, f any, s *scratch) {
	switch f := f.(type) {
	case *string:
		e.FieldStart(p.Name)
		e.Str(*f)
	case *int64:
		e.FieldStart(p.Name)
		e.Int64(*f)
	case *float64:
		e.FieldStart(p.Name)
		WriteFloat(e, *f)
	case *bool:
		e.FieldStart(p.Name)
		e.Bool(*f)
	case *time.Time:
		e.FieldStart(p.Name)
		WriteTime(e, *f)
	case *json.RawMessage:
		if *f == nil && !p.Required {
			return // absent: a null read is kept as the text null
		}
		e.FieldStart(p.Name)
		WriteRaw(e, *f)
	case **string:
		if absent(e, p, *f == nil) {
			e.Str(**f)
		}
	case **int64:
		if absent(e, p, *f == nil) {
			e.Int64(**f)
		}
	case **float64:
		if absent(e, p, *f == nil) {
			WriteFloat(e, **f)
		}
	case **bool:
		if absent(e, p, *f == nil) {
			e.Bool(**f)
		}
	case **time.Time:
		if absent(e, p, *f == nil) {
			WriteTime(e, **f)
		}
	case *schemaset.Nullable[string]:
		writeNullable(e, p, *f, func(e *jx.Encoder, x string) { e.Str(x) })
	case *schemaset.Nullable[int64]:
		writeNullable(e, p, *f, func(e *jx.Encoder, x int64) { e.Int64(x) })
	case *schemaset.Nullable[float64]:
		writeNullable(e, p, *f, WriteFloat)
	case *schemaset.Nullable[bool]:
		writeNullable(e, p, *f, func(e *jx.Encoder, x bool) { e.Bool(x) })
	case *schemaset.Nullable[time.Time]:
		writeNullable(e, p, *f, WriteTime)
	case *[]string:
		writeSlice(e, p, *f, func(e *jx.Encoder, x string) { e.Str(x) })
	case *[]int64:
		writeSlice(e, p, *f, func(e *jx.Encoder, x int64) { e.Int64(x) })
	case *[]float64:
		writeSlice(e, p, *f, WriteFloat)
	case *[]bool:
		writeSlice(e, p, *f, func(e *jx.Encoder, x bool) { e.Bool(x) })
	case Struct:
		e.FieldStart(p.Name)
		encodeObject(e, f, s)
	case Encoder:
		e.FieldStart(p.Name)
		f.EncodeJSON(e)
	default:
		if o, ok := optOf(f); ok {
			encodeOpt(e, p, o, s)
			return
		}
		if l, ok := listOf(f); ok {
			encodeList(e, p, l, s)
			return
		}
		panic("codec: a field of unknown type " + typeOf(f))
	}
}

// absent writes the name of a property whose pointer is nil or not and
// reports whether its value is to be written: a nil pointer is absent,
// or null when the property is required.
func absent(e *jx.Encoder, p *Prop, isNil bool) bool {
	switch {
	case !isNil:
		e.FieldStart(p.Name)
		return true
	case p.Required:
		e.FieldStart(p.Name)
		e.Null()
	}
	return false
}

func writeNullable[T any](e *jx.Encoder, p *Prop, x schemaset.Nullable[T], write func(*jx.Encoder, T)) {
	if !x.Present {
		return
	}
	e.FieldStart(p.Name)
	if !x.Valid {
		e.Null()
		return
	}
	write(e, x.Value)
}

// writeSlice writes a slice; nil is absent when optional, null when
// nullable, and [] otherwise.
func writeSlice[T any](e *jx.Encoder, p *Prop, x []T, write func(*jx.Encoder, T)) {
	if x == nil && !p.Required {
		return
	}
	e.FieldStart(p.Name)
	if x == nil && p.Null {
		e.Null()
		return
	}
	e.ArrStart()
	for _, v := range x {
		write(e, v)
	}
	e.ArrEnd()
}

// Check checks v, a value built in Go, against its schema: a generated
// Validate.
//
//go:noinline
func Check(v Struct) error {
	s := getScratch()
	err := checkObject(v, s)
	putScratch(s)
	return err
}

func checkObject(v Struct, s *scratch) error {
	obj, fields, base := s.list(v)
	err := checkFields(obj, fields, s)
	s.drop(base)
	return err
}

func checkFields(obj *Shape, fields []any, s *scratch) error {
	if obj.Open {
		if err := checkExtra(obj, *fields[len(obj.Props)].(*map[string]json.RawMessage)); err != nil {
			return err
		}
	}
	for i := range obj.Props {
		if err := checkField(&obj.Props[i], fields[i], s); err != nil {
			return AtField(err, obj.Props[i].Name)
		}
	}
	return nil
}

// checkExtra checks the additional properties of a value built in Go, in
// one pass over the map: no name like a declared one's (extraClash), and
// names and raw values that are UTF-8 (CheckNames, CheckRaw).
func checkExtra(obj *Shape, extra map[string]json.RawMessage) error {
	for k, raw := range extra {
		for i := range obj.Props {
			if obj.Props[i].Name == k {
				return AtField(Expect("an additional property that is not named like a declared one"), k)
			}
		}
		if err := checkName(k); err != nil {
			return err
		}
		if err := CheckRaw(raw); err != nil {
			return AtField(err, k)
		}
	}
	return nil
}

func extraClash(obj *Shape, extra map[string]json.RawMessage) error {
	for k := range extra {
		for i := range obj.Props {
			if obj.Props[i].Name == k {
				return AtField(Expect("an additional property that is not named like a declared one"), k)
			}
		}
	}
	return nil
}

// errNil is a required property's pointer that is nil.
func errNil() error { return Expect("a value, not nil") }

// checkField checks one field of a value built in Go.
func checkField(p *Prop, f any, s *scratch) error {
	switch f := f.(type) {
	case *string:
		return checkStr(p.Rule, *f)
	case *int64:
		return checkInt(p.Rule, *f)
	case *float64:
		return checkFloat(p.Rule, *f)
	case *bool:
		return checkBool(p.Rule, *f)
	case *time.Time:
		return checkTime(p.Rule, *f)
	case *json.RawMessage:
		if r, ok := p.Rule.(*Any); ok {
			return r.Check(*f)
		}
		return CheckRaw(*f)
	case **string:
		return checkPtr(p, *f, checkStr)
	case **int64:
		return checkPtr(p, *f, checkInt)
	case **float64:
		return checkPtr(p, *f, checkFloat)
	case **bool:
		return checkPtr(p, *f, checkBool)
	case **time.Time:
		return checkPtr(p, *f, checkTime)
	case *schemaset.Nullable[string]:
		return checkNullable(p, *f, checkStr)
	case *schemaset.Nullable[int64]:
		return checkNullable(p, *f, checkInt)
	case *schemaset.Nullable[float64]:
		return checkNullable(p, *f, checkFloat)
	case *schemaset.Nullable[bool]:
		return checkNullable(p, *f, checkBool)
	case *schemaset.Nullable[time.Time]:
		return checkNullable(p, *f, checkTime)
	case *[]string:
		return checkSlice(p, *f, checkStr, true)
	case *[]int64:
		return checkSlice(p, *f, checkInt, p.Item != nil)
	case *[]float64:
		return checkSlice(p, *f, checkFloat, true)
	case *[]bool:
		return checkSlice(p, *f, checkBool, p.Item != nil)
	case Struct:
		return checkObject(f, s)
	case Validator:
		return f.Validate()
	default:
		if o, ok := optOf(f); ok {
			return checkOpt(p, o, s)
		}
		if l, ok := listOf(f); ok {
			return checkList(p, l, s)
		}
		panic("codec: a field of unknown type " + typeOf(f))
	}
}

// checkStr, checkFloat and checkTime check what every value of their
// type must be to be written (faithful.go) as well as its rule, if any:
// a string without one is still checked.

func checkStr(rule any, v string) error {
	switch r := rule.(type) {
	case *String:
		return r.Check(v)
	case *Strings: // one of the enum's values, which are UTF-8
		return r.Check(v)
	}
	return CheckText(v)
}

func checkInt(rule any, v int64) error {
	switch r := rule.(type) {
	case *Int:
		return r.Check(v)
	case *Ints:
		return r.Check(v)
	}
	return nil
}

func checkFloat(rule any, v float64) error {
	if r, ok := rule.(*Float); ok {
		return r.Check(v)
	}
	return CheckFloat(v)
}

func checkBool(rule any, v bool) error {
	if r, ok := rule.(*Flag); ok {
		return r.Check(v)
	}
	return nil
}

// checkTime: a time.Time built in Go writes valid date-time text when
// its year has four digits; its rule (an asserted format) is checked on
// decoding.
func checkTime(_ any, v time.Time) error { return CheckTime(v) }

func checkPtr[T any](p *Prop, x *T, check func(any, T) error) error {
	if x == nil {
		if p.Required && !p.Null {
			return errNil()
		}
		return nil
	}
	return check(p.Rule, *x)
}

func checkNullable[T any](p *Prop, x schemaset.Nullable[T], check func(any, T) error) error {
	if !x.Valid {
		return nil
	}
	return check(p.Rule, x.Value)
}

// checkSlice checks a slice of scalars; the array's rule applies only to
// a value: nil is an absent property, or null. each: the items are
// checked, as strings and numbers always are (checkStr, checkFloat).
func checkSlice[T comparable](p *Prop, x []T, check func(any, T) error, each bool) error {
	if r, ok := p.Rule.(*Array); ok && (x != nil || p.Required && !p.Null) {
		if err := Distinct(r, x); err != nil {
			return err
		}
	}
	if !each {
		return nil
	}
	for i, v := range x {
		if err := check(p.Item, v); err != nil {
			return AtIndex(err, i)
		}
	}
	return nil
}

// MarshalObject returns the JSON of v: a generated MarshalJSON. It
// refuses an additional property named like a declared one.
func MarshalObject(v Struct) ([]byte, error) {
	s := getScratch()
	defer putScratch(s)
	obj, fields, _ := s.list(v)
	if obj.Open {
		if err := extraClash(obj, *fields[len(obj.Props)].(*map[string]json.RawMessage)); err != nil {
			return nil, err
		}
	}
	s.fields = s.fields[:0]
	e := jx.GetEncoder()
	defer jx.PutEncoder(e)
	encodeObject(e, v, s)
	return append([]byte(nil), e.Bytes()...), nil
}

// A field that is a pointer to a value of a generated type (CodecFields
// lists &v.Field, a **T) is nil when absent (or null, when the property
// allows it); one that is a slice of values of a generated type (a
// *[]T) may have an *Array as its Prop's Rule. Neither has a type of
// its own: the codec reads T from the field's Go type, so that a
// generated package compiles nothing per such field.

// opt is a **T field: p is the field, elem is T.
type opt struct {
	p    *unsafe.Pointer
	elem reflect.Type
}

// optOf is f as an opt, if f is a pointer to a pointer.
func optOf(f any) (opt, bool) {
	t := reflect.TypeOf(f)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Pointer {
		return opt{}, false
	}
	return opt{p: (*unsafe.Pointer)(reflect.ValueOf(f).UnsafePointer()), elem: t.Elem().Elem()}, true
}

// get is the *T, or untyped nil.
func (o opt) get() any {
	if *o.p == nil {
		return nil
	}
	return reflect.NewAt(o.elem, *o.p).Interface()
}

// fresh sets the field to a new T and returns it.
func (o opt) fresh() any {
	x := reflect.New(o.elem)
	*o.p = x.UnsafePointer()
	return x.Interface()
}

func decodeOpt(d *jx.Decoder, p *Prop, o opt, s *scratch) error {
	if p.Null && IsNull(d) {
		*o.p = nil
		return nil
	}
	return decodeValue(d, o.fresh(), s)
}

func encodeOpt(e *jx.Encoder, p *Prop, o opt, s *scratch) {
	x := o.get()
	switch {
	case x != nil:
		e.FieldStart(p.Name)
		encodeValue(e, x, s)
	case p.Required:
		e.FieldStart(p.Name)
		e.Null()
	}
}

func checkOpt(p *Prop, o opt, s *scratch) error {
	x := o.get()
	if x == nil {
		if p.Required && !p.Null {
			return errNil()
		}
		return nil
	}
	return checkValue(x, s)
}

// list is a *[]T field: v is the slice (settable), h its header, elem T.
type list struct {
	v    reflect.Value
	h    *sliceHeader
	elem reflect.Type
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// noItems is where an empty, not nil, slice points.
var noItems [0]uint64

// listOf is f as a list, if f is a pointer to a slice.
func listOf(f any) (list, bool) {
	t := reflect.TypeOf(f)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Slice {
		return list{}, false
	}
	v := reflect.ValueOf(f)
	return list{v: v.Elem(), h: (*sliceHeader)(v.UnsafePointer()), elem: t.Elem().Elem()}, true
}

// length returns the slice's length and whether it is nil.
func (l list) length() (int, bool) { return l.h.len, l.h.data == nil }

// itemAt is a pointer to item i.
func (l list) itemAt(i int) any {
	return reflect.NewAt(l.elem, unsafe.Add(l.h.data, uintptr(i)*l.elem.Size())).Interface()
}

// push appends a zero item and returns a pointer to it.
func (l list) push() any {
	n := l.h.len
	if n == l.h.cap {
		l.v.Grow(max(4, n)) // room for four, then twice as many
	}
	l.h.len = n + 1
	it := reflect.NewAt(l.elem, unsafe.Add(l.h.data, uintptr(n)*l.elem.Size()))
	it.Elem().SetZero() // what the slice held beyond its length
	return it.Interface()
}

func decodeList(d *jx.Decoder, p *Prop, l list, s *scratch) error {
	if p.Null && IsNull(d) {
		*l.h = sliceHeader{}
		return nil
	}
	a := Elements(d)
	for *l.h = (sliceHeader{data: unsafe.Pointer(&noItems)}); a.Next(); {
		a.Check(decodeValue(d, l.push(), s))
	}
	if err := a.End(); err != nil {
		return err
	}
	if r, ok := p.Rule.(*Array); ok {
		return uniqueList(r, l)
	}
	return nil
}

func uniqueList(r *Array, l list) error {
	n, _ := l.length()
	return r.Check(n, func(i int) string {
		var e jx.Encoder
		s := getScratch()
		encodeValue(&e, l.itemAt(i), s)
		putScratch(s)
		return canonical(e.Bytes())
	})
}

func encodeList(e *jx.Encoder, p *Prop, l list, s *scratch) {
	n, isNil := l.length()
	if isNil && !p.Required {
		return
	}
	e.FieldStart(p.Name)
	if isNil && p.Null {
		e.Null()
		return
	}
	e.ArrStart()
	for i := range n {
		encodeValue(e, l.itemAt(i), s)
	}
	e.ArrEnd()
}

func checkList(p *Prop, l list, s *scratch) error {
	n, isNil := l.length()
	if r, ok := p.Rule.(*Array); ok && (!isNil || p.Required && !p.Null) {
		if err := uniqueList(r, l); err != nil {
			return err
		}
	}
	for i := range n {
		if err := checkValue(l.itemAt(i), s); err != nil {
			return AtIndex(err, i)
		}
	}
	return nil
}

// decodeValue, encodeValue and checkValue use the loops of this file for
// a generated struct, and its methods for any other generated type.
func decodeValue(d *jx.Decoder, v any, s *scratch) error {
	if st, ok := v.(Struct); ok {
		return decodeObject(d, st, s)
	}
	return v.(Decoder).DecodeJSON(d)
}

func encodeValue(e *jx.Encoder, v any, s *scratch) {
	if st, ok := v.(Struct); ok {
		encodeObject(e, st, s)
		return
	}
	v.(Encoder).EncodeJSON(e)
}

func checkValue(v any, s *scratch) error {
	if st, ok := v.(Struct); ok {
		return checkObject(st, s)
	}
	return v.(Validator).Validate()
}

// typeOf names the Go type of a field generated code should not have
// listed: a bug in the generator.
func typeOf(f any) string { return fmt.Sprintf("%T", f) }
