package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime/codec"
)

// shapedItem is written the way the generator writes a fact's struct: a
// codec.Shape, CodecFields and Validate, and no DecodeJSON or EncodeJSON.
// The runtime must still read and write it in one pass, without
// Fact.Validate (codedFact's fails the test if called).
type shapedItem struct {
	SKU string `json:"sku"`
	N   *int64 `json:"n,omitzero"`
}

var shapeOfShapedItem = codec.Shape{Props: []codec.Prop{
	{Name: "sku", Required: true, Rule: &codec.String{MinLength: 1, MaxLength: -1}},
	{Name: "n", Rule: &codec.Int{Min: 0, Max: 1000}},
}}

func (v *shapedItem) CodecFields(f []any) (*codec.Shape, []any) {
	return &shapeOfShapedItem, append(f, &v.SKU, &v.N)
}

func (v *shapedItem) Validate() error { return codec.Check(v) }

func TestShapedFactIsReadInOnePass(t *testing.T) {
	var got []shapedItem
	r := Handle(codedFact("item.added"), func(_ context.Context, _ Delivery, fact shapedItem) error {
		got = append(got, fact)
		return nil
	})
	if r.decodeAt == nil {
		t.Fatal("Handle of a struct with only CodecFields has no one-pass decoder")
	}
	body := `{"id":"x","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":"a","n":3}}`
	_, h, err := decodeEnvelopeOnce([]byte(body), r.decodeAt)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.call.invoke(context.Background(), Delivery{}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SKU != "a" || got[0].N == nil || *got[0].N != 3 {
		t.Fatalf("handler saw %+v, want sku a, n 3", got)
	}
	body = `{"id":"x","occurred_at":"2026-01-02T03:04:05Z","payload":{"sku":"a","n":1001}}`
	if _, _, err := decodeEnvelopeOnce([]byte(body), r.decodeAt); err == nil || !strings.Contains(err.Error(), "/n") {
		t.Errorf("n 1001: %v, want the payload's error at /n", err)
	}
}

func TestShapedFactIsWrittenInOnePass(t *testing.T) {
	n := int64(7)
	for _, payload := range []any{&shapedItem{SKU: "a", N: &n}, shapedItem{SKU: "a", N: &n}} {
		m, err := encodeFact(codedFact("item.added"), payload)
		if err != nil {
			t.Fatalf("%T: %v", payload, err)
		}
		if got := string(m.payload); got != `{"sku":"a","n":7}` {
			t.Errorf("%T: payload %s", payload, got)
		}
		var env struct{ Payload json.RawMessage }
		if err := json.Unmarshal(m.body, &env); err != nil || string(env.Payload) != string(m.payload) {
			t.Errorf("%T: body %s does not hold the payload (%v)", payload, m.body, err)
		}
	}
	_, err := encodeFact(codedFact("item.added"), &shapedItem{})
	var se *schemaError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "/sku") {
		t.Errorf("empty sku: %v, want a schema error at /sku", err)
	}
}
