package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// The poison hook hears of every fact put in the poison queue, with the
// poison copy's failure and attempts, and of nothing else; a hook that
// panics does not stop the consumer.
func TestPoisonHookHearsOfEveryPoisonedFact(t *testing.T) {
	b := newBrokerAt(t, testenv.VHost(t, "poisonhook"), topology.ConsumerSpec{Name: "hooked", Bindings: []string{"item.#"}, Backoff: testLadder[:1]})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	f := itemFact("item.added")
	events := make(chan PoisonEvent, 10)
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		switch v.SKU {
		case "ok":
			return nil
		case "flaky":
			return errors.New("warehouse 3 timed out") // retried, then poisoned
		}
		return Permanent(fmt.Errorf("sku %q retired", v.SKU))
	})}, WithPoisonHook(func(e PoisonEvent) {
		events <- e
		if e.RoutingKey == "item.added" && len(events) == 1 {
			panic("a hook that panics")
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	ids := map[string]string{}
	for _, sku := range []string{"a", "ok", "flaky", "b"} {
		ids[mustPublish(t, pub, f, item{SKU: sku})] = sku
	}
	got := map[string]PoisonEvent{}
	for len(got) < 3 {
		e := <-events
		got[e.MessageID] = e
	}
	for id, sku := range ids {
		e, ok := got[id]
		if sku == "ok" {
			if ok {
				t.Errorf("the hook heard of %s, which was handled", id)
			}
			continue
		}
		if !ok || e.Consumer != spec.Name || e.RoutingKey != "item.added" || e.At.IsZero() || e.Headers[HeaderFailure] != e.Failure {
			t.Errorf("%s (%s): event %+v", id, sku, e)
		}
		if want, attempts := fmt.Sprintf("sku %q retired", sku), 1; sku != "flaky" && (e.Failure != want || e.Attempts != attempts) {
			t.Errorf("%s: failure %q after %d attempts, want %q after %d", sku, e.Failure, e.Attempts, want, attempts)
		}
		if sku == "flaky" && (e.Failure != "warehouse 3 timed out" || e.Attempts != 2) {
			t.Errorf("flaky: failure %q after %d attempts, want the timeout after 2", e.Failure, e.Attempts)
		}
	}
	if n := conn.Counts(spec.Name).Get(Poisoned); n != 3 {
		t.Errorf("poisoned %d, want 3", n)
	}
}

// A responder has no poison queue, so it refuses the hook; it reads no
// stream, so it refuses a stream's reading.
func TestResponderRefusesThePoisonHook(t *testing.T) {
	_, _, responder := kindsTopology(t)
	conn, err := Dial(context.Background(), Config{URLs: []string{testenv.AMQPURL(t)}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_, err = NewResponder(conn, responder, []Answer{Respond(quoteRequest("pricing.quote"), func(context.Context, Delivery, quote) (quoteReply, error) { return quoteReply{}, nil })},
		WithPoisonHook(func(PoisonEvent) {}))
	if err == nil || !strings.Contains(err.Error(), "WithPoisonHook does not apply: a responder has no poison queue") {
		t.Errorf("NewResponder with a poison hook: %v", err)
	}
	// Nor does it read a stream.
	_, err = NewResponder(conn, responder, []Answer{Respond(quoteRequest("pricing.quote"), func(context.Context, Delivery, quote) (quoteReply, error) { return quoteReply{}, nil })},
		WithStreamReadOverAMQP())
	if err == nil || !strings.Contains(err.Error(), "WithStreamReadOverAMQP does not apply: a responder reads a queue, not a stream") {
		t.Errorf("NewResponder reading a stream over AMQP: %v", err)
	}
}
