package load

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// draftCases are schemas the quick check must accept (the common forms) or
// leave to the meta-schema (everything else, valid or not).
var draftCases = []struct {
	src  string
	sure bool
}{
	{`true`, true},
	{`{}`, true},
	{`{"type": "object", "required": ["a", "b"], "properties": {"a": {"type": ["string", "null"], "maxLength": 10}, "b": {"$ref": "../common/money.json#/$defs/x"}}}`, true},
	{`{"type": "array", "items": {"enum": [1, "a", null]}, "minItems": 0, "uniqueItems": true}`, true},
	{`{"allOf": [{"pattern": "^[a-z]+$"}, false], "x-routing-key": "a.b", "multipleOf": 0.5}`, true},
	{`{"patternProperties": {"^x-": {"const": 1}}, "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}`, true},
	{`{"$schema": "https://json-schema.org/draft/2020-12/schema", "deprecated": true, "examples": [], "default": {}}`, true},

	// Invalid: each must be left to the meta-schema.
	{`3`, false},
	{`{"type": "strin"}`, false},
	{`{"type": []}`, false},
	{`{"type": ["string", "string"]}`, false},
	{`{"required": ["a", "a"]}`, false},
	{`{"required": "a"}`, false},
	{`{"properties": {"a": 3}}`, false},
	{`{"allOf": []}`, false},
	{`{"pattern": "("}`, false},
	{`{"patternProperties": {"(": {}}}`, false},
	{`{"minLength": -1}`, false},
	{`{"minLength": 1.5}`, false},
	{`{"multipleOf": 0}`, false},
	{`{"multipleOf": -2}`, false},
	{`{"$ref": 3}`, false},
	{`{"$ref": "a\\b"}`, false},
	{`{"$ref": "http://[::1"}`, false},
	{`{"$schema": "relative/path"}`, false},
	{`{"deprecated": "yes"}`, false},
	{`{"title": 1}`, false},
	{`{"items": {"items": {"items": {"type": 7}}}}`, false},

	// Valid, but left to the meta-schema all the same.
	{`{"$id": "x.json"}`, false},
	{`{"minLength": 1e2}`, false},
	{`{"$ref": "http://[::1]/x"}`, false},
}

func TestSurelyDraftValid(t *testing.T) {
	m, err := metas()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range draftCases {
		d, err := Parse("x.json", []byte(c.src))
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got := surelyDraftValid(d.Value); got != c.sure {
			t.Errorf("surelyDraftValid(%s) = %v, want %v", c.src, got, c.sure)
		}
		if c.sure {
			if err := m.drafts[Draft2020].Validate(d.Value); err != nil {
				t.Errorf("%s: the meta-schema rejects what the quick check accepts: %v", c.src, err)
			}
		}
	}
}

// TestSurelyDraftValidAgrees runs the quick check on every schema file of
// the golden cases and the lint tests: it must accept only what the
// meta-schema accepts, and accept the plain schemas they are made of.
func TestSurelyDraftValidAgrees(t *testing.T) {
	m, err := metas()
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for _, src := range schemaFiles(t) {
		d, err := Parse("x.json", src)
		if err != nil {
			continue // the invalid-JSON golden case
		}
		if !surelyDraftValid(d.Value) {
			continue
		}
		accepted++
		if err := m.drafts[Draft2020].Validate(d.Value); err != nil {
			t.Errorf("the meta-schema rejects what the quick check accepts:\n%s\n%v", src, err)
		}
	}
	if accepted < 50 {
		t.Errorf("the quick check accepted only %d schema files; it should settle the common ones", accepted)
	}
}

// schemaFiles returns every schema file (not warren.json) of the golden
// cases and the lint tests.
func schemaFiles(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, root := range []string{"../../golden", "../lint/testdata"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") || d.Name() == ManifestFile {
				return err
			}
			src, err := os.ReadFile(p)
			out = append(out, src)
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// FuzzSurelyDraftValid checks the quick check against the meta-schema on
// arbitrary JSON: whatever it accepts, the meta-schema must accept.
func FuzzSurelyDraftValid(f *testing.F) {
	for _, c := range draftCases {
		f.Add([]byte(c.src))
	}
	for _, src := range schemaFiles(f) {
		f.Add(src)
	}
	m, err := metas()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := Parse("x.json", src)
		if err != nil || !surelyDraftValid(d.Value) {
			return
		}
		if err := m.drafts[Draft2020].Validate(d.Value); err != nil {
			t.Errorf("the meta-schema rejects what the quick check accepts:\n%s\n%v", src, err)
		}
	})
}
