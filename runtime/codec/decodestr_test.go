package codec

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/go-faster/jx"
)

// Strings cut from a slab keep their text however many are cut after
// them, from the same slab or new ones, and however the input they were
// read from changes.
func TestSlabStringsKeepTheirText(t *testing.T) {
	s := &scratch{}
	var kept []string
	var want []string
	in := make([]byte, 0, 300)
	for i := range 2000 {
		in = in[:0]
		in = fmt.Appendf(in, "value %d %s", i, strings.Repeat("x", i%(textLong+40)))
		kept = append(kept, s.str(in))
		want = append(want, string(in))
		for j := range in {
			in[j] = '!' // the caller's buffer is reused
		}
	}
	for i := range kept {
		if kept[i] != want[i] {
			t.Fatalf("string %d is now %q, was %q", i, kept[i], want[i])
		}
	}
	if s.str(nil) != "" {
		t.Error("an empty string")
	}
}

type strCase struct {
	Name   string    `json:"name"`
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	When   time.Time `json:"when"`
	Tags   []string  `json:"tags"`
}

var statusValues = Strings{Sorted: []string{"done", "new", "open"}, Expected: `one of "new", "open", "done"`}

var shapeOfStrCase = Shape{Props: []Prop{
	{Name: "name", Rule: &String{MaxLength: 20}},
	{Name: "status", Rule: &statusValues},
	{Name: "at", Rule: &String{Format: FormatOf("date-time"), MaxLength: -1}},
	{Name: "when", Rule: &String{Format: FormatOf("date-time"), MaxLength: 30}},
	{Name: "tags", Item: &String{MaxLength: -1}},
}}

func (v *strCase) CodecFields(f []any) (*Shape, []any) {
	return &shapeOfStrCase, append(f, &v.Name, &v.Status, &v.At, &v.When, &v.Tags)
}

// The strings of a decoded value are its own: equal to the input's text
// (escapes undone), enum values the enum's own strings, date-times
// checked by their format, native or not, and the input free to change.
func TestDecodedStrings(t *testing.T) {
	var sc strCase
	in := []byte(`{"name":"a\"b\u00e9","status":"open","at":"2026-12-01T12:00:00Z","when":"2026-12-01T23:59:60Z","tags":["` + strings.Repeat("t", 200) + `","u","v","w","x"]}`)
	d := jx.DecodeBytes(in)
	err := Decode(d, &sc)
	if err == nil || !strings.Contains(err.Error(), "/when") {
		// Go's parser has no leap second: the reference accepts the text, the time refuses it.
		t.Fatalf("a leap second decoded: %v", err)
	}
	in = []byte(`{"name":"a\"b\u00e9","status":"open","at":"2026-12-01T12:00:00Z","when":"2026-12-01T13:00:00+01:00","tags":["` + strings.Repeat("t", 200) + `","u","v","w","x"]}`)
	sc = strCase{}
	if err := Decode(jx.DecodeBytes(in), &sc); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 0
	}
	if sc.Name != "a\"bé" || sc.Status != "open" || len(sc.Tags) != 5 || sc.Tags[0] != strings.Repeat("t", 200) || sc.Tags[4] != "x" {
		t.Fatalf("decoded %+v", sc)
	}
	if unsafe.StringData(sc.Status) != unsafe.StringData(statusValues.Sorted[2]) {
		t.Error("the status is a string of its own, not the enum's")
	}
	if !sc.At.Equal(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)) || !sc.When.Equal(sc.At) {
		t.Fatalf("times %v %v", sc.At, sc.When)
	}
	for in, want := range map[string]string{
		`{"status":"closed"}`:                        `/status: one of "new", "open", "done"`,
		`{"status":1}`:                               `/status: a string, got a number`,
		`{"at":"2026-12-01T12:00:00"}`:               `/at: a valid date-time`,
		`{"when":"2026-12-01T12:00:00.0000000001Z"}`: `/when: at most 30 characters`,
		`{"name":"` + strings.Repeat("é", 21) + `"}`: `/name: at most 20 characters`,
	} {
		var sc strCase
		err := Decode(jx.DecodeStr(in), &sc)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %s", in, err, want)
		}
	}
}

// An enum's value decodes without a string of its own.
func TestEnumValuesAreTheEnumsStrings(t *testing.T) {
	in := []byte(`{"status":"done"}`)
	d := jx.DecodeBytes(in)
	var sc strCase
	if n := testing.AllocsPerRun(100, func() {
		d.ResetBytes(in)
		if err := Decode(d, &sc); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
	if v, ok := statusValues.find([]byte("new")); !ok || v != "new" {
		t.Error("new not found")
	}
	for _, s := range []string{"", "a", "dona", "donee", "zzz", "new "} {
		if _, ok := statusValues.find([]byte(s)); ok {
			t.Errorf("%q found", s)
		}
	}
}

type ptrCase struct {
	A, B, C *string
}

var shapeOfPtrCase = Shape{Props: []Prop{
	{Name: "a", Rule: &String{MaxLength: 3}},
	{Name: "b", Null: true},
	{Name: "c"},
}}

func (v *ptrCase) CodecFields(f []any) (*Shape, []any) {
	return &shapeOfPtrCase, append(f, &v.A, &v.B, &v.C)
}

// The *string fields of a value point to strings of their own, null
// where allowed, checked as the string would be.
func TestStringPointers(t *testing.T) {
	var kept []ptrCase
	for i := range 20 {
		var v ptrCase
		in := fmt.Sprintf(`{"a":"%d","b":null,"c":"c%d"}`, i, i)
		if i%2 == 1 {
			in = fmt.Sprintf(`{"a":"%d","b":"b%d","c":"c%d"}`, i, i, i)
		}
		if err := Decode(jx.DecodeStr(in), &v); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, v)
	}
	*kept[3].A = "changed"
	for i, v := range kept {
		a, c := fmt.Sprint(i), fmt.Sprintf("c%d", i)
		if i == 3 {
			a = "changed"
		}
		if *v.A != a || *v.C != c || (i%2 == 0) != (v.B == nil) || v.B != nil && *v.B != fmt.Sprintf("b%d", i) {
			t.Errorf("value %d: %q %v %q", i, *v.A, v.B, *v.C)
		}
	}
	for in, want := range map[string]string{
		`{"a":"abcd"}`: "/a: at most 3 characters",
		`{"a":null}`:   "/a: a string, got null",
		`{"c":1}`:      "/c: a string, got a number",
	} {
		var v ptrCase
		if err := Decode(jx.DecodeStr(in), &v); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", in, err, want)
		}
	}
}

// Lengths are in code points, counted only when the bytes do not settle
// them.
func TestStringLengthsInCodePoints(t *testing.T) {
	c := String{MaxLength: 3}
	m := String{MinLength: 2, MaxLength: -1}
	for s, ok := range map[string]bool{"abc": true, "éé": true, "ééé": true, "abcd": false, "éééé": false, "": true} {
		if got := c.Check(s) == nil; got != ok {
			t.Errorf("maxLength 3 on %q: %v", s, got)
		}
	}
	for s, ok := range map[string]bool{"ab": true, "é": false, "éé": true, "a": false, "": false} {
		if got := m.Check(s) == nil; got != ok {
			t.Errorf("minLength 2 on %q: %v", s, got)
		}
	}
}
