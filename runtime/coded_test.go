package runtime

import (
	"errors"
	"fmt"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
)

// codedItem is written by hand the way generated fact types are: it
// implements the codec interfaces, so the runtime reads and writes it in
// one pass. Its schema: a closed object, "sku" a required non-empty
// string, "n" an optional integer from 0 to 1000.
type codedItem struct {
	SKU string `json:"sku"`
	N   int    `json:"n"`
}

var (
	_ codec.Decoder   = (*codedItem)(nil)
	_ codec.Encoder   = codedItem{}
	_ codec.Validator = codedItem{}
)

func (v *codedItem) DecodeJSON(d *jx.Decoder) error {
	if d.Next() != jx.Object {
		return codec.Expect("an object")
	}
	var hasSKU bool
	var fail error
	err := d.ObjBytes(func(d *jx.Decoder, key []byte) error {
		switch string(key) {
		case "sku":
			s, err := d.Str()
			if err != nil {
				fail = codec.AtField(codec.Wrap(err, "a string"), "sku")
				return fail
			}
			v.SKU, hasSKU = s, true
		case "n":
			n, err := d.Int()
			if err != nil {
				fail = codec.AtField(codec.Wrap(err, "an integer"), "n")
				return fail
			}
			v.N = n
		default:
			fail = codec.AtField(codec.Expect("no such property"), string(key))
			return fail
		}
		return nil
	})
	if fail != nil {
		return fail
	}
	if err != nil {
		return codec.Wrap(err, "an object")
	}
	if !hasSKU {
		return codec.Expect(`required property "sku"`)
	}
	return v.Validate()
}

func (v codedItem) EncodeJSON(e *jx.Encoder) {
	e.ObjStart()
	e.FieldStart("sku")
	e.Str(v.SKU)
	e.FieldStart("n")
	e.Int(v.N)
	e.ObjEnd()
}

func (v codedItem) Validate() error {
	if v.SKU == "" {
		return codec.AtField(codec.Expect("a non-empty string"), "sku")
	}
	if v.N < 0 || v.N > 1000 {
		return codec.AtField(codec.Expect(fmt.Sprintf("an integer from 0 to 1000, got %d", v.N)), "n")
	}
	return nil
}

// codedFact is the fact of codedItem. Its Validate fails every payload:
// the one-pass paths must not call it.
func codedFact(key string) Fact {
	return Fact{RoutingKey: key, Version: 1, Validate: func([]byte) error {
		return errors.New("Fact.Validate called on the one-pass path")
	}}
}
