package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A consumer module that reuses the producer's package reads the versions
// of an imported fact as its warren.json says: one consumer reads both
// through its own upcast (written with the producer's types), one is
// pinned to version 1 and takes the producer's ItemCreatedV1. Both modules
// build and vet, so a consumer that lacked the upcaster, or a version
// named in the wrong package, would fail here.
func TestConsumerModuleReusesAnImportedFactsVersions(t *testing.T) {
	m := newTwoModules(t, "example.com/catalogue/catalogueevents")
	if err := os.Remove(filepath.Join(m.producer, "events", "item", "created.json")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, m.producer, map[string]string{
		"events/item/created.v1.json": producerSchemas["events/item/created.json"],
		// The name becomes a map of translations: not mechanical.
		"events/item/created.v2.json": `{"x-routing-key": "catalogue.item.created", "x-version": 2, "title": "ItemCreated", "type": "object", "required": ["sku", "name"],
  "properties": {"sku": {"type": "string", "minLength": 3}, "name": {"type": "object", "additionalProperties": {"type": "string"}}}}`,
		"cmd/publish/main.go": "package main\n\nfunc main() {}\n",
	})
	writeFiles(t, m.consumer, map[string]string{
		"events/warren.json": `{"package": "searchevents", "imports": [{"module": "example.com/catalogue", "dir": "events", "goPackage": "example.com/catalogue/catalogueevents"}],
  "consumers": {
    "search-indexer": {"bindings": ["catalogue.item.created"]},
    "legacy": {"bindings": ["catalogue.item.created"], "versions": {"catalogue.item.created": 1}}
  }}`,
		"main.go": `package main

import (
	"context"

	"example.com/catalogue/catalogueevents"
	"example.com/search/searchevents"
	"github.com/warrenbus/warren/runtime"
)

type indexer struct{}

func (indexer) HandleItemCreated(context.Context, runtime.Delivery, catalogueevents.ItemCreated) error {
	return nil
}

func (indexer) UpcastItemCreatedV1(v catalogueevents.ItemCreatedV1) (catalogueevents.ItemCreated, error) {
	return catalogueevents.ItemCreated{Sku: v.Sku, Name: map[string]string{"en": v.Name}}, nil
}

type legacy struct{}

func (legacy) HandleItemCreatedV1(context.Context, runtime.Delivery, catalogueevents.ItemCreatedV1) error {
	return nil
}

var (
	_ searchevents.SearchIndexerHandler = indexer{}
	_ searchevents.LegacyHandler        = legacy{}
)

func main() {}
`,
	})
	m.generateAndBuild()
	src, err := os.ReadFile(filepath.Join(m.consumer, "searchevents", "consumers.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"runtime.HandleEach(catalogueevents.FactItemCreatedV1, func() any { return new(catalogueevents.ItemCreatedV1) }",
		"return h.HandleItemCreatedV1(ctx, d, *fact.(*catalogueevents.ItemCreatedV1))",
		"runtime.HandleVersions(catalogueevents.FactItemCreated, h.HandleItemCreated,",
		"runtime.Upcast(catalogueevents.FactItemCreatedV1, func(v catalogueevents.ItemCreatedV1) (catalogueevents.ItemCreated, error) {",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("consumers.go lacks %q:\n%s", want, src)
		}
	}
}
