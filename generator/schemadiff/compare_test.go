package schemadiff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loadDir loads one side of a test case.
func loadDir(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return d
}

// brief renders a change on one line for exact comparison:
// verdict rule subject path side:file:line:col.
func brief(c Change) string {
	subject := c.Fact
	if c.Consumer != "" {
		subject = c.Consumer + "->" + c.Fact
	}
	return fmt.Sprintf("%s %s %s %q %s:%s:%d:%d", c.Verdict, c.Rule, subject, c.Path, c.Pos.Side, c.Pos.File, c.Pos.Line, c.Pos.Col)
}

// TestCompare compares each pair testdata/<case>/old and testdata/<case>/new
// and checks the exact classification: verdict, rule, fact, path and
// position of every change. Every case directory must have a row here.
func TestCompare(t *testing.T) {
	tests := map[string][]string{
		"no-change":           nil,
		"refactor-into-ref":   nil, // a property moved into $defs behind a $ref is the same schema
		"refactor-into-allof": nil, // so is a property moved into an allOf member

		"fact-removed": {
			`breaking fact-removed order.shipped "" old:order/shipped.json:1:1`,
		},
		"fact-removed-deprecated": {
			`intentional fact-removed order.shipped "" old:order/shipped.json:1:1`,
		},
		"routing-key-changed": {
			`breaking routing-key-changed order.dispatched "" new:order/shipped.json:2:20`,
		},
		"routing-key-changed-announced": {
			`intentional routing-key-changed order.dispatched "" new:order/shipped.json:2:20`,
			`compatible version-raised order.dispatched "" new:order/shipped.json:14:16`,
		},
		"version-lowered": {
			`breaking version-lowered order.shipped "" new:order/shipped.json:14:16`,
		},
		"property-removed": {
			`breaking property-removed order.placed "/properties/note" old:order/placed.json:32:13`,
		},
		"property-removed-announced": {
			`intentional property-removed order.placed "/properties/note" old:order/placed.json:32:13`,
			`compatible version-raised order.placed "" new:order/placed.json:69:16`,
		},
		"required-property-added": {
			`breaking required-property-added order.placed "/properties/sku" new:order/placed.json:46:12`,
		},
		"property-made-required": {
			`breaking property-made-required order.placed "/properties/note" new:order/placed.json:11:5`,
		},
		"property-made-optional": {
			`breaking property-made-optional order.placed "/properties/quantity" new:order/placed.json:16:17`,
		},
		"type-narrowed": {
			`breaking type-narrowed order.placed "/properties/quantity" new:order/placed.json:18:15`,
		},
		"type-changed": {
			`breaking type-changed order.placed "/properties/id" new:order/placed.json:14:15`,
		},
		"type-widened": {
			`breaking type-changed order.placed "/properties/note" new:order/placed.json:33:15`,
		},
		"enum-value-removed": {
			`breaking enum-value-removed order.placed "/properties/status" new:order/placed.json:26:15`,
		},
		"constraint-tightened": {
			`breaking constraint-tightened order.placed "/properties/id" new:order/placed.json:15:20`,
			`breaking constraint-tightened order.placed "/properties/note" new:order/placed.json:34:18`,
			`breaking constraint-tightened order.placed "/properties/quantity" new:order/placed.json:19:18`,
		},
		"constraint-tightened-in-shared-file": {
			`breaking constraint-tightened order.placed "/properties/total/properties/amount" new:common/money.json:10:18`,
		},
		"additional-properties-closed": {
			`breaking additional-properties-closed order.placed "/properties/total" new:common/money.json:17:27`,
		},
		"branch-removed": {
			`breaking branch-removed order.placed "/properties/payment/oneOf/1" old:order/placed.json:40:9`,
		},
		"unclassified-change": {
			`breaking unclassified-change order.placed "/properties/note" new:order/placed.json:34:14`,
		},
		"fact-added": {
			`compatible fact-added order.shipped "" new:order/shipped.json:1:1`,
			// order-mailer binds order.*: it receives the new fact too.
			`compatible binding-started-matching order-mailer->order.shipped "" new:warren.json:5:19`,
		},
		"fact-moved": {
			`compatible fact-moved order.shipped "" new:order/sent.json:1:1`,
		},
		"version-raised": {
			`compatible version-raised order.shipped "" new:order/shipped.json:14:16`,
		},
		"property-added": {
			`compatible property-added order.placed "/properties/gift" new:order/placed.json:45:13`,
		},
		"enum-value-added": {
			`compatible enum-value-added order.placed "/properties/status" new:order/placed.json:26:15`,
		},
		"constraint-loosened": {
			`compatible constraint-loosened order.placed "/properties/id" new:order/placed.json:15:20`,
			`compatible constraint-loosened order.placed "/properties/quantity" old:order/placed.json:19:18`,
		},
		"additional-properties-opened": {
			`compatible additional-properties-opened order.placed "" old:order/placed.json:6:27`,
		},
		"branch-added": {
			`compatible branch-added order.placed "/properties/payment/oneOf/0" new:order/placed.json:37:9`,
		},
		"binding-stopped-matching": {
			`breaking binding-stopped-matching order-mailer->order.shipped "" new:warren.json:5:19`,
		},
		"routing-key-changed-unbinds": { // ledger binds order.placed by its exact key
			`breaking routing-key-changed order.submitted "" new:order/placed.json:2:20`,
			`breaking binding-stopped-matching ledger->order.submitted "" new:warren.json:10:19`,
		},
		"binding-started-matching": {
			`compatible binding-started-matching ledger->order.shipped "" new:warren.json:10:19`,
		},
		"consumer-added": {
			`compatible consumer-added search-indexer-> "" new:warren.json:14:23`,
		},
		"consumer-removed": {
			`compatible consumer-removed ledger-> "" old:warren.json:9:15`,
		},
		"description-changed": {
			`compatible description-changed order.placed "" new:order/placed.json:4:18`,
		},
		"title-changed": {
			`compatible title-changed order.placed "" new:order/placed.json:3:12`,
		},
		"default-changed": {
			`compatible default-changed order.placed "/properties/status" new:order/placed.json:30:18`,
		},
		"deprecated-changed": {
			`compatible deprecated-changed order.shipped "" new:order/shipped.json:14:17`,
		},
	}
	dirs, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "old")); err != nil {
			continue // not a comparison case
		}
		name := filepath.Base(d)
		want, ok := tests[name]
		if !ok {
			t.Errorf("testdata/%s has no expectation in TestCompare", name)
			continue
		}
		delete(tests, name)
		t.Run(name, func(t *testing.T) {
			r := Compare(loadDir(t, filepath.Join(d, "old")), loadDir(t, filepath.Join(d, "new")))
			var got []string
			for _, c := range r.Changes {
				got = append(got, brief(c))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
	for name := range tests {
		t.Errorf("TestCompare expects testdata/%s, which does not exist", name)
	}
	for _, r := range Rules {
		if _, err := os.Stat(filepath.Join("testdata", r.Name, "old")); err != nil {
			t.Errorf("rule %s has no case directory testdata/%s", r.Name, r.Name)
		}
	}
}

// TestBindingStoppedMatchingMessages checks that the message tells the two
// causes apart: a renamed fact the bindings no longer match, and a binding
// edited while its old form stays on the broker.
func TestBindingStoppedMatchingMessages(t *testing.T) {
	tests := map[string]string{
		"routing-key-changed-unbinds": `consumer "ledger" no longer receives "order.submitted" (formerly "order.placed"): its bindings do not match the new routing key`,
		"binding-stopped-matching":    `consumer "order-mailer" no longer receives "order.shipped"; its old binding stays on the broker, so these facts reach a consumer that no longer handles them`,
	}
	for name, want := range tests {
		r := Compare(loadDir(t, filepath.Join("testdata", name, "old")), loadDir(t, filepath.Join("testdata", name, "new")))
		var got []string
		for _, c := range r.Changes {
			if c.Rule == BindingStoppedMatching {
				got = append(got, c.Message)
			}
		}
		if diff := cmp.Diff([]string{want}, got); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", name, diff)
		}
	}
}
