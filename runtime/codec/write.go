package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/schemaset"
)

// Marshal returns the JSON of v, a generated type or a pointer to one,
// as [EncodeValue] writes it: what generated MarshalJSON methods do. It
// panics when v is neither an [Encoder] nor a [Struct]: calling it on
// another type is a mistake in the calling code.
func Marshal(v any) []byte {
	if !Encodes(v) {
		panic(fmt.Sprintf("codec: Marshal of %T, which has neither EncodeJSON nor CodecFields", v))
	}
	e := jx.GetEncoder()
	defer jx.PutEncoder(e)
	EncodeValue(e, v)
	return slices.Clone(e.Bytes())
}

// WriteFloat writes a float64 as encoding/json does: the shortest
// decimal that reads back as f, with an exponent below 1e-6 and from
// 1e21. NaN and the infinities, which JSON cannot hold, are written as
// null: [CheckFloat] (Validate) refuses them.
func WriteFloat(e *jx.Encoder, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.Null()
		return
	}
	var buf [32]byte
	e.Raw(appendFloat(buf[:0], f))
}

// appendFloat is encoding/json's floatEncoder for a float64, without
// its allocations.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// WriteTime writes t in RFC 3339 form with nanoseconds, as time.Time's
// own MarshalJSON does; in UTC when RFC 3339 cannot write its offset
// (seconds, as local mean time has, or a day or more), so that the text
// is the same instant. A year before 0000 or after 9999 is written with
// more digits or a sign, which RFC 3339 does not allow: [CheckTime]
// (Validate) refuses it.
func WriteTime(e *jx.Encoder, t time.Time) {
	var buf [len(time.RFC3339Nano) + 8]byte // the year's digits past four, and its sign
	e.ByteStr(written(t).AppendFormat(buf[:0], time.RFC3339Nano))
}

// WriteRaw writes raw JSON; nil is null.
func WriteRaw(e *jx.Encoder, raw json.RawMessage) {
	if raw == nil {
		e.Null()
		return
	}
	e.Raw(raw)
}

// WriteExtra writes the additional properties of a struct, by name.
func WriteExtra[T any](e *jx.Encoder, extra map[string]T, enc func(*jx.Encoder, T)) {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e.FieldStart(k)
		enc(e, extra[k])
	}
}

// ExtraClash reports an additional property named like a declared one,
// which would write the name twice.
func ExtraClash[T any](extra map[string]T, declared []string) error {
	for k := range extra {
		if slices.Contains(declared, k) {
			return AtField(Expect("an additional property that is not named like a declared one"), k)
		}
	}
	return nil
}

// WriteUnion writes the branches of a union that are set: one as it is;
// several (an anyOf) as one object with the members of all, a member
// keeping the first branch's value, or as their common value.
func WriteUnion(e *jx.Encoder, set []func(*jx.Encoder)) {
	switch len(set) {
	case 0:
		e.Null()
		return
	case 1:
		set[0](e)
		return
	}
	parts := make([]any, len(set))
	for i, enc := range set {
		var b jx.Encoder
		enc(&b)
		parts[i] = json.RawMessage(slices.Clone(b.Bytes()))
	}
	merged, err := schemaset.MarshalUnion("union", false, parts)
	if err != nil {
		set[0](e)
		return
	}
	e.Raw(merged)
}

// UnionCount checks how many branches of a union are set or matched: at
// least one, and exactly one for a oneOf.
func UnionCount(n int, oneOf bool) error {
	switch {
	case n == 0:
		return Expect("a value matching one of the branches (" + kind(oneOf) + ")")
	case oneOf && n > 1:
		return Expect("a value matching exactly one branch (oneOf), not " + strconv.Itoa(n))
	}
	return nil
}

func kind(oneOf bool) string {
	if oneOf {
		return "oneOf"
	}
	return "anyOf"
}

// Revalidate checks a value built in Go by writing it and decoding the
// result with dec, for types whose rules depend on the JSON as a whole
// (unions: which branches the JSON matches). The text written must be
// UTF-8, which decoding does not check (the runtime checks a body before).
func Revalidate(v Encoder, dec Decoder) error {
	b := Marshal(v)
	if err := checkUTF8(b); err != nil {
		return err
	}
	return Unmarshal(b, dec)
}

// Reference validates with the embedded schema, the reference validator,
// instead of generated rules: validate is the Set's validator of the
// type's schema. Generated code calls it for the types whose schemas use
// keywords it does not translate (model.Type.Inexact).
func Reference(raw []byte, validate func([]byte) error) error {
	err := validate(raw)
	var ve *schemaset.ValidationError
	if errors.As(err, &ve) && len(ve.Problems) > 0 {
		p := ve.Problems[0]
		return &Error{Pointer: p.Pointer, Expected: p.Message, Err: err}
	}
	return Wrap(err, "a value its schema accepts")
}

// Checked reads one value from *d and validates it against the
// reference, then points *d at a decoder over that value alone, for the
// generated decoding that follows: see [Reference].
func Checked(d **jx.Decoder, validate func([]byte) error) error {
	raw, err := (*d).Raw()
	if err != nil {
		return Wrap(err, "a JSON value")
	}
	if err := Reference(raw, validate); err != nil {
		return err
	}
	*d = jx.DecodeBytes(raw)
	return nil
}

// CheckedValue validates a value built in Go against the reference. The
// text written must be UTF-8, which the reference does not check.
func CheckedValue(v Encoder, validate func([]byte) error) error {
	b := Marshal(v)
	if err := checkUTF8(b); err != nil {
		return err
	}
	return Reference(b, validate)
}

// MatchesReference wraps the decoding of a union branch whose generated
// code is not exact: the branch matches when the reference validator
// accepts the value against the branch's schema, and dec decodes it.
func MatchesReference(validate func([]byte) error, dec func(*jx.Decoder) error) func(*jx.Decoder) error {
	return func(d *jx.Decoder) error {
		raw, err := d.Raw()
		if err != nil {
			return Wrap(err, "a JSON value")
		}
		if err := Reference(raw, validate); err != nil {
			return err
		}
		return dec(jx.DecodeBytes(raw))
	}
}
