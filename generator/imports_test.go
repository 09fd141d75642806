package generator_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/warrenbus/warren/generator"
)

// writeTree writes files (path -> content) below a fresh directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A producer's directory with two facts; the consumer binds one.
var producerFiles = map[string]string{
	"catalogue/warren.json":       `{"package": "catalogueevents", "exchanges": {"events": "catalogue.events", "retry": "catalogue.retry", "dead": "catalogue.dead"}}`,
	"catalogue/item/created.json": `{"x-routing-key": "catalogue.item.created", "title": "ItemCreated", "type": "object", "required": ["sku"], "properties": {"sku": {"$ref": "../common/sku.json"}}}`,
	"catalogue/item/deleted.json": `{"x-routing-key": "catalogue.item.deleted", "type": "object", "properties": {"sku": {"type": "string"}}}`,
	"catalogue/common/sku.json":   `{"type": "string", "minLength": 3}`,
}

func consumerTree(t *testing.T, imp string) string {
	files := map[string]string{
		"search/warren.json": `{"package": "searchevents", "imports": [` + imp + `], "consumers": {"search-indexer": {"bindings": ["catalogue.item.created"], "backoff": ["10ms"]}}}`,
	}
	for k, v := range producerFiles {
		files[k] = v
	}
	return writeTree(t, files)
}

func TestGenerateConsumerReusingTypes(t *testing.T) {
	root := consumerTree(t, `{"path": "../catalogue", "goPackage": "example.com/catalogue/catalogueevents"}`)
	files, err := generator.Generate(context.Background(), filepath.Join(root, "search"), generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(mapKeys(files))
	if want := []string{"consumers.go", "schemas.go", "topology.go", "warren.go"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v: no publisher and no fact types of the producer's", names, want)
	}
	consumers := string(files["consumers.go"])
	for _, want := range []string{
		`"example.com/catalogue/catalogueevents"`,
		"HandleItemCreated(ctx context.Context, d runtime.Delivery, fact catalogueevents.ItemCreated) error",
		"runtime.HandleEach(catalogueevents.FactItemCreated, func() any { return new(catalogueevents.ItemCreated) }",
		"return h.HandleItemCreated(ctx, d, *fact.(*catalogueevents.ItemCreated))",
	} {
		if !strings.Contains(consumers, want) {
			t.Errorf("consumers.go lacks %q:\n%s", want, consumers)
		}
	}
	if strings.Contains(consumers, "ItemDeleted") {
		t.Error("consumers.go mentions a fact no binding matches")
	}
	topo := string(files["topology.go"])
	for _, want := range []string{`Name: "catalogue.events"`, `Name: "catalogue.retry"`, `"search-indexer.retry.10ms"`} {
		if !strings.Contains(topo, want) {
			t.Errorf("topology.go lacks %q", want)
		}
	}
}

func TestGenerateConsumerWithLocalTypes(t *testing.T) {
	root := consumerTree(t, `{"path": "../catalogue"}`)
	files, err := generator.Generate(context.Background(), filepath.Join(root, "search"), generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files["publisher.go"]; ok {
		t.Error("a consumer-only package has a publisher")
	}
	typeFile := "imports_catalogue_item_created.json.go"
	src, ok := files[typeFile]
	if !ok {
		t.Fatalf("no %s among %v", typeFile, slices.Sorted(mapKeys(files)))
	}
	if !strings.Contains(string(src), "type ItemCreated struct") || !strings.Contains(string(src), "FactItemCreated") {
		t.Errorf("%s does not declare the fact:\n%s", typeFile, src)
	}
	if _, ok := files["imports_catalogue_item_deleted.json.go"]; ok {
		t.Error("a fact no binding matches has a type")
	}
	// The schema the fact refers to is embedded, under the import's prefix.
	if s := string(files["schemas.go"]); !strings.Contains(s, `"imports/catalogue/common/sku.json"`) {
		t.Errorf("schemas.go does not embed the imported shared schema:\n%s", s)
	}
	if c := string(files["consumers.go"]); !strings.Contains(c, "fact ItemCreated) error") {
		t.Errorf("consumers.go does not use the local type:\n%s", c)
	}
}

func TestGenerateConsumerImportErrors(t *testing.T) {
	cases := []struct{ name, manifest, want string }{
		{
			name:     "binding that matches nothing",
			manifest: `{"package": "s", "imports": [{"path": "../catalogue"}], "consumers": {"c": {"bindings": ["catalogue.item.craeted"]}}}`,
			want:     `binding "catalogue.item.craeted" matches no fact; did you mean "catalogue.item.created"?`,
		},
		{
			name:     "another events exchange",
			manifest: `{"package": "s", "exchanges": {"events": "search.events"}, "imports": [{"path": "../catalogue"}], "consumers": {"c": {"bindings": ["catalogue.#"]}}}`,
			want:     `import ../catalogue publishes its facts on exchange "catalogue.events" (its warren.json), but the consumers here are bound on "search.events"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"search/warren.json": tc.manifest}
			for k, v := range producerFiles {
				files[k] = v
			}
			root := writeTree(t, files)
			_, err := generator.Generate(context.Background(), filepath.Join(root, "search"), generator.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func mapKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Facts of two producers that share a Go name would give a handler
// interface one method twice; a consumer that binds both is an error, and
// two imports on different events exchanges cannot feed one directory's
// consumers.
func TestGenerateConsumerOfTwoProducers(t *testing.T) {
	producers := map[string]string{
		"orders/warren.json":   `{"package": "orderevents", "exchanges": {"events": "shop.events"}}`,
		"orders/created.json":  `{"x-routing-key": "order.created", "title": "Created", "type": "object"}`,
		"items/warren.json":    `{"package": "itemevents", "exchanges": {"events": "shop.events"}}`,
		"items/created.json":   `{"x-routing-key": "item.created", "title": "Created", "type": "object"}`,
		"billing/warren.json":  `{"package": "billingevents", "exchanges": {"events": "billing.events"}}`,
		"billing/charged.json": `{"x-routing-key": "billing.charged", "type": "object"}`,
	}
	cases := []struct{ name, manifest, want string }{
		{
			name:     "one method twice",
			manifest: `{"package": "s", "imports": [{"path": "../orders", "goPackage": "example.com/orders"}, {"path": "../items", "goPackage": "example.com/items"}], "consumers": {"audit": {"bindings": ["#"]}}}`,
			want:     `/consumers/audit: consumer "audit": facts item.created and order.created both become handler method HandleCreated`,
		},
		{
			name:     "two events exchanges",
			manifest: `{"package": "s", "imports": [{"path": "../orders"}, {"path": "../billing"}], "consumers": {"audit": {"bindings": ["order.#", "billing.#"]}}}`,
			want:     `/imports/1: import ../billing publishes its facts on exchange "billing.events" (its warren.json), but the consumers here are bound on "shop.events", the events exchange of import ../orders (warren.json:1:30)`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"svc/warren.json": tc.manifest}
			for k, v := range producers {
				files[k] = v
			}
			root := writeTree(t, files)
			_, err := generator.Generate(context.Background(), filepath.Join(root, "svc"), generator.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Bound separately, the two Created facts are fine.
	files := map[string]string{"svc/warren.json": `{"package": "s", "imports": [{"path": "../orders", "goPackage": "example.com/orders"}, {"path": "../items", "goPackage": "example.com/items"}], "consumers": {"a": {"bindings": ["order.#"]}, "b": {"bindings": ["item.#"]}}}`}
	for k, v := range producers {
		files[k] = v
	}
	out, err := generator.Generate(context.Background(), filepath.Join(writeTree(t, files), "svc"), generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := string(out["consumers.go"]); !strings.Contains(c, "orderevents.Created") || !strings.Contains(c, "itemevents.Created") {
		t.Errorf("consumers.go does not refer to both producers' types:\n%s", c)
	}
}

// An error in an imported schema that only generating its type here finds
// names the file where it is, relative to the importing directory.
func TestGenerateConsumerErrorInAnImportedSchema(t *testing.T) {
	root := writeTree(t, map[string]string{
		"catalogue/warren.json":       `{"package": "catalogueevents"}`,
		"catalogue/item/created.json": `{"x-routing-key": "catalogue.item.created", "type": "object", "properties": {"a\\u0000b": {"type": "string"}}}`,
		"search/warren.json":          `{"package": "s", "imports": [{"path": "../catalogue"}], "consumers": {"c": {"bindings": ["catalogue.#"]}}}`,
	})
	_, err := generator.Generate(context.Background(), filepath.Join(root, "search"), generator.Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "../catalogue/item/created.json:1:78: /properties/") || !strings.Contains(err.Error(), "which a Go struct tag cannot hold") {
		t.Errorf("err = %v, want it to name ../catalogue/item/created.json", err)
	}
}

// An ordered consumer of imported facts takes their ordering keys from the
// producer's directory, reused or generated here.
func TestGenerateOrderedConsumerOfImportedFacts(t *testing.T) {
	for _, goPackage := range []string{`, "goPackage": "example.com/orders/orderevents"`, ""} {
		root := writeTree(t, map[string]string{
			"orders/warren.json":  `{"package": "orderevents", "exchanges": {"events": "shop.events"}}`,
			"orders/placed.json":  `{"x-routing-key": "order.placed", "x-ordering-key": "/order_id", "title": "OrderPlaced", "type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}}`,
			"orders/shipped.json": `{"x-routing-key": "order.shipped", "type": "object"}`,
			"svc/warren.json":     `{"package": "s", "imports": [{"path": "../orders"` + goPackage + `}], "consumers": {"mailer": {"bindings": ["order.placed"], "ordered": true}}}`,
		})
		if _, err := generator.Generate(context.Background(), filepath.Join(root, "svc"), generator.Options{}); err != nil {
			t.Errorf("import%s: %v", goPackage, err)
		}
		wider := `{"package": "s", "imports": [{"path": "../orders"` + goPackage + `}], "consumers": {"mailer": {"bindings": ["order.*"], "ordered": true}}}`
		if err := os.WriteFile(filepath.Join(root, "svc", "warren.json"), []byte(wider), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := generator.Generate(context.Background(), filepath.Join(root, "svc"), generator.Options{})
		if err == nil || !strings.Contains(err.Error(), "declares no ordering key") {
			t.Errorf("import%s: an ordered consumer of a fact without an ordering key: err = %v", goPackage, err)
		}
	}
}
