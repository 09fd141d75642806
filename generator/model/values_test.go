package model

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestValuesTheSchemaRefuses: a default, enum value or const that its own
// schema refuses, and a schema no value satisfies, fail the model, naming
// the value, where it is and why. As written, each became code: a typed
// constant that fails its own Validate, or a field no payload can fill.
func TestValuesTheSchemaRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, prop string // the schema of property "p"
		want       string // the error, after "a.json:1:<col>: "
	}{
		{"default of another type than the enum's", `{"type": "string", "enum": ["basic", "premium"], "default": 3}`,
			`/properties/p/default: default 3 does not fit the schema: got number, want string`},
		{"default outside the enum", `{"type": "string", "enum": ["basic", "premium"], "default": "gold"}`,
			`/properties/p/default: default "gold" does not fit the schema: value must be one of 'basic', 'premium'`},
		{"default written as it is", `{"type": "string", "maxLength": 2, "default": "<b>"}`,
			`/properties/p/default: default "<b>" does not fit the schema: maxLength: got 3, want 2`},
		{"long default cut short", `{"type": "string", "maxLength": 2, "default": "ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé"}`,
			`/properties/p/default: default "éééééééééééééééééééééééééééééééééééééééééééééééééééééééé... does not fit the schema: maxLength: got 65, want 2`},
		{"default of another type", `{"type": "integer", "default": "ten"}`,
			`/properties/p/default: default "ten" does not fit the schema: got string, want integer`},
		{"default too long", `{"type": "string", "maxLength": 3, "default": "far too long"}`,
			`/properties/p/default: default "far too long" does not fit the schema: maxLength: got 12, want 3`},
		{"default no date-time", `{"type": "string", "format": "date-time", "default": "tomorrow"}`,
			`/properties/p/default: default "tomorrow" does not fit the schema: 'tomorrow' is not valid date-time: less than 20 characters long`},
		{"default of an object", `{"type": "object", "properties": {"n": {"type": "integer"}}, "default": {"n": "one"}}`,
			`/properties/p/default: default {"n":"one"} does not fit the schema: at /n: got string, want integer`},
		{"default beside a $ref", `{"$ref": "#/$defs/tier", "default": "gold"}`,
			`/properties/p/default: default "gold" does not fit the schema: value must be one of 'basic', 'premium'`},
		{"enum value of another type", `{"type": "string", "enum": ["EUR", 7]}`,
			`/properties/p/enum/1: enum value 7 does not fit the schema: got number, want string`},
		{"enum value too long", `{"type": "string", "maxLength": 3, "enum": ["EUR", "EURO"]}`,
			`/properties/p/enum/1: enum value "EURO" does not fit the schema: maxLength: got 4, want 3`},
		{"const of another type", `{"type": "string", "const": 7}`,
			`/properties/p/const: const 7 does not fit the schema: got number, want string`},
		{"empty enum", `{"enum": []}`,
			`/properties/p/enum: an empty enum admits no value: list the values it allows, or remove it`},
		{"minimum above maximum", `{"type": "number", "minimum": 10, "maximum": 1}`,
			`/properties/p/minimum: minimum 10 is greater than maximum 1: no number satisfies both`},
		{"exclusive bounds that meet", `{"type": "number", "exclusiveMinimum": 1, "maximum": 1}`,
			`/properties/p/exclusiveMinimum: exclusiveMinimum 1 and maximum 1 leave no number between them`},
		{"bounds of decimals", `{"type": "number", "minimum": 0.30000000000000001, "exclusiveMaximum": 0.3}`,
			`/properties/p/minimum: minimum 0.30000000000000001 is greater than exclusiveMaximum 0.3: no number satisfies both`},
		{"a bound far beyond", `{"type": "number", "minimum": 1e9999, "maximum": 1}`,
			`/properties/p/minimum: minimum 1e9999 is greater than maximum 1: no number satisfies both`},
		{"minLength above maxLength", `{"type": "string", "minLength": 5, "maxLength": 2}`,
			`/properties/p/minLength: minLength 5 is greater than maxLength 2: no string satisfies both`},
		{"minItems above maxItems", `{"type": "array", "minItems": 3, "maxItems": 1}`,
			`/properties/p/minItems: minItems 3 is greater than maxItems 1: no array satisfies both`},
		{"minProperties above maxProperties", `{"type": "object", "minProperties": 3, "maxProperties": 1}`,
			`/properties/p/minProperties: minProperties 3 is greater than maxProperties 1: no object satisfies both`},
		{"an unsatisfiable schema's values are not judged again", `{"type": "string", "minLength": 5, "maxLength": 2, "default": "abc", "enum": ["abc"]}`,
			`/properties/p/minLength: minLength 5 is greater than maxLength 2: no string satisfies both`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := `{"x-routing-key": "a.b", "type": "object", "$defs": {"tier": {"enum": ["basic", "premium"]}}, "properties": {"p": ` + tc.prop + `}}`
			_, err := build(t, map[string]string{"warren.json": `{"package": "p"}`, "a.json": schema})
			if err == nil {
				t.Fatalf("built; want %s", tc.want)
			}
			if got := err.Error(); strings.Count(got, "\n") > 0 || !strings.HasPrefix(got, "a.json:1:") || !strings.HasSuffix(got, ": "+tc.want) {
				t.Errorf("error:\n%s\nwant one line ending in:\n%s", got, tc.want)
			}
		})
	}
}

// TestDraft04ExclusiveBounds: draft-04 writes an exclusive bound as a flag
// beside it, and the error says so.
func TestDraft04ExclusiveBounds(t *testing.T) {
	schema := `{"$schema": "http://json-schema.org/draft-04/schema#", "x-routing-key": "a.b", "type": "object", "properties": {"p": {"type": "number", "minimum": 2, "exclusiveMinimum": true, "maximum": 2}}}`
	_, err := build(t, map[string]string{"warren.json": `{"package": "p"}`, "a.json": schema})
	want := `a.json:1:148: /properties/p/minimum: minimum 2 (exclusive) and maximum 2 leave no number between them`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestValuesTheSchemaAccepts: values that fit build, and a default
// becomes its typed constant.
func TestValuesTheSchemaAccepts(t *testing.T) {
	schema := `{"x-routing-key": "a.b", "type": "object", "$defs": {"tier": {"type": "string", "enum": ["basic", "premium"]}}, "properties": {
		"tier": {"$ref": "#/$defs/tier", "default": "basic"},
		"note": {"type": "string", "maxLength": 3, "default": "abc"},
		"nick": {"type": ["string", "null"], "default": null},
		"due": {"type": "string", "format": "date-time", "default": "2024-05-01T10:00:00Z"},
		"mail": {"type": "string", "format": "email", "default": "not asserted"},
		"n": {"type": "integer", "minimum": 1, "maximum": 1, "default": 1},
		"r": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.5},
		"tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 1, "default": ["a"]},
		"c": {"const": "x", "default": "x"},
		"e": {"enum": ["a", 1, null]},
		"openapi": {"type": "string", "nullable": true, "default": null, "enum": ["x", null]}
	}}`
	m, err := build(t, map[string]string{"warren.json": `{"package": "p"}`, "a.json": schema})
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, f := range m.Facts[0].Type.Fields {
		consts[f.JSONName] = f.DefaultConst
	}
	if consts["note"] != "ABNoteDefault" || consts["n"] != "ABNDefault" {
		t.Errorf("default constants = %v, want ABNoteDefault and ABNDefault among them", consts)
	}
}

// TestDraft07IgnoresKeywordsBesideARef: up to draft-07 the keywords beside
// a $ref are ignored, so bounds there contradict nothing, and a default
// there is checked against the $ref's target.
func TestDraft07IgnoresKeywordsBesideARef(t *testing.T) {
	schema := `{"$schema": "http://json-schema.org/draft-07/schema#", "x-routing-key": "a.b", "type": "object", "definitions": {"n": {"type": "integer"}}, "properties": {
		"p": {"$ref": "#/definitions/n", "minimum": 5, "maximum": 1},
		"q": {"$ref": "#/definitions/n", "default": "one"}}}`
	_, err := build(t, map[string]string{"warren.json": `{"package": "p"}`, "a.json": schema})
	want := `a.json:3:47: /properties/q/default: default "one" does not fit the schema: got string, want integer`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestValuesOfARequestsReply: the reply schema of a request (x-reply, a
// keyword no draft knows) is judged like any other, misspelt keys too.
func TestValuesOfARequestsReply(t *testing.T) {
	_, err := buildFS(t, fstest.MapFS{
		"warren.json": {Data: []byte(`{"responders": {"pricing": {"requests": ["pricing.quote"]}}}`)},
		"quote.json":  {Data: []byte(`{"x-request": "pricing.quote", "type": "object", "x-reply": {"type": "object", "properties": {"cents": {"type": "integer", "default": 1.5, "maximun": 10}}}}`)},
	})
	want := strings.Join([]string{
		`quote.json:1:135: /x-reply/properties/cents/default: default 1.5 does not fit the schema: got number, want integer`,
		`quote.json:1:140: /x-reply/properties/cents/maximun: unknown keyword "maximun"; did you mean "maximum"? An unknown keyword is ignored, so as written this schema has no "maximum"`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestVendoredDefaultTheSchemaRefuses: a vendored file (one the
// manifest's facts point into, or one it refers to) is never edited, so a
// default its schema refuses there is left out of the generated code and
// recorded for `warren check`, where a team's file fails the build over
// it. An enum value the schema refuses still fails: it would be a
// constant, and no payload could carry it.
func TestVendoredDefaultTheSchemaRefuses(t *testing.T) {
	files := map[string]string{
		"warren.json": `{"package": "p", "facts": {"vendor.pushed": {"schema": "vendor/push.json", "title": "Pushed"}}}`,
		"vendor/push.json": `{"type": "object", "properties": {
			"ref": {"type": "string", "maxLength": 3, "default": "refs/heads/main"},
			"size": {"type": "integer", "default": 1},
			"repo": {"$ref": "repo.json"}}}`,
		"vendor/repo.json": `{"type": "object", "properties": {"visibility": {"type": "string", "enum": ["public", "private"], "default": "internal"}}}`,
		"team.json":        `{"x-routing-key": "team.noted", "type": "object", "properties": {"n": {"type": "integer", "default": 1}}}`,
	}
	m, err := build(t, files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.DroppedDefaults {
		got = append(got, d.Doc.Path+" "+d.Pointer+" "+jsonText(d.Value)+": "+d.Why)
	}
	want := []string{
		`vendor/push.json /properties/ref/default "refs/heads/main": maxLength: got 15, want 3`,
		`vendor/repo.json /properties/visibility/default "internal": value must be one of 'public', 'private'`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("defaults left out:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	defaults := map[string]any{}
	for _, ty := range m.Types {
		for _, f := range ty.Fields {
			defaults[ty.GoName+"."+f.JSONName] = f.Default
		}
	}
	if defaults["Pushed.ref"] != nil || defaults["Repo.visibility"] != nil {
		t.Errorf("a refused default is still in the generated code: %v", defaults)
	}
	if defaults["Pushed.size"] == nil {
		t.Errorf("the vendored default that fits was left out: %v", defaults)
	}

	// The same default in a team's own fact file fails the build.
	files["team.json"] = `{"x-routing-key": "team.noted", "type": "object", "properties": {"n": {"type": "integer", "default": "one"}}}`
	if _, err := build(t, files); err == nil || !strings.Contains(err.Error(), `team.json:1:`) || !strings.Contains(err.Error(), `default "one" does not fit the schema`) {
		t.Errorf("a team file's refused default: %v; want an error naming team.json", err)
	}
	// And an enum value a vendored schema refuses still does.
	files["team.json"] = `{"x-routing-key": "team.noted", "type": "object"}`
	files["vendor/repo.json"] = `{"type": "object", "properties": {"visibility": {"type": "string", "enum": ["public", 7]}}}`
	if _, err := build(t, files); err == nil || !strings.Contains(err.Error(), `enum value 7 does not fit the schema`) {
		t.Errorf("a vendored enum value the schema refuses: %v; want an error", err)
	}
}

// An integer's Go type is int64: an enum value, const or default past it
// could never be decoded, so it is an error at its place; the bounds
// themselves are fine, and so is a large value of a number.
func TestIntegerValuesPastInt64AreRefused(t *testing.T) {
	_, err := build(t, map[string]string{
		"warren.json": `{"package": "events"}`,
		"thing.json": `{"$schema": "https://json-schema.org/draft/2020-12/schema", "x-routing-key": "thing.done", "type": "object", "properties": {
  "huge": {"type": "integer", "const": 12345678901234567890},
  "low": {"type": "integer", "default": -9223372036854775809},
  "bounds": {"type": "integer", "enum": [-9223372036854775808, 9223372036854775807]},
  "float": {"type": "number", "const": 12345678901234567890}}}`,
	})
	if err == nil {
		t.Fatal("integer values past int64 were accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"/properties/huge/const: const 12345678901234567890 does not fit in 64 bits",
		"/properties/low/default: default -9223372036854775809 does not fit in 64 bits",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	for _, not := range []string{"/properties/bounds", "/properties/float"} {
		if strings.Contains(msg, not) {
			t.Errorf("error %q refuses %s, which fits", msg, not)
		}
	}
}
