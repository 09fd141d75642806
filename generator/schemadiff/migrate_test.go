package schemadiff

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// A break shipped as a version published beside the old one takes an
// upcast per step for consumers built for the new version and a downcast
// per step for the publisher, whose NewPublisher and NewOutboxWriter do
// not compile without the hand-written ones. The migration names both,
// and an enum whose values changed is said to be what it is: an enum of a
// Go type of its own in each version, which generated casts do not
// convert, with the value added, and the value the downcast must map.
func TestTheMigrationNamesEachDowncast(t *testing.T) {
	r := Compare(loadDir(t, "testdata/enum-value-added-shipped-as-version/old"), loadDir(t, "testdata/enum-value-added-shipped-as-version/new"))
	m, ok := r.migration("order.shipped")
	if !ok {
		t.Fatalf("no migration for order.shipped: %+v", r.Migrations)
	}
	own := `property "carrier" is an enum with a Go type of its own in each version (OrderShippedV1Carrier in version 1, OrderShippedCarrier in version 2), which generated casts do not convert; version 2 adds "fedex"`
	for _, want := range []string{
		`consumers built for version 2 read version 1 facts (queued, in an outbox, replayed) through upcasts: 1→2 hand-written (UpcastOrderShippedV1: ` + own + `; the consumer does not compile until its handler has it)`,
		`the publisher publishes versions 1, 2 as one fact (a dual publish window), writing version 1 through downcasts: 2→1 hand-written (DowncastOrderShipped: ` + own + `; the downcast must map "fedex", which version 1 refuses, to a value it accepts; the publisher does not compile until the Downcasters that NewPublisher and NewOutboxWriter take has it)`,
	} {
		if !strings.Contains(m.Message, want) {
			t.Errorf("migration %q\nwant it to say %q", m.Message, want)
		}
	}
	if strings.Contains(m.Message, "changes type") {
		t.Errorf("migration %q says the enum changes type", m.Message)
	}
}

// The advice for a break shipped in place says which casts of the
// version window it advises are written by hand, and the advice for the
// same change once shipped that way, read from the generator's model,
// says the same: each case is diffed in place, then as version 2 beside
// version 1, both published where the advice says to publish both.
func TestTheMigrationNamesTheCastsAVersionWindowTakes(t *testing.T) {
	tests := []struct {
		name, old, new string
		up, down       bool // the advice says the upcast, the downcast, is written by hand
	}{
		{"string enum value added", `{"type": "string", "enum": ["dhl", "ups"]}`, `{"type": "string", "enum": ["dhl", "ups", "fedex"]}`, true, true},
		{"string enum value removed", `{"type": "string", "enum": ["dhl", "ups"]}`, `{"type": "string", "enum": ["dhl"]}`, true, false},
		{"integer enum value added", `{"type": "integer", "enum": [1, 2]}`, `{"type": "integer", "enum": [1, 2, 3]}`, true, true},
		{"enum value added behind a $ref", `{"$ref": "#/$defs/carrier"}`, `{"$ref": "#/$defs/carrier"}`, true, true},
		{"const changed", `{"const": "dhl"}`, `{"const": "ups"}`, true, true},
		// A number enum keeps float64 in both versions: the values alone
		// decide.
		{"number enum value added", `{"type": "number", "enum": [1.5, 2]}`, `{"type": "number", "enum": [1.5, 2, 3]}`, false, true},
		{"maxLength raised", `{"type": "string", "maxLength": 10}`, `{"type": "string", "maxLength": 300}`, false, true},
		{"maxLength lowered", `{"type": "string", "maxLength": 300}`, `{"type": "string", "maxLength": 10}`, true, false},
		{"pattern changed", `{"type": "string", "pattern": "^[a-z]*$"}`, `{"type": "string", "pattern": "^[a-c]*$"}`, true, true},
	}
	fact := func(version int, p, defs string) string {
		return fmt.Sprintf(`{"x-routing-key": "order.shipped", "x-version": %d, "title": "OrderShipped", "type": "object", "additionalProperties": false, "required": ["id"], "properties": {"id": {"type": "string"}, "carrier": %s}%s}`, version, p, defs)
	}
	dir := func(manifest string, files map[string]string) *Dir {
		fsys := fstest.MapFS{"warren.json": {Data: []byte(manifest)}}
		for name, data := range files {
			fsys[name] = &fstest.MapFile{Data: []byte(data)}
		}
		s, err := load.LoadFS(context.Background(), fsys)
		if err != nil {
			t.Fatal(err)
		}
		return NewDir(s)
	}
	const (
		one  = `{"package": "shop", "consumers": {"ledger": {"bindings": ["order.shipped"]}}}`
		both = `{"package": "shop", "versions": {"order.shipped": {"publish": [1, 2]}}, "consumers": {"ledger": {"bindings": ["order.shipped"]}}}`
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldDefs, newDefs := "", ""
			if strings.Contains(tt.old, "$ref") {
				oldDefs = `, "$defs": {"carrier": {"type": "string", "enum": ["dhl", "ups"]}}`
				newDefs = `, "$defs": {"carrier": {"type": "string", "enum": ["dhl", "ups", "fedex"]}}`
			}
			old := dir(one, map[string]string{"order/shipped.json": fact(1, tt.old, oldDefs)})
			inPlace, ok := Compare(old, dir(one, map[string]string{"order/shipped.json": fact(1, tt.new, newDefs)})).migration("order.shipped")
			if !ok {
				t.Fatal("no migration in place")
			}
			// Shipped as the advice says: both published where it says
			// to publish both.
			manifest := one
			if strings.Contains(inPlace.Message, "publish both") {
				manifest = both
			}
			shipped, ok := Compare(old, dir(manifest, map[string]string{"order/shipped.v1.json": fact(1, tt.old, oldDefs), "order/shipped.v2.json": fact(2, tt.new, newDefs)})).migration("order.shipped")
			if !ok {
				t.Fatal("no migration shipped as a version")
			}
			for _, c := range []struct {
				cast          string
				want          bool
				advice, steps string // in place, shipped as a version
			}{
				{"upcast", tt.up, "through an upcast written by hand", "1→2 hand-written (UpcastOrderShippedV1: "},
				{"downcast", tt.down, "through a downcast written by hand", "2→1 hand-written (DowncastOrderShipped: "},
			} {
				if got := strings.Contains(inPlace.Message, c.advice); got != c.want {
					t.Errorf("in place, the %s written by hand: said %v, want %v: %q", c.cast, got, c.want, inPlace.Message)
				}
				if got := strings.Contains(shipped.Message, c.steps); got != c.want {
					t.Errorf("shipped as a version, the %s written by hand: said %v, want %v: %q", c.cast, got, c.want, shipped.Message)
				}
			}
		})
	}
}

// Diff and the generator judge a downcast alike, the way round of an
// upcast (TestDiffAndTheGeneratorJudgeConstraintsAlike): a change after
// which diff says old consumers refuse values new facts may hold is one
// whose downcast, shipped as a version with both published, is written by
// hand, and the other way round; and the generator's reason is what diff
// says of the change read backwards, new to old.
func TestDiffAndTheGeneratorJudgeDowncastsAlike(t *testing.T) {
	const (
		one  = `{"package": "shop", "assertFormats": ["email", "uuid"], "consumers": {"ledger": {"bindings": ["thing.happened"]}}}`
		both = `{"package": "shop", "assertFormats": ["email", "uuid"], "versions": {"thing.happened": {"publish": [1, 2]}}, "consumers": {"ledger": {"bindings": ["thing.happened"]}}}`
	)
	fact := func(version int, p string) string {
		return fmt.Sprintf(`{"x-routing-key": "thing.happened", "x-version": %d, "type": "object", "properties": {"p": %s}}`, version, p)
	}
	dir := func(manifest string, files map[string]string) *load.Schemas {
		fsys := fstest.MapFS{"warren.json": {Data: []byte(manifest)}}
		for name, data := range files {
			fsys[name] = &fstest.MapFile{Data: []byte(data)}
		}
		s, err := load.LoadFS(context.Background(), fsys)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tt := range constraintCases {
		t.Run(tt.old+" -> "+tt.new, func(t *testing.T) {
			oldDir, newDir := dir(one, map[string]string{"thing.json": fact(1, tt.old)}), dir(one, map[string]string{"thing.json": fact(1, tt.new)})
			// diff, in place.
			widens := false
			for _, c := range Compare(NewDir(oldDir), NewDir(newDir)).Changes {
				widens = widens || widening[c.Rule] && c.Breaks&Forward != 0
			}
			// The same change read backwards.
			var backwards []string
			for _, c := range Compare(NewDir(newDir), NewDir(oldDir)).Changes {
				if narrowing[c.Rule] && c.Breaks&Backward != 0 {
					backwards = append(backwards, c.Message)
				}
			}
			// The generator, shipped as a version with both published.
			m, err := model.Build(context.Background(), dir(both, map[string]string{"thing.v1.json": fact(1, tt.old), "thing.v2.json": fact(2, tt.new)}), model.Options{})
			if err != nil {
				t.Fatal(err)
			}
			down := m.Facts[0].Older[0].Downcast
			if down == nil {
				t.Fatal("no downcast to version 1")
			}
			narrowed := strings.Join(down.Narrowed, "; ")
			if widens != (len(down.Narrowed) > 0) {
				t.Fatalf("diff says old consumers refuse new values: %v; the generator's downcast narrows: %q (generated: %v)", widens, narrowed, down.Generated)
			}
			for _, msg := range backwards {
				what, _, _ := strings.Cut(msg, ": ")
				if !strings.Contains(narrowed, what) {
					t.Errorf("diff says %q read backwards, the generator's downcast %q", what, narrowed)
				}
			}
		})
	}
}
