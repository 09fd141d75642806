package runtime

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// A work queue's delivery limit is the one warren declares, on either
// release line: with a limit above RabbitMQ 4's default of 20, a message
// returned without an ack is delivered exactly limit+1 times before it is
// dead-lettered to poison, so 4.x's default never decides.
func TestWorkQueueDeliveryLimitIsTheDeclaredOne(t *testing.T) {
	const limit = 22
	b := newBroker(t, topology.ConsumerSpec{Name: "limited", Bindings: []string{"item.#"}, Backoff: testLadder, DeliveryLimit: limit})
	spec := b.consumer(0)
	b.publishRaw("item.added", []byte(`{"sku":"returned"}`))

	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	deliveries := 0
	for {
		d, ok := getWhenReady(t, b, ch, spec.Queue, spec.PoisonQueue)
		if !ok {
			break
		}
		deliveries++
		if err := d.Nack(false, true); err != nil { // returned, as a failing consumer would
			t.Fatal(err)
		}
	}
	if deliveries != limit+1 {
		t.Errorf("delivered %d times before poison, want %d (the first delivery plus the declared limit of %d)", deliveries, limit+1, limit)
	}
	if n := b.depth(spec.PoisonQueue); n != 1 {
		t.Errorf("poison holds %d messages, want 1", n)
	}
}

// getWhenReady waits until the message is back in queue (returning it) or
// has reached poison (returning false).
func getWhenReady(t *testing.T, b *broker, ch *amqp.Channel, queue, poison string) (amqp.Delivery, bool) {
	t.Helper()
	var d amqp.Delivery
	var got bool
	testenv.Eventually(t, "the message back in "+queue+" or in "+poison, func() bool {
		var err error
		d, got, err = ch.Get(queue, false)
		if err != nil {
			t.Fatal(err)
		}
		return got || b.depth(poison) == 1
	})
	return d, got
}

// A poison queue keeps its messages for a human however often they are
// looked at and put back: on RabbitMQ 4, whose quorum queues drop a message
// after 20 returns unless told otherwise, warren declares poison queues
// without a limit.
func TestPoisonQueueKeepsAMessageReturnedManyTimes(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "patient", Bindings: []string{"item.#"}, Backoff: testLadder})
	spec := b.consumer(0)
	ch := b.confirmChannel(t)
	defer ch.Close()
	dc, err := ch.PublishWithDeferredConfirm(spec.DeadExchange, spec.Name, true, false, amqp.Publishing{Body: []byte(`{}`), DeliveryMode: amqp.Persistent})
	if err != nil || !dc.Wait() {
		t.Fatalf("publish to poison: %v", err)
	}
	// Each return reaches the queue before the next get on the same channel,
	// so an empty get means the message is gone.
	const looks = 30
	for i := range looks {
		d, ok, err := ch.Get(spec.PoisonQueue, false)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("the poison queue dropped its message after %d returns", i)
		}
		if err := d.Nack(false, true); err != nil {
			t.Fatalf("return %d: %v", i+1, err)
		}
	}
	if d := b.get(spec.PoisonQueue); string(d.Body) != `{}` {
		t.Errorf("poison holds %q after %d returns, want the message published", d.Body, looks)
	}
}
