package schemadiff

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// propertyChange compares a fact whose property "status" is old with one
// where it is new, and returns the report. The fact defines "placed", a
// const, for a $ref.
func propertyChange(t *testing.T, old, new string) *Report {
	t.Helper()
	dir := func(prop string) *Dir {
		d, err := LoadFS(context.Background(), fstest.MapFS{
			"warren.json":       {Data: []byte(`{"package": "shop", "consumers": {"ledger": {"bindings": ["order.placed"]}}}`)},
			"order/placed.json": {Data: []byte(`{"x-routing-key": "order.placed", "type": "object", "properties": {"status": ` + prop + `}, "$defs": {"placed": {"const": "placed", "description": "Placed."}}}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return Compare(dir(old), dir(new))
}

// A const or an enum says the type of its values, with "type" or without:
// replacing an enum by one of its values only removes values, which
// breaks backward alone (old facts with the others fail new consumers),
// so the producer deploys first. An enum without a type, added or
// removed, is no type added or removed.
func TestAnEnumSaysItsType(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           []string // rule breaks: message
		deploy         string
	}{
		{"enum to const", `{"type": "string", "enum": ["placed", "paid", "cancelled"]}`, `{"const": "placed"}`,
			[]string{
				`enum-value-removed backward: enum value "cancelled" removed: facts written with it fail new consumers`,
				`enum-value-removed backward: enum value "paid" removed: facts written with it fail new consumers`,
			},
			"deploy the producer of order.placed before its consumers, and those only once no fact written under the old schema is left to read (queues, poison queues, outboxes)"},
		{"const to enum", `{"const": "placed"}`, `{"type": "string", "enum": ["placed", "paid"]}`,
			[]string{`enum-value-added forward: enum value "paid" added: consumers built from the old schema reject facts that use it`},
			"deploy consumers of order.placed before its producer"},
		{"a value the type refuses is none", `{"type": ["string", "null"], "enum": ["placed", 1]}`, `{"const": "placed"}`, nil, ""},
		{"const added where the type was said", `{"type": "string"}`, `{"const": "placed"}`,
			[]string{`constraint-tightened backward: const "placed" added`},
			"deploy the producer of order.placed before its consumers, and those only once no fact written under the old schema is left to read (queues, poison queues, outboxes)"},
		{"const added where nothing was said", `{}`, `{"const": "placed"}`,
			[]string{`constraint-tightened backward: const "placed" added`},
			"deploy the producer of order.placed before its consumers, and those only once no fact written under the old schema is left to read (queues, poison queues, outboxes)"},
		{"const removed", `{"const": "placed"}`, `{}`,
			[]string{`constraint-loosened forward: const "placed" removed`},
			"deploy consumers of order.placed before its producer"},
		{"another type", `{"type": "integer"}`, `{"const": "placed"}`,
			[]string{`type-changed both: type changed from "integer" to "string" (the type of its const)`},
			"no order is safe for order.placed: consumers built from either schema fail on facts written under the other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := propertyChange(t, tt.old, tt.new)
			var got []string
			for _, c := range r.Changes {
				got = append(got, c.Rule+" "+c.Breaks.String()+": "+c.Message)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			var deploy string
			if len(r.Deploys) == 1 {
				deploy = r.Deploys[0].Message
			}
			if deploy != tt.deploy || len(r.Deploys) > 1 {
				t.Errorf("deploys %+v; want %q", r.Deploys, tt.deploy)
			}
		})
	}
}

// Schemas written differently that accept the same values break nobody,
// both ways round; neither does a keyword that accepts every value.
func TestEquivalentSchemasBreakNothing(t *testing.T) {
	tests := []struct{ name, a, b string }{
		{"enum as oneOf of consts", `{"type": "string", "enum": ["placed", "paid", "cancelled"]}`, `{"oneOf": [{"const": "placed"}, {"const": "paid"}, {"const": "cancelled"}]}`},
		{"enum as anyOf of enums", `{"enum": ["placed", "paid", "cancelled"]}`, `{"anyOf": [{"enum": ["placed", "paid"]}, {"type": "string", "const": "cancelled", "title": "Cancelled"}]}`},
		{"a oneOf value two branches list matches both", `{"enum": ["placed"]}`, `{"oneOf": [{"enum": ["placed", "paid"]}, {"const": "paid"}]}`},
		{"a branch behind a $ref", `{"enum": ["placed", "paid"]}`, `{"oneOf": [{"$ref": "#/$defs/placed"}, {"const": "paid"}]}`},
		{"integer as number with multipleOf 1", `{"type": "integer"}`, `{"type": "number", "multipleOf": 1}`},
		{"multipleOf 2 of a number or an integer", `{"type": "integer", "multipleOf": 2}`, `{"type": "number", "multipleOf": 2}`},
		{"multipleOf 0.5 of an integer", `{"type": "integer"}`, `{"type": "integer", "multipleOf": 0.5}`},
		{"minItems 0", `{"type": "array", "items": {"type": "string"}}`, `{"type": "array", "items": {"type": "string"}, "minItems": 0}`},
		{"minLength 0", `{"type": "string"}`, `{"type": "string", "minLength": 0}`},
		{"minProperties 0", `{"type": "object"}`, `{"type": "object", "minProperties": 0}`},
		{"pattern .*", `{"type": "string"}`, `{"type": "string", "pattern": ".*"}`},
		{"pattern ^.*", `{"type": "string"}`, `{"type": "string", "pattern": "^.*"}`},
		{"empty pattern", `{"type": "string"}`, `{"type": "string", "pattern": ""}`},
		{"pattern of an optional word", `{"type": "string"}`, `{"type": "string", "pattern": "(abc)?"}`},
		{"minContains 1", `{"type": "array", "contains": {"const": 1}}`, `{"type": "array", "contains": {"const": 1}, "minContains": 1}`},
		{"maxContains without contains", `{"type": "array"}`, `{"type": "array", "maxContains": 2}`},
		// An integer's bounds, however they are written, are the least
		// and the greatest integer they admit.
		{"exclusiveMinimum 0 of an integer", `{"type": "integer", "exclusiveMinimum": 0}`, `{"type": "integer", "minimum": 1}`},
		{"exclusiveMaximum 10 of an integer", `{"type": "integer", "exclusiveMaximum": 10}`, `{"type": "integer", "maximum": 9}`},
		{"a fractional minimum of an integer", `{"type": "integer", "minimum": 0.5}`, `{"type": "integer", "minimum": 1}`},
		{"a fractional maximum of an integer", `{"type": "integer", "maximum": 9.99}`, `{"type": "integer", "exclusiveMaximum": 10}`},
		{"negative bounds of an integer", `{"type": "integer", "exclusiveMinimum": -3, "maximum": -0.5}`, `{"type": "integer", "minimum": -2.5, "exclusiveMaximum": 0}`},
		{"an integer that may be null", `{"type": ["integer", "null"], "exclusiveMinimum": 0}`, `{"type": ["null", "integer"], "minimum": 1}`},
		{"a number with multipleOf 1", `{"type": "number", "multipleOf": 1, "exclusiveMinimum": 0}`, `{"type": "integer", "minimum": 1}`},
		{"bounds of the multiples of 5", `{"type": "integer", "multipleOf": 5, "minimum": 1, "exclusiveMaximum": 20}`, `{"type": "integer", "multipleOf": 5, "minimum": 5, "maximum": 15}`},
		{"multipleOf 2.5 of an integer", `{"type": "integer", "multipleOf": 2.5}`, `{"type": "integer", "multipleOf": 5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, pair := range [][2]string{{tt.a, tt.b}, {tt.b, tt.a}} {
				for _, c := range propertyChange(t, pair[0], pair[1]).Changes {
					t.Errorf("%s -> %s: %s: %s", pair[0], pair[1], brief(c), c.Message)
				}
			}
		})
	}
}

// What does change is still told, and the branches folded into an enum
// still have their annotations compared.
func TestNotEquivalentSchemas(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           []string // rule breaks path: message
	}{
		{"a pattern anchored at both ends", `{"type": "string"}`, `{"type": "string", "pattern": "^.*$"}`,
			[]string{`constraint-tightened backward "/properties/status": pattern "^.*$" added`}},
		{"a pattern of a boundary", `{"type": "string"}`, `{"type": "string", "pattern": "\\b"}`,
			[]string{`constraint-tightened backward "/properties/status": pattern "\\b" added`}},
		{"minLength 0 from 3", `{"type": "string", "minLength": 3}`, `{"type": "string", "minLength": 0}`,
			[]string{`constraint-loosened forward "/properties/status": minLength 3 removed`}},
		{"multipleOf 1 dropped from a number", `{"type": "number", "multipleOf": 1}`, `{"type": "number"}`,
			[]string{`type-widened forward "/properties/status": type widened from "integer" ("number" with multipleOf 1) to "number": consumers built from the old schema reject the new values`}},
		{"a value added to a oneOf of consts", `{"type": "string", "enum": ["placed", "paid"]}`, `{"oneOf": [{"const": "placed"}, {"const": "paid"}, {"const": "cancelled"}]}`,
			[]string{`enum-value-added forward "/properties/status": enum value "cancelled" added: consumers built from the old schema reject facts that use it`}},
		{"annotations of the branches", `{"oneOf": [{"const": "placed", "title": "Placed"}, {"const": "paid"}]}`, `{"oneOf": [{"const": "paid", "description": "Paid."}, {"const": "placed", "title": "Ordered"}]}`,
			[]string{
				`description-changed none "/properties/status/oneOf/0": description changed`,
				`title-changed none "/properties/status/oneOf/1": title changed from "Placed" to "Ordered": generated Go names follow it`,
			}},
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
		})
	}
}

func quote(s string) string { return `"` + s + `"` }

// Where both sides admit integers alone, a bound is judged by the integers
// it admits, in both directions; a change the integers do not see is
// none, and one they see otherwise than the bound as written is reported
// as they see it, saying what each side writes. Where a side admits other
// numbers, the bound is judged as written: exclusiveMinimum 0 admitted
// 0.5. The words are the generator's (model.JudgeConstraint) where the
// verdict is the same.
func TestIntegerBounds(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           []string // rule breaks: message
	}{
		{"exclusiveMinimum 0 to minimum 2", `{"type": "integer", "exclusiveMinimum": 0}`, `{"type": "integer", "minimum": 2}`,
			[]string{`constraint-tightened backward: exclusiveMinimum 0 changed to minimum 2`}},
		{"minimum 2 to exclusiveMinimum 0", `{"type": "integer", "minimum": 2}`, `{"type": "integer", "exclusiveMinimum": 0}`,
			[]string{`constraint-loosened forward: minimum 2 changed to exclusiveMinimum 0`}},
		{"maximum 9 made exclusive", `{"type": "integer", "maximum": 9}`, `{"type": "integer", "exclusiveMaximum": 9}`,
			[]string{`constraint-tightened backward: maximum 9 is now exclusive`}},
		{"exclusiveMaximum 10 to maximum 10", `{"type": "integer", "exclusiveMaximum": 10}`, `{"type": "integer", "maximum": 10}`,
			[]string{`constraint-loosened forward: maximum 10 is no longer exclusive`}},
		{"exclusiveMaximum 10 to maximum 9.5", `{"type": "integer", "exclusiveMaximum": 10}`, `{"type": "integer", "maximum": 9.5}`, nil},
		{"a number's exclusiveMinimum 0 to minimum 1", `{"type": "number", "exclusiveMinimum": 0}`, `{"type": "number", "minimum": 1}`,
			[]string{`constraint-tightened backward: exclusiveMinimum 0 changed to minimum 1`}},
		{"a number made an integer", `{"type": "number", "exclusiveMinimum": 0}`, `{"type": "integer", "minimum": 1}`,
			[]string{
				`constraint-tightened backward: exclusiveMinimum 0 changed to minimum 1`,
				`type-narrowed backward: type narrowed from "number" to "integer"`,
			}},
		{"minimum within the multiples of 5", `{"type": "integer", "multipleOf": 5, "minimum": 4}`, `{"type": "integer", "multipleOf": 5, "minimum": 6}`,
			[]string{`constraint-tightened backward: minimum raised from 4 to 6`}},
		// Bounds are rounded to a multiple only where both sides divide
		// alike: here the integers' minimum would go from 5 to 4.
		{"minimum with another multipleOf", `{"type": "integer", "multipleOf": 5, "minimum": 1}`, `{"type": "integer", "multipleOf": 2, "minimum": 3}`,
			[]string{
				`constraint-changed both: multipleOf changed from 5 to 2: each accepts values the other rejects`,
				`constraint-tightened backward: minimum raised from 1 to 3`,
			}},
		// For an integer, multipleOf 0.6 admits the multiples of 3 and 0.9
		// those of 9: fewer, where 0.6 and 0.9 as numbers each admit
		// values the other refuses.
		{"multipleOf read for the integers", `{"type": "integer", "multipleOf": 0.6}`, `{"type": "integer", "multipleOf": 0.9}`,
			[]string{`constraint-tightened backward: multipleOf changed from 3 to 9, a multiple of it (the old schema writes multipleOf 0.6, which for an integer is multipleOf 3; the new schema writes multipleOf 0.9, which for an integer is multipleOf 9)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range propertyChange(t, tt.old, tt.new).Changes {
				got = append(got, c.Rule+" "+c.Breaks.String()+": "+c.Message)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}
