package model

import (
	"strings"
	"testing"
)

// TestMisspeltKeywordsFail: a key one slip from a keyword that applies
// where it is written, with that keyword missing there, fails the model
// with the keyword it probably is. As written, each would have changed
// the generated code silently: no required properties, no fact, version
// 1, raw JSON for an untyped property.
func TestMisspeltKeywordsFail(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         []string
	}{
		{"required", `{"x-routing-key": "a.b", "type": "object", "requried": ["x"], "properties": {"x": {"type": "string"}}}`,
			[]string{`a.json:1:44: /requried: unknown keyword "requried"; did you mean "required"? An unknown keyword is ignored, so as written this schema has no "required"`}},
		{"properties", `{"x-routing-key": "a.b", "type": "object", "propertes": {"x": {"type": "string"}}}`,
			[]string{`a.json:1:44: /propertes: unknown keyword "propertes"; did you mean "properties"? An unknown keyword is ignored, so as written this schema has no "properties"`}},
		{"x-routing-key", `{"x-routng-key": "a.b", "type": "object"}`,
			[]string{`a.json:1:2: /x-routng-key: unknown keyword "x-routng-key"; did you mean "x-routing-key"? An unknown keyword is ignored, so as written this schema has no "x-routing-key"`}},
		{"x-version", `{"x-routing-key": "a.b", "x-verison": 2, "type": "object"}`,
			[]string{`a.json:1:26: /x-verison: unknown keyword "x-verison"; did you mean "x-version"? An unknown keyword is ignored, so as written this schema has no "x-version"`}},
		{"x-ordering-key", `{"x-routing-key": "a.b", "x-ordering_key": "/id", "type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}`,
			[]string{`a.json:1:26: /x-ordering_key: unknown keyword "x-ordering_key"; did you mean "x-ordering-key"? An unknown keyword is ignored, so as written this schema has no "x-ordering-key"`}},
		{"x-warren-lint", `{"x-routing-key": "a.b", "x-warren-lnit": {"disable": ["past-tense"]}, "type": "object"}`,
			[]string{`a.json:1:26: /x-warren-lnit: unknown keyword "x-warren-lnit"; did you mean "x-warren-lint"? An unknown keyword is ignored, so as written this schema has no "x-warren-lint"`}},
		{"x-warren- is warren's own", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "string", "x-warren-type": "Foo"}}}`,
			[]string{`a.json:1:83: /properties/x/x-warren-type: unknown keyword "x-warren-type": keys starting with "x-warren-" are warren's own, and warren reads none such here`}},
		{"x-warren-lint below the root", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "string", "x-warren-lint": {"disable": ["past-tense"]}}}}`,
			[]string{`a.json:1:83: /properties/x/x-warren-lint: unknown keyword "x-warren-lint": keys starting with "x-warren-" are warren's own, and warren reads none such here`}},
		{"x-renamed-from below the root", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "string", "x-renamed-form": "y"}}}`,
			[]string{`a.json:1:83: /properties/x/x-renamed-form: unknown keyword "x-renamed-form"; did you mean "x-renamed-from"? An unknown keyword is ignored, so as written this schema has no "x-renamed-from"`}},
		{"nested keywords", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "string", "patern": "^a", "minLenght": 1, "fromat": "uuid"}, "l": {"type": "array", "itmes": {"type": "string"}}, "o": {"type": "object", "additionalProperites": false}}}`,
			[]string{
				`a.json:1:83: /properties/x/patern: unknown keyword "patern"; did you mean "pattern"? An unknown keyword is ignored, so as written this schema has no "pattern"`,
				`a.json:1:99: /properties/x/minLenght: unknown keyword "minLenght"; did you mean "minLength"? An unknown keyword is ignored, so as written this schema has no "minLength"`,
				`a.json:1:115: /properties/x/fromat: unknown keyword "fromat"; did you mean "format"? An unknown keyword is ignored, so as written this schema has no "format"`,
				`a.json:1:157: /properties/l/itmes: unknown keyword "itmes"; did you mean "items"? An unknown keyword is ignored, so as written this schema has no "items"`,
				`a.json:1:211: /properties/o/additionalProperites: unknown keyword "additionalProperites"; did you mean "additionalProperties"? An unknown keyword is ignored, so as written this schema has no "additionalProperties"`,
			}},
		{"type, swapped", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"tpye": "string"}}}`,
			[]string{`a.json:1:65: /properties/x/tpye: unknown keyword "tpye"; did you mean "type"? An unknown keyword is ignored, so as written this schema has no "type"`}},
		{"the draft of the file", `{"$shema": "http://json-schema.org/draft-07/schema#", "x-routing-key": "a.b", "type": "object"}`,
			[]string{`a.json:1:2: /$shema: unknown keyword "$shema"; did you mean "$schema"? An unknown keyword is ignored, so as written this schema has no "$schema"`}},
		{"in a shared file", `{"type": "object", "properties": {"x": {"type": "string", "maxLenght": 3}}}`,
			[]string{`a.json:1:59: /properties/x/maxLenght: unknown keyword "maxLenght"; did you mean "maxLength"? An unknown keyword is ignored, so as written this schema has no "maxLength"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := build(t, map[string]string{"warren.json": `{"package": "p"}`, "a.json": tc.schema, "z.json": `{"x-routing-key": "z.happened", "type": "object"}`})
			if err == nil {
				t.Fatalf("built; want:\n%s", strings.Join(tc.want, "\n"))
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("error:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestKeysThatAreNoMisspelling: vendors' keys, OpenAPI's, keywords of
// another draft, and a slip whose keyword is written beside it or only
// documents (lint warns of those) all build.
func TestKeysThatAreNoMisspelling(t *testing.T) {
	for _, tc := range []struct{ name, schema string }{
		{"vendor annotations", `{"x-routing-key": "a.b", "x-owner": "team", "x-request-id": "h", "x-order-key": "k", "type": "object", "properties": {"x": {"type": "string", "x-go-type": "ID", "x-nullable": true, "note": "a word of the author's"}}}`},
		{"OpenAPI", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "string", "example": "a", "nullable": true, "xml": {"name": "x"}, "discriminator": "t", "externalDocs": {}}}}`},
		{"annotations", `{"x-routing-key": "a.b", "type": "object", "$comment": "c", "description": "d", "properties": {"x": {"type": "string", "examples": ["a"], "readOnly": true, "deprecated": true}}}`},
		{"a keyword of another draft", `{"$schema": "http://json-schema.org/draft-07/schema#", "x-routing-key": "a.b", "type": "object", "$defs": {"d": {"type": "string"}}, "definitions": {"e": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/d"}}}`},
		{"keyword beside its misspelling", `{"x-routing-key": "a.b", "type": "object", "required": ["x"], "requried": ["x"], "properties": {"x": {"type": "string"}}}`},
		{"documentation misspelt", `{"x-routing-key": "a.b", "type": "object", "descripton": "d", "properties": {"x": {"type": "string", "$coment": "c"}}}`},
		{"warren keywords elsewhere", `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "string", "x-renamed-from": "y", "x-version": 1}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := build(t, map[string]string{"warren.json": `{"package": "p"}`, "a.json": tc.schema}); err != nil {
				t.Errorf("error: %v", err)
			}
		})
	}
}

// TestMisspeltKeywordsOfAVendoredMetaSchema: a file read under a vendored
// meta-schema of the manifest's metaSchemas may use keywords that
// meta-schema defines ("requires" here, one letter from "required"), so
// only warren's own keys are judged there.
func TestMisspeltKeywordsOfAVendoredMetaSchema(t *testing.T) {
	files := map[string]string{
		"warren.json": `{"package": "p", "metaSchemas": {"https://example.com/meta#": {"schema": "meta/meta.json"}}}`,
		"meta/meta.json": `{"$schema": "http://json-schema.org/draft-07/schema#", "$id": "https://example.com/meta#",
			"allOf": [{"$ref": "http://json-schema.org/draft-07/schema#"}], "properties": {"requires": {"type": "array", "items": {"type": "string"}}}}`,
		"a.json": `{"$schema": "https://example.com/meta#", "x-routing-key": "a.b", "type": "object", "requires": ["x"], "properties": {"x": {"type": "number"}}}`,
	}
	if _, err := build(t, files); err != nil {
		t.Fatalf("error: %v", err)
	}
	files["a.json"] = `{"$schema": "https://example.com/meta#", "x-routng-key": "a.b", "type": "object"}`
	_, err := build(t, files)
	if want := `a.json:1:42: /x-routng-key: unknown keyword "x-routng-key"; did you mean "x-routing-key"?`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error: %v\nwant it to start with: %s", err, want)
	}
}
