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
