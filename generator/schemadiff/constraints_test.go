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
	return propertyDirAsserting(t, p, "")
}

// propertyDirAsserting is propertyDir whose manifest asserts the format
// asserted ("" for none).
func propertyDirAsserting(t *testing.T, p, asserted string) *Dir {
	t.Helper()
	manifest := `{"package": "shop"}`
	if asserted != "" {
		manifest = `{"package": "shop", "assertFormats": ["` + asserted + `"]}`
	}
	fsys := fstest.MapFS{
		"warren.json": {Data: []byte(manifest)},
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
		want     []string // "rule (directions it breaks): message"
	}{
		{`{"type": "number", "exclusiveMaximum": 10}`, `{"type": "number", "exclusiveMaximum": 5}`,
			[]string{`constraint-tightened (backward): exclusiveMaximum lowered from 10 to 5`}},
		{`{"type": "number", "exclusiveMinimum": 1.5}`, `{"type": "number", "exclusiveMinimum": 1.25}`,
			[]string{`constraint-loosened (forward): exclusiveMinimum lowered from 1.5 to 1.25`}},
		{`{"type": "number", "minimum": 1}`, `{"type": "number", "minimum": 1.0}`,
			nil}, // the same number
		{`{"type": "integer", "multipleOf": 2}`, `{"type": "integer", "multipleOf": 4}`,
			[]string{`constraint-tightened (backward): multipleOf changed from 2 to 4, a multiple of it`}},
		{`{"type": "integer", "multipleOf": 4}`, `{"type": "integer", "multipleOf": 2}`,
			[]string{`constraint-loosened (forward): multipleOf changed from 4 to 2, which divides it`}},
		{`{"type": "integer", "multipleOf": 2}`, `{"type": "integer", "multipleOf": 3}`,
			[]string{`constraint-changed (both): multipleOf changed from 2 to 3: each accepts values the other rejects`}},
		{`{"type": "string", "pattern": "^a"}`, `{"type": "string", "pattern": "^a|b"}`,
			[]string{`constraint-changed (both): pattern changed from "^a" to "^a|b": warren cannot prove that either accepts every value the other does`}},
		{`{"type": "string", "format": "email"}`, `{"type": "string"}`,
			[]string{`format-annotation-changed (none): format "email" removed: an annotation on both sides: neither manifest lists it in assertFormats`}},
		{`{"type": "array", "items": {"type": "string"}}`, `{"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 3}`,
			[]string{`constraint-tightened (backward): maxItems 3 added`, `constraint-tightened (backward): uniqueItems is now true: arrays with repeated elements fail`}},
		{`{"type": "array", "items": {"type": "string"}}`, `{"type": "array", "items": {"type": "integer"}}`,
			[]string{`type-changed (both): type changed from "string" to "integer"`}},
		{`{"type": "array", "items": {"type": "string"}}`, `{"type": "array"}`,
			[]string{`type-widened (forward): items no longer has a schema: array elements may be any JSON value`}},
		{`{"type": "array"}`, `{"type": "array", "items": {"type": "string"}}`,
			[]string{`constraint-tightened (backward): items now has a schema: values must match it`}},
		{`{"const": "a"}`, `{"const": "b"}`,
			[]string{`constraint-changed (both): const changed from "a" to "b"`}},
		{`{"type": "string"}`, `{"type": "string", "enum": ["a", "b"]}`,
			[]string{`constraint-tightened (backward): enum added: only "a", "b" accepted now`}},
		{`{"type": "string", "enum": ["a", "b"]}`, `{"type": "string"}`,
			[]string{`constraint-loosened (forward): enum removed: any value of the type is accepted now`}},
		{`{"type": "string", "enum": ["a", "b"]}`, `{"type": "string", "enum": ["b", "c"]}`,
			[]string{`enum-value-added (forward): enum value "c" added: consumers built from the old schema reject facts that use it`, `enum-value-removed (backward): enum value "a" removed: facts written with it fail new consumers`}},
		{`{"type": ["integer", "null"]}`, `{"type": "integer"}`,
			[]string{`type-narrowed (backward): type narrowed from ["integer", "null"] to "integer"`}},
		{`{"type": "integer"}`, `{"type": "number"}`,
			[]string{`type-widened (forward): type widened from "integer" to "number": consumers built from the old schema reject the new values`}},
		{`{"type": ["number", "integer"]}`, `{"type": "number"}`,
			nil}, // an integer is a number
		{`{"type": "string"}`, `{}`,
			[]string{`type-widened (forward): type "string" removed: any JSON value is accepted now`}},
		{`{"allOf": [{"type": "number"}, {"type": "integer"}]}`, `{"type": "integer"}`,
			nil}, // allOf intersects types
		{`{"type": "object", "additionalProperties": {"type": "string"}}`, `{"type": "object", "additionalProperties": {"type": "string", "minLength": 1}}`,
			[]string{`constraint-tightened (backward): minLength 1 added`}},
		{`{"type": "object"}`, `{"type": "object", "additionalProperties": {"type": "string"}}`,
			[]string{`constraint-tightened (backward): additionalProperties now has a schema: values must match it`}},
		{`{"$ref": "defs.json#/$defs/name"}`, `{"$ref": "defs.json#/$defs/code"}`,
			[]string{`constraint-tightened (backward): maxLength lowered from 10 to 5`}},
		{`{"$ref": "defs.json#/$defs/name"}`, `{"type": "string", "maxLength": 10}`,
			nil}, // inlined: the same schema
		{`{"oneOf": [{"type": "string"}, {"type": "integer"}]}`, `{"type": "string"}`,
			[]string{`type-narrowed (backward): type "string" added: any JSON value was accepted before`, `type-widened (forward): oneOf removed: values need not match its branches any more`}},
		{`{"type": "string"}`, `false`,
			[]string{`constraint-tightened (backward): the schema is now false: no value is valid`}},
		{`{"type": "object", "properties": {"a": {"type": "string"}}, "dependentRequired": {"a": ["b"]}}`, `{"type": "object", "properties": {"a": {"type": "string"}}}`,
			[]string{`unclassified-change (both): dependentRequired changed from {"a":["b"]} to (none): warren cannot tell whether this accepts more or less, so it counts as breaking both ways`}},
		// Properties are judged by what each side's consumers check: the
		// old side's additionalProperties for a property added, the new
		// side's for one removed, and required on both.
		{`{"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}`, `{"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}`,
			[]string{`property-added (forward): new optional property "b" on a closed object: consumers built from the old schema reject facts that carry it`}},
		{`{"type": "object", "properties": {"a": {"type": "string"}}}`, `{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}`,
			[]string{`property-added (none): new optional property "b"`}},
		{`{"type": "object", "additionalProperties": {"type": "string"}}`, `{"type": "object", "additionalProperties": {"type": "string"}, "properties": {"b": {"type": "integer"}}}`,
			[]string{`property-added (forward): new optional property "b" on a closed object: consumers built from the old schema reject facts that carry it`}},
		{`{"type": "object", "properties": {"a": {"type": "string"}}}`, `{"type": "object", "required": ["b"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}`,
			[]string{`required-property-added (backward): new property "b" is required: facts written without it fail new consumers`}},
		{`{"type": "object", "unevaluatedProperties": false, "properties": {"a": {"type": "string"}}}`, `{"type": "object", "unevaluatedProperties": false, "required": ["b"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}`,
			[]string{`required-property-added (both): new property "b" is required: facts written without it fail new consumers, and old consumers reject it on their closed object`}},
		{`{"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}`, `{"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}`,
			[]string{`property-removed (backward): property "b" was removed: facts written under the old schema carry it and the object is closed`}},
		{`{"type": "object", "required": ["b"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}`, `{"type": "object", "properties": {"a": {"type": "string"}}}`,
			[]string{`property-removed (forward): property "b" was removed: consumers built from the old schema require it`}},
		{`{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}`, `{"type": "object", "properties": {"a": {"type": "string"}}}`,
			[]string{`property-removed (none): property "b" was removed from an open object where it was optional`}},
		{`{"anyOf": [{"type": "string"}]}`, `{"anyOf": [{"type": "string"}, {"type": "integer"}]}`,
			[]string{`branch-added (forward): anyOf branch 1 added: consumers built from the old schema reject facts that match only it`}},
	}
	for _, tt := range tests {
		t.Run(tt.old+" -> "+tt.new, func(t *testing.T) {
			r := Compare(propertyDir(t, tt.old), propertyDir(t, tt.new))
			var got []string
			for _, c := range r.Changes {
				got = append(got, fmt.Sprintf("%s (%s): %s", c.Rule, c.Breaks, c.Message))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A format breaks only where a consumer asserts it: the old side's
// assertFormats (and date-time) for a format removed or changed
// (forward), the new side's for one added or changed (backward).
func TestFormatsBreakWhereAsserted(t *testing.T) {
	tests := []struct {
		old, new               string
		oldAsserts, newAsserts string
		want                   string
	}{
		{`{"type": "string"}`, `{"type": "string", "format": "email"}`, "", "email",
			`constraint-tightened (backward): format "email" added: consumers built from the new schema assert it (assertFormats)`},
		{`{"type": "string"}`, `{"type": "string", "format": "email"}`, "email", "",
			`format-annotation-changed (none): format "email" added: an annotation on both sides: neither manifest lists it in assertFormats`},
		{`{"type": "string", "format": "email"}`, `{"type": "string"}`, "email", "email",
			`constraint-loosened (forward): format "email" removed: consumers built from the old schema assert it`},
		{`{"type": "string", "format": "email"}`, `{"type": "string", "format": "uuid"}`, "email", "uuid",
			`constraint-changed (both): format changed from "email" to "uuid": consumers on both sides assert their format`},
		// A date-time is read into a time.Time, which only a valid
		// date-time can become: checked whatever assertFormats says, as
		// the generator judges it too (model.AssertedFormats).
		{`{"type": "string"}`, `{"type": "string", "format": "date-time"}`, "", "",
			`constraint-tightened (backward): format "date-time" added: consumers built from the new schema assert it (a date-time is always checked: its value is read into a time.Time)`},
		{`{"type": "string", "format": "date-time"}`, `{"type": "string"}`, "", "",
			`constraint-loosened (forward): format "date-time" removed: consumers built from the old schema assert it (a date-time is always checked: its value is read into a time.Time)`},
		{`{"type": "string", "format": "date-time"}`, `{"type": "string", "format": "email"}`, "", "email",
			`constraint-changed (both): format changed from "date-time" to "email": consumers on both sides assert their format`},
	}
	for _, tt := range tests {
		r := Compare(propertyDirAsserting(t, tt.old, tt.oldAsserts), propertyDirAsserting(t, tt.new, tt.newAsserts))
		var got []string
		for _, c := range r.Changes {
			got = append(got, fmt.Sprintf("%s (%s): %s", c.Rule, c.Breaks, c.Message))
		}
		if diff := cmp.Diff([]string{tt.want}, got); diff != "" {
			t.Errorf("%s (asserting %q) -> %s (asserting %q): (-want +got):\n%s", tt.old, tt.oldAsserts, tt.new, tt.newAsserts, diff)
		}
	}
}

// factDir is a directory whose one fact is the given schema file.
func factDir(t *testing.T, fact string) *Dir {
	t.Helper()
	s, err := load.LoadFS(context.Background(), fstest.MapFS{
		"warren.json": {Data: []byte(`{"package": "shop"}`)},
		"fact.json":   {Data: []byte(fact)},
		"defs.json":   {Data: []byte(`{"$defs": {"name": {"type": "string", "maxLength": 10}}}`)},
	})
	if err != nil {
		t.Fatalf("%s: %v", fact, err)
	}
	return NewDir(s)
}

// Files of different drafts compare by what their keywords mean, as the
// loader settles it: moving a fact from draft-04 to 2020-12 changes
// nothing by itself, and what a draft ignores counts for nothing.
func TestDraftsCompareByMeaning(t *testing.T) {
	const (
		draft4 = `"$schema": "http://json-schema.org/draft-04/schema#", `
		draft7 = `"$schema": "http://json-schema.org/draft-07/schema#", `
	)
	fact := func(draft, props string) string {
		return `{` + draft + `"x-routing-key": "thing.happened", "type": "object", "properties": {"p": ` + props + `}}`
	}
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"exclusive bound spelt per draft",
			fact(draft4, `{"type": "integer", "minimum": 0, "exclusiveMinimum": true}`),
			fact("", `{"type": "integer", "exclusiveMinimum": 0}`), nil},
		{"an inclusive bound made exclusive",
			fact(draft4, `{"type": "integer", "minimum": 0}`),
			fact("", `{"type": "integer", "exclusiveMinimum": 0}`),
			[]string{"constraint-tightened (backward): minimum 0 is now exclusive"}},
		{"a keyword beside $ref that draft-07 ignores starts to count",
			fact(draft7, `{"$ref": "defs.json#/$defs/name", "maxLength": 3}`),
			fact("", `{"$ref": "defs.json#/$defs/name", "maxLength": 3}`),
			[]string{"constraint-tightened (backward): maxLength lowered from 10 to 3 (the new schema writes both maxLength 3 and maxLength 10, which together are maxLength 3)"}},
		// For an integer, draft-04's exclusive bound and the inclusive
		// one next to it admit the same values.
		{"draft-04's exclusive bound of an integer, inclusive",
			fact(draft4, `{"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": true}`),
			fact("", `{"type": "integer", "minimum": 1, "maximum": 9}`), nil},
		{"draft-04's exclusive bound of an integer, raised",
			fact(draft4, `{"type": "integer", "minimum": 0, "exclusiveMinimum": true}`),
			fact("", `{"type": "integer", "minimum": 2}`),
			[]string{"constraint-tightened (backward): exclusiveMinimum 0 changed to minimum 2"}},
		{"const is an enum of one",
			fact("", `{"enum": ["a"]}`),
			fact("", `{"const": "a"}`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(factDir(t, tt.old), factDir(t, tt.new))
			var got []string
			for _, c := range r.Changes {
				got = append(got, fmt.Sprintf("%s (%s): %s", c.Rule, c.Breaks, c.Message))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
