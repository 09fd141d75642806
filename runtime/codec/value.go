package codec

import (
	"errors"

	"github.com/go-faster/jx"
)

// A generated type is read and written by the codec in one of two ways: a
// struct written as a [Shape] has only CodecFields ([Struct]), which
// [Decode], [Encode] and [Check] walk; any other generated type (a union,
// a struct with patternProperties or maps, a defined scalar) has its own
// DecodeJSON and EncodeJSON ([Decoder], [Encoder]). The runtime reaches
// both through the functions of this file, so that a Shape struct needs no
// method of its own for them: two functions fewer to compile per fact.

// Decodes reports whether [DecodeValue] can read into v, a pointer to a
// generated type.
func Decodes(v any) bool {
	switch v.(type) {
	case Decoder, Struct:
		return true
	}
	return false
}

// Encodes reports whether [EncodeValue] can write v, a generated type or
// a pointer to one.
func Encodes(v any) bool {
	switch v.(type) {
	case Encoder, Struct:
		return true
	}
	return false
}

// DecodeValue reads the JSON value next in d into v, a pointer to a
// generated type, checking it against its schema in the same pass: with
// v's DecodeJSON when it has one, else with [Decode] (which zeroes v
// first, as DecodeJSON does).
func DecodeValue(d *jx.Decoder, v any) error {
	switch v := v.(type) {
	case Decoder:
		return v.DecodeJSON(d)
	case Struct:
		return Decode(d, v)
	}
	return errNotGenerated
}

// EncodeValue writes v, a generated type or a pointer to one, as JSON to
// e: with its EncodeJSON when it has one, else with [Encode]. It does not
// check v; Validate does. A value of another type writes nothing.
func EncodeValue(e *jx.Encoder, v any) {
	switch v := v.(type) {
	case Encoder:
		v.EncodeJSON(e)
	case Struct:
		Encode(e, v)
	}
}

var errNotGenerated = errors.New("codec: a type that has neither DecodeJSON nor CodecFields")
