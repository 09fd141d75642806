package runtime

import (
	"context"
	"sync/atomic"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// A message whose handler kills the consumer before it can ack (simulated
// by closing the channel without an ack) is delivered DeliveryLimit more
// times and then dead-lettered into the poison queue, instead of looping
// forever. It uses channels of its own, so it disturbs nobody.
func TestMessageThatKillsItsConsumerEndsInPoison(t *testing.T) {
	const limit = 3
	b := newBroker(t, topology.ConsumerSpec{Name: "crashy", Bindings: []string{"item.#"}, Backoff: testLadder, DeliveryLimit: limit})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	pub, _ := NewPublisher(conn, b.events())
	id := mustPublish(t, pub, itemFact("item.added"), item{SKU: "fatal"})

	deliveries := 0
	testenv.Eventually(t, "the message in the poison queue", func() bool {
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

// The same through the runtime: a handler that takes the consumer's
// connection down with it (as a crashing process would) sees its message
// DeliveryLimit more times, then never again; the message waits in poison
// and the consumer goes on with other work.
func TestHandlerThatKillsTheConnectionEndsInPoison(t *testing.T) {
	const limit = 2
	b := newBroker(t, topology.ConsumerSpec{Name: "killer", Bindings: []string{"item.#"}, Backoff: testLadder, DeliveryLimit: limit})
	p := newProxy(t, b.url, nil)
	conn := b.dial(Config{URLs: []string{p.url(b.url, "amqp")}})
	spec := b.consumer(0)
	f := itemFact("item.added")
	var fatal, fine atomic.Int32
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if v.SKU != "fatal" {
			fine.Add(1)
			return nil
		}
		fatal.Add(1)
		p.cut() // the process dies: no ack, no retry copy
		<-ctx.Done()
		return ctx.Err()
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	id := mustPublish(t, pub, f, item{SKU: "fatal"})

	d := b.get(spec.PoisonQueue)
	if d.MessageId != id {
		t.Errorf("poison holds %s, want %s", d.MessageId, id)
	}
	if n := fatal.Load(); n != limit+1 {
		t.Errorf("the fatal message was handled %d times, want %d", n, limit+1)
	}
	if n := conn.Counts(spec.Name).Get(Retried); n != 0 {
		t.Errorf("%d retry copies made by dying handlers, want none", n)
	}
	mustPublish(t, pub, f, item{SKU: "fine"})
	testenv.Eventually(t, "the consumer handling other facts", func() bool { return fine.Load() == 1 })
}
