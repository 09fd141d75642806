package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerateAndCheckRefuseSchemaMistakes: mistakes a new user makes,
// each of which used to generate different code without a word (every property optional, a fact gone, version 1, a default
// constant that fails Validate), fail `warren generate` and `warren
// check` alike, writing nothing, and name file, position, pointer and
// what was meant or why the value does not fit.
func TestGenerateAndCheckRefuseSchemaMistakes(t *testing.T) {
	in := schemaDir(t, map[string]string{
		"warren.json": `{"package": "library", "consumers": {"desk": {"bindings": ["book.#"]}}}`,
		"book/borrowed.json": `{
  "x-routing-key": "book.borrowed",
  "x-verison": 2,
  "type": "object",
  "requried": ["isbn"],
  "properties": {
    "isbn": {"type": "string", "x-owner": "catalogue"},
    "note": {"type": "string", "maxLength": 3, "default": "far too long"},
    "fee": {"type": "number", "minimum": 10, "maximum": 1}
  }
}`,
		"book/returned.json": `{"x-routng-key": "book.returned", "type": "object"}`,
		"book/lent.json":     `{"x-routing-key": "book.lent", "type": "object"}`,
	})
	file := func(name string) string { return filepath.Join(in, "book", name) }
	want := []string{
		file("borrowed.json") + `:3:3: /x-verison: unknown keyword "x-verison"; did you mean "x-version"? An unknown keyword is ignored, so as written this schema has no "x-version"`,
		file("borrowed.json") + `:5:3: /requried: unknown keyword "requried"; did you mean "required"? An unknown keyword is ignored, so as written this schema has no "required"`,
		file("borrowed.json") + `:8:59: /properties/note/default: default "far too long" does not fit the schema: maxLength: got 12, want 3`,
		file("borrowed.json") + `:9:42: /properties/fee/minimum: minimum 10 is greater than maximum 1: no number satisfies both`,
		file("returned.json") + `:1:2: /x-routng-key: unknown keyword "x-routng-key"; did you mean "x-routing-key"? An unknown keyword is ignored, so as written this schema has no "x-routing-key"`,
	}

	out := filepath.Join(t.TempDir(), "library")
	code, stdout, stderr := run(t, "generate", "--out", out, in)
	if code != 1 || stdout != "" {
		t.Errorf("generate: exit %d, stdout %q; want exit 1 and nothing on stdout", code, stdout)
	}
	if got := strings.Split(strings.TrimSpace(stderr), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("generate: stderr:\n%s\nwant:\n%s", stderr, strings.Join(want, "\n"))
	}
	if entries := listDir(t, filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("generate wrote %v", entries)
	}

	code, _, stderr = run(t, "check", in)
	if code != 1 {
		t.Errorf("check: exit %d, want 1", code)
	}
	for _, line := range want {
		if !strings.Contains(stderr, line) {
			t.Errorf("check: stderr lacks\n%s\nstderr:\n%s", line, stderr)
		}
	}
}

// TestCheckWarnsOfMisspeltCopies: a misspelt copy of a keyword written
// beside it, or of one that only documents, loses nothing the generated
// code depends on: generate succeeds, check warns, and --strict fails.
func TestCheckWarnsOfMisspeltCopies(t *testing.T) {
	in := schemaDir(t, map[string]string{
		"warren.json":        `{"package": "library", "consumers": {"desk": {"bindings": ["book.#"]}}}`,
		"book/borrowed.json": `{"x-routing-key": "book.borrowed", "descripton": "A book was borrowed.", "type": "object", "additionalProperties": false, "required": ["isbn"], "requried": ["isbn"], "properties": {"isbn": {"type": "string"}}}`,
	})
	if code, _, stderr := run(t, "generate", "--out", filepath.Join(t.TempDir(), "library"), in); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, stderr)
	}
	code, stdout, _ := run(t, "check", in)
	for _, want := range []string{
		`borrowed.json:1:36: misspelt-keyword: unknown keyword "descripton"; did you mean "description"?`,
		`borrowed.json:1:145: misspelt-keyword: unknown keyword "requried" beside "required"; a misspelt copy? As written it is ignored (warning)`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check: stdout lacks\n%s\nstdout:\n%s", want, stdout)
		}
	}
	if code != 0 {
		t.Errorf("check: exit %d, want 0 (warnings fail only with --strict)", code)
	}
	if code, _, _ := run(t, "check", "--strict", in); code != 1 {
		t.Errorf("check --strict: exit %d, want 1", code)
	}
}
