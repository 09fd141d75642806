package load

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The manifest declares facts by pointing at schemas that carry no warren
// keyword: a vendored file stays as its vendor wrote it.
func TestManifestFacts(t *testing.T) {
	s, err := LoadFS(context.Background(), mapFS(map[string]string{
		"warren.json": `{"facts": {
  "github.push.received": {"schema": "vendor/github/push.json", "title": "PushReceived", "version": 3},
  "storage.object.finalized": {"schema": "vendor/gcp/storage.json#/definitions/StorageObjectData", "description": "Written."},
  "link.started": {"schema": "https://example.org/links/start.json"}
}}`,
		"vendor/github/push.json": `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}`,
		"vendor/gcp/storage.json": `{"$schema": "http://json-schema.org/draft-04/schema#", "definitions": {"StorageObjectData": {"type": "object"}}}`,
		"links/start.json":        `{"$id": "https://example.org/links/start.json", "type": "object"}`,
		"order/placed.json":       `{"x-routing-key": "order.placed", "type": "object"}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range s.Facts {
		got = append(got, f.RoutingKey+"="+f.Location()+"@"+f.KeyDoc.Path+"#"+f.KeyPointer)
	}
	want := "order.placed=order/placed.json@order/placed.json#/x-routing-key " +
		"github.push.received=vendor/github/push.json@warren.json#/facts/github.push.received " +
		"link.started=links/start.json@warren.json#/facts/link.started " +
		"storage.object.finalized=vendor/gcp/storage.json#/definitions/StorageObjectData@warren.json#/facts/storage.object.finalized"
	if strings.Join(got, " ") != want {
		t.Errorf("facts:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	push := s.Facts[1]
	if push.Title != "PushReceived" || push.Version != 3 || !push.InManifest() || s.Facts[0].InManifest() {
		t.Errorf("push = %+v", push)
	}
	if s.Facts[3].Description != "Written." {
		t.Errorf("storage description = %q", s.Facts[3].Description)
	}
}

func TestManifestFactErrors(t *testing.T) {
	tests := []struct {
		manifest string
		want     []string
	}{
		{`{"facts": {
  "order.placed": {"schema": "vendor/order.json"},
  "order.gone": {"schema": "vendor/order.json#/definitions/missing"}
}}`, []string{
			`warren.json:2:19: /facts/order.placed: routing key "order.placed" is already declared by order/placed.json:1:19`,
			`warren.json:3:28: /facts/order.gone/schema: schema "vendor/order.json#/definitions/missing": vendor/order.json has nothing at /definitions/missing`,
		}},
		{`{"facts": {
  "Order.Bad": {"schema": "vendor/order.json"},
  "order.other": {"schema": "vendor/order.json", "version": 0}
}}`, []string{
			`warren.json:2:3: /facts/Order.Bad: expected a routing key of dotted lower-case words such as "order.placed" (letters, digits, '-' and '_'; no '*' or '#'), got "Order.Bad"`,
			`warren.json:3:61: /facts/order.other/version: expected at least 1, got 0`,
		}},
	}
	for _, tt := range tests {
		_, err := LoadFS(context.Background(), mapFS(map[string]string{
			"warren.json":       tt.manifest,
			"vendor/order.json": `{"type": "object"}`,
			"order/placed.json": `{"x-routing-key": "order.placed", "type": "object"}`,
		}))
		var list ErrorList
		if !errors.As(err, &list) {
			t.Fatalf("error = %v, want an ErrorList", err)
		}
		if len(list) != len(tt.want) {
			t.Fatalf("got %d errors, want %d:\n%v", len(list), len(tt.want), err)
		}
		for i, e := range list {
			if e.Error() != tt.want[i] {
				t.Errorf("error %d:\n got %s\nwant %s", i, e, tt.want[i])
			}
		}
	}
}
