package codec

import (
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"strconv"
	"time"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/schemaset"
)

// The helpers generated code calls once per property or object are kept
// out of line (go:noinline): inlined, each call site in a generated
// package would compile a copy of their bodies, which costs the package's
// build more than the call costs a decode.

// A decode function reads one JSON value of type T. Generated code
// composes them: codec.Slice(d, codec.Str) reads an array of strings.

// Str reads a JSON string.
func Str(d *jx.Decoder) (string, error) {
	if err := want(d, jx.String, "a string"); err != nil {
		return "", err
	}
	s, err := d.Str()
	return s, Wrap(err, "a string")
}

// Int64 reads a JSON number that is an integer (1.0 and 1e2 are) and fits
// in an int64.
func Int64(d *jx.Decoder) (int64, error) {
	if err := want(d, jx.Number, "an integer"); err != nil {
		return 0, err
	}
	n, err := d.Num()
	if err != nil {
		return 0, Wrap(err, "an integer")
	}
	if i, ok := shortInt(n); ok {
		return i, nil
	}
	if n.IsInt() {
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return 0, Expect("an integer that fits in 64 bits, got " + string(n))
		}
		return i, nil
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || !r.IsInt() {
		return 0, Expect("an integer, got " + string(n))
	}
	if !r.Num().IsInt64() {
		return 0, Expect("an integer that fits in 64 bits, got " + string(n))
	}
	return r.Num().Int64(), nil
}

// shortInt returns the value of n when it is an optional minus sign and
// 1 to 18 digits, which an int64 always holds.
func shortInt(n jx.Num) (int64, bool) {
	neg := len(n) > 0 && n[0] == '-'
	if neg {
		n = n[1:]
	}
	if len(n) == 0 || len(n) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range n {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// Float64 reads a JSON number.
func Float64(d *jx.Decoder) (float64, error) {
	if err := want(d, jx.Number, "a number"); err != nil {
		return 0, err
	}
	f, err := d.Float64()
	return f, Wrap(err, "a number")
}

// Bool reads true or false.
func Bool(d *jx.Decoder) (bool, error) {
	if err := want(d, jx.Bool, "a boolean"); err != nil {
		return false, err
	}
	b, err := d.Bool()
	return b, Wrap(err, "a boolean")
}

// Time reads a string in RFC 3339 form (format date-time), as
// time.Time's own UnmarshalJSON does.
func Time(d *jx.Decoder) (time.Time, error) {
	s, err := Str(d)
	if err != nil {
		return time.Time{}, err
	}
	return parseDateTime(s)
}

// parseDateTime reads an RFC 3339 date-time as the format date-time
// accepts it, which Go's parser does not in two cases: the separator T
// and the zone Z may be lower case (RFC 3339, section 5.6), and the
// seconds may be 60, a leap second, which a time.Time cannot hold: it
// reads as the second after 59, the next minute's first.
func parseDateTime(s string) (time.Time, error) {
	var t time.Time
	err := t.UnmarshalText([]byte(s))
	if err == nil {
		return t, nil
	}
	if len(s) < 20 {
		return time.Time{}, Wrap(err, "a date-time (RFC 3339)")
	}
	b := []byte(s)
	if b[10] == 't' {
		b[10] = 'T'
	}
	if b[len(b)-1] == 'z' {
		b[len(b)-1] = 'Z'
	}
	leap := b[17] == '6' && b[18] == '0'
	if leap {
		b[17] = '5'
		b[18] = '9'
	}
	if t2, err2 := time.Parse(time.RFC3339Nano, string(b)); err2 == nil {
		if leap {
			t2 = t2.Add(time.Second)
		}
		return t2, nil
	}
	return time.Time{}, Wrap(err, "a date-time (RFC 3339)")
}

// Raw reads any JSON value and returns a copy of its text.
func Raw(d *jx.Decoder) (json.RawMessage, error) {
	raw, err := d.Raw()
	if err != nil {
		return nil, Wrap(err, "a JSON value")
	}
	return append(json.RawMessage(nil), raw...), nil
}

// Dec reads a value of a generated type with its DecodeJSON method.
func Dec[T any, P interface {
	*T
	Decoder
}](d *jx.Decoder) (T, error) {
	var v T
	err := P(&v).DecodeJSON(d)
	return v, err
}

// IsNull reads a null if one is next and reports whether it did.
func IsNull(d *jx.Decoder) bool {
	if d.Next() != jx.Null {
		return false
	}
	return d.Null() == nil
}

// Ptr reads a value that may not be null into a new pointer.
//
//go:noinline
func Ptr[T any](d *jx.Decoder, dec func(*jx.Decoder) (T, error)) (*T, error) {
	v, err := dec(d)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// NullPtr reads null as nil, and any other value into a new pointer.
//
//go:noinline
func NullPtr[T any](d *jx.Decoder, dec func(*jx.Decoder) (T, error)) (*T, error) {
	if IsNull(d) {
		return nil, nil
	}
	return Ptr(d, dec)
}

// Nullable reads a property that is present: null, or a value.
//
//go:noinline
func Nullable[T any](d *jx.Decoder, dec func(*jx.Decoder) (T, error)) (schemaset.Nullable[T], error) {
	if IsNull(d) {
		return schemaset.Null[T](), nil
	}
	v, err := dec(d)
	return schemaset.Some(v), err
}

// OrNull reads null as the zero value (nil, for the slices, maps and raw
// JSON it is used on), and any other value with dec.
//
//go:noinline
func OrNull[T any](d *jx.Decoder, dec func(*jx.Decoder) (T, error)) (T, error) {
	if IsNull(d) {
		var zero T
		return zero, nil
	}
	return dec(d)
}

// Slice reads a JSON array, each element with dec. An empty array is an
// empty, non-nil slice, so that it encodes as [] again.
func Slice[T any](d *jx.Decoder, dec func(*jx.Decoder) (T, error)) ([]T, error) {
	if err := want(d, jx.Array, "an array"); err != nil {
		return nil, err
	}
	it, err := d.ArrIter()
	if err != nil {
		return nil, Wrap(err, "an array")
	}
	out := []T{}
	for it.Next() {
		v, err := dec(d)
		if err != nil {
			return nil, AtIndex(err, len(out))
		}
		out = append(out, v)
	}
	return out, Wrap(it.Err(), "an array")
}

// Map reads a JSON object into a map, each value with dec.
func Map[T any](d *jx.Decoder, dec func(*jx.Decoder) (T, error)) (map[string]T, error) {
	out := map[string]T{}
	err := Object(d, func(d *jx.Decoder, key []byte) error {
		v, err := dec(d)
		out[string(key)] = v
		return err
	})
	return out, err
}

// Object reads a JSON object, calling f with each member's name (valid
// only during the call) and the decoder at its value. An error f returns
// gets the member's name in its pointer.
func Object(d *jx.Decoder, f func(d *jx.Decoder, key []byte) error) error {
	if err := want(d, jx.Object, "an object"); err != nil {
		return err
	}
	// The iterator, unlike ObjBytes, does not wrap (with a stack trace) the
	// error f returns: a union tries branches that fail.
	it, err := d.ObjIter()
	if err != nil {
		return Wrap(err, "an object")
	}
	for it.Next() {
		if err := f(d, it.Key()); err != nil {
			return AtField(err, string(it.Key()))
		}
	}
	return Wrap(it.Err(), "an object")
}

// Obj reads a JSON object member by member, for a generated DecodeJSON,
// which switches on each member's name in a loop of its own:
//
//	o := codec.Members(d)
//	for o.Next() {
//		var err error
//		switch string(o.Key()) {
//		case "id":
//			o.Seen |= 1 << 0
//			v.ID, err = codec.Str(d)
//		default:
//			err = codec.Unknown()
//		}
//		o.Check(err)
//	}
//	return o.End(requiredOfT)
type Obj struct {
	// Seen has bit i set when the i-th required property was read.
	Seen uint64
	it   jx.ObjIter
	err  error
}

// Members starts reading the object that is next in d: the decoder is at
// each member's value after Next.
//
//go:noinline
func Members(d *jx.Decoder) Obj {
	var o Obj
	if o.err = want(d, jx.Object, "an object"); o.err == nil {
		var err error
		// The iterator, unlike ObjBytes, does not wrap (with a stack
		// trace) the errors of the members: a union tries branches that
		// fail.
		o.it, err = d.ObjIter()
		o.err = Wrap(err, "an object")
	}
	return o
}

// Next moves to the next member, if there is one and nothing has failed.
func (o *Obj) Next() bool { return o.err == nil && o.it.Next() }

// Key is the member's name, valid until Next.
func (o *Obj) Key() []byte { return o.it.Key() }

// Check records the error of reading the member's value, if any, with the
// member's name in its pointer: Next stops and End returns it.
func (o *Obj) Check(err error) {
	if err != nil {
		o.err = AtField(err, string(o.it.Key()))
	}
}

// End returns the first error of the object, else checks that every
// required property was seen: bit i of Seen for required[i].
func (o *Obj) End(required []string) error {
	if o.err != nil {
		return o.err
	}
	if err := o.it.Err(); err != nil {
		return Wrap(err, "an object")
	}
	return Required(o.Seen, required)
}

// Arr reads a JSON array element by element, for generated code that
// appends each element to a slice of a generated type itself:
//
//	a := codec.Elements(d)
//	for v.Lines = []T{}; a.Next(); {
//		v.Lines = append(v.Lines, T{})
//		a.Check(v.Lines[len(v.Lines)-1].DecodeJSON(d))
//	}
//	err = a.End()
type Arr struct {
	it  jx.ArrIter
	n   int // elements begun
	err error
}

// Elements starts reading the array that is next in d: the decoder is at
// each element after Next.
//
//go:noinline
func Elements(d *jx.Decoder) Arr {
	var a Arr
	if a.err = want(d, jx.Array, "an array"); a.err == nil {
		var err error
		a.it, err = d.ArrIter()
		a.err = Wrap(err, "an array")
	}
	return a
}

// Next moves to the next element, if there is one and nothing has failed.
func (a *Arr) Next() bool {
	if a.err != nil || !a.it.Next() {
		return false
	}
	a.n++
	return true
}

// Check records the error of reading the element, if any, with its index
// in its pointer: Next stops and End returns it.
func (a *Arr) Check(err error) {
	if err != nil {
		a.err = AtIndex(err, a.n-1)
	}
}

// End returns the first error of the array, if any.
func (a *Arr) End() error {
	if a.err != nil {
		return a.err
	}
	return Wrap(a.it.Err(), "an array")
}

// Extra reads the value of a property a struct does not declare into
// *extra, creating the map on first use.
//
//go:noinline
func Extra[T any](d *jx.Decoder, key []byte, extra *map[string]T, dec func(*jx.Decoder) (T, error)) error {
	v, err := dec(d)
	if err != nil {
		return err
	}
	if *extra == nil {
		*extra = map[string]T{}
	}
	(*extra)[string(key)] = v
	return nil
}

// Unknown is the error for a property of a closed object
// (additionalProperties: false) that it does not declare.
func Unknown() error {
	return Expect("no such property: the object declares its properties (additionalProperties is false)")
}

// Required checks that every required property was seen: bit i of seen
// is set when names[i] was.
func Required(seen uint64, names []string) error {
	for i, name := range names {
		if seen&(1<<i) == 0 {
			return Expect("required property " + strconv.Quote(name))
		}
	}
	return nil
}

// Unmarshal decodes data, one JSON value and nothing after it, into v:
// what generated UnmarshalJSON methods do. v is a pointer to a generated
// type, read as [DecodeValue] reads it.
func Unmarshal(data []byte, v any) error {
	if !Decodes(v) {
		return errors.New("codec: Unmarshal of a type that has neither DecodeJSON nor CodecFields")
	}
	d := jx.GetDecoder()
	defer jx.PutDecoder(d)
	d.ResetBytes(data)
	if err := DecodeValue(d, v); err != nil {
		return err
	}
	return End(d)
}

// End checks that nothing but white space follows the value just read.
func End(d *jx.Decoder) error {
	if err := d.Skip(); !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Expect("the end of the document after the value")
	}
	return nil
}

// Matches reports whether raw, one JSON value, decodes with dec: whether
// it satisfies a union branch whose generated code checks it exactly.
// Code generated for contract version 4 and before calls it; later code
// tries the branches with a [Union], which keeps why each did not match.
func Matches(raw []byte, dec func(d *jx.Decoder) error) bool {
	d := jx.GetDecoder()
	defer jx.PutDecoder(d)
	d.ResetBytes(raw)
	return dec(d) == nil
}

// want checks the type of the next value.
func want(d *jx.Decoder, t jx.Type, expected string) error {
	got := d.Next()
	if got == t {
		return nil
	}
	if got == jx.Invalid {
		_, err := d.Raw()
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return Wrap(err, expected)
	}
	return Expect(expected + ", got " + typeName(got))
}

func typeName(t jx.Type) string {
	switch t {
	case jx.String:
		return "a string"
	case jx.Number:
		return "a number"
	case jx.Null:
		return "null"
	case jx.Bool:
		return "a boolean"
	case jx.Array:
		return "an array"
	case jx.Object:
		return "an object"
	}
	return "invalid JSON"
}

// ArrayOf reads a JSON array like [Slice] and checks it against c (nil:
// no check); enc writes an item, for uniqueness.
func ArrayOf[T any](d *jx.Decoder, c *Array, dec func(*jx.Decoder) (T, error), enc func(*jx.Encoder, T)) ([]T, error) {
	v, err := Slice(d, dec)
	if err != nil || c == nil {
		return v, err
	}
	return v, Items(c, v, enc)
}

// StrEnum reads a string into *v, a string enum, and checks it with valid.
func StrEnum[T ~string](d *jx.Decoder, v *T, valid func(T) error) error {
	s, err := Str(d)
	if err != nil {
		return err
	}
	*v = T(s)
	return valid(*v)
}

// IntEnum reads an integer into *v, an integer enum, and checks it with
// valid.
func IntEnum[T ~int64](d *jx.Decoder, v *T, valid func(T) error) error {
	i, err := Int64(d)
	if err != nil {
		return err
	}
	*v = T(i)
	return valid(*v)
}

// DistinctOf reads a JSON array like [Slice] and checks it with [Distinct].
func DistinctOf[T comparable](d *jx.Decoder, c *Array, dec func(*jx.Decoder) (T, error)) ([]T, error) {
	v, err := Slice(d, dec)
	if err != nil {
		return v, err
	}
	return v, Distinct(c, v)
}
