package gogen

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// A new version that narrows what a property accepts (maxLength 300 to
// 10) keeps its Go type, but a generated upcast would copy an old note of
// 50 characters into a fact version 2 refuses, poisoning it: the upcast is
// a method of the upcaster every handler of the fact embeds, so a consumer
// without it does not compile, and no generated upcast is emitted.
func TestANarrowedPropertyIsUpcastByTheHandler(t *testing.T) {
	fact := func(version, maxLength string) string {
		return `{"x-routing-key": "order.placed", "x-version": ` + version + `, "title": "OrderPlaced", "type": "object",
			"required": ["id"], "properties": {"id": {"type": "string"}, "note": {"type": "string", "maxLength": ` + maxLength + `}}}`
	}
	fsys := fstest.MapFS{
		"warren.json":          {Data: []byte(`{"package": "shop", "consumers": {"ledger": {"bindings": ["order.placed"]}}}`)},
		"order/placed.v1.json": {Data: []byte(fact("1", "300"))},
		"order/placed.v2.json": {Data: []byte(fact("2", "10"))},
	}
	s, err := load.LoadFS(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Build(context.Background(), s, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(m)
	if err != nil {
		t.Fatal(err)
	}
	versions, consumers := string(files["versions.go"]), string(files["consumers.go"])
	for _, want := range []string{
		"type OrderPlacedUpcaster interface {",
		`// "note" accepts fewer values in version 2 (maxLength lowered from 300 to 10):`,
		"UpcastOrderPlacedV1(v OrderPlacedV1) (OrderPlaced, error)",
	} {
		if !strings.Contains(versions, want) {
			t.Errorf("versions.go lacks %q:\n%s", want, versions)
		}
	}
	if strings.Contains(versions, "func upcastOrderPlacedV1(") {
		t.Errorf("versions.go generates the upcast of a narrowed property:\n%s", versions)
	}
	if !strings.Contains(consumers, "\tOrderPlacedUpcaster\n") {
		t.Errorf("the ledger's handler does not embed the upcaster:\n%s", consumers)
	}
}
