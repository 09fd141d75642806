package runtime

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// Issue 3, test 9: a message whose handler kills the consumer before it can
// ack (simulated by closing the channel without an ack) is delivered
// DeliveryLimit more times and then dead-lettered into the poison queue,
// instead of looping forever. It uses channels of its own, so it disturbs
// nobody.
func TestMessageThatKillsItsConsumerEndsInPoison(t *testing.T) {
	const limit = 3
	b := newBroker(t, topology.ConsumerSpec{Name: "crashy", Bindings: []string{"item.#"}, Backoff: testLadder, DeliveryLimit: limit})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	pub, _ := NewPublisher(conn, b.events())
	id := mustPublish(t, pub, itemFact("item.added"), item{SKU: "fatal"})

	deliveries := 0
	eventually(t, "the message in the poison queue", func() bool {
		if b.depth(spec.PoisonQueue) == 1 {
			return true
		}
		ch, err := b.raw.Channel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close() // the "crash": the delivery is never acked
		d, ok, err := ch.Get(spec.Queue, false)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			deliveries++
			if d.MessageId != id {
				t.Fatalf("got message %s, want %s", d.MessageId, id)
			}
		}
		return false
	})
	if deliveries != limit+1 {
		t.Errorf("delivered %d times before poison, want the first delivery plus %d", deliveries, limit)
	}
	d := b.get(spec.PoisonQueue)
	if d.MessageId != id {
		t.Errorf("poison holds %s, want %s", d.MessageId, id)
	}
	deaths, _ := d.Headers["x-death"].([]any)
	if len(deaths) == 0 || deaths[0].(amqp.Table)["reason"] != "delivery_limit" || deaths[0].(amqp.Table)["queue"] != spec.Queue {
		t.Errorf("x-death %v, want reason delivery_limit from %s", d.Headers["x-death"], spec.Queue)
	}
	if n := b.depth(spec.Queue); n != 0 {
		t.Errorf("work queue still holds %d", n)
	}
}
