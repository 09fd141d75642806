package load

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Files of every draft sit in one directory and refer to each other by
// path, pointer, $id (absolute and relative), id and anchor.
func TestLoadMixedDrafts(t *testing.T) {
	s, err := LoadFS(context.Background(), mapFS(map[string]string{
		"warren.json": `{}`,
		"gcp/storage.json": `{
  "$schema": "http://json-schema.org/draft-04/schema#",
  "id": "https://cloud.example.com/storage/v1/data.json",
  "$ref": "#/definitions/StorageObjectData",
  "definitions": {
    "StorageObjectData": {"type": "object", "properties": {
      "size": {"type": "integer", "minimum": 0, "exclusiveMinimum": true},
      "owner": {"$ref": "https://example.org/schema/links/start.json#person"}}}
  }
}`,
		"github/push.json": `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "definitions": {"sha": {"$id": "#sha", "type": "string"}},
  "properties": {"after": {"$ref": "#sha"}, "pusher": {"oneOf": [{"$ref": "../gcp/storage.json"}, {"type": "null"}]}}
}`,
		"links/start.json": `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://example.org/schema/links/start.json",
  "type": "object",
  "properties": {"next": {"$ref": "next.json"}},
  "$defs": {"person": {"$anchor": "person", "type": "string"}}
}`,
		"links/next.json": `{"$schema": "https://json-schema.org/draft/2019-09/schema", "$id": "https://example.org/schema/links/next.json", "$ref": "start.json#/$defs/person"}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	drafts := map[string]*Draft{"gcp/storage.json": Draft4, "github/push.json": Draft7, "links/start.json": Draft2020, "links/next.json": Draft2019}
	for p, want := range drafts {
		if d, _ := s.Doc(p); d.Draft != want {
			t.Errorf("%s: draft %s, want %s", p, d.Draft, want)
		}
	}
	storage, _ := s.Doc("gcp/storage.json")
	if storage.Root.Ref == nil || storage.Root.Ref.Pointer != "/definitions/StorageObjectData" || !storage.Root.RefAlone {
		t.Errorf("draft-04 root $ref: %+v", storage.Root.Ref)
	}
	size := storage.SchemaAt("/definitions/StorageObjectData/properties/size")
	if size.Minimum == nil || !size.Minimum.Exclusive || size.Minimum.Value != "0" {
		t.Errorf("draft-04 exclusiveMinimum: %+v", size.Minimum)
	}
	refs := map[string]string{
		"gcp/storage.json#/definitions/StorageObjectData/properties/owner": "links/start.json#/$defs/person",
		"github/push.json#/properties/after":                               "github/push.json#/definitions/sha",
		"github/push.json#/properties/pusher/oneOf/0":                      "gcp/storage.json",
		"links/start.json#/properties/next":                                "links/next.json",
		"links/next.json":                                                  "links/start.json#/$defs/person",
	}
	for from, want := range refs {
		file, ptr, _ := strings.Cut(from, "#")
		d, _ := s.Doc(file)
		if n := d.SchemaAt(ptr); n == nil || n.Ref == nil || n.Ref.Location() != want {
			t.Errorf("%s: $ref resolves to %v, want %s", from, n, want)
		}
	}
}

func TestLoadDraftErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "unknown URL names the nearest $ids",
			files: map[string]string{
				"a.json": `{"$id": "https://example.org/schema/links/start.json", "properties": {"x": {"$ref": "https://example.org/schema/links/strat.json"}}}`,
				"b.json": `{"$id": "https://example.org/schema/other.json"}`,
			},
			want: []string{`a.json:1:85: /properties/x/$ref: $ref "https://example.org/schema/links/strat.json": no file of the schema directory declares $id "https://example.org/schema/links/strat.json", and warren never fetches schemas from the network; nearest declared: "https://example.org/schema/links/start.json", "https://example.org/schema/other.json"`},
		},
		{
			name:  "draft-04 exclusiveMinimum is a boolean",
			files: map[string]string{"a.json": `{"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 1, "exclusiveMinimum": 1}`},
			want:  []string{`a.json:1:90: /exclusiveMinimum: expected boolean, got 1 (in draft-04, exclusiveMinimum is true or false and says whether minimum is exclusive; a number here is draft-06 and later)`},
		},
		{
			name:  "draft-07 exclusiveMinimum is a number",
			files: map[string]string{"a.json": `{"$schema": "http://json-schema.org/draft-07/schema#", "minimum": 1, "exclusiveMinimum": true}`},
			want:  []string{`a.json:1:90: /exclusiveMinimum: expected number, got true (in draft-07, exclusiveMinimum is the number itself (the exclusive bound); true/false was draft-04)`},
		},
		{
			name:  "unknown $schema",
			files: map[string]string{"a.json": `{"$schema": "http://json-schema.org/draft-03/schema#"}`},
			want:  []string{`a.json:1:13: /$schema: expected one of "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema" (the JSON Schema drafts warren reads), or a meta-schema the manifest's metaSchemas declares, got "http://json-schema.org/draft-03/schema#"`},
		},
		{
			// Their meta-schemas do not check the keys (draft-07's and
			// later ones do); a lookahead is ECMA-262 and fine.
			name: "patternProperties keys in draft-04 and draft-06",
			files: map[string]string{
				"a.json": `{"$schema": "http://json-schema.org/draft-04/schema#", "patternProperties": {"[a-": {}, "^(?!x)": {}}}`,
				"b.json": `{"$schema": "http://json-schema.org/draft-06/schema#", "properties": {"p": {"patternProperties": {"a)": {}}}}}`,
			},
			want: []string{
				"a.json:1:78: /patternProperties/[a-: '[a-' is not valid regex: error parsing regexp: unterminated [] set in `[a-`",
				"b.json:1:99: /properties/p/patternProperties/a): 'a)' is not valid regex: error parsing regexp: unexpected ) in `a)`",
			},
		},
		{
			name:  "dynamic references",
			files: map[string]string{"a.json": `{"$dynamicAnchor": "node", "properties": {"kids": {"$dynamicRef": "#node"}}}`},
			want:  []string{`a.json:1:52: /properties/kids/$dynamicRef: $dynamicRef is not supported: its target depends on where the schema is used, and warren maps each schema to one Go type; use $ref`},
		},
		{
			name:  "one $id twice",
			files: map[string]string{"a.json": `{"$id": "https://x.example/a.json"}`, "b.json": `{"$id": "https://x.example/a.json"}`},
			want:  []string{`b.json:1:9: /$id: $id "https://x.example/a.json" is already declared by a.json`},
		},
		{
			name:  "relative path out of the directory",
			files: map[string]string{"a.json": `{"$ref": "../x.json"}`},
			want:  []string{`a.json:1:10: /$ref: $ref "../x.json": points outside the schema directory`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.files["warren.json"] = `{}`
			_, err := LoadFS(context.Background(), mapFS(tt.files))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error = %v, want an ErrorList", err)
			}
			if len(list) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(list), len(tt.want), err)
			}
			for i, e := range list {
				if e.Error() != tt.want[i] {
					t.Errorf("error %d:\n got %s\nwant %s", i, e, tt.want[i])
				}
			}
		})
	}
}

// A file reached by its path, with an anchor ("all.json#created"), whose
// root declares an $id: the anchor is found under that $id, as a JSON
// pointer into the file is, from a $ref and from the manifest's facts
// (a vendored file is never edited to drop its $id).
func TestAnchorOfAFileWithAnIDReachedByPath(t *testing.T) {
	s, err := LoadFS(context.Background(), mapFS(map[string]string{
		"warren.json": `{"facts": {"vendor.thing.created": {"schema": "vendor/all.json#created"}}}`,
		"vendor/all.json": `{"$id": "https://vendor.example/events.json",
  "$defs": {"created": {"$anchor": "created", "type": "object", "properties": {"id": {"type": "string"}}}}}`,
		"vendor/use.json": `{"x-routing-key": "vendor.thing.used", "type": "object", "properties": {"c": {"$ref": "all.json#created"}}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	use, _ := s.Doc("vendor/use.json")
	if n := use.SchemaAt("/properties/c"); n == nil || n.Ref == nil || n.Ref.Location() != "vendor/all.json#/$defs/created" {
		t.Errorf("$ref \"all.json#created\" resolves to %v, want vendor/all.json#/$defs/created", n.Ref)
	}
	for _, f := range s.Facts {
		if f.RoutingKey == "vendor.thing.created" && f.Schema.Location() != "vendor/all.json#/$defs/created" {
			t.Errorf("fact vendor.thing.created is %s, want vendor/all.json#/$defs/created", f.Schema.Location())
		}
	}
}
