package docgen_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/warrenbus/warren/generator/docgen"
	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// Generate returns the catalogue as its one file, with the facts, the
// consumers, their ladder and the topology diagram on it.
func TestGenerateReturnsTheCatalogue(t *testing.T) {
	fsys := fstest.MapFS{
		"warren.json": {Data: []byte(`{"consumers": {"mailer": {"bindings": ["order.*"], "backoff": ["1s", "1s", "5s"]}}}`)},
		"placed.json": {Data: []byte(`{"x-routing-key": "order.placed", "type": "object", "properties": {"id": {"type": "string"}}}`)},
	}
	files := filesOf(t, fsys)
	if len(files) != 1 || files[docgen.CatalogueFile] == nil {
		t.Fatalf("files %v, want only %s", keys(files), docgen.CatalogueFile)
	}
	page := string(files[docgen.CatalogueFile])
	for _, want := range []string{
		"# event catalogue\n",
		"### `order.placed`",
		"| `id` | `*string` |",
		"mailer.retry.1s",
		"flowchart LR\n",
		`r0[("mailer.retry.*<br>1s, 5s")]`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}

// catalogueOf is the catalogue page of the schema directory fsys.
func catalogueOf(t *testing.T, fsys fstest.MapFS) string {
	t.Helper()
	return string(filesOf(t, fsys)[docgen.CatalogueFile])
}

// filesOf is what docgen.Generate writes for the schema directory fsys.
func filesOf(t *testing.T, fsys fstest.MapFS) map[string][]byte {
	t.Helper()
	s, err := load.LoadFS(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(context.Background(), s, model.Options{PackageOptional: true})
	if err != nil {
		t.Fatal(err)
	}
	files, err := docgen.Generate(m, s)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func keys(files map[string][]byte) []string {
	var out []string
	for k := range files {
		out = append(out, k)
	}
	return out
}

// Bounds are shown as the file's draft means them: draft-04 writes an
// exclusive minimum as a boolean beside "minimum", 2020-12 as a number.
func TestConstraintsReadEachDraft(t *testing.T) {
	fsys := fstest.MapFS{
		"warren.json": {Data: []byte(`{"consumers": {"mailer": {"bindings": ["order.*"]}}}`)},
		"placed.json": {Data: []byte(`{"$schema": "http://json-schema.org/draft-04/schema#", "x-routing-key": "order.placed", "type": "object",
			"properties": {"qty": {"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 9}}}`)},
		"paid.json": {Data: []byte(`{"x-routing-key": "order.paid", "type": "object",
			"properties": {"cents": {"type": "integer", "exclusiveMinimum": 0, "maximum": 100, "exclusiveMaximum": 50}}}`)},
	}
	page := catalogueOf(t, fsys)
	for _, want := range []string{"> 0, ≤ 9", "> 0, < 50"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "true") {
		t.Errorf("a draft-04 boolean bound shows as a value:\n%s", page)
	}
}
