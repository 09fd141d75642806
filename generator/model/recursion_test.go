package model

import (
	"strings"
	"testing"
)

// TestRecursionThroughAllOf builds schemas whose definitions include their
// parent through allOf next to properties of their own, and are held in
// the parent's arrays: every $ref cycle passes through a struct and a
// slice, so each builds, with one struct per definition.
func TestRecursionThroughAllOf(t *testing.T) {
	child := func(name string) string {
		return `"` + name + `": {"allOf": [{"$ref": "#/definitions/host"}], "properties": {}}`
	}
	host := func(children ...string) string {
		var props, defs []string
		for _, c := range children {
			props = append(props, `"`+c+`s": {"type": "array", "items": {"$ref": "#/definitions/`+c+`"}}`)
			defs = append(defs, child(c))
		}
		return `{"x-routing-key": "host.changed", "$ref": "#/definitions/host", "definitions": {
			"host": {"type": "object", "properties": {` + strings.Join(props, ", ") + `}}, ` + strings.Join(defs, ", ") + `}}`
	}
	for _, children := range [][]string{{"childA"}, {"childA", "childB"}} {
		t.Run(strings.Join(children, "+"), func(t *testing.T) {
			m, err := build(t, map[string]string{"warren.json": `{"package": "p"}`, "host.json": host(children...)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, typ := range m.Types {
				got = append(got, typ.GoName+":"+typ.Kind.String())
			}
			want := []string{"HostChanged:struct"}
			for _, c := range children {
				want = append(want, strings.ToUpper(c[:1])+c[1:]+":struct")
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("types %v, want %v", got, want)
			}
		})
	}
}

// TestRecursionWithoutName checks the two cycles Go cannot type: through
// nothing, and through an array that has no name, each with its own
// explanation.
func TestRecursionWithoutName(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"through nothing", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}}}`,
			`a.json:1:112: /$defs/x/$ref: $ref "#/$defs/y" leads back to itself without an object or array in between`},
		{"through an unnamed array", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "array", "items": {"$ref": "#/properties/x"}}}}`,
			`a.json:1:64: /properties/x: this schema contains itself (through $ref or allOf) with no named type in between, only arrays or maps, which would be an infinite Go type; move it into $defs, where it becomes a named type`},
		{"through an unnamed array and allOf", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "array", "items": {"allOf": [{"$ref": "#/properties/x"}]}}}}`,
			`a.json:1:64: /properties/x: this schema contains itself (through $ref or allOf) with no named type in between, only arrays or maps, which would be an infinite Go type; move it into $defs, where it becomes a named type`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := build(t, map[string]string{"warren.json": `{"package": "p"}`, "a.json": tt.schema})
			if err == nil || err.Error() != tt.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}

// TestRecursiveInlineUnion builds a definition that is an anyOf whose
// inline branch is an allOf of that definition (found by FuzzModel; the
// builder recursed until the stack overflowed): the branch is a union of
// its own, declared before its branches are typed.
func TestRecursiveInlineUnion(t *testing.T) {
	m, err := build(t, map[string]string{
		"warren.json": `{"package": "p"}`,
		"a.json": `{"x-routing-key": "a.b", "$ref": "#/$defs/node", "$defs": {
			"node": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"allOf": [{"$ref": "#/$defs/node"}], "properties": {}}]}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, typ := range m.Types {
		got = append(got, typ.GoName+":"+typ.Kind.String())
	}
	if want := "AB:union ABOption2:union"; strings.Join(got, " ") != want {
		t.Errorf("types %v, want %s", got, want)
	}
}

// TestInexactOfRecursiveWrappedUnion asks whether generated code checks a
// struct exactly when a field is a one-branch anyOf of that very struct
// (found by FuzzModel: Inexact recursed until the stack overflowed).
func TestInexactOfRecursiveWrappedUnion(t *testing.T) {
	m, err := build(t, map[string]string{
		"warren.json": `{"package": "p"}`,
		"a.json": `{"$schema": "http://json-schema.org/draft-04/schema#", "x-routing-key": "a.b", "$ref": "#/definitions/a", "definitions": {
			"a": {"type": "object", "properties": {"id": {"anyOf": [{"$ref": "#/definitions/b"}]}}},
			"b": {"properties": {}, "allOf": [{"$ref": "#/definitions/a"}]}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range m.Types {
		// Any answer will do (b is an allOf, which may well fall back);
		// that there is one is the test.
		t.Logf("%s: Inexact() = %q", typ.GoName, typ.Inexact())
	}
}
