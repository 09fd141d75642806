package load

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

const igluURL = "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#"

// igluMeta is a meta-schema in the style of Iglu's: its $schema is its own
// URL, and its allOf adds "self" to the draft-04 meta-schema.
const igluMeta = `{"$schema": "` + igluURL + `",
	"self": {"vendor": "com.snowplowanalytics.self-desc", "name": "schema", "format": "jsonschema", "version": "1-0-0"},
	"allOf": [
		{"properties": {"self": {"type": "object", "required": ["vendor", "name", "format", "version"],
			"properties": {"version": {"type": "string", "pattern": "^[0-9]+-[0-9]+-[0-9]+$"}}}}, "required": ["self"]},
		{"$ref": "http://json-schema.org/draft-04/schema#"}]}`

func metaManifest(entries string) string {
	return `{"package": "p", "metaSchemas": {` + entries + `}}`
}

// TestMetaSchemaDraft works out the draft of the files that name each
// kind of meta-schema, and checks that they are read under it (with
// patterns read as ECMA-262, as everywhere: a lookahead is fine).
func TestMetaSchemaDraft(t *testing.T) {
	event := func(url string) string {
		return `{"$schema": "` + url + `", "self": {"vendor": "a", "name": "b", "format": "jsonschema", "version": "1-0-0"}, "type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}, "s": {"type": "string", "pattern": "^(?!internal)"}}}`
	}
	tests := []struct {
		name, manifest string
		files          map[string]string
		want           *Draft
	}{
		{"own URL, allOf $ref to a draft", metaManifest(`"` + igluURL + `": {"schema": "meta/iglu.json"}`),
			map[string]string{"meta/iglu.json": igluMeta, "e.json": event(igluURL)}, Draft4},
		{"$schema names a draft", metaManifest(`"https://m.example/v1": {"schema": "meta/m.json"}`),
			map[string]string{"meta/m.json": `{"$schema": "http://json-schema.org/draft-07/schema#", "allOf": [{"$ref": "http://json-schema.org/draft-07/schema#"}]}`,
				"e.json": `{"$schema": "https://m.example/v1#", "type": "object", "properties": {"n": {"exclusiveMinimum": 0}}}`}, Draft7},
		{"$schema names another meta-schema", metaManifest(`"` + igluURL + `": {"schema": "meta/iglu.json"}, "https://m.example/v2": {"schema": "meta/v2.json"}`),
			map[string]string{"meta/iglu.json": igluMeta, "meta/v2.json": `{"$schema": "` + igluURL + `", "self": {"vendor": "m", "name": "v2", "format": "jsonschema", "version": "2-0-0"}, "allOf": [{"$ref": "#/definitions/base"}], "definitions": {"base": {"$ref": "` + igluURL + `"}}}`,
				"e.json": event("https://m.example/v2")}, Draft4},
		{"named draft", metaManifest(`"https://m.example/legacy": "2019-09"`),
			map[string]string{"e.json": `{"$schema": "https://m.example/legacy", "$defs": {"x": {"type": "string"}}}`}, Draft2019},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.files["warren.json"] = tt.manifest
			s, err := LoadFS(context.Background(), mapFS(tt.files))
			if err != nil {
				t.Fatal(err)
			}
			d, ok := s.Doc("e.json")
			if !ok || d.Draft != tt.want || d.MetaSchema == "" {
				t.Fatalf("e.json read as %v (meta-schema %q), want %v", d.Draft, d.MetaSchema, tt.want)
			}
			for _, doc := range s.Docs {
				if strings.HasPrefix(doc.Path, "meta/") {
					t.Errorf("%s is a meta-schema, loaded as a schema of the directory", doc.Path)
				}
			}
			var embedded map[string]any
			if err := json.Unmarshal(d.DraftSource(), &embedded); err != nil || embedded["$schema"] != tt.want.URL {
				t.Errorf("DraftSource() names %v (%v), want the draft %s", embedded["$schema"], err, tt.want.URL)
			}
		})
	}
}

func TestMetaSchemaErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"file not valid under the meta-schema", map[string]string{
			"warren.json":    metaManifest(`"` + igluURL + `": {"schema": "meta/iglu.json"}`),
			"meta/iglu.json": igluMeta,
			"e.json":         `{"$schema": "` + igluURL + `", "self": {"vendor": "a", "name": "b", "format": "jsonschema", "version": "1.0"}, "type": "strin"}`,
		}, []string{
			`e.json:1:176: /self/version: '1.0' does not match pattern '^[0-9]+-[0-9]+-[0-9]+$' (from the meta-schema meta/iglu.json)`,
			`e.json:1:192: /type: expected one of "array", "boolean", "integer", "null", "number", "object", "string"; got "strin"`,
		}},
		{"meta-schema not valid under its draft", map[string]string{
			"warren.json": metaManifest(`"https://m.example/v1": {"schema": "meta/m.json"}`),
			"meta/m.json": `{"$schema": "http://json-schema.org/draft-07/schema#", "required": "self"}`,
			"e.json":      `{"$schema": "https://m.example/v1"}`,
			"f.json":      `{"$ref": "meta/m.json"}`,
		}, []string{
			`f.json:1:10: /$ref: $ref "meta/m.json": meta/m.json is a meta-schema (the manifest's metaSchemas name it), not a schema of the directory`,
			`meta/m.json:1:68: /required: expected array, got "self"`,
		}},
		{"two drafts", map[string]string{
			"warren.json": metaManifest(`"https://m.example/v1": {"schema": "meta/m.json"}`),
			"meta/m.json": `{"allOf": [{"$ref": "http://json-schema.org/draft-04/schema#"}, {"$ref": "http://json-schema.org/draft-07/schema#"}]}`,
		}, []string{
			`meta/m.json:1:1: meta-schema "https://m.example/v1" extends draft-04 (at /allOf/0/$ref) and draft-07 (at /allOf/1/$ref): expected one draft, which the files that name it are read under`,
		}},
		{"a draft's URL", map[string]string{
			"warren.json": metaManifest(`"http://json-schema.org/draft-07/schema#": "draft-07"`),
		}, []string{
			`warren.json:1:34: /metaSchemas/http:~1~1json-schema.org~1draft-07~1schema#: "http://json-schema.org/draft-07/schema#" is the URL of draft-07, which warren reads without being told: expected the URL of another meta-schema`,
		}},
		{"no such draft: files naming it are left to the manifest's error", map[string]string{
			"warren.json": metaManifest(`"https://m.example/v1": "draft-4"`),
			"e.json":      `{"$schema": "https://m.example/v1"}`,
		}, []string{
			`warren.json:1:58: /metaSchemas/https:~1~1m.example~1v1: expected a JSON Schema draft warren reads: "draft-04", "draft-06", "draft-07", "2019-09" or "2020-12" (or an object {"schema": "vendor/...json"} naming the meta-schema's file), got "draft-4"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFS(context.Background(), mapFS(tt.files))
			if err == nil {
				t.Fatal("loaded")
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
