package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks the parser against encoding/json on arbitrary bytes:
// what it accepts decodes to the same value, what it rejects encoding/json
// rejects too (or it holds a duplicate property name), every error has a
// line and column, and every recorded position is where its value starts.
func FuzzParse(f *testing.F) {
	for _, src := range schemaFiles(f) {
		f.Add(src)
	}
	for _, s := range []string{
		"", " ", "{},", "[1,2", `{"a":1,"a":2,x}`, `{"a":"\u00e9\ud800\n"}`, "\"\xff\"", "-0.0e-1", "[-]", "[01]", "[1e10000, -2E-10000]", "[1e10001]",
		`{"a"}`, "nul", "[true,false,null]", "{\"\\u0000\":\"\\\"\"}", strings.Repeat("[", 20) + strings.Repeat("]", 20),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := Parse("x.json", src)
		dec := json.NewDecoder(bytes.NewReader(src))
		dec.UseNumber()
		var want any
		stdErr := dec.Decode(&want)
		if rest := src[min(int(dec.InputOffset()), len(src)):]; stdErr == nil && len(bytes.TrimLeft(rest, " \t\r\n")) > 0 {
			stdErr = errors.New("data after the value")
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 || e.Col < 1 {
				t.Fatalf("error without a position: %v", err)
			}
			if stdErr == nil && !strings.Contains(e.Msg, "duplicate property") && !strings.Contains(e.Msg, "nested more than") && !strings.Contains(e.Msg, "expected an exponent") {
				t.Fatalf("rejected valid JSON: %v", err)
			}
			return
		}
		if stdErr != nil {
			t.Fatalf("accepted what encoding/json rejects (%v)", stdErr)
		}
		if !reflect.DeepEqual(d.Value, want) {
			t.Fatalf("decoded %#v, encoding/json %#v", d.Value, want)
		}
		checkOffsets(t, d, d.Value, "")
	})
}

// checkOffsets checks that the value at pointer, decoded again from its
// recorded offset, is the value itself.
func checkOffsets(t *testing.T, d *Document, v any, pointer string) {
	off := d.Offset(pointer)
	if off < 0 {
		t.Fatalf("no offset for %q", pointer)
	}
	dec := json.NewDecoder(bytes.NewReader(d.Src[off:]))
	dec.UseNumber()
	var again any
	if err := dec.Decode(&again); err != nil || !reflect.DeepEqual(again, v) {
		t.Fatalf("offset %d of %q: decoded %#v (%v), want %#v", off, pointer, again, err, v)
	}
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			checkOffsets(t, d, c, Append(pointer, k))
		}
	case []any:
		for i, c := range x {
			checkOffsets(t, d, c, AppendIndex(pointer, i))
		}
	}
}
