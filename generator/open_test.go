package generator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/lint"
	"github.com/warrenbus/warren/generator/load"
)

// Open reads a directory once; the model says which facts each consumer
// handles.
func ExampleOpen() {
	p, err := generator.Open(context.Background(), "../examples/catalogue/events", generator.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range p.Model.Consumers {
		var keys []string
		for _, f := range c.Facts {
			keys = append(keys, f.RoutingKey)
		}
		fmt.Printf("%s: %s\n", c.Name, strings.Join(keys, ", "))
	}
	// Output:
	// order-mailer: order.placed
	// price-history: catalogue.item.deleted, catalogue.item.updated
	// sales-ledger: order.placed
	// search-indexer: catalogue.import.completed, catalogue.item.deleted, catalogue.item.updated
}

// A directory whose files load but whose model does not build still comes
// back, so that it can be linted: here two bindings match no fact.
func ExampleOpen_invalid() {
	p, err := generator.Open(context.Background(), "../golden/error-binding-matches-nothing/events", generator.Options{})
	fmt.Println(err)
	for _, f := range p.Lint() {
		if f.Severity == lint.Warning {
			fmt.Println(f)
		}
	}
	// Output:
	// warren.json:7:9: /consumers/mailer/bindings/1: consumer "mailer": binding "order.shipped" matches no fact (routing keys: order.placed)
	// warren.json:8:9: /consumers/mailer/bindings/2: consumer "mailer": binding "ordr.#" matches no fact; did you mean "order.#"? (routing keys: order.placed)
	// warren.json:13:9: /consumers/indexer/bindings/0: consumer "indexer": binding "catalogue.*" matches no fact (routing keys: order.placed)
	// warren.json:11:5: consumer-handles-nothing: consumer "indexer" handles nothing: none of its bindings matches a fact (warning)
}

// TestOpenModelErrors checks what Open returns for a directory whose files
// load and whose model does not build: the loaded files, no model, the
// model's errors with their positions, and the linter's findings.
func TestOpenModelErrors(t *testing.T) {
	p, err := generator.Open(context.Background(), "../golden/error-binding-matches-nothing/events", generator.Options{})
	var list load.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Open: error %v; want a load.ErrorList", err)
	}
	if p == nil || p.Schemas == nil || p.Model != nil {
		t.Fatalf("Open returned %+v; want the loaded files and no model", p)
	}
	var got []string
	for _, e := range list {
		got = append(got, fmt.Sprintf("%s:%d:%d %s", e.File, e.Line, e.Col, e.Pointer))
	}
	want := []string{
		"warren.json:7:9 /consumers/mailer/bindings/1",
		"warren.json:8:9 /consumers/mailer/bindings/2",
		"warren.json:13:9 /consumers/indexer/bindings/0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error positions (-want +got):\n%s", diff)
	}
	golden, _ := os.ReadFile("../golden/error-binding-matches-nothing/stderr.txt")
	if diff := cmp.Diff(string(golden), err.Error()+"\n"); diff != "" {
		t.Errorf("errors differ from what generate prints (-want +got):\n%s", diff)
	}
	errs, warnings, infos := lint.Count(p.Lint())
	if errs != 3 || warnings != 1 || infos != 1 {
		t.Errorf("Lint found %d errors, %d warnings, %d info; want 3, 1, 1", errs, warnings, infos)
	}
	if _, err := p.Docs(); err == nil {
		t.Error("Docs of a project without a model succeeded")
	}
}

// TestOpenLoadErrors checks that a directory whose files do not load
// returns no Project: a file that is not JSON is a positioned error, a
// directory that does not exist is another error.
func TestOpenLoadErrors(t *testing.T) {
	p, err := generator.Open(context.Background(), "../golden/error-invalid-json/events", generator.Options{})
	var list load.ErrorList
	if p != nil || !errors.As(err, &list) {
		t.Fatalf("Open = %v, %v; want no Project and a load.ErrorList", p, err)
	}
	if len(list) != 1 || list[0].File != "order-placed.json" || list[0].Line != 5 || list[0].Col != 30 {
		t.Errorf("errors %v; want one at order-placed.json:5:30", list)
	}
	p, err = generator.Open(context.Background(), "testdata/no-such-directory", generator.Options{})
	if p != nil || err == nil || errors.As(err, &list) {
		t.Errorf("Open of a missing directory = %v, %v; want no Project and an error that is not the input's", p, err)
	}
}

// TestOpenGo checks Options.Go and Options.FS: a manifest without a
// package name opens for the readers that emit no Go, and is an error
// positioned in warren.json when opened to emit Go. The directory is
// opened from a subdirectory of a file system.
func TestOpenGo(t *testing.T) {
	fsys := fstest.MapFS{
		"svc/events/warren.json": {Data: []byte(`{"consumers": {"mailer": {"bindings": ["order.placed"]}}}`)},
		"svc/events/placed.json": {Data: []byte(`{"x-routing-key": "order.placed", "type": "object"}`)},
	}
	p, err := generator.Open(context.Background(), "svc/events", generator.Options{FS: fsys})
	if err != nil {
		t.Fatalf("Open without Go: %v", err)
	}
	if p.Model.Package != "" || len(p.Model.Consumers) != 1 {
		t.Errorf("model: package %q, %d consumers; want no package, one consumer", p.Model.Package, len(p.Model.Consumers))
	}
	if _, err := p.GoFiles(); err == nil {
		t.Error("GoFiles without a package name succeeded")
	}

	_, err = generator.Open(context.Background(), "svc/events", generator.Options{FS: fsys, Go: true})
	want := `warren.json:1:1: no Go package name: set "package" in warren.json or pass --package`
	if err == nil || err.Error() != want {
		t.Errorf("Open with Go: error %v; want %s", err, want)
	}
	files, err := generator.Generate(context.Background(), "svc/events", generator.Options{FS: fsys, Package: "orderevents"})
	if err != nil || files["warren.go"] == nil {
		t.Errorf("Generate with --package: %d files, %v; want warren.go", len(files), err)
	}
}
