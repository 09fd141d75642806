package codec_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
)

func dec(s string) *jx.Decoder { return jx.DecodeStr(s) }

func TestInt64TakesWhatJSONSchemaCountsAsIntegers(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "-7": -7, "1.0": 1, "1e2": 100, "2.50e1": 25, "0": 0, "-0": 0,
		"999999999999999999": 999999999999999999, "-999999999999999999": -999999999999999999,
		"9223372036854775807": 9223372036854775807, "-9223372036854775808": -9223372036854775808,
	} {
		got, err := codec.Int64(dec(in))
		if err != nil || got != want {
			t.Errorf("Int64(%s) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"1.5", "9223372036854775808", "-9223372036854775809", "1e30", "-", "1-", `"1"`, "null", "true"} {
		if _, err := codec.Int64(dec(in)); err == nil {
			t.Errorf("Int64(%s) accepted", in)
		}
	}
}

func TestReadersRefuseOtherTypesNamingThem(t *testing.T) {
	_, err := codec.Str(dec("12"))
	if err == nil || err.Error() != "(root): a string, got a number" {
		t.Errorf("Str(12): %v", err)
	}
	if _, err := codec.Float64(dec(`"1"`)); err == nil {
		t.Error(`Float64("1") accepted a string`)
	}
	if _, err := codec.Bool(dec("0")); err == nil {
		t.Error("Bool(0) accepted a number")
	}
	if _, err := codec.Time(dec(`"2024-05-01"`)); err == nil {
		t.Error("Time accepted a date without a time")
	}
}

func TestSliceAndObjectNameTheFailingMember(t *testing.T) {
	_, err := codec.Map(dec(`{"a":[1,2,"x"]}`), func(d *jx.Decoder) ([]int64, error) { return codec.Slice(d, codec.Int64) })
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Pointer != "/a/2" {
		t.Fatalf("got %v, want an error at /a/2", err)
	}
	got, err := codec.Slice(dec(`[]`), codec.Int64)
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("Slice([]) = %#v, %v; want an empty, non-nil slice", got, err)
	}
}

func TestUnmarshalRefusesTrailingData(t *testing.T) {
	var v probe
	if err := codec.Unmarshal([]byte(`"a" `), &v); err != nil {
		t.Errorf("one value and white space: %v", err)
	}
	for _, in := range []string{`"a" "b"`, `"a"}`, `"a",`} {
		if err := codec.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("Unmarshal(%s) accepted what follows the value", in)
		}
	}
}

type probe string

func (p *probe) DecodeJSON(d *jx.Decoder) error {
	s, err := codec.Str(d)
	*p = probe(s)
	return err
}

func TestRequiredNamesTheFirstMissing(t *testing.T) {
	err := codec.Required(0b101, []string{"a", "b", "c"})
	if err == nil || !strings.Contains(err.Error(), `required property "b"`) {
		t.Errorf("got %v", err)
	}
	if err := codec.Required(0b111, []string{"a", "b", "c"}); err != nil {
		t.Errorf("all seen: %v", err)
	}
}

func TestStringCountsCodePoints(t *testing.T) {
	c := codec.String{MinLength: 2, MaxLength: 3}
	for s, ok := range map[string]bool{"é": false, "éé": true, "ééé": true, "éééé": false, "💩💩": true} {
		if err := c.Check(s); (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want ok=%v", s, err, ok)
		}
	}
	p := codec.String{MaxLength: -1, Pattern: codec.Regexp(`^[A-Z]+-\d+$`)}
	if p.Check("AB-1") != nil || p.Check("ab-1") == nil {
		t.Error("pattern")
	}
}

func TestNumberRules(t *testing.T) {
	i := codec.Int{Min: 1, Max: 10, MultipleOf: 3}
	for v, ok := range map[int64]bool{0: false, 3: true, 4: false, 9: true, 12: false} {
		if err := i.Check(v); (err == nil) != ok {
			t.Errorf("Int.Check(%d) = %v", v, err)
		}
	}
	f := codec.Float{Min: 0, ExclusiveMin: true, Max: math.Inf(1), MultipleOf: codec.Rat("0.01")}
	for v, ok := range map[float64]bool{0: false, 0.01: true, 19.99: true, 0.015: false, 1e-9: false} {
		if err := f.Check(v); (err == nil) != ok {
			t.Errorf("Float.Check(%v) = %v", v, err)
		}
	}
}

func TestUniqueItemsCompareJSONValues(t *testing.T) {
	a := codec.Array{MaxItems: -1, Unique: true}
	raw := func(e *jx.Encoder, s string) { e.Raw([]byte(s)) }
	if err := codec.Items(&a, []string{`{"a":1,"b":2}`, `{"b":2,"a":1.0}`}, raw); err == nil {
		t.Error("objects equal up to member order and number form counted as unique")
	}
	for _, pair := range [][]string{{`"a"`, `"\u0061"`}, {`10`, `1e1`}, {`10`, `10.0`}, {`true`, ` true`}} {
		if err := codec.Items(&a, pair, raw); err == nil {
			t.Errorf("%s and %s counted as different", pair[0], pair[1])
		}
	}
	e := codec.EnumOf(`"a"`, `2`, `null`)
	for in, ok := range map[string]bool{`"\u0061"`: true, `2.0`: true, `null`: true, `"2"`: false, `"b"`: false} {
		if err := e.CheckJSON([]byte(in)); (err == nil) != ok {
			t.Errorf("enum check of %s: %v", in, err)
		}
	}
	if err := codec.Items(&a, []string{`1`, `true`, `"1"`}, raw); err != nil {
		t.Errorf("different values: %v", err)
	}
}

func TestFormatUsesTheReferenceCheck(t *testing.T) {
	f := codec.FormatOf("email")
	if f.Check("a@example.com") != nil {
		t.Error("a valid email refused")
	}
	if err := f.Check("not-an-email"); err == nil || !strings.Contains(err.Error(), "email") {
		t.Errorf("got %v", err)
	}
}

func TestDistinctIsUniqueItemsForScalars(t *testing.T) {
	a := codec.Array{MinItems: 1, MaxItems: 3, Unique: true}
	if err := codec.Distinct(&a, []string{"a", "b", "a"}); err == nil || !strings.Contains(err.Error(), "items 0 and 2") {
		t.Errorf("duplicate strings: %v", err)
	}
	if err := codec.Distinct(&a, []float64{1, 2}); err != nil {
		t.Errorf("distinct numbers: %v", err)
	}
	if err := codec.Distinct(&a, []int64{}); err == nil {
		t.Error("minItems not checked")
	}
	got, err := codec.DistinctOf(jx.DecodeStr(`[1, 1.0]`), &a, codec.Float64)
	if err == nil {
		t.Errorf("1 and 1.0 decoded as distinct: %v", got)
	}
}
