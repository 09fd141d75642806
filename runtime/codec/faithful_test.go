package codec_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Amsterdam, whatever the machine has

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
	"github.com/warrenbus/warren/runtime/schemaset"
)

// reading is a Shape with every way a string, number or date-time sits in
// a generated struct: plain and with a rule, behind a pointer, in a
// Nullable, as items, as an additional property's name and raw value.
type reading struct {
	ID      string                        `json:"id"`
	Sensor  string                        `json:"sensor"`
	Label   schemaset.Nullable[string]    `json:"label,omitzero"`
	Weight  float64                       `json:"weight"`
	Ratio   *float64                      `json:"ratio,omitzero"`
	Bias    schemaset.Nullable[float64]   `json:"bias,omitzero"`
	Samples []float64                     `json:"samples"`
	Tags    []string                      `json:"tags"`
	At      time.Time                     `json:"at"`
	Due     *time.Time                    `json:"due,omitzero"`
	Since   schemaset.Nullable[time.Time] `json:"since,omitzero"`
	Note    *string                       `json:"note,omitzero"`
	Raw     json.RawMessage               `json:"raw,omitzero"`

	AdditionalProperties map[string]json.RawMessage `json:"-"`
}

var shapeOfReading = codec.Shape{Open: true, Props: []codec.Prop{
	{Name: "id", Required: true, Rule: &codec.String{MinLength: 1, MaxLength: 64}},
	{Name: "sensor", Required: true},
	{Name: "label", Null: true},
	// "exclusiveMinimum": 0, as a weight in grams has
	{Name: "weight", Required: true, Rule: &codec.Float{Min: 0, Max: math.Inf(1), ExclusiveMin: true}},
	{Name: "ratio"},
	{Name: "bias", Null: true},
	{Name: "samples", Required: true},
	{Name: "tags", Required: true, Item: &codec.String{MaxLength: 16}},
	{Name: "at", Required: true},
	{Name: "due"},
	{Name: "since", Null: true},
	{Name: "note"},
	{Name: "raw"},
}}

func (v *reading) CodecFields(f []any) (*codec.Shape, []any) {
	return &shapeOfReading, append(f, &v.ID, &v.Sensor, &v.Label, &v.Weight, &v.Ratio, &v.Bias, &v.Samples, &v.Tags, &v.At, &v.Due, &v.Since, &v.Note, &v.Raw, &v.AdditionalProperties)
}
func (v *reading) Validate() error { return codec.Check(v) }

func newReading() *reading {
	note := "calibrated on site, café"
	ratio := 0.5
	due := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	return &reading{
		ID:                   "r-0001-2026",
		Sensor:               "north-hall/scale-3",
		Label:                schemaset.Some("pallet ø 120"),
		Weight:               1234.5,
		Ratio:                &ratio,
		Bias:                 schemaset.Some(-0.25),
		Samples:              []float64{1234.4, 1234.5, 1234.6, 1e-7, 3e21},
		Tags:                 []string{"dry", "bulk", "night"},
		At:                   time.Date(2026, 3, 1, 12, 30, 0, 123_000_000, time.FixedZone("", 3600)),
		Due:                  &due,
		Since:                schemaset.Some(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)),
		Note:                 &note,
		Raw:                  json.RawMessage(`{"k":"ü"}`),
		AdditionalProperties: map[string]json.RawMessage{"x-site": json.RawMessage(`"NH"`)},
	}
}

// Validate refuses every value its JSON cannot hold, wherever it sits in
// the struct, naming its property and what was expected; a value it
// accepts is written as JSON that decodes back to it.
func TestValidateRefusesWhatJSONCannotHold(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	bad := "a\xffb"
	y10000 := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	yMinus1 := time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		edit func(*reading)
		want string
	}{
		{"NaN with exclusiveMinimum 0", func(r *reading) { r.Weight = nan }, "/weight: a finite number, got NaN"},
		{"+Inf with exclusiveMinimum 0", func(r *reading) { r.Weight = inf }, "/weight: a finite number, got +Inf"},
		{"-Inf with exclusiveMinimum 0", func(r *reading) { r.Weight = -inf }, "/weight: a finite number, got -Inf"},
		{"NaN behind a pointer", func(r *reading) { r.Ratio = &nan }, "/ratio: a finite number, got NaN"},
		{"+Inf in a Nullable", func(r *reading) { r.Bias = schemaset.Some(inf) }, "/bias: a finite number, got +Inf"},
		{"-Inf as an item", func(r *reading) { r.Samples[2] = -inf }, "/samples/2: a finite number, got -Inf"},
		{"bad UTF-8 in a string", func(r *reading) { r.Sensor = bad }, "/sensor: a string of valid UTF-8, got invalid byte 0xff at offset 1"},
		{"bad UTF-8 in a string with a rule", func(r *reading) { r.ID = bad }, "/id: a string of valid UTF-8, got invalid byte 0xff at offset 1"},
		{"bad UTF-8 in an optional string", func(r *reading) { r.Note = &bad }, "/note: a string of valid UTF-8"},
		{"bad UTF-8 in a Nullable string", func(r *reading) { r.Label = schemaset.Some(bad) }, "/label: a string of valid UTF-8"},
		{"bad UTF-8 in an item", func(r *reading) { r.Tags = []string{"ok", "caf\xe9"} }, "/tags/1: a string of valid UTF-8, got invalid byte 0xe9 at offset 3"},
		{"bad UTF-8 in a property name", func(r *reading) { r.AdditionalProperties = map[string]json.RawMessage{bad: json.RawMessage("1")} }, `(root): property names of valid UTF-8, got "a\xffb"`},
		{"bad UTF-8 in an additional property", func(r *reading) {
			r.AdditionalProperties = map[string]json.RawMessage{"x": json.RawMessage(`"` + bad + `"`)}
		}, "/x: JSON text of valid UTF-8, got invalid byte 0xff at offset 2"},
		{"bad UTF-8 in raw JSON", func(r *reading) { r.Raw = json.RawMessage(`"` + bad + `"`) }, "/raw: JSON text of valid UTF-8"},
		{"raw bytes that are no JSON", func(r *reading) { r.Raw = json.RawMessage(`calibrated`) }, "/raw: JSON text, got invalid character 'c' looking for beginning of value (byte 1 of 10)"},
		{"raw JSON cut short", func(r *reading) { r.Raw = json.RawMessage(`{"k":`) }, "/raw: JSON text, got unexpected end of JSON input"},
		{"raw bytes of two values", func(r *reading) { r.Raw = json.RawMessage(`1 2`) }, "/raw: JSON text, got invalid character '2' after top-level value"},
		{"an empty raw value", func(r *reading) { r.Raw = json.RawMessage{} }, "/raw: JSON text, got nothing"},
		{"an additional property that is no JSON", func(r *reading) {
			r.AdditionalProperties = map[string]json.RawMessage{"x-site": json.RawMessage(`NH`)}
		}, "/x-site: JSON text, got invalid character 'N'"},
		{"year 10000", func(r *reading) { r.At = y10000 }, "/at: a date-time in the years 0000 to 9999 (RFC 3339), got the year 10000"},
		{"year -1", func(r *reading) { r.At = yMinus1 }, "/at: a date-time in the years 0000 to 9999 (RFC 3339), got the year -1"},
		{"year 10000 behind a pointer", func(r *reading) { r.Due = &y10000 }, "/due: a date-time in the years 0000 to 9999"},
		{"year -1 in a Nullable", func(r *reading) { r.Since = schemaset.Some(yMinus1) }, "/since: a date-time in the years 0000 to 9999"},
		// 9999-12-31T23:59:59-00:00:30 is written in UTC (see WriteTime):
		// in the year 10000.
		{"year 10000 once in UTC", func(r *reading) {
			r.At = time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -30))
		}, "/at: a date-time in the years 0000 to 9999 (RFC 3339), got the year 10000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReading()
			if err := r.Validate(); err != nil {
				t.Fatalf("the reading before the edit: %v", err)
			}
			tc.edit(r)
			err := r.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %s", err, tc.want)
			}
			var ce *codec.Error
			if !asError(err, &ce) {
				t.Errorf("Validate() = %#v, want a *codec.Error", err)
			}
		})
	}
}

func asError(err error, target **codec.Error) bool {
	ce, ok := err.(*codec.Error)
	*target = ce
	return ok
}

// A value Validate accepts is written as JSON that decodes back to the
// same value: the times to the same instants, the numbers as they were.
func TestValidatedReadingRoundTrips(t *testing.T) {
	r := newReading()
	r.Weight = math.SmallestNonzeroFloat64
	r.Samples = []float64{-0.0, 1e21, 1e-6, 9.999999e-7, math.MaxFloat64, 0.1 + 0.2}
	r.At = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	due := time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("", 30))
	r.Due = &due
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	raw := codec.Marshal(r)
	var back reading
	if err := codec.Unmarshal(raw, &back); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	if !back.At.Equal(r.At) || !back.Due.Equal(*r.Due) || back.Weight != r.Weight {
		t.Errorf("read back %v, %v, %v; wrote %v, %v, %v", back.At, back.Due, back.Weight, r.At, r.Due, r.Weight)
	}
	for i, f := range r.Samples {
		if back.Samples[i] != f || math.Signbit(back.Samples[i]) != math.Signbit(f) {
			t.Errorf("sample %d read back as %v, wrote %v", i, back.Samples[i], f)
		}
	}
}

// A time whose zone offset has seconds (local mean time, as zones had
// before standard time) is written in UTC: the text is the same instant,
// not one moved by the seconds RFC 3339 cannot write.
func TestTimeWithOffsetInSecondsRoundTrips(t *testing.T) {
	amsterdam, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{
		time.Date(1900, 1, 1, 0, 0, 0, 0, amsterdam), // +00:19:32
		time.Date(2026, 3, 1, 12, 0, 0, 5, time.FixedZone("", 5*3600+30*60+17)),
		time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("", -(3600+1))),
		time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("", 24*3600)), // no RFC 3339 offset
		time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("", -25*3600)),
	} {
		r := newReading()
		r.At = at
		r.Since = schemaset.Some(at)
		if err := r.Validate(); err != nil {
			t.Fatalf("%v: %v", at, err)
		}
		raw := codec.Marshal(r)
		var back reading
		if err := codec.Unmarshal(raw, &back); err != nil {
			t.Fatalf("%v: decoding %s: %v", at, raw, err)
		}
		if !back.At.Equal(at) || !back.Since.Value.Equal(at) {
			t.Errorf("%v written as %s, read back as %v: moved by %v", at, raw, back.At, back.At.Sub(at))
		}
	}
	// A whole-minute offset is kept, as time.Time's MarshalJSON keeps it.
	e := jx.GetEncoder()
	defer jx.PutEncoder(e)
	codec.WriteTime(e, time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("", -(9*3600+30*60))))
	if got, want := string(e.Bytes()), `"2026-03-01T12:00:00-09:30"`; got != want {
		t.Errorf("WriteTime = %s, want %s", got, want)
	}
	e.Reset()
	codec.WriteTime(e, time.Date(1900, 1, 1, 0, 0, 0, 0, amsterdam))
	if got, want := string(e.Bytes()), `"1899-12-31T23:40:28Z"`; got != want {
		t.Errorf("WriteTime = %s, want %s", got, want)
	}
}

// WriteFloat writes what encoding/json writes, for every float64 it
// accepts, and allocates nothing.
func TestWriteFloatMatchesEncodingJSON(t *testing.T) {
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.99999e-7, 1e-7, 1e20, 1e21, 123456789e13,
		math.MaxFloat64, math.SmallestNonzeroFloat64, -math.MaxFloat64, 5e-324, 1.5e-9, 2.5e300, 0.1 + 0.2}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		f := math.Float64frombits(rng.Uint64())
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			floats = append(floats, f)
		}
	}
	e := jx.GetEncoder()
	defer jx.PutEncoder(e)
	for _, f := range floats {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		e.Reset()
		codec.WriteFloat(e, f)
		if string(e.Bytes()) != string(want) {
			t.Fatalf("WriteFloat(%v) = %s, want %s", f, e.Bytes(), want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		e.Reset()
		codec.WriteFloat(e, f)
		if string(e.Bytes()) != "null" {
			t.Errorf("WriteFloat(%v) = %s, want null (which Validate refuses to come to)", f, e.Bytes())
		}
	}
	if n := testing.AllocsPerRun(100, func() { e.Reset(); codec.WriteFloat(e, 1234.5678) }); n != 0 {
		t.Errorf("WriteFloat allocates %v times, want 0", n)
	}
}

// The rules and helpers generated code calls on values built in Go
// refuse the same values (generated code with a rule calls its Check,
// without one the function of faithful.go).
func TestRulesRefuseWhatJSONCannotHold(t *testing.T) {
	bad := "a\xffb"
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"String.Check", (&codec.String{MaxLength: -1}).Check(bad), "(root): a string of valid UTF-8, got invalid byte 0xff at offset 1"},
		{"String.Check, short enough", (&codec.String{MaxLength: 10}).Check(bad), "(root): a string of valid UTF-8"},
		{"String.Check with a pattern", (&codec.String{MaxLength: -1, Pattern: codec.Regexp(".*")}).Check(bad), "(root): a string of valid UTF-8"},
		{"CheckText", codec.CheckText(bad), "(root): a string of valid UTF-8, got invalid byte 0xff at offset 1"},
		{"Float.Check NaN", (&codec.Float{Min: 0, Max: math.Inf(1), ExclusiveMin: true}).Check(math.NaN()), "(root): a finite number, got NaN"},
		{"Float.Check +Inf", (&codec.Float{Min: math.Inf(-1), Max: math.Inf(1)}).Check(math.Inf(1)), "(root): a finite number, got +Inf"},
		{"Float.Check -Inf", (&codec.Float{Min: math.Inf(-1), Max: math.Inf(1), MultipleOf: codec.Rat("0.5")}).Check(math.Inf(-1)), "(root): a finite number, got -Inf"},
		{"CheckFloat NaN", codec.CheckFloat(math.NaN()), "(root): a finite number, got NaN"},
		{"CheckTime 10000", codec.CheckTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)), "(root): a date-time in the years 0000 to 9999 (RFC 3339), got the year 10000"},
		{"CheckTime -1", codec.CheckTime(time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)), "(root): a date-time in the years 0000 to 9999 (RFC 3339), got the year -1"},
		{"CheckRaw", codec.CheckRaw(json.RawMessage(`"` + bad + `"`)), "(root): JSON text of valid UTF-8, got invalid byte 0xff at offset 2"},
		{"CheckRaw, no JSON", codec.CheckRaw(json.RawMessage(`{"a":}`)), "(root): JSON text, got invalid character '}' looking for beginning of value (byte 6 of 6)"},
		{"Any.Check, no JSON", (&codec.Any{Types: []string{"string"}}).Check(json.RawMessage(`label`)), "(root): JSON text, got invalid character 'l'"},
		{"Each, raw items", codec.Each([]json.RawMessage{json.RawMessage(`1`), json.RawMessage(`[1,]`)}, codec.CheckRaw), "/1: JSON text, got invalid character ']'"},
		{"EachValue, raw values", codec.EachValue(map[string]json.RawMessage{"a": json.RawMessage(`{}`), "b": json.RawMessage(`{`)}, codec.CheckRaw), "/b: JSON text, got unexpected end of JSON input"},
		{"Any.Check", (&codec.Any{Types: []string{"string"}}).Check(json.RawMessage(`"` + bad + `"`)), "(root): JSON text of valid UTF-8"},
		{"CheckNames", codec.CheckNames(map[string]int64{"ok": 1, bad: 2}), `(root): property names of valid UTF-8, got "a\xffb" (invalid byte 0xff at offset 1)`},
		{"CheckKeys", codec.CheckKeys(&codec.Keys{Patterns: []*codec.Pattern{codec.Regexp("^a")}}, map[string]bool{bad: true}), `(root): property names of valid UTF-8, got "a\xffb"`},
		{"EachValue, a name", codec.EachValue(map[string]string{bad: "ok"}, codec.CheckText), `(root): property names of valid UTF-8, got "a\xffb"`},
		{"EachValue, a value", codec.EachValue(map[string]string{"k": bad}, codec.CheckText), "/k: a string of valid UTF-8"},
		{"Each", codec.Each([]string{"ok", bad}, codec.CheckText), "/1: a string of valid UTF-8"},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %s", tc.name, tc.err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"CheckText", codec.CheckText("café \U0001F600 \uFFFD")},
		{"CheckFloat", codec.CheckFloat(-math.MaxFloat64)},
		{"CheckTime 0000", codec.CheckTime(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC))},
		{"CheckTime 9999", codec.CheckTime(time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC))},
		{"CheckTime 9999, ahead of UTC", codec.CheckTime(time.Date(9999, 12, 31, 23, 30, 0, 0, time.FixedZone("", -3600)))},
		{"CheckRaw nil", codec.CheckRaw(nil)},
		{"CheckRaw with white space", codec.CheckRaw(json.RawMessage(" {\"a\": [1, null]}\n"))},
		{"CheckNames nil", codec.CheckNames[int64](nil)},
	} {
		if tc.err != nil {
			t.Errorf("%s: %v, want nil", tc.name, tc.err)
		}
	}
}

// Decoding does not look at UTF-8 again (the runtime refuses a body that
// is not before decoding it); a value read from valid text passes
// Validate.
func TestDecodedReadingValidates(t *testing.T) {
	in := `{"id":"r","sensor":"s ø","weight":1,"samples":[1e-7,2],"tags":["ü"],"at":"9999-12-31T23:59:59.5-23:59","x-é":"ü"}`
	var r reading
	if err := codec.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}
