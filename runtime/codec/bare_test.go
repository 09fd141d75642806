package codec_test

import (
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime/codec"
)

// A bare struct has CodecFields and nothing else, as the generator writes
// an inline struct reached only as an optional property or an array's
// items: the loops decode, encode and check it alone, duplicates among
// unique items included, and codec.Unmarshal decodes one by itself.

type bareItem struct {
	SKU string `json:"sku"`
	Qty *int64 `json:"qty,omitzero"`
}

var shapeOfBareItem = codec.Shape{Props: []codec.Prop{
	{Name: "sku", Required: true, Rule: &codec.String{MaxLength: 4}},
	{Name: "qty", Rule: &codec.Int{Min: 1, Max: 9}},
}}

func (v *bareItem) CodecFields(f []any) (*codec.Shape, []any) {
	return &shapeOfBareItem, append(f, &v.SKU, &v.Qty)
}

type bareOwner struct {
	Main  *bareItem  `json:"main,omitzero"`
	Items []bareItem `json:"items"`
}

var shapeOfBareOwner = codec.Shape{Props: []codec.Prop{
	{Name: "main"},
	{Name: "items", Required: true, Rule: &codec.Array{MaxItems: -1, Unique: true}},
}}

func (v *bareOwner) CodecFields(f []any) (*codec.Shape, []any) {
	return &shapeOfBareOwner, append(f, codec.Opt[bareItem]{F: &v.Main}, (*codec.List[bareItem])(&v.Items))
}

func TestBareStructs(t *testing.T) {
	var o bareOwner
	in := `{"main":{"sku":"a","qty":2},"main":{"sku":"b"},"items":[{"sku":"x"},{"sku":"y","qty":3}]}`
	if err := codec.Unmarshal([]byte(in), &o); err != nil {
		t.Fatal(err)
	}
	// main read twice: the last one, from a new struct (no qty left over).
	if o.Main == nil || o.Main.SKU != "b" || o.Main.Qty != nil || len(o.Items) != 2 || *o.Items[1].Qty != 3 {
		t.Fatalf("decoded %+v", o)
	}
	if got, err := codec.MarshalObject(&o); err != nil || string(got) != `{"main":{"sku":"b"},"items":[{"sku":"x"},{"sku":"y","qty":3}]}` {
		t.Errorf("encoded %s, %v", got, err)
	}
	for in, want := range map[string]string{
		`{"items":[{"sku":"x"},{"sku":"x"}]}`:     "unique",
		`{"items":[{"sku":"toolong"}]}`:           "/items/0/sku",
		`{"main":{"qty":1},"items":[]}`:           `/main: required property "sku"`,
		`{"main":{"sku":"a","qty":0},"items":[]}`: "/main/qty",
	} {
		var o bareOwner
		if err := codec.Unmarshal([]byte(in), &o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", in, err, want)
		}
	}
	o.Items = append(o.Items, bareItem{SKU: "x"})
	if err := codec.Check(&o); err == nil || !strings.Contains(err.Error(), "unique") {
		t.Errorf("Check of duplicate items: %v", err)
	}
	var one bareItem
	if err := codec.Unmarshal([]byte(`{"sku":"z"}`), &one); err != nil || one.SKU != "z" {
		t.Errorf("one bare struct alone: %+v, %v", one, err)
	}
}
