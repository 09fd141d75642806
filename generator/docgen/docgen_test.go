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

func keys(files map[string][]byte) []string {
	var out []string
	for k := range files {
		out = append(out, k)
	}
	return out
}
