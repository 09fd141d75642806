package codec_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
	"github.com/warrenbus/warren/runtime/schemaset"
)

// The types below are written as the generator writes shapes: an order
// with a nested struct by value, an optional struct, a list of structs,
// scalar pointers, a Nullable and a slice of strings. Like a generated
// fact's struct, they have no DecodeJSON or EncodeJSON: the codec reaches
// them through CodecFields alone (DecodeValue, EncodeValue).

type testLine struct {
	SKU string `json:"sku"`
	Qty *int64 `json:"qty,omitzero"`
}

var shapeOfTestLine = codec.Shape{Props: []codec.Prop{
	{Name: "sku", Required: true, Rule: &codec.String{MaxLength: 8, Pattern: codec.Regexp("^[A-Z]+$")}},
	{Name: "qty", Rule: &codec.Int{Min: 1, Max: 99}},
}}

func (v *testLine) CodecFields(f []any) (*codec.Shape, []any) {
	return &shapeOfTestLine, append(f, &v.SKU, &v.Qty)
}
func (v *testLine) Validate() error { return codec.Check(v) }

type testOrder struct {
	ID    string                     `json:"id"`
	Main  testLine                   `json:"main"`
	Extra *testLine                  `json:"extra,omitzero"`
	Lines []testLine                 `json:"lines"`
	Note  schemaset.Nullable[string] `json:"note,omitzero"`
	Tags  []string                   `json:"tags,omitzero"`
	Score *float64                   `json:"score"`

	AdditionalProperties map[string]json.RawMessage `json:"-"`
}

var shapeOfTestOrder = codec.Shape{Open: true, Props: []codec.Prop{
	{Name: "id", Required: true, Rule: &codec.String{MinLength: 1, MaxLength: -1}},
	{Name: "main", Required: true},
	{Name: "extra", Null: true},
	{Name: "lines", Required: true, Rule: &codec.Array{MinItems: 1, MaxItems: -1}},
	{Name: "note", Null: true, Rule: &codec.String{MaxLength: 5}},
	{Name: "tags", Rule: &codec.Array{MaxItems: -1, Unique: true}, Item: &codec.String{MaxLength: 3}},
	{Name: "score", Required: true, Null: true},
}}

func (v *testOrder) CodecFields(f []any) (*codec.Shape, []any) {
	return &shapeOfTestOrder, append(f, &v.ID, &v.Main, &v.Extra, &v.Lines, &v.Note, &v.Tags, &v.Score, &v.AdditionalProperties)
}
func (v *testOrder) Validate() error { return codec.Check(v) }

func TestShapeRoundTrip(t *testing.T) {
	in := `{"id":"o1","main":{"sku":"AB","qty":2},"extra":null,"lines":[{"sku":"C"},{"sku":"D","qty":1}],"note":null,"tags":["a","b"],"score":null,"x-more":[1, 2]}`
	var o testOrder
	if err := codec.Unmarshal([]byte(in), &o); err != nil {
		t.Fatal(err)
	}
	if o.Main.SKU != "AB" || *o.Main.Qty != 2 || o.Extra != nil || len(o.Lines) != 2 || !o.Note.Present || o.Note.Valid || o.Score != nil {
		t.Fatalf("decoded %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	// A nil optional pointer is absent; a required one is null; the
	// additional members come last, by name.
	want := `{"id":"o1","main":{"sku":"AB","qty":2},"lines":[{"sku":"C"},{"sku":"D","qty":1}],"note":null,"tags":["a","b"],"score":null,"x-more":[1, 2]}`
	if got := string(codec.Marshal(&o)); got != want {
		t.Errorf("encoded\n%s\nwant\n%s", got, want)
	}
}

func TestShapeRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"main":{"sku":"A"},"lines":[{"sku":"B"}],"score":1}`, `(root): required property "id"`},
		{`{"id":"","main":{"sku":"A"},"lines":[{"sku":"B"}],"score":1}`, `/id: at least 1 character`},
		{`{"id":"o","main":{"sku":"a"},"lines":[{"sku":"B"}],"score":1}`, `/main/sku: a string matching "^[A-Z]+$"`},
		{`{"id":"o","main":{"sku":"A","qty":0},"lines":[{"sku":"B"}],"score":1}`, `/main/qty: at least 1`},
		{`{"id":"o","main":{"sku":"A"},"lines":[],"score":1}`, `/lines: at least 1 item`},
		{`{"id":"o","main":{"sku":"A"},"lines":[{"sku":"B"},{"qty":3}],"score":1}`, `/lines/1: required property "sku"`},
		{`{"id":"o","main":{"sku":"A"},"lines":[{"sku":"B"}],"score":1,"extra":{"sku":"A","other":1}}`, `/extra/other: no such property`},
		{`{"id":"o","main":{"sku":"A"},"lines":[{"sku":"B"}],"score":1,"tags":["a","a"]}`, `/tags: unique items; items 0 and 1 are equal`},
		{`{"id":"o","main":{"sku":"A"},"lines":[{"sku":"B"}],"score":1,"tags":["abcd"]}`, `/tags/0: at most 3 characters`},
		{`{"id":"o","main":{"sku":"A"},"lines":[{"sku":"B"}],"score":1,"note":"toolong"}`, `/note: at most 5 characters`},
		{`{"id":"o","main":null,"lines":[{"sku":"B"}],"score":1}`, `/main: an object, got null`},
		{`{"id":"o","main":{"sku":"A"},"lines":[{"sku":"B"}]}`, `(root): required property "score"`},
	} {
		var o testOrder
		err := codec.Unmarshal([]byte(tc.in), &o)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %s", tc.in, err, tc.want)
		}
	}
}

func TestShapeChecksGoValues(t *testing.T) {
	ok := testOrder{ID: "o", Main: testLine{SKU: "A"}, Lines: []testLine{{SKU: "B"}}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := ok
	bad.Lines = []testLine{{SKU: "B"}, {SKU: "c"}}
	if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), `/lines/1/sku: a string matching`) {
		t.Errorf("got %v", err)
	}
	bad = ok
	bad.Lines = nil // required: an absent array has no items
	if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), `/lines: at least 1 item`) {
		t.Errorf("got %v", err)
	}
	bad = ok
	bad.AdditionalProperties = map[string]json.RawMessage{"id": json.RawMessage(`1`)}
	if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), `/id: an additional property that is not named like a declared one`) {
		t.Errorf("got %v", err)
	}
	if _, err := codec.MarshalObject(&bad); err == nil {
		t.Error("MarshalObject wrote an additional property named like a declared one")
	}
}

// A member read twice keeps the last value, a nested struct included.
func TestShapeMemberTwice(t *testing.T) {
	var o testOrder
	in := `{"id":"o","main":{"sku":"A","qty":5},"main":{"sku":"B"},"lines":[{"sku":"B"}],"score":2}`
	if err := codec.Unmarshal([]byte(in), &o); err != nil {
		t.Fatal(err)
	}
	if o.Main.SKU != "B" || o.Main.Qty != nil || *o.Score != 2 {
		t.Errorf("decoded %+v", o.Main)
	}
}

func BenchmarkShapeDecode(b *testing.B) {
	in := []byte(`{"id":"o1","main":{"sku":"AB","qty":2},"lines":[{"sku":"C"},{"sku":"D","qty":1}],"note":"hi","tags":["a","b"],"score":1.5}`)
	b.ReportAllocs()
	d := jx.GetDecoder()
	for b.Loop() {
		var o testOrder
		d.ResetBytes(in)
		if err := codec.DecodeValue(d, &o); err != nil {
			b.Fatal(err)
		}
	}
}

// Decode starts from a zero value, as a generated DecodeJSON did by
// assigning one: what the JSON leaves out does not survive from before.
func TestDecodeZeroesFirst(t *testing.T) {
	score := 1.5
	o := testOrder{ID: "old", Extra: &testLine{SKU: "X"}, Tags: []string{"t"}, Score: &score, AdditionalProperties: map[string]json.RawMessage{"y": json.RawMessage("1")}}
	if err := codec.Unmarshal([]byte(`{"id":"o2","main":{"sku":"AB"},"lines":[{"sku":"C"}],"score":null}`), &o); err != nil {
		t.Fatal(err)
	}
	if o.ID != "o2" || o.Extra != nil || o.Tags != nil || o.Score != nil || o.AdditionalProperties != nil || len(o.Lines) != 1 || o.Main.Qty != nil {
		t.Errorf("decoded over a filled value: %+v", o)
	}
}

// Marshal of a type the codec cannot write is a mistake of the caller's,
// not JSON of nothing.
func TestMarshalRefusesOtherTypes(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "struct { A int }") {
			t.Errorf("Marshal of a plain struct: recovered %v, want a panic naming its type", r)
		}
	}()
	codec.Marshal(struct{ A int }{1})
}
