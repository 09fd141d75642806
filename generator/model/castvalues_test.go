package model

import (
	"strings"
	"testing"
)

// versioned returns the files of fact order.placed in two versions whose
// property "note" is v1 and v2, with manifest as warren.json.
func versioned(v1, v2, manifest string) map[string]string {
	fact := func(version, note string) string {
		return `{"x-routing-key": "order.placed", "x-version": ` + version + `, "title": "OrderPlaced", "type": "object",
			"required": ["id"], "properties": {"id": {"type": "string"}, "note": ` + note + `}}`
	}
	return map[string]string{
		"warren.json":          manifest,
		"order/placed.v1.json": fact("1", v1),
		"order/placed.v2.json": fact("2", v2),
	}
}

const ledger = `{"package": "shop", "consumers": {"ledger": {"bindings": ["order.placed"]}}}`

// A generated upcast copies each value as it is and its result must match
// the newer version's schema: a change that keeps the Go type but makes
// that schema refuse values the older one accepts (maxLength lowered,
// minimum raised, a pattern added or changed, an enum value removed, a
// format asserted) would poison the old facts that hold them, so it is
// written by hand, and the handler does not compile without it. One
// that accepts as much or more stays generated.
func TestACastOfNarrowedValuesIsWrittenByHand(t *testing.T) {
	tests := []struct {
		name, v1, v2 string
		narrowed     string // "" when the upcast is generated
	}{
		{"maxLength lowered", `{"type": "string", "maxLength": 300}`, `{"type": "string", "maxLength": 10}`, `property "note" accepts fewer values in version 2 (maxLength lowered from 300 to 10)`},
		{"maxLength added", `{"type": "string"}`, `{"type": "string", "maxLength": 10}`, `maxLength 10 added`},
		{"minLength raised", `{"type": "string", "minLength": 1}`, `{"type": "string", "minLength": 2}`, `minLength raised from 1 to 2`},
		{"minimum raised", `{"type": "integer", "minimum": 1}`, `{"type": "integer", "minimum": 2}`, `minimum raised from 1 to 2`},
		{"maximum made exclusive", `{"type": "integer", "maximum": 9}`, `{"type": "integer", "exclusiveMaximum": 9}`, `maximum 9 is now exclusive`},
		{"pattern added", `{"type": "string"}`, `{"type": "string", "pattern": "^[a-z]*$"}`, `pattern "^[a-z]*$" added`},
		{"pattern changed", `{"type": "string", "pattern": "^[a-z]*$"}`, `{"type": "string", "pattern": "^[a-c]*$"}`, `pattern changed from "^[a-z]*$" to "^[a-c]*$"`},
		{"multipleOf to a multiple", `{"type": "integer", "multipleOf": 2}`, `{"type": "integer", "multipleOf": 4}`, `multipleOf changed from 2 to 4, a multiple of it`},
		{"asserted format added", `{"type": "string"}`, `{"type": "string", "format": "email"}`, `format "email" added`},
		{"not added", `{"type": "string"}`, `{"type": "string", "not": {"const": ""}}`, `not added or changed`},
		{"items narrowed", `{"type": "array", "items": {"type": "string"}}`, `{"type": "array", "items": {"type": "string", "maxLength": 3}}`, `items: maxLength 3 added`},
		{"maxItems lowered", `{"type": "array", "items": {"type": "string"}, "maxItems": 5}`, `{"type": "array", "items": {"type": "string"}, "maxItems": 4}`, `maxItems lowered from 5 to 4`},
		{"narrowed in an allOf member", `{"type": "string"}`, `{"allOf": [{"type": "string"}, {"maxLength": 10}]}`, `maxLength 10 added`},

		{"unchanged", `{"type": "string", "maxLength": 300, "pattern": "^[a-z]*$"}`, `{"type": "string", "maxLength": 300, "pattern": "^[a-z]*$"}`, ""},
		{"annotations only", `{"type": "string", "maxLength": 300, "description": "Old."}`, `{"type": "string", "maxLength": 300, "description": "New.", "examples": ["x"]}`, ""},
		{"maxLength raised", `{"type": "string", "maxLength": 10}`, `{"type": "string", "maxLength": 300}`, ""},
		{"constraints removed", `{"type": "string", "maxLength": 10, "pattern": "^[a-z]*$"}`, `{"type": "string"}`, ""},
		{"minimum lowered", `{"type": "integer", "minimum": 2}`, `{"type": "integer", "minimum": 1}`, ""},
		{"exclusive made inclusive", `{"type": "integer", "exclusiveMinimum": 0}`, `{"type": "integer", "minimum": 0}`, ""},
		{"multipleOf to a divisor", `{"type": "integer", "multipleOf": 4}`, `{"type": "integer", "multipleOf": 2}`, ""},
		{"format not asserted", `{"type": "string"}`, `{"type": "string", "format": "hostname"}`, ""},
		{"moved into an allOf member", `{"type": "string", "maxLength": 10}`, `{"allOf": [{"type": "string"}, {"maxLength": 10}]}`, ""},
	}
	manifest := `{"package": "shop", "assertFormats": ["email"], "consumers": {"ledger": {"bindings": ["order.placed"]}}}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := build(t, versioned(tt.v1, tt.v2, manifest))
			if err != nil {
				t.Fatal(err)
			}
			f := m.Facts[0]
			c := f.Upcast
			if c == nil {
				t.Fatal("no upcast from version 1")
			}
			if tt.narrowed == "" {
				if !c.Generated || len(c.Narrowed) > 0 {
					t.Errorf("upcast written by hand (%s); want it generated", c.Why)
				}
				return
			}
			if c.Generated {
				t.Fatalf("upcast generated; want it written by hand: %s", tt.narrowed)
			}
			if !strings.Contains(strings.Join(c.Narrowed, "; "), tt.narrowed) || !strings.Contains(c.Why, "the upcast must map the values version 2 refuses") {
				t.Errorf("narrowed %q, why %q\nwant %q and what the upcast must do", c.Narrowed, c.Why, tt.narrowed)
			}
			if got := f.ManualUpcasts(); len(got) != 1 || got[0] != c || c.Method() != "UpcastOrderPlacedV1" {
				t.Errorf("manual upcasts %v; want UpcastOrderPlacedV1, which the handler must implement", got)
			}
		})
	}
}

// x-upcast "generated" on a narrowing change is an error naming it, and
// the downcast of a loosening change, which narrows the other way, is
// written by hand for a publisher that publishes both.
func TestNarrowedValuesInEitherDirection(t *testing.T) {
	files := versioned(`{"type": "string", "maxLength": 300}`, `{"type": "string", "maxLength": 10}`, ledger)
	files["order/placed.v2.json"] = strings.Replace(files["order/placed.v2.json"], `"x-version": 2,`, `"x-version": 2, "x-upcast": "generated",`, 1)
	_, err := build(t, files)
	if err == nil || !strings.Contains(err.Error(), `declares x-upcast "generated", but the change from version 1 (order/placed.v1.json) is not mechanical: property "note" accepts fewer values in version 2 (maxLength lowered from 300 to 10)`) {
		t.Errorf("x-upcast generated on a narrowing change: %v", err)
	}

	both := `{"package": "shop", "versions": {"order.placed": {"publish": [1, 2]}}, "consumers": {"ledger": {"bindings": ["order.placed"]}}}`
	m, err := build(t, versioned(`{"type": "string", "maxLength": 10}`, `{"type": "string", "maxLength": 300}`, both))
	if err != nil {
		t.Fatal(err)
	}
	f := m.Facts[0]
	if !f.Upcast.Generated {
		t.Errorf("upcast of a loosened maxLength written by hand: %s", f.Upcast.Why)
	}
	down := f.Older[0].Downcast
	if down == nil || down.Generated || !strings.Contains(down.Why, `property "note" accepts fewer values in version 1 (maxLength lowered from 300 to 10): the downcast must map the values version 1 refuses`) {
		t.Errorf("downcast to version 1 = %+v; want it written by hand, saying what narrows", down)
	}
}

// Each version's file has definitions of its own, and a keyword that
// refers to one is written alike in both ("#/$defs/word") while what it
// says may differ: the upcast is judged by where the $refs lead, so a
// narrowing behind "not" or a pattern's schema is written by hand, and a definition whose description alone changed is no
// narrowing.
func TestACastIsJudgedWhereItsRefsLead(t *testing.T) {
	fact := func(version, word string) string {
		return `{"x-routing-key": "order.placed", "x-version": ` + version + `, "title": "OrderPlaced", "type": "object",
			"required": ["id"], "properties": {"id": {"type": "string"}, "note": ` + "%s" + `},
			"$defs": {"word": ` + word + `}}`
	}
	tests := []struct {
		name, note, v1, v2 string
		narrowed           string // "" when the upcast is generated
	}{
		{"not", `{"type": "string", "not": {"$ref": "#/$defs/word"}}`,
			`{"type": "string", "maxLength": 5}`, `{"type": "string", "maxLength": 10}`, `not added or changed`},
		{"pattern", `{"type": "object", "patternProperties": {"^x": {"$ref": "#/$defs/word"}}}`,
			`{"type": "string", "maxLength": 10}`, `{"type": "string", "maxLength": 3}`, `patternProperties added or changed`},
		{"description only", `{"type": "string", "not": {"$ref": "#/$defs/word"}}`,
			`{"type": "string", "maxLength": 5, "description": "Old."}`, `{"type": "string", "maxLength": 5, "description": "New."}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := build(t, map[string]string{
				"warren.json":          ledger,
				"order/placed.v1.json": strings.Replace(fact("1", tt.v1), "%s", tt.note, 1),
				"order/placed.v2.json": strings.Replace(fact("2", tt.v2), "%s", tt.note, 1),
			})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Facts[0].Upcast
			if c == nil {
				t.Fatal("no upcast from version 1")
			}
			if tt.narrowed == "" {
				if !c.Generated {
					t.Errorf("upcast written by hand (%s); want it generated", c.Why)
				}
				return
			}
			if c.Generated || !strings.Contains(strings.Join(c.Narrowed, "; "), tt.narrowed) {
				t.Errorf("upcast generated %v, narrowed %q; want it written by hand: %s", c.Generated, c.Narrowed, tt.narrowed)
			}
		})
	}
}

// An enum declared in each version's file is a Go type of its own in each
// (OrderPlacedV1Note, OrderPlacedNote), which generated casts do not
// convert: both casts are written by hand, and their reason says so and
// which values each version adds or removes, not that the property
// "changes type", which no one changed. A cast must map the values its
// result's version refuses, and says which. One definition that both
// versions $ref is one Go type, and its casts are generated.
func TestAnEnumOfEachVersionIsCastByHand(t *testing.T) {
	own := `property "note" is an enum with a Go type of its own in each version (OrderPlacedV1Note in version 1, OrderPlacedNote in version 2), which generated casts do not convert`
	tests := []struct {
		name, v1, v2 string
		up, down     string // "" when generated
	}{
		{"value added", `{"type": "string", "enum": ["dhl", "ups"]}`, `{"type": "string", "enum": ["dhl", "ups", "fedex"]}`,
			own + `; version 2 adds "fedex"`,
			own + `; version 2 adds "fedex"; the downcast must map "fedex", which version 1 refuses, to a value it accepts`},
		{"value removed", `{"type": "string", "enum": ["dhl", "ups"]}`, `{"type": "string", "enum": ["dhl"]}`,
			own + `; version 2 removes "ups"; the upcast must map "ups", which version 2 refuses, to a value it accepts`,
			own + `; version 2 removes "ups"`},
		{"integer values replaced", `{"type": "integer", "enum": [1, 2]}`, `{"type": "integer", "enum": [2, 3]}`,
			own + `; version 2 adds 3 and removes 1; the upcast must map 1, which version 2 refuses, to a value it accepts`,
			own + `; version 2 adds 3 and removes 1; the downcast must map 3, which version 1 refuses, to a value it accepts`},
		{"const changed", `{"const": "dhl"}`, `{"const": "ups"}`,
			strings.Replace(own, "an enum", "a const", 1) + `; version 2 changes it from "dhl" to "ups"; the upcast must map "dhl", which version 2 refuses, to a value it accepts`,
			strings.Replace(own, "an enum", "a const", 1) + `; version 2 changes it from "dhl" to "ups"; the downcast must map "ups", which version 1 refuses, to a value it accepts`},
		{"same values", `{"type": "string", "enum": ["dhl", "ups"]}`, `{"type": "string", "enum": ["dhl", "ups"], "description": "Who carries it."}`,
			own + `; both versions accept the same values, and one definition that both $ref is one Go type, which generated casts copy`,
			own + `; both versions accept the same values, and one definition that both $ref is one Go type, which generated casts copy`},
		{"in a definition of each file", `{"$ref": "#/$defs/carrier"}`, `{"$ref": "#/$defs/carrier"}`,
			`property "note" is an enum with a Go type of its own in each version (Carrier in version 1, PlacedV2Carrier in version 2), which generated casts do not convert; version 2 adds "fedex"`,
			`; the downcast must map "fedex", which version 1 refuses, to a value it accepts`},
		{"in one shared definition", `{"$ref": "carrier.json"}`, `{"$ref": "carrier.json"}`, "", ""},
		// A number enum keeps float64 in both versions: only the values
		// decide.
		{"number value added", `{"type": "number", "enum": [1.5, 2]}`, `{"type": "number", "enum": [1.5, 2, 3]}`,
			"", `property "note" accepts fewer values in version 1 (enum value 3 removed)`},
	}
	manifest := `{"package": "shop", "versions": {"order.placed": {"publish": [1, 2]}}, "consumers": {"ledger": {"bindings": ["order.placed"]}}}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := versioned(tt.v1, tt.v2, manifest)
			if strings.Contains(tt.name, "definition of each file") {
				for v, values := range map[string]string{"1": `["dhl", "ups"]`, "2": `["dhl", "ups", "fedex"]`} {
					name := "order/placed.v" + v + ".json"
					files[name] = strings.TrimSuffix(strings.TrimSpace(files[name]), "}") + `, "$defs": {"carrier": {"type": "string", "enum": ` + values + `}}}`
				}
			}
			files["order/carrier.json"] = `{"type": "string", "enum": ["dhl", "ups"]}`
			m, err := build(t, files)
			if err != nil {
				t.Fatal(err)
			}
			f := m.Facts[0]
			for _, c := range []struct {
				name string
				cast *Cast
				want string
			}{{"upcast", f.Upcast, tt.up}, {"downcast", f.Older[0].Downcast, tt.down}} {
				switch {
				case c.cast == nil:
					t.Errorf("no %s", c.name)
				case c.want == "" && !c.cast.Generated:
					t.Errorf("%s written by hand (%s); want it generated", c.name, c.cast.Why)
				case c.want != "" && (c.cast.Generated || !strings.Contains(c.cast.Why, c.want)):
					t.Errorf("%s generated %v, why %q\nwant it written by hand, saying %q", c.name, c.cast.Generated, c.cast.Why, c.want)
				case strings.Contains(c.cast.Why, "changes type"):
					t.Errorf("%s says %q", c.name, c.cast.Why)
				}
			}
		})
	}
}

// Downcasts judges the casts of versions the manifest does not publish
// as the publisher would once it does, and returns the publisher's own
// where it publishes them: warren diff advises publishing an older
// version with the Downcasters it will take.
func TestDowncastsOfVersionsNotYetPublished(t *testing.T) {
	v1, v2 := `{"type": "string", "maxLength": 10}`, `{"type": "string", "maxLength": 300}`
	published, err := build(t, versioned(v1, v2, `{"package": "shop", "versions": {"order.placed": {"publish": [1, 2]}}, "consumers": {"ledger": {"bindings": ["order.placed"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	newest, err := build(t, versioned(v1, v2, ledger))
	if err != nil {
		t.Fatal(err)
	}
	if newest.Facts[0].Older[0].Downcast != nil {
		t.Fatal("a downcast built for a version not published")
	}
	own := published.Facts[0].Downcasts(1, AssertedFormats(nil))
	if len(own) != 1 || own[0] != published.Facts[0].Older[0].Downcast {
		t.Errorf("downcasts of a published version %v; want the publisher's own", own)
	}
	judged := newest.Facts[0].Downcasts(1, AssertedFormats(nil))
	if len(judged) != 1 || judged[0].Generated || judged[0].Why != own[0].Why || judged[0].Method() != "DowncastOrderPlaced" {
		t.Errorf("downcasts of a version not published %+v; want %q", judged, own[0].Why)
	}
	if got := newest.Facts[0].Downcasts(2, nil); len(got) != 0 {
		t.Errorf("downcasts down to the newest version: %v", got)
	}
}
