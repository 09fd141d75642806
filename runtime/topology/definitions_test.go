package topology

import (
	"encoding/json"
	"testing"
)

// An empty topology still has the three lists, as the broker's import
// expects them.
func TestDefinitionsOfNothingHaveEmptyLists(t *testing.T) {
	data, err := json.Marshal(Topology{}.Definitions("/", RabbitMQ4))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), `{"rabbitmq_version":"4.x","exchanges":[],"queues":[],"bindings":[]}`; got != want {
		t.Errorf("definitions %s, want %s", got, want)
	}
}

// Every queue carries the arguments the runtime declares it with, and
// every definition the virtual host asked for.
func TestDefinitionsCarryQueueArgumentsAndVhost(t *testing.T) {
	top, err := Build(Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a.b"}, MaxAttempts: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	defs := top.Definitions("shop", RabbitMQ3)
	if len(defs.Exchanges) != 3 || len(defs.Queues) != len(top.Queues) || len(defs.Bindings) != len(top.Bindings) {
		t.Fatalf("%d exchanges, %d queues, %d bindings; want 3, %d, %d", len(defs.Exchanges), len(defs.Queues), len(defs.Bindings), len(top.Queues), len(top.Bindings))
	}
	for i, q := range defs.Queues {
		want, _ := json.Marshal(top.Queues[i].Arguments())
		got, _ := json.Marshal(q.Arguments)
		if q.Name != top.Queues[i].Name || string(got) != string(want) || q.Vhost != "shop" || !q.Durable {
			t.Errorf("queue %d: %+v, want %s with arguments %s in vhost shop", i, q, top.Queues[i].Name, want)
		}
	}
	for _, b := range defs.Bindings {
		if b.Vhost != "shop" || b.DestinationType != "queue" {
			t.Errorf("binding %+v", b)
		}
	}
}

// An ordered consumer's hash exchange keeps its hash-header, and the
// events exchange is bound to it as an exchange, not a queue.
func TestDefinitionsOfAnOrderedConsumer(t *testing.T) {
	top, err := Build(Spec{Consumers: []ConsumerSpec{{Name: "o", Bindings: []string{"a.b"}, Ordered: true, Shards: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defs := top.Definitions("/", RabbitMQ4)
	hash := defs.Exchanges[3]
	if hash.Type != "x-consistent-hash" || hash.Arguments["hash-header"] != "x-ordering-key" {
		t.Errorf("hash exchange %+v: want type x-consistent-hash with hash-header x-ordering-key", hash)
	}
	first := defs.Bindings[0]
	if first.Source != "app.events" || first.Destination != "o.ordered" || first.DestinationType != "exchange" {
		t.Errorf("first binding %+v: want app.events to exchange o.ordered", first)
	}
}
