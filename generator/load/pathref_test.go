package load

import (
	"context"
	"strings"
	"testing"
)

// TestRefByPath resolves relative $refs whose $id base names no file by
// the referring file's place, records each, and leaves alone those that
// resolve by the specification or find no file either way.
func TestRefByPath(t *testing.T) {
	s, err := LoadFS(context.Background(), mapFS(map[string]string{
		"warren.json": `{"package": "p"}`,
		"a/a.json": `{"$id": "https://example.com/x/a", "properties": {
			"byPath": {"$ref": "../ref/ref.json#/$defs/Thing"},
			"bySpec": {"$ref": "b.json"}}}`,
		"x/b.json":     `{"$id": "https://example.com/x/b.json"}`,
		"ref/ref.json": `{"$id": "https://other.example/ref", "$defs": {"Thing": {"type": "string"}}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.RefsByPath) != 1 {
		t.Fatalf("RefsByPath = %v, want one", s.RefsByPath)
	}
	r := s.RefsByPath[0]
	got := strings.Join([]string{r.Doc.Path, r.Pointer, r.Ref, r.Base, r.URL, r.File, r.Target.Location()}, " ")
	want := "a/a.json /properties/byPath/$ref ../ref/ref.json#/$defs/Thing https://example.com/x/a https://example.com/ref/ref.json ref/ref.json ref/ref.json#/$defs/Thing"
	if got != want {
		t.Errorf("RefsByPath[0] = %s\nwant              %s", got, want)
	}
	if loc := s.IDs()["https://example.com/ref/ref.json"]; loc != "ref/ref.json" {
		t.Errorf("IDs() maps the URL to %q, want ref/ref.json: the generated code must resolve the $ref as warren did", loc)
	}
}

func TestRefByPathErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no file either way", map[string]string{
			"a/a.json": `{"$id": "https://example.com/a", "properties": {"x": {"$ref": "../missing.json"}}}`,
		}, `a/a.json:1:63: /properties/x/$ref: $ref "../missing.json": no file of the schema directory declares $id "https://example.com/missing.json"`},
		{"one URL, two files", map[string]string{
			"a/a.json":   `{"$id": "https://example.com/x/a", "properties": {"x": {"$ref": "t.json"}}}`,
			"b/c/b.json": `{"$id": "https://example.com/x/b", "properties": {"x": {"$ref": "t.json"}}}`,
			"a/t.json":   `{"type": "string"}`,
			"b/c/t.json": `{"type": "integer"}`,
		}, `b/c/b.json:1:65: /properties/x/$ref: $ref "t.json": resolves against $id "https://example.com/x/b" to "https://example.com/x/t.json", which no file declares; by this file's place it is b/c/t.json, but a/a.json:1:65 resolves the same URL to a/t.json, and one URL can name only one file: give the files $ids that agree with their places`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.files["warren.json"] = `{"package": "p"}`
			_, err := LoadFS(context.Background(), mapFS(tt.files))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to start with:\n%s", err, tt.want)
			}
		})
	}
}
