package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-faster/jx"
)

// ptrItem is a generated-style type whose methods take a pointer, as the
// methods of generated structs written as a codec.Shape do.
type ptrItem struct{ item codedItem }

func (v *ptrItem) EncodeJSON(e *jx.Encoder) { v.item.EncodeJSON(e) }
func (v *ptrItem) Validate() error          { return v.item.Validate() }

// A payload of such a type is validated and encoded by its own methods
// whether the caller passes a pointer (as generated publishers do) or a
// value: the bytes validator, which fails everything, never runs.
func TestPointerMethodsPayload(t *testing.T) {
	f := Fact{RoutingKey: "item.added", Validate: func([]byte) error { return errors.New("validated bytes") }}
	for name, payload := range map[string]any{
		"pointer": &ptrItem{codedItem{SKU: "a", N: 3}},
		"value":   ptrItem{codedItem{SKU: "a", N: 3}},
	} {
		m, err := encodeFact(f, payload)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(m.payload) != `{"sku":"a","n":3}` {
			t.Errorf("%s: payload %s", name, m.payload)
		}
	}
	for name, payload := range map[string]any{
		"pointer": &ptrItem{codedItem{SKU: "a", N: 5000}},
		"value":   ptrItem{codedItem{SKU: "a", N: 5000}},
	} {
		_, err := encodeFact(f, payload)
		if err == nil || !strings.Contains(err.Error(), "payload does not match its schema: /n: an integer from 0 to 1000") {
			t.Errorf("%s: got %v, want the error of its Validate", name, err)
		}
	}
}
