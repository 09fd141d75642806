package load

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeDirs writes files (path -> content) below a fresh directory.
func writeDirs(t *testing.T, files map[string]string) string {
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

const producerManifest = `{"package": "catalogueevents", "exchanges": {"events": "catalogue.events"}}`

func TestLoadPathImport(t *testing.T) {
	root := writeDirs(t, map[string]string{
		"catalogue/events/warren.json":             producerManifest,
		"catalogue/events/item/created.json":       `{"x-routing-key": "catalogue.item.created", "type": "object", "properties": {"sku": {"$ref": "../common/sku.json"}}}`,
		"catalogue/events/common/sku.json":         `{"type": "string"}`,
		"search/events/warren.json":                `{"package": "searchevents", "imports": [{"path": "../../catalogue/events"}], "consumers": {"indexer": {"bindings": ["catalogue.#"]}}}`,
		"search/events/catalogue/placeholder.json": `{"type": "object"}`,
	})
	s, err := Load(context.Background(), filepath.Join(root, "search", "events"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Facts) != 0 || len(s.Imports) != 1 {
		t.Fatalf("facts %d, imports %d; want 0 and 1", len(s.Facts), len(s.Imports))
	}
	imp := s.Imports[0]
	if imp.Prefix != "imports/catalogue/events/" || imp.Label() != "../../catalogue/events" {
		t.Errorf("prefix %q, label %q", imp.Prefix, imp.Label())
	}
	facts := s.ImportedFacts()
	if len(facts) != 1 || facts[0].RoutingKey != "catalogue.item.created" || facts[0].Path() != "imports/catalogue/events/item/created.json" {
		t.Fatalf("imported facts: %+v", facts)
	}
	if s.ImportOf(facts[0]) != imp {
		t.Error("ImportOf does not find the fact's import")
	}
	// The imported file's $ref resolves among the imported files, under
	// the prefix, and the importer can look both up.
	doc, ok := s.Doc("imports/catalogue/events/item/created.json")
	if !ok {
		t.Fatal("Doc does not find the imported file")
	}
	refs := s.Referenced(doc)
	if len(refs) != 1 || refs[0].Path != "imports/catalogue/events/common/sku.json" {
		t.Errorf("Referenced = %v", refs)
	}
}

func TestLoadImportErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		load  string
		want  []string
	}{
		{
			name: "cycle",
			files: map[string]string{
				"a/warren.json": `{"imports": [{"path": "../b"}]}`,
				"b/warren.json": `{"imports": [{"path": "../c"}]}`,
				"c/warren.json": `{"imports": [{"path": "../a"}]}`,
			},
			load: "a",
			want: []string{"../c/warren.json:1:14: /imports/0: import cycle: this directory -> ../b -> ../c imports ../a, which is this directory again", "warren.json:1:14: /imports/0: import ../b: the imported directory"},
		},
		{
			name: "two imports declare one routing key",
			files: map[string]string{
				"p1/warren.json":  `{"exchanges": {"events": "x"}}`,
				"p1/created.json": `{"x-routing-key": "item.created", "type": "object"}`,
				"p2/warren.json":  `{"exchanges": {"events": "x"}}`,
				"p2/created.json": `{"x-routing-key": "item.created", "type": "object"}`,
				"svc/warren.json": `{"imports": [{"path": "../p1"}, {"path": "../p2"}]}`,
			},
			load: "svc",
			want: []string{`warren.json:1:33: /imports/1: import ../p2 declares routing key "item.created" at ../p2/created.json:1:19, which is also declared by import ../p1 (warren.json:1:14) at ../p1/created.json:1:19: a consumer could not tell them apart`},
		},
		{
			name: "an import and this directory declare one routing key",
			files: map[string]string{
				"p/warren.json":   `{}`,
				"p/created.json":  `{"x-routing-key": "item.created", "type": "object"}`,
				"svc/warren.json": `{"imports": [{"path": "../p"}]}`,
				"svc/mine.json":   `{"x-routing-key": "item.created", "type": "object"}`,
			},
			load: "svc",
			want: []string{`warren.json:1:14: /imports/0: import ../p declares routing key "item.created" at ../p/created.json:1:19, which is also declared by this directory at mine.json:1:19`},
		},
		{
			name:  "missing directory",
			files: map[string]string{"svc/warren.json": `{"imports": [{"path": "../nowhere"}]}`},
			load:  "svc",
			want:  []string{"warren.json:1:14: /imports/0: import ../nowhere: "},
		},
		{
			name:  "path and module",
			files: map[string]string{"svc/warren.json": `{"imports": [{"path": "../p", "module": "example.com/p"}]}`},
			load:  "svc",
			want:  []string{`warren.json:1:14: /imports/0: expected exactly one of "path"`},
		},
		{
			name:  "a module without a resolver",
			files: map[string]string{"svc/warren.json": `{"imports": [{"module": "example.com/p", "dir": "events"}]}`},
			load:  "svc",
			want:  []string{"warren.json:1:14: /imports/0: import example.com/p/events: import of module example.com/p: module imports are resolved with the Go toolchain"},
		},
		{
			name: "an invalid imported directory",
			files: map[string]string{
				"p/warren.json":   `{"consumers": {"x": {"bindings": []}}}`,
				"svc/warren.json": `{"imports": [{"path": "../p"}]}`,
			},
			load: "svc",
			want: []string{"../p/warren.json:1:34: /consumers/x/bindings:", "warren.json:1:14: /imports/0: import ../p: the imported directory"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := writeDirs(t, tc.files)
			_, err := Load(context.Background(), filepath.Join(root, tc.load))
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not contain %q:\n%v", want, err)
				}
			}
		})
	}
}
