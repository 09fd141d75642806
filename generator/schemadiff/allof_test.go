package schemadiff

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A value must satisfy every member of an allOf, so where two members
// write one keyword the stricter counts: the lower maximum and maxLength,
// the higher minimum and minLength, the least common multiple, the values
// both enums list, every required name, every pattern, and the schemas
// both write for one property or for the elements of an array, joined. A
// change to the member that counts is found wherever it is written, and
// one the stricter member hides is none. What cannot be merged into one
// value (not, a second oneOf) counts as breaking both ways when any of
// its members changes.
func TestAllOfMergesWhatEachMemberSays(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           []string // rule breaks path: message
	}{
		{"the second maxLength lowered",
			`{"allOf": [{"type": "string", "maxLength": 20}, {"maxLength": 10}]}`,
			`{"allOf": [{"type": "string", "maxLength": 20}, {"maxLength": 5}]}`,
			[]string{`constraint-tightened backward "/properties/status": maxLength lowered from 10 to 5 (the old schema writes both maxLength 20 and maxLength 10, which together are maxLength 10; the new schema writes both maxLength 20 and maxLength 5, which together are maxLength 5)`}},
		{"the second maxLength raised",
			`{"allOf": [{"type": "string", "maxLength": 20}, {"maxLength": 10}]}`,
			`{"allOf": [{"type": "string", "maxLength": 20}, {"maxLength": 15}]}`,
			[]string{`constraint-loosened forward "/properties/status": maxLength raised from 10 to 15 (the old schema writes both maxLength 20 and maxLength 10, which together are maxLength 10; the new schema writes both maxLength 20 and maxLength 15, which together are maxLength 15)`}},
		{"a maxLength the stricter one hides",
			`{"allOf": [{"type": "string", "maxLength": 20}, {"maxLength": 10}]}`,
			`{"allOf": [{"type": "string", "maxLength": 30}, {"maxLength": 10}]}`, nil},
		{"the second minLength raised",
			`{"type": "string", "minLength": 1, "allOf": [{"minLength": 3}]}`,
			`{"type": "string", "minLength": 1, "allOf": [{"minLength": 4}]}`,
			[]string{`constraint-tightened backward "/properties/status": minLength raised from 3 to 4 (the old schema writes both minLength 1 and minLength 3, which together are minLength 3; the new schema writes both minLength 1 and minLength 4, which together are minLength 4)`}},
		{"the second maximum lowered",
			`{"allOf": [{"type": "integer", "maximum": 100}, {"maximum": 50}]}`,
			`{"allOf": [{"type": "integer", "maximum": 100}, {"maximum": 40}]}`,
			[]string{`constraint-tightened backward "/properties/status": maximum lowered from 50 to 40 (the old schema writes both maximum 100 and maximum 50, which together are maximum 50; the new schema writes both maximum 100 and maximum 40, which together are maximum 40)`}},
		{"an exclusive minimum beside an inclusive one",
			`{"allOf": [{"type": "integer", "minimum": 0}, {"exclusiveMinimum": 0}]}`,
			`{"type": "integer", "minimum": 1}`, nil},
		{"multipleOf of two members",
			`{"allOf": [{"type": "integer", "multipleOf": 2}, {"multipleOf": 3}]}`,
			`{"type": "integer", "multipleOf": 6}`, nil},
		{"multipleOf of the second member",
			`{"allOf": [{"type": "integer", "multipleOf": 2}, {"multipleOf": 3}]}`,
			`{"allOf": [{"type": "integer", "multipleOf": 2}, {"multipleOf": 9}]}`,
			[]string{`constraint-tightened backward "/properties/status": multipleOf changed from 6 to 18, a multiple of it (the old schema writes both multipleOf 2 and multipleOf 3, which together are multipleOf 6; the new schema writes both multipleOf 2 and multipleOf 9, which together are multipleOf 18)`}},
		{"enums of two members", `{"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["b", "c", "d"]}]}`, `{"enum": ["b", "c"]}`, nil},
		{"the second enum narrowed",
			`{"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["b", "c", "d"]}]}`,
			`{"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["c", "d"]}]}`,
			[]string{`enum-value-removed backward "/properties/status": enum value "b" removed: facts written with it fail new consumers`}},
		{"a const within an enum", `{"allOf": [{"enum": ["a", "b"]}, {"const": "b"}]}`, `{"const": "b"}`, nil},
		{"required of the second member dropped",
			`{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "allOf": [{"required": ["a"]}, {"required": ["b"]}]}`,
			`{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "allOf": [{"required": ["a"]}]}`,
			[]string{`property-made-optional forward "/properties/status/properties/b": required property "b" is now optional: consumers built from the old schema reject facts that omit it`}},
		{"a pattern added in a second member",
			`{"type": "string", "pattern": "^a"}`,
			`{"type": "string", "pattern": "^a", "allOf": [{"pattern": "b$"}]}`,
			[]string{`constraint-tightened backward "/properties/status": patterns changed from "^a" to "^a" and "b$": a value must now meet "b$" too`}},
		{"the second pattern changed",
			`{"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "b$"}]}`,
			`{"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "c$"}]}`,
			[]string{`constraint-changed both "/properties/status": patterns changed from "^a" and "b$" to "^a" and "c$": a value must now meet "c$", and need no longer meet "b$": warren cannot prove that either side accepts every value the other does`}},
		{"the second pattern dropped",
			`{"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "b$"}]}`,
			`{"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": ".*"}]}`,
			[]string{`constraint-loosened forward "/properties/status": patterns changed from "^a" and "b$" to "^a": a value need no longer meet "b$"`}},
		// A property two members write is what both say.
		{"a property's maximum in the second member",
			`{"type": "object", "allOf": [{"properties": {"n": {"type": "integer", "maximum": 1000}}}, {"properties": {"n": {"maximum": 100}}}]}`,
			`{"type": "object", "allOf": [{"properties": {"n": {"type": "integer", "maximum": 1000}}}, {"properties": {"n": {"maximum": 50}}}]}`,
			[]string{`constraint-tightened backward "/properties/status/properties/n": maximum lowered from 100 to 50 (the old schema writes both maximum 1000 and maximum 100, which together are maximum 100; the new schema writes both maximum 1000 and maximum 50, which together are maximum 50)`}},
		{"a property's type in the second member",
			`{"type": "object", "allOf": [{"properties": {"n": {"type": "number"}}}, {"properties": {"n": {"description": "A count."}}}]}`,
			`{"type": "object", "allOf": [{"properties": {"n": {"type": "number"}}}, {"properties": {"n": {"type": "integer", "description": "A count."}}}]}`,
			[]string{`type-narrowed backward "/properties/status/properties/n": type narrowed from "number" to "integer"`}},
		{"elements of an array in the second member",
			`{"type": "array", "allOf": [{"items": {"type": "string"}}, {"items": {"maxLength": 5}}]}`,
			`{"type": "array", "allOf": [{"items": {"type": "string"}}, {"items": {"maxLength": 3}}]}`,
			[]string{`constraint-tightened backward "/properties/status/items": maxLength lowered from 5 to 3`}},
		{"a tuple and the elements after another's",
			`{"type": "array", "prefixItems": [{"type": "string"}], "allOf": [{"items": {"maxLength": 5}}]}`,
			`{"type": "array", "prefixItems": [{"type": "string"}], "allOf": [{"items": {"maxLength": 3}}]}`,
			// One keyword that changed, which holds for both places: told
			// once, at the first.
			[]string{`constraint-tightened backward "/properties/status/prefixItems/0": maxLength lowered from 5 to 3`}},
		{"the second not changed",
			`{"type": "string", "allOf": [{"not": {"const": "a"}}, {"not": {"const": "b"}}]}`,
			`{"type": "string", "allOf": [{"not": {"const": "a"}}, {"not": {"const": "c"}}]}`,
			[]string{`unclassified-change both "/properties/status": not is written in several of the schemas a value must satisfy here (its own keywords, its $ref, its allOf members), and warren does not merge them into one: they changed from [{"const":"a"},{"const":"b"}] to [{"const":"a"},{"const":"c"}], and warren cannot tell whether this accepts more or less, so it counts as breaking both ways`}},
		{"the second not as it was",
			`{"type": "string", "allOf": [{"not": {"const": "a"}}, {"not": {"const": "b"}}]}`,
			`{"type": "string", "allOf": [{"not": {"const": "a"}}, {"not": {"const": "b", "description": "Not b."}}]}`, nil},
		{"a second oneOf changed",
			`{"oneOf": [{"type": "string"}, {"type": "integer"}], "allOf": [{"oneOf": [{"minLength": 1}, {"minimum": 0}]}]}`,
			`{"oneOf": [{"type": "string"}, {"type": "integer"}], "allOf": [{"oneOf": [{"minLength": 2}, {"minimum": 0}]}]}`,
			[]string{`unclassified-change both "/properties/status": oneOf is written again in more of the schemas a value must satisfy here (its own keywords, its $ref, its allOf members) than the first, which is compared on its own, and warren does not merge them into one: they changed from [[{"minLength":1},{"minimum":0}]] to [[{"minLength":2},{"minimum":0}]], and warren cannot tell whether this accepts more or less, so it counts as breaking both ways`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range propertyChange(t, tt.old, tt.new).Changes {
				got = append(got, c.Rule+" "+c.Breaks.String()+" "+quote(c.Path)+": "+c.Message)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if tt.want != nil {
				return
			}
			// Equivalent: nothing the other way round either.
			for _, c := range propertyChange(t, tt.new, tt.old).Changes {
				t.Errorf("%s -> %s: %s: %s", tt.new, tt.old, brief(c), c.Message)
			}
		})
	}
}
