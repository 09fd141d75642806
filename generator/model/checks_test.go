package model

import (
	"strings"
	"testing"
)

// TestInexactNamesWhatFallsBack: a fact type (and each type declared for
// it) is checked by its generated code unless its schema uses a shape that
// code does not translate; then Inexact names the keyword and where it is.
func TestInexactNamesWhatFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name, props, extra string
		want               string // "" for exact, else a substring of the reason
	}{
		{"rules", `"a": {"type": "string", "minLength": 1, "pattern": "^x"}, "n": {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": 3}, "l": {"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": true}`, ``, ""},
		{"enum of numbers", `"r": {"enum": [0.5, 1]}`, ``, ""},
		{"one branch and null", `"s": {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}`, ``, ""},
		{"allOf of plain objects", `"a": {"type": "string"}`, `, "allOf": [{"$ref": "#/$defs/b"}, {"properties": {"c": {"type": "integer", "minimum": 1}}, "required": ["c"]}], "$defs": {"b": {"type": "object", "properties": {"b": {"type": "string", "pattern": "^x"}}, "required": ["b"]}}`, ""},
		{"allOf closed by unevaluatedProperties", `"a": {"type": "string"}`, `, "allOf": [{"properties": {"c": {"type": "integer"}}}], "unevaluatedProperties": false`, ""},
		{"allOf next to additionalProperties", `"a": {"type": "string"}`, `, "allOf": [{"properties": {"c": {"type": "integer"}}}], "additionalProperties": false`, "additionalProperties"},
		{"allOf closing a member", `"a": {"type": "string"}`, `, "allOf": [{"properties": {"c": {"type": "integer"}}, "additionalProperties": false}]`, "not translated in an allOf"},
		{"allOf narrowing a property", `"a": {"maxLength": 3}`, `, "allOf": [{"properties": {"a": {"type": "string", "minLength": 1}}}]`, ""},
		{"allOf narrowing a property twice the same way", `"a": {"maxLength": 3}`, `, "allOf": [{"properties": {"a": {"type": "string", "maxLength": 5}}}]`, "set by two"},
		{"allOf narrowing an untyped property", `"a": {"type": "string"}`, `, "allOf": [{"properties": {"a": {"maxLength": 3}}}]`, "declared by several"},
		{"not", `"a": {"type": "string", "not": {"const": "x"}}`, ``, "#/properties/a not"},
		{"patternProperties beside an open object", `"m": {"type": "object", "patternProperties": {"^x": {"type": "integer"}}}`, ``, "patternProperties: members of different schemas"},
		{"patternProperties of a closed object", `"m": {"type": "object", "patternProperties": {"^x": {"type": "integer"}, "^y": {"type": "integer"}}, "additionalProperties": false}`, ``, ""},
		{"patternProperties and additionalProperties alike", `"a": {"type": "string"}`, `, "patternProperties": {"^x": {"type": "string", "maxLength": 2}}, "additionalProperties": {"type": "string", "maxLength": 2}`, ""},
		{"patternProperties of different constraints", `"m": {"type": "object", "patternProperties": {"^x": {"type": "string", "maxLength": 2}, "^y": {"type": "string"}}, "additionalProperties": false}`, ``, "members of different schemas"},
		{"a pattern matching a declared property", `"xa": {"type": "string"}`, `, "patternProperties": {"^x": {"type": "string"}}, "additionalProperties": false`, "matches the declared property"},
		{"minProperties", `"a": {"type": "string"}`, `, "minProperties": 1`, "minProperties"},
		{"constraint branch", `"s": {"anyOf": [{"type": "string"}, {"minLength": 3}]}`, ``, "anyOf: not translated for a raw"},
		{"anyOf with a branch of annotations", `"s": {"type": "string", "anyOf": [{"$comment": "any"}, {"enum": ["a"]}]}`, ``, ""},
		{"type beside a union of its branches", `"u": {"type": "object", "oneOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"properties": {"b": {"type": "string"}}, "required": ["b"]}]}`, ``, ""},
		{"type beside a union with a raw branch", `"u": {"type": ["object", "string"], "oneOf": [{"$ref": "#/$defs/any"}, {"type": "string"}]}`, `, "$defs": {"any": {}}`, "other types"},
		{"keywords beside a one-branch oneOf", `"s": {"oneOf": [{"$ref": "#/$defs/o"}, {"type": "null"}], "maxProperties": 2}`, `, "$defs": {"o": {"type": "object", "properties": {"x": {"type": "string"}}}}`, "maxProperties"},
		{"integer bounds within int64", `"n": {"type": "integer", "minimum": -9223372036854775808, "maximum": 9223372036854775807, "multipleOf": 3}`, ``, ""},
		{"integer minimum beyond int64", `"n": {"type": "integer", "minimum": 1e19}`, ``, "minimum: a bound beyond 64-bit integers"},
		{"integer maximum beyond int64", `"n": {"type": "integer", "maximum": -1e19}`, ``, "maximum: a bound beyond 64-bit integers"},
		{"integer multipleOf beyond int64", `"n": {"type": "integer", "multipleOf": 1e19}`, ``, "multipleOf: a multiple beyond 64-bit integers"},
		{"integer exclusive minimum at int64's top", `"n": {"type": "integer", "exclusiveMinimum": 9223372036854775807}`, ``, "minimum: a bound beyond 64-bit integers"},
		{"integer exclusive maximum at int64's bottom", `"n": {"type": "integer", "exclusiveMaximum": -9223372036854775808}`, ``, "maximum: a bound beyond 64-bit integers"},
		{"integer exclusive bounds within int64", `"n": {"type": "integer", "exclusiveMinimum": -9223372036854775809, "exclusiveMaximum": 9223372036854775808}`, ``, ""},
		{"integer bound beyond int64 in an allOf member", `"n": {"type": "integer"}`, `, "allOf": [{"properties": {"n": {"type": "integer", "maximum": 1e19}}}]`, "maximum: a bound beyond 64-bit integers"},
		{"required sets beside properties", `"a": {"type": "string"}, "b": {"type": "string"}`, `, "anyOf": [{"properties": {"a": true}, "required": ["a"]}, {"properties": {"b": {}}, "required": ["b"]}]`, ""},
		{"oneOf of required properties", `"a": {"type": "string"}, "b": {"type": "string"}`, `, "oneOf": [{"required": ["a"]}, {"type": "object", "required": ["b"]}]`, ""},
		{"a branch beside properties that constrains more", `"a": {"type": "string"}`, `, "oneOf": [{"required": ["a"]}, {"not": {"required": ["a"]}}]`, "not: not translated in a branch"},
		{"a branch requiring an undeclared property", `"a": {"type": "string"}`, `, "anyOf": [{"required": ["a"]}, {"required": ["z"]}]`, "undeclared property z"},
		{"required sets beside a nullable object", `"o": {"type": ["object", "null"], "properties": {"a": {"type": "string"}}, "oneOf": [{"required": ["a"]}, {"maxProperties": 0}]}`, ``, "may be null"},
		{"required but undeclared", `"a": {"type": "string"}`, `, "required": ["b"]`, "undeclared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := build(t, map[string]string{
				"warren.json": `{"package": "p"}`,
				"f.json":      `{"x-routing-key": "f.happened", "type": "object", "properties": {` + tc.props + `}` + tc.extra + `}`,
			})
			if err != nil {
				t.Fatal(err)
			}
			got := m.Facts[0].Type.Inexact()
			for _, ty := range m.Types { // the types of its properties decide for themselves
				if got == "" {
					got = ty.Inexact()
				}
			}
			switch {
			case tc.want == "" && got != "":
				t.Errorf("Inexact() = %q, want exact", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("Inexact() = %q, want it to name %q", got, tc.want)
			}
		})
	}
}
