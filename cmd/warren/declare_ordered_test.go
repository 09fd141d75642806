package main

import (
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

var orderedSchemas = map[string]string{
	"warren.json": `{
  "package": "events",
  "exchanges": {"events": "{{events}}", "retry": "{{retry}}", "dead": "{{dead}}"},
  "consumers": {
    "{{shipper}}": {"bindings": ["order.placed", "order.paid"], "ordered": true, "shards": 2, "maxAttempts": 1}
  }
}`,
	"order/placed.json": `{"x-routing-key": "order.placed", "x-ordering-key": "/sku", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}`,
	"order/paid.json":   `{"x-routing-key": "order.paid", "x-ordering-key": "/sku", "type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}`,
}

// An ordered consumer's bindings bind the events exchange to its hash
// exchange; one the manifest drops is reported as an orphan, and --prune
// removes it, so the dropped fact no longer reaches the shards.
func TestDeclarePrunesAnOrderedConsumersBinding(t *testing.T) {
	b := newBrokerCase(t, orderedSchemas, "events", "retry", "dead", "shipper")
	shipper, events := b.name("shipper"), b.name("events")
	if code, _, stderr := b.run("declare", b.dir); code != 0 {
		t.Fatalf("declare: exit %d, %s", code, stderr)
	}
	b.editManifest(`"bindings": ["order.placed", "order.paid"]`, `"bindings": ["order.paid"]`)
	code, stdout, stderr := b.run("declare", "--prune", b.dir)
	want := `removed orphaned binding "order.placed" from "` + events + `" to exchange "` + shipper + `.ordered" (consumer "` + shipper + `")`
	if code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("declare --prune: exit %d, stderr %q, stdout:\n%s\nwant a line %q", code, stderr, stdout, want)
	}
	header := amqp.Table{"x-ordering-key": "k"}
	b.publish(events, "order.placed", amqp.Publishing{Body: []byte(`{}`), Headers: header})
	b.publish(events, "order.paid", amqp.Publishing{Body: []byte(`{}`), Headers: header})
	if n := b.depth(shipper+".shard.0") + b.depth(shipper+".shard.1"); n != 1 {
		t.Errorf("the shards hold %d messages after one order.placed and one order.paid, want 1", n)
	}
}
