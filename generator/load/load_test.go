package load

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func mapFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, src := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(src)}
	}
	return fsys
}

const manifest = `{
  "package": "events", "compatibility": "BACKWARD_TRANSITIVE",
  "exchanges": {"events": "shop.events"},
  "defaults": {"backoff": ["100ms", "1s"], "prefetch": 20},
  "consumers": {
    "search-indexer": {"bindings": ["catalogue.#"], "concurrency": 2, "queueType": "classic", "deliveryLimit": 5},
    "order-mailer": {"bindings": ["order.placed"], "description": "Mails the customer."}
  }
}`

func TestLoad(t *testing.T) {
	fsys := mapFS(map[string]string{
		"warren.json": manifest,
		"order/placed.json": `{
  "x-routing-key": "order.placed",
  "title": "OrderPlaced",
  "description": "A customer placed an order.",
  "x-version": 2,
  "type": "object",
  "properties": {"total": {"$ref": "../common/money.json"}, "lines": {"$ref": "#/$defs/lines"}},
  "$defs": {"lines": {"type": "array"}}
}`,
		"catalogue/item-deleted.json": `{"x-routing-key": "catalogue.item.deleted", "type": "object", "deprecated": true, "x-compatibility": "NONE"}`,
		"common/money.json":           `{"type": "object", "properties": {"amount": {"type": "integer"}}}`,
		"README.md":                   "not json, ignored",
		".hidden/x.json":              "not even parsed",
	})
	s, err := LoadFS(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if got := docPaths(s.Docs); got != "catalogue/item-deleted.json common/money.json order/placed.json" {
		t.Errorf("Docs = %s", got)
	}
	if len(s.Facts) != 2 {
		t.Fatalf("got %d facts, want 2", len(s.Facts))
	}
	del, placed := s.Facts[0], s.Facts[1]
	if del.RoutingKey != "catalogue.item.deleted" || !del.Deprecated || del.Version != 1 || del.Title != "" || del.Compatibility != "NONE" {
		t.Errorf("item-deleted = %+v", del)
	}
	if placed.RoutingKey != "order.placed" || placed.Version != 2 || placed.Title != "OrderPlaced" || placed.Description != "A customer placed an order." || placed.Compatibility != "" {
		t.Errorf("placed = %+v", placed)
	}

	if got := docPaths(s.Referenced(placed.Doc)); got != "order/placed.json common/money.json" {
		t.Errorf("Referenced(order/placed.json) = %s, want itself (#/$defs/lines) and common/money.json", got)
	}
	if got := s.Referenced(del.Doc); got != nil {
		t.Errorf("Referenced(catalogue/item-deleted.json) = %v, want none", docPaths(got))
	}

	m := s.Manifest
	if m.Package != "events" || m.Exchanges != (Exchanges{Events: "shop.events"}) || m.Compatibility != "BACKWARD_TRANSITIVE" {
		t.Errorf("manifest = %+v", m)
	}
	if *m.Defaults.Prefetch != 20 || len(m.Defaults.Backoff) != 2 || m.Defaults.Backoff[0] != 100*time.Millisecond || m.Defaults.Concurrency != nil {
		t.Errorf("defaults = %+v", m.Defaults)
	}
	if len(m.Consumers) != 2 || m.Consumers[0].Name != "order-mailer" || m.Consumers[1].Name != "search-indexer" {
		t.Fatalf("consumers not sorted by name: %+v", m.Consumers)
	}
	si := m.Consumers[1]
	if *si.Settings.Concurrency != 2 || si.Settings.QueueType != "classic" || si.Settings.Prefetch != nil || si.Bindings[0] != "catalogue.#" || *si.Settings.DeliveryLimit != 5 {
		t.Errorf("search-indexer = %+v", si.Settings)
	}
	if line, col, ok := m.Doc.Position(si.BindingPointer(0)); !ok || line != 6 || col != 37 {
		t.Errorf("binding position = %d:%d %v, want 6:37", line, col, ok)
	}

	target, err := s.Resolve(placed.Doc, "../common/money.json")
	if err != nil || target.String() != "common/money.json" {
		t.Errorf("Resolve(file) = %v, %v", target, err)
	}
	target, err = s.Resolve(placed.Doc, "#/$defs/lines")
	if err != nil || target.String() != "order/placed.json#/$defs/lines" || target.Value().(map[string]any)["type"] != "array" {
		t.Errorf("Resolve(local) = %v, %v", target, err)
	}
}

func docPaths(docs []*Document) string {
	var paths []string
	for _, d := range docs {
		paths = append(paths, d.Path)
	}
	return strings.Join(paths, " ")
}

// TestLoadErrors checks that each kind of bad input is reported with file,
// position, pointer and what was expected.
func TestLoadErrors(t *testing.T) {
	fact := func(body string) string {
		return `{"x-routing-key": "a.b", "type": "object"` + body + "}"
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "invalid JSON",
			files: map[string]string{"warren.json": `{}`, "a.json": "{\n  \"type\": \"object\",\n  \"title\" \"x\"\n}"},
			want:  []string{`a.json:3:11: invalid JSON: invalid character '"' after object key`},
		},
		{
			// Through the whole load, not Parse alone: a BOM in any file
			// of the directory, the manifest included, is named as such.
			name:  "byte order mark",
			files: map[string]string{"warren.json": "\xef\xbb\xbf{}", "a.json": "\xef\xbb\xbf" + fact("")},
			want: []string{
				`a.json:1:1: invalid JSON: the file starts with a UTF-8 byte order mark (EF BB BF), which a JSON file must not have (RFC 8259, section 8.1): save it as UTF-8 without one`,
				`warren.json:1:1: invalid JSON: the file starts with a UTF-8 byte order mark (EF BB BF), which a JSON file must not have (RFC 8259, section 8.1): save it as UTF-8 without one`,
			},
		},
		{
			// The root's pointer is "", which prints as nothing; without
			// (root) the message would not say what is expected to be an
			// object.
			name:  "root of the wrong type",
			files: map[string]string{"warren.json": `[]`, "a.json": `[]`},
			want: []string{
				`a.json:1:1: (root): expected boolean or object, got an array`,
				`warren.json:1:1: (root): expected object, got an array`,
			},
		},
		{
			name:  "missing manifest",
			files: map[string]string{"a.json": fact("")},
			want:  []string{`warren.json: missing manifest: expected warren.json at the top of the schema directory`},
		},
		{
			name:  "ordering key that is no JSON pointer",
			files: map[string]string{"warren.json": `{}`, "a.json": fact(`, "x-ordering-key": "order_id"`)},
			want:  []string{`a.json:1:62: /x-ordering-key: expected a JSON pointer into the payload such as "/order_id", reaching a required string, integer or boolean property: facts with the same value are handled in publish order by ordered consumers, got "order_id"`},
		},
		{
			name:  "wrong keyword type in manifest",
			files: map[string]string{"warren.json": `{"defaults": {"prefetch": "ten"}}`},
			want:  []string{`warren.json:1:27: /defaults/prefetch: expected integer, got "ten"`},
		},
		{
			name:  "unknown keyword in manifest",
			files: map[string]string{"warren.json": `{"consumers": {"c": {"bindings": ["a.b"], "prefech": 3}}}`},
			want:  []string{`warren.json:1:43: /consumers/c/prefech: unknown property "prefech"; did you mean "prefetch"? (expected one of "backoff", "batch", "bindings", "concurrency", "deliveryLimit", "description", "maxAttempts", "maxDeferrals", "maxLength", "maxPriority", "onPoison", "ordered", "prefetch", "queueType", "shards", "start", "stream", "versions")`},
		},
		{
			name:  "unknown compatibility mode",
			files: map[string]string{"warren.json": `{"compatibility": "BACKWARDS"}`, "a.json": fact(`, "x-compatibility": "full"`)},
			want: []string{
				`a.json:1:63: /x-compatibility: expected a compatibility mode: BACKWARD, FORWARD, FULL (each also _TRANSITIVE) or NONE; it overrides the manifest's compatibility for this fact, got "full"`,
				`warren.json:1:19: /compatibility: expected a compatibility mode: BACKWARD, FORWARD, FULL (each also _TRANSITIVE) or NONE, got "BACKWARDS"`,
			},
		},
		{
			name:  "bad backoff duration",
			files: map[string]string{"warren.json": `{"defaults": {"backoff": ["1s", "1.5ms"]}}`},
			want:  []string{`warren.json:1:33: /defaults/backoff/1: expected a whole number of milliseconds of at least 1ms, got "1.5ms"`},
		},
		{
			// A duration, only too long: the error names the longest
			// accepted, in the field's own unit, not "expected a duration".
			name: "durations too long",
			files: map[string]string{"warren.json": `{"defaults": {"backoff": ["100000000h"]},
  "streams": {"s": {"bindings": ["a.b"], "maxAge": "9999999999s"}}}`},
			want: []string{
				`warren.json:1:27: /defaults/backoff/0: expected a duration of at most "2562047h47m16.854s" (about 292 years), got "100000000h"`,
				`warren.json:2:52: /streams/s/maxAge: expected a duration of at most "2562047h47m16s" (about 292 years), got "9999999999s"; no maxAge keeps facts whatever their age`,
			},
		},
		{
			name:  "routing key with wildcard",
			files: map[string]string{"warren.json": `{}`, "a.json": `{"x-routing-key": "order.*", "type": "object"}`},
			want:  []string{`a.json:1:19: /x-routing-key: expected a routing key of dotted lower-case words such as "order.placed" (letters, digits, '-' and '_'; no '*' or '#'), got "order.*"`},
		},
		{
			name:  "duplicate routing key",
			files: map[string]string{"warren.json": `{}`, "a.json": fact(""), "b.json": fact("")},
			want:  []string{`b.json:1:19: /x-routing-key: routing key "a.b" is already declared by a.json:1:19`},
		},
		{
			// JSON allows it; no validator reads it (the meta-schema's
			// check of multipleOf panicked on it).
			name:  "number with a huge exponent",
			files: map[string]string{"warren.json": `{}`, "a.json": fact(`, "properties": {"f": {"type": "number", "multipleOf": 1e99999999, "maximum": 1e400}}`)},
			want:  []string{`a.json:1:97: /properties/f/multipleOf: number 1e99999999: expected an exponent from -10000 to 10000 (no validator reads this one exactly, and no schema needs one beyond)`},
		},
		{
			name: "ref to a misspelt file",
			files: map[string]string{
				"warren.json":       `{}`,
				"common/money.json": `{"type": "object"}`,
				"common/item.json":  `{"type": "object"}`,
				"order/placed.json": `{"x-routing-key": "order.placed", "type": "object", "properties": {"total": {"$ref": "../common/mony.json"}}}`,
			},
			want: []string{`order/placed.json:1:86: /properties/total/$ref: $ref "../common/mony.json": no schema file "common/mony.json" in the schema directory; did you mean "../common/money.json"?`},
		},
		{
			name: "unresolved refs",
			files: map[string]string{"warren.json": `{}`, "a.json": fact(`, "properties": {
  "x": {"$ref": "#/$defs/missing"},
  "y": {"$ref": "common.json"},
  "z": {"$ref": "#anchor"},
  "w": {"$ref": "https://example.com/s.json"}}`)},
			want: []string{
				`a.json:2:17: /properties/x/$ref: $ref "#/$defs/missing": a.json has nothing at /$defs/missing`,
				`a.json:3:17: /properties/y/$ref: $ref "common.json": no schema file "common.json" in the schema directory`,
				`a.json:4:17: /properties/z/$ref: $ref "#anchor": a.json declares no anchor "anchor"`,
				`a.json:5:17: /properties/w/$ref: $ref "https://example.com/s.json": no file of the schema directory declares $id "https://example.com/s.json", and warren never fetches schemas from the network (no file declares an $id)`,
			},
		},
		{
			name:  "not a JSON Schema",
			files: map[string]string{"warren.json": `{}`, "a.json": fact(`, "properties": {"s": {"type": "strin"}}`)},
			want:  []string{`a.json:1:73: /properties/s/type: expected one of "array", "boolean", "integer", "null", "number", "object", "string"; got "strin"`},
		},
		{
			// Lookahead is ECMA-262 (the next one is not); a bad
			// patternProperties key is reported at the key, however many
			// keywords follow it.
			name: "invalid patterns",
			files: map[string]string{"warren.json": `{}`, "a.json": fact(`, "properties": {
  "s": {"type": "string", "pattern": "^(?=x)(?<=y"},
  "o": {"type": "object", "patternProperties": {"^(?!x-)": {}, "[b-a]": {}}, "title": "O", "required": []}},
  "patternProperties": {"^(x": {}}, "required": ["s"]`)},
			want: []string{
				"a.json:2:38: /properties/s/pattern: '^(?=x)(?<=y' is not valid regex: error parsing regexp: missing closing ) in `^(?=x)(?<=y`",
				"a.json:3:64: /properties/o/patternProperties/[b-a]: '[b-a]' is not valid regex: error parsing regexp: [b-a] range in reverse order in `[b-a]`",
				"a.json:4:25: /patternProperties/^(x: '^(x' is not valid regex: error parsing regexp: missing closing ) in `^(x`",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFS(context.Background(), mapFS(tt.files))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error = %v, want an ErrorList", err)
			}
			if len(list) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(list), len(tt.want), err)
			}
			for i, e := range list {
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s", i, e, tt.want[i])
				}
			}
		})
	}
}
