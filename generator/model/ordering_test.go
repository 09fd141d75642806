package model

import (
	"strings"
	"testing"
)

const orderPlaced = `{"x-routing-key": "order.placed", "x-ordering-key": "/order_id", "x-priority": 3,
  "type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}}`

// An ordered consumer's facts carry their ordering key and default
// priority into the model, and /defaults' maxLength bounds every consumer
// that sets none of its own.
func TestOrderingKeysAndDefaults(t *testing.T) {
	m, err := build(t, map[string]string{
		"warren.json": `{"package": "p", "defaults": {"maxLength": {"messages": 500}},
		  "consumers": {"shipper": {"bindings": ["order.placed"], "ordered": true},
		                "mailer": {"bindings": ["order.placed"], "maxLength": {"bytes": 4096}}}}`,
		"order-placed.json": orderPlaced,
	})
	if err != nil {
		t.Fatal(err)
	}
	f := m.Facts[0]
	if f.OrderingKey != "/order_id" || f.Priority != 3 {
		t.Errorf("fact: ordering key %q, priority %d; want /order_id, 3", f.OrderingKey, f.Priority)
	}
	bounds := map[string][2]int64{}
	for _, q := range m.Topology.Queues {
		if q.MaxLength > 0 || q.MaxLengthBytes > 0 {
			bounds[q.Name] = [2]int64{int64(q.MaxLength), q.MaxLengthBytes}
		}
	}
	want := map[string][2]int64{"mailer": {0, 4096}}
	for _, shard := range []string{"shipper.shard.0", "shipper.shard.1", "shipper.shard.2", "shipper.shard.3"} {
		want[shard] = [2]int64{500, 0}
	}
	if len(bounds) != len(want) {
		t.Errorf("bounded queues %v, want %v", bounds, want)
	}
	for q, w := range want {
		if bounds[q] != w {
			t.Errorf("queue %s bounded %v, want %v (messages, bytes)", q, bounds[q], w)
		}
	}
}

// A key that is not a required scalar, and an ordered consumer with a
// fact without a key, are errors naming the file and the place.
func TestOrderingKeyErrors(t *testing.T) {
	for name, tc := range map[string]struct{ schema, manifest, want string }{
		"missing property": {
			`{"x-routing-key": "a.b", "x-ordering-key": "/id", "type": "object", "properties": {"x": {"type": "string"}}}`, ``,
			`a.json:1:44: /x-ordering-key: fact a.b: ordering key "/id": the payload has no property "id" (properties: x)`},
		"nullable": {
			`{"x-routing-key": "a.b", "x-ordering-key": "/id", "type": "object", "required": ["id"], "properties": {"id": {"type": ["string", "null"]}}}`, ``,
			`property "id" of the payload may be null`},
		"through an array": {
			`{"x-routing-key": "a.b", "x-ordering-key": "/ids/0", "type": "object", "required": ["ids"], "properties": {"ids": {"type": "array", "items": {"type": "string"}}}}`, ``,
			`/ids is not an object with properties`},
		"ordered without key": {
			`{"x-routing-key": "a.b", "type": "object"}`, `, "ordered": true`,
			`warren.json:1:70: /consumers/c/ordered: consumer "c" is ordered, but fact a.b (a.json) declares no ordering key`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := build(t, map[string]string{
				"warren.json": `{"package": "p", "consumers": {"c": {"bindings": ["a.b"]` + tc.manifest + `}}}`,
				"a.json":      tc.schema,
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want it to contain %q", err, tc.want)
			}
		})
	}
}
