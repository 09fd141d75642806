package schemadiff

import (
	"context"
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/load"
)

// propertyDir is a schema directory whose one fact has one property "p"
// with the given schema, and a shared definition file for $refs.
func propertyDir(t *testing.T, p string) *Dir {
	t.Helper()
	fsys := fstest.MapFS{
		"warren.json": {Data: []byte(`{"package": "shop"}`)},
		"fact.json":   {Data: []byte(`{"x-routing-key": "thing.happened", "type": "object", "properties": {"p": ` + p + `}}`)},
		"defs.json":   {Data: []byte(`{"$defs": {"name": {"type": "string", "maxLength": 10}, "code": {"type": "string", "maxLength": 5}}}`)},
	}
	s, err := load.LoadFS(context.Background(), fsys)
	if err != nil {
		t.Fatalf("schema %s: %v", p, err)
	}
	return NewDir(s)
}

// TestSchemaRules compares one property schema before and after, for the
// finer points of each rule: which keywords, which direction, what the
// message says.
func TestSchemaRules(t *testing.T) {
	tests := []struct {
		old, new string
		want     []string // "rule: message"
	}{
		{`{"type": "number", "exclusiveMaximum": 10}`, `{"type": "number", "exclusiveMaximum": 5}`,
			[]string{"constraint-tightened: exclusiveMaximum lowered from 10 to 5"}},
		{`{"type": "number", "exclusiveMinimum": 1.5}`, `{"type": "number", "exclusiveMinimum": 1.25}`,
			[]string{"constraint-loosened: exclusiveMinimum lowered from 1.5 to 1.25"}},
		{`{"type": "number", "minimum": 1}`, `{"type": "number", "minimum": 1.0}`, nil}, // the same number
		{`{"type": "integer", "multipleOf": 2}`, `{"type": "integer", "multipleOf": 4}`,
			[]string{"constraint-tightened: multipleOf changed from 2 to 4: values the old one accepted fail"}},
		{`{"type": "integer", "multipleOf": 4}`, `{"type": "integer", "multipleOf": 2}`,
			[]string{"constraint-loosened: multipleOf changed from 4 to 2, which divides it"}},
		{`{"type": "integer", "multipleOf": 2}`, `{"type": "integer", "multipleOf": 3}`,
			[]string{"constraint-tightened: multipleOf changed from 2 to 3: values the old one accepted fail"}},
		{`{"type": "string", "pattern": "^a"}`, `{"type": "string", "pattern": "^a|b"}`,
			[]string{`constraint-tightened: pattern changed from "^a" to "^a|b": warren cannot prove the new one accepts every value the old one did`}},
		{`{"type": "string", "format": "email"}`, `{"type": "string"}`,
			[]string{`constraint-loosened: format "email" removed`}},
		{`{"type": "array", "items": {"type": "string"}}`, `{"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 3}`,
			[]string{"constraint-tightened: maxItems 3 added", "constraint-tightened: uniqueItems is now true: arrays with repeated elements fail"}},
		{`{"type": "array", "items": {"type": "string"}}`, `{"type": "array", "items": {"type": "integer"}}`,
			[]string{`type-changed: type changed from "string" to "integer"`}},
		{`{"type": "array", "items": {"type": "string"}}`, `{"type": "array"}`,
			[]string{"type-changed: items no longer has a schema: array elements may be any JSON value"}},
		{`{"type": "array"}`, `{"type": "array", "items": {"type": "string"}}`,
			[]string{"constraint-tightened: items now has a schema: values must match it"}},
		{`{"const": "a"}`, `{"const": "b"}`, []string{`constraint-tightened: const changed from "a" to "b"`}},
		{`{"type": "string"}`, `{"type": "string", "enum": ["a", "b"]}`, []string{`constraint-tightened: enum added: only "a", "b" accepted now`}},
		{`{"type": "string", "enum": ["a", "b"]}`, `{"type": "string"}`, []string{"constraint-loosened: enum removed: any value of the type is accepted now"}},
		{`{"type": "string", "enum": ["a", "b"]}`, `{"type": "string", "enum": ["b", "c"]}`,
			[]string{`enum-value-removed: enum value "a" removed: payloads that use it fail`, `enum-value-added: enum value "c" added`}},
		{`{"type": ["integer", "null"]}`, `{"type": "integer"}`, []string{`type-narrowed: type narrowed from ["integer", "null"] to "integer"`}},
		{`{"type": "integer"}`, `{"type": "number"}`,
			[]string{`type-changed: type widened from "integer" to "number": the generated Go type changes and consumers may get values they never handled`}},
		{`{"type": ["number", "integer"]}`, `{"type": "number"}`, nil}, // an integer is a number
		{`{"type": "string"}`, `{}`, []string{`type-changed: type "string" removed: any JSON value is accepted now`}},
		{`{"allOf": [{"type": "number"}, {"type": "integer"}]}`, `{"type": "integer"}`, nil}, // allOf intersects types
		{`{"type": "object", "additionalProperties": {"type": "string"}}`, `{"type": "object", "additionalProperties": {"type": "string", "minLength": 1}}`,
			[]string{"constraint-tightened: minLength 1 added"}},
		{`{"type": "object"}`, `{"type": "object", "additionalProperties": {"type": "string"}}`,
			[]string{"constraint-tightened: additionalProperties now has a schema: values must match it"}},
		{`{"$ref": "defs.json#/$defs/name"}`, `{"$ref": "defs.json#/$defs/code"}`, // a different definition, compared by content
			[]string{"constraint-tightened: maxLength lowered from 10 to 5"}},
		{`{"$ref": "defs.json#/$defs/name"}`, `{"type": "string", "maxLength": 10}`, nil}, // inlined: the same schema
		{`{"oneOf": [{"type": "string"}, {"type": "integer"}]}`, `{"type": "string"}`,
			[]string{"type-changed: oneOf removed: the generated Go type changes", `type-narrowed: type "string" added: any JSON value was accepted before`}},
		{`{"type": "string"}`, `false`, []string{"constraint-tightened: the schema is now false: no value is valid"}},
		{`{"type": "object", "properties": {"a": {"type": "string"}}, "dependentRequired": {"a": ["b"]}}`, `{"type": "object", "properties": {"a": {"type": "string"}}}`,
			[]string{`unclassified-change: dependentRequired changed from {"a":["b"]} to (none): warren cannot tell whether this accepts less, so it counts as breaking`}},
	}
	for _, tt := range tests {
		t.Run(tt.old+" -> "+tt.new, func(t *testing.T) {
			r := Compare(propertyDir(t, tt.old), propertyDir(t, tt.new))
			var got []string
			for _, c := range r.Changes {
				got = append(got, fmt.Sprintf("%s: %s", c.Rule, c.Message))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
