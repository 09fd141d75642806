package load

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// openAPI is a vendored OpenAPI document: its schemas sit under
// components, which no JSON Schema keyword holds, and refer to each other
// (PaymentCaptured -> Money -> Currency) and to another file.
const openAPI = `{
  "openapi": "3.1.0",
  "info": {"title": "Payments", "version": "1"},
  "paths": {},
  "components": {
    "schemas": {
      "PaymentCaptured": {
        "type": "object",
        "required": ["id", "money"],
        "properties": {
          "id": {"type": "string"},
          "money": {"$ref": "#/components/schemas/Money"},
          "card": {"$ref": "../common/card.json"}
        }
      },
      "Money": {
        "type": "object",
        "properties": {
          "amount": {"type": "integer"},
          "currency": {"$ref": "#/components/schemas/Currency"}
        }
      },
      "Currency": {"type": "string", "enum": ["EUR", "USD"]},
      "Unused": {"$ref": "#/components/schemas/Nowhere"}
    }
  }
}`

// TestDetachedSchemasResolve: a schema the manifest's facts point at
// inside a document (#/components/schemas/PaymentCaptured), and the chain
// of schemas its $refs reach there, have their $refs resolved as a file's
// root has; so has a schema that a team's own file reaches with a $ref
// into the document. The files they refer to are among those the generated
// code embeds. A schema nothing uses is left alone.
func TestDetachedSchemasResolve(t *testing.T) {
	s, err := LoadFS(context.Background(), mapFS(map[string]string{
		"warren.json":         `{"facts": {"payment.captured": {"schema": "vendor/openapi.json#/components/schemas/PaymentCaptured"}}}`,
		"vendor/openapi.json": openAPI,
		"common/card.json":    `{"type": "object", "properties": {"last4": {"type": "string"}}}`,
		"team/refund.json":    `{"x-routing-key": "payment.refunded", "type": "object", "properties": {"amount": {"$ref": "../vendor/openapi.json#/components/schemas/Money"}}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	facts := map[string]*Fact{}
	for _, f := range s.Facts {
		facts[f.RoutingKey] = f
	}
	captured := facts["payment.captured"].Schema
	money := captured.Property("money")
	if money == nil || money.Ref == nil || money.Ref.Location() != "vendor/openapi.json#/components/schemas/Money" {
		t.Fatalf("PaymentCaptured's money: %+v, want its $ref resolved to Money", money)
	}
	currency := money.Ref.Property("currency")
	if currency == nil || currency.Ref == nil || !currency.Ref.HasEnum || len(currency.Ref.Enum) != 2 {
		t.Fatalf("Money's currency: %+v, want its $ref resolved to the enum Currency", currency)
	}
	if card := captured.Property("card"); card.Ref == nil || card.Ref.Location() != "common/card.json" {
		t.Errorf("PaymentCaptured's card: %+v, want its $ref resolved to common/card.json", card)
	}
	amount := facts["payment.refunded"].Schema.Property("amount")
	if amount.Ref != money.Ref {
		t.Errorf("the team's amount resolves to %v, want the Money that PaymentCaptured's money resolves to", amount.Ref)
	}

	doc, _ := s.Doc("vendor/openapi.json")
	var roots []string
	for _, r := range doc.Roots() {
		roots = append(roots, r.Pointer)
	}
	if got, want := strings.Join(roots, " "), " /components/schemas/PaymentCaptured /components/schemas/Money /components/schemas/Currency"; got != want {
		t.Errorf("Roots = %q, want %q (the file's root, then what is used, in file order; Unused is not)", got, want)
	}
	if got := docPaths(s.Referenced(doc)); !strings.Contains(got, "vendor/openapi.json") || !strings.Contains(got, "common/card.json") {
		t.Errorf("Referenced(vendor/openapi.json) = %s, want itself and common/card.json, which the generated code embeds", got)
	}
	if v := s.Vendored(); !v[doc] {
		t.Errorf("vendor/openapi.json is not vendored")
	}
}

// TestDetachedSchemaErrors: a schema reached inside a document through the
// manifest or a $ref, and every schema its $refs reach there, is checked
// as a file's root is: a $ref to nothing, a keyword its draft's
// meta-schema refuses (OpenAPI 3.0's boolean exclusiveMinimum in a file
// read as 2020-12), a dynamic reference; each once, at its file, line:col
// and pointer, however many ways it is reached.
func TestDetachedSchemaErrors(t *testing.T) {
	vendored := `{
  "openapi": "3.0.3",
  "components": {
    "schemas": {
      "PaymentCaptured": {
        "type": "object",
        "properties": {
          "money": {"$ref": "#/components/schemas/Money"},
          "payer": {"$ref": "#/components/schemas/Nope"}
        }
      },
      "Money": {
        "type": "object",
        "properties": {
          "amount": {"type": "integer", "minimum": 0, "exclusiveMinimum": true},
          "tag": {"$dynamicRef": "#meta"}
        }
      }
    }
  }
}`
	_, err := LoadFS(context.Background(), mapFS(map[string]string{
		"warren.json": `{"facts": {
  "payment.captured": {"schema": "vendor/openapi.json#/components/schemas/PaymentCaptured"},
  "payment.money": {"schema": "vendor/openapi.json#/components/schemas/Money"}
}}`,
		"vendor/openapi.json": vendored,
		"team/refund.json":    `{"x-routing-key": "payment.refunded", "type": "object", "properties": {"amount": {"$ref": "../vendor/openapi.json#/components/schemas/Money"}}}`,
	}))
	want := []string{
		`vendor/openapi.json:9:29: /components/schemas/PaymentCaptured/properties/payer/$ref: $ref "#/components/schemas/Nope": vendor/openapi.json has nothing at /components/schemas/Nope`,
		`vendor/openapi.json:15:75: /components/schemas/Money/properties/amount/exclusiveMinimum: expected number, got true (in 2020-12, exclusiveMinimum is the number itself (the exclusive bound); true/false was draft-04)`,
		`vendor/openapi.json:16:19: /components/schemas/Money/properties/tag/$dynamicRef: $dynamicRef is not supported: its target depends on where the schema is used, and warren maps each schema to one Go type; use $ref`,
	}
	checkErrors(t, err, want)
}

// TestDetachedSchemaInsideAnother: a schema read where no keyword holds
// one, and then one that holds it, are one tree: the place is one Schema,
// checked and resolved once, whichever is read first.
func TestDetachedSchemaInsideAnother(t *testing.T) {
	vendored := `{
  "components": {
    "schemas": {
      "Order": {
        "type": "object",
        "properties": {
          "line": {"type": "object", "properties": {"sku": {"$ref": "#/components/schemas/Sku"}, "qty": {"maximum": 9, "exclusiveMaximum": false}}}
        }
      },
      "Sku": {"type": "string", "pattern": "^[A-Z]+$"}
    }
  }
}`
	// Manifest facts resolve in routing-key order: a.* before b.*.
	for _, keys := range [][2]string{{"a.line", "b.order"}, {"b.line", "a.order"}} {
		manifest := `{"facts": {"` + keys[0] + `": {"schema": "vendor/openapi.json#/components/schemas/Order/properties/line"}, "` + keys[1] + `": {"schema": "vendor/openapi.json#/components/schemas/Order"}}}`
		_, err := LoadFS(context.Background(), mapFS(map[string]string{"warren.json": manifest, "vendor/openapi.json": vendored}))
		checkErrors(t, err, []string{
			`vendor/openapi.json:7:140: /components/schemas/Order/properties/line/properties/qty/exclusiveMaximum: expected number, got false (in 2020-12, exclusiveMaximum is the number itself (the exclusive bound); true/false was draft-04)`,
		})

		fixed := strings.Replace(vendored, `, "exclusiveMaximum": false`, "", 1)
		s, err := LoadFS(context.Background(), mapFS(map[string]string{"warren.json": manifest, "vendor/openapi.json": fixed}))
		if err != nil {
			t.Fatal(err)
		}
		var line, order *Schema
		for _, f := range s.Facts {
			switch f.RoutingKey {
			case keys[0]:
				line = f.Schema
			case keys[1]:
				order = f.Schema
			}
		}
		if order.Property("line") != line {
			t.Errorf("%v: Order's line is not the schema the manifest points at", keys)
		}
		if sku := line.Property("sku"); sku.Ref == nil || sku.Ref.Location() != "vendor/openapi.json#/components/schemas/Sku" {
			t.Errorf("%v: line's sku = %+v, want its $ref resolved", keys, sku)
		}
		doc, _ := s.Doc("vendor/openapi.json")
		var roots []string
		for _, r := range doc.Roots() {
			roots = append(roots, r.Pointer)
		}
		if got, want := strings.Join(roots, " "), " /components/schemas/Order /components/schemas/Sku"; got != want {
			t.Errorf("%v: Roots = %q, want %q", keys, got, want)
		}
	}
}

// TestDetachedSchemaOfAnOlderDraft: a document that names draft-04 is
// read, and its used schemas checked, under draft-04: there the boolean
// exclusiveMinimum is right, and a patternProperties key no engine can
// run is an error (draft-04's meta-schema does not check the keys).
func TestDetachedSchemaOfAnOlderDraft(t *testing.T) {
	files := map[string]string{
		"warren.json": `{"facts": {"a.b": {"schema": "vendor/api.json#/components/schemas/A"}}}`,
		"vendor/api.json": `{"$schema": "http://json-schema.org/draft-04/schema#", "components": {"schemas": {
  "A": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}, "m": {"$ref": "#/components/schemas/M"}}},
  "M": {"type": "object", "patternProperties": {"(": {}}}
}}}`,
	}
	_, err := LoadFS(context.Background(), mapFS(files))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 || !strings.HasPrefix(list[0].Error(), `vendor/api.json:3:49: /components/schemas/M/patternProperties/(: '(' is not valid regex`) {
		t.Fatalf("error = %v, want one at M's pattern key", err)
	}
	files["vendor/api.json"] = strings.Replace(files["vendor/api.json"], `"(": {}`, `"^x-": {}`, 1)
	s, err := LoadFS(context.Background(), mapFS(files))
	if err != nil {
		t.Fatal(err)
	}
	n := s.Facts[0].Schema.Property("n")
	if n.Minimum == nil || !n.Minimum.Exclusive || n.Minimum.Value != "0" {
		t.Errorf("n's minimum = %+v, want exclusive 0", n.Minimum)
	}
}

func checkErrors(t *testing.T, err error, want []string) {
	t.Helper()
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error = %v, want an ErrorList", err)
	}
	// Sorted, but not compacted: each error must be reported once.
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
