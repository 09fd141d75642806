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
	return &shapeOfBareOwner, append(f, &v.Main, &v.Items)
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

// An enum without methods, as the generator writes an inline enum used
// only as a property of structs described as data: the Shape lists its
// field as its string or integer, with the enum's values as the rule.

type dataStatus string

type dataLevel int64

var (
	valuesOfDataStatus = codec.Strings{Sorted: []string{"done", "new"}, Expected: `one of "new", "done"`}
	valuesOfDataLevel  = codec.Ints{Sorted: []int64{1, 3}, Expected: "one of 1, 3"}
)

type dataEnums struct {
	Status dataStatus `json:"status"`
	Level  dataLevel  `json:"level"`
}

var shapeOfDataEnums = codec.Shape{Props: []codec.Prop{
	{Name: "status", Required: true, Rule: &valuesOfDataStatus},
	{Name: "level", Required: true, Rule: &valuesOfDataLevel},
}}

func (v *dataEnums) CodecFields(f []any) (*codec.Shape, []any) {
	return &shapeOfDataEnums, append(f, (*string)(&v.Status), (*int64)(&v.Level))
}

func TestEnumsAsData(t *testing.T) {
	var v dataEnums
	if err := codec.Unmarshal([]byte(`{"status":"done","level":3}`), &v); err != nil || v.Status != "done" || v.Level != 3 {
		t.Fatalf("decoded %+v, %v", v, err)
	}
	if got, err := codec.MarshalObject(&v); err != nil || string(got) != `{"status":"done","level":3}` {
		t.Errorf("encoded %s, %v", got, err)
	}
	for in, want := range map[string]string{
		`{"status":"old","level":1}`: `/status: one of "new", "done"`,
		`{"status":"new","level":2}`: "/level: one of 1, 3",
		`{"status":1,"level":1}`:     "/status",
	} {
		var v dataEnums
		if err := codec.Unmarshal([]byte(in), &v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", in, err, want)
		}
	}
	for _, v := range []dataEnums{{Status: "old", Level: 1}, {Status: "new", Level: 2}} {
		if err := codec.Check(&v); err == nil || !strings.Contains(err.Error(), ": one of") {
			t.Errorf("Check of %+v: %v", v, err)
		}
	}
}
