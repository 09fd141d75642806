package poison_test

import (
	"context"
	"slices"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// An ordered consumer has no work queue: a replay goes through its own
// hash exchange, which puts each copy in its key's shard by the kept
// x-ordering-key header, in poison-queue order, and no other consumer
// bound to the same facts receives it.
func TestReplayOfAnOrderedConsumerGoesToItsKeysShard(t *testing.T) {
	conn := dial(t)
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Consumers: []topology.ConsumerSpec{
			// Classic: the test reads the shard with basic.get, which a
			// quorum queue with a single active consumer refuses.
			{Name: testenv.Name("o"), Bindings: []string{"item.*"}, Ordered: true, Shards: 1, QueueType: topology.Classic, MaxAttempts: 1},
			{Name: testenv.Name("b"), Bindings: []string{"item.*"}, MaxAttempts: 1},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &lane{t: t, conn: conn, top: top, a: top.Consumers[0], b: top.Consumers[1]}
	t.Cleanup(l.cleanup)
	if err := conn.Declare(context.Background(), top); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m1", "m2"} {
		l.publish(l.a.DeadExchange, l.a.Name, amqp.Publishing{
			MessageId: id, Body: []byte(`{"id":"` + id + `","occurred_at":"2024-05-01T10:00:00Z","payload":{"sku":"k"}}`),
			Headers: amqp.Table{runtime.HeaderOrderingKey: "k", runtime.HeaderSequence: int64(1), runtime.HeaderSequenceSource: "s",
				runtime.HeaderOriginalRoutingKey: "item.added", runtime.HeaderFailure: "boom", runtime.HeaderConsumer: l.a.Name},
		})
	}
	done, err := poison.Replay(context.Background(), conn, l.a, poison.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(done), []string{"m1", "m2"}) {
		t.Fatalf("replayed %v, want [m1 m2]", ids(done))
	}
	moved := l.take(l.a.Shards[0])
	if len(moved) != 2 || moved[0].MessageId != "m1" || moved[1].MessageId != "m2" {
		t.Fatalf("shard holds %d messages, want m1 then m2", len(moved))
	}
	if key := moved[0].Headers[runtime.HeaderOrderingKey]; key != "k" {
		t.Errorf("replayed copy's ordering key %v, want k", key)
	}
	if n := l.depth(l.b.Queue); n != 0 {
		t.Errorf("consumer b received %d replayed messages, want none", n)
	}
}
