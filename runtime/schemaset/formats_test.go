package schemaset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// suiteDir is the official JSON Schema Test Suite, read in place beside the
// repository.
func suiteDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "jsonschema-test-suite", "tests")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("JSON Schema Test Suite: %v", err)
		}
		t.Skipf("JSON Schema Test Suite not found: %v", err)
	}
	return dir
}

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// Every format warren can assert passes the official suite's tests of that
// format: asserted, it accepts exactly the valid strings.
func TestAssertedFormatsAgreeWithSuite(t *testing.T) {
	dir := filepath.Join(suiteDir(t), "draft2020-12", "optional", "format")
	for _, format := range Formats {
		src, err := os.ReadFile(filepath.Join(dir, format+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var groups []suiteGroup
		if err := json.Unmarshal(src, &groups); err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			s := NewWith(map[string]string{"s.json": string(g.Schema)}, Options{AssertFormats: []string{format}})
			for _, c := range g.Tests {
				err := s.Validate("s.json", c.Data)
				if _, mismatch := err.(*ValidationError); err != nil && !mismatch {
					t.Fatalf("%s: %v", format, err)
				}
				if got := err == nil; got != c.Valid {
					t.Errorf("format %s, %s: %s: valid = %v, want %v (%v)", format, g.Description, c.Description, got, c.Valid, err)
				}
			}
		}
	}
}

// A format not asserted is an annotation in every draft: the library would
// otherwise assert formats in drafts before 2019-09.
func TestFormatsAreAnnotationsUnlessAsserted(t *testing.T) {
	for _, schema := range []string{"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema"} {
		s := New(map[string]string{"s.json": `{"$schema": "` + schema + `", "format": "uuid"}`})
		if err := s.Validate("s.json", []byte(`"not a uuid"`)); err != nil {
			t.Errorf("%s: format asserted without being asked: %v", schema, err)
		}
		s = NewWith(map[string]string{"s.json": `{"$schema": "` + schema + `", "format": "uuid"}`}, Options{AssertFormats: []string{"uuid"}})
		if err := s.Validate("s.json", []byte(`"not a uuid"`)); err == nil || !strings.Contains(err.Error(), "uuid") {
			t.Errorf("%s: asserted uuid accepted a bad one: %v", schema, err)
		}
	}
}

func TestURITemplate(t *testing.T) {
	valid := []string{
		"https://api.example.com/repos/o/r/issues{/number}",
		"https://api.github.com/repos/o/r/git/commits{/sha}",
		"https://api.github.com/repos/o/r/compare/{base}...{head}",
		"https://uploads.github.com/repos/o/r/releases/1/assets{?name,label}",
		"{+path:6}/here{#frag*}{;x,y}{&a}{.dom*}",
		"http://example.com/%7Efred",
		"",
	}
	invalid := []string{"http://example.com/dictionary/{term:1}/{term", "{}", "{x:0}", "{x:12345}", "{a b}", "a}b", "{=x}", "{x.}", "%zz"}
	for _, v := range valid {
		if err := validateURITemplate(v); err != nil {
			t.Errorf("%q rejected: %v", v, err)
		}
	}
	for _, v := range invalid {
		if err := validateURITemplate(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
	if !slices.Contains(Formats, "uri-template") {
		t.Error("uri-template cannot be asserted")
	}
}

// A reference by $id reaches a schema declared at the root of another file
// or inside one.
func TestIDs(t *testing.T) {
	s := NewWith(map[string]string{
		"links/start.json": `{"$id": "https://example.org/schema/links/start.json", "type": "object", "properties": {"next": {"$ref": "next.json"}, "in": {"$ref": "https://example.org/nested.json"}}}`,
		"links/next.json":  `{"$schema": "http://json-schema.org/draft-04/schema#", "id": "https://example.org/schema/links/next.json", "type": "integer"}`,
		"defs.json":        `{"$defs": {"in": {"$id": "https://example.org/nested.json", "type": "boolean"}}}`,
	}, Options{IDs: map[string]string{
		"https://example.org/schema/links/start.json": "links/start.json",
		"https://example.org/schema/links/next.json":  "links/next.json",
		"https://example.org/nested.json":             "defs.json#/$defs/in",
	}})
	if err := s.Validate("links/start.json", []byte(`{"next": 1, "in": true}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate("links/start.json", []byte(`{"next": "1", "in": 1}`)); err == nil || !strings.Contains(err.Error(), "/next") || !strings.Contains(err.Error(), "/in") {
		t.Errorf("want both /next and /in rejected: %v", err)
	}
	if err := s.Validate("links/next.json", []byte(`2`)); err != nil {
		t.Errorf("by path: %v", err)
	}
	// A file without $id refers to one with a root $id by its path.
	s = NewWith(map[string]string{
		"a.json":          `{"properties": {"n": {"$ref": "links/next.json"}}}`,
		"links/next.json": `{"$id": "https://example.org/schema/links/next.json", "type": "integer"}`,
	}, Options{IDs: map[string]string{"https://example.org/schema/links/next.json": "links/next.json"}})
	if err := s.Validate("a.json", []byte(`{"n": 1}`)); err != nil {
		t.Errorf("by path to a file with an $id: %v", err)
	}
	if err := s.Validate("a.json", []byte(`{"n": "1"}`)); err == nil {
		t.Error("by path to a file with an $id: accepted a string")
	}
}
