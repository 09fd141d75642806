package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// Publishing to a routing key nothing is bound to returns
// an error, unless the publisher allows it.
func TestPublishUnroutableIsAnError(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "bound", Bindings: []string{"item.added"}, MaxAttempts: 1})
	conn := b.dial(Config{})
	ctx := context.Background()

	pub, _ := NewPublisher(conn, b.events())
	_, err := pub.Publish(ctx, itemFact("item.nobody"), item{SKU: "a"})
	var ue *UnroutableError
	if !errors.Is(err, ErrUnroutable) || !errors.As(err, &ue) || ue.RoutingKey != "item.nobody" || ue.Exchange != b.events() {
		t.Fatalf("Publish to an unbound key: %v, want an UnroutableError for item.nobody", err)
	}

	lenient, _ := NewPublisher(conn, b.events(), AllowUnroutable())
	if _, err := lenient.Publish(ctx, itemFact("item.nobody"), item{SKU: "a"}); err != nil {
		t.Errorf("AllowUnroutable: %v", err)
	}
	// The same publisher still publishes routable facts.
	if _, err := pub.Publish(ctx, itemFact("item.added"), item{SKU: "a"}); err != nil {
		t.Errorf("routable publish after an unroutable one: %v", err)
	}
}

// Many concurrent callers on one publisher, half of them publishing to a key
// nothing is bound to: each learns its own outcome.
func TestConcurrentPublishesGetTheirOwnConfirms(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "many", Bindings: []string{"item.added"}, MaxAttempts: 1})
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	const workers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := "item.added"
				if (w+i)%2 == 1 {
					key = "item.lost"
				}
				_, err := pub.Publish(context.Background(), itemFact(key), item{SKU: "s", N: i})
				switch {
				case key == "item.added" && err != nil:
					errs <- err
				case key == "item.lost" && !errors.Is(err, ErrUnroutable):
					errs <- errors.New("unroutable publish returned " + errString(err))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	testenv.Eventually(t, "every routable fact in the queue", func() bool { return b.depth(b.consumer(0).Queue) == workers*each/2 })
}

// The envelope and properties of the wire contract.
func TestPublishedMessageFollowsTheContract(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "wire", Bindings: []string{"item.added"}, MaxAttempts: 1})
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	before := time.Now()
	id := mustPublish(t, pub, itemFact("item.added"), item{SKU: "a", N: 3})

	d := b.get(b.consumer(0).Queue)
	if u, err := uuid.Parse(id); err != nil || u.Version() != 7 {
		t.Errorf("message id %q is not a UUIDv7 (%v)", id, err)
	}
	if d.MessageId != id || d.ContentType != "application/json" || d.DeliveryMode != amqp.Persistent || d.Type != "item.added" {
		t.Errorf("properties: message_id %q content_type %q delivery_mode %d type %q", d.MessageId, d.ContentType, d.DeliveryMode, d.Type)
	}
	if v := amqpmsg.HeaderInt(d.Headers, HeaderFactVersion); v != 2 {
		t.Errorf("x-fact-version = %d, want 2", v)
	}
	if d.Timestamp.IsZero() || d.Timestamp.Before(before.Truncate(time.Second)) {
		t.Errorf("timestamp %v, want the publish time", d.Timestamp)
	}
	var env struct {
		ID         string          `json:"id"`
		OccurredAt string          `json:"occurred_at"`
		Payload    json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(d.Body, &env); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, env.OccurredAt); err != nil || env.ID != id || string(env.Payload) != `{"sku":"a","n":3}` {
		t.Errorf("envelope %s", d.Body)
	}
}

// A payload that breaks its schema is never sent.
func TestPublishValidatesThePayload(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "valid", Bindings: []string{"item.added"}, MaxAttempts: 1})
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	_, err := pub.Publish(context.Background(), itemFact("item.added"), item{SKU: ""})
	if err == nil || !strings.Contains(err.Error(), "does not match its schema: /sku") {
		t.Fatalf("Publish of an invalid payload: %v", err)
	}
	if n := b.depth(b.consumer(0).Queue); n != 0 {
		t.Errorf("queue holds %d messages after a rejected publish", n)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// A publisher whose exchange does not exist gets the broker's refusal at
// once, not an endless republish; a closed publisher refuses to publish.
func TestPublishToAMissingExchangeFails(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "noex", Bindings: []string{"item.added"}, MaxAttempts: 1})
	conn := b.dial(Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pub, _ := NewPublisher(conn, b.events()+"-missing")
	_, err := pub.Publish(ctx, itemFact("item.added"), item{SKU: "a"})
	if err == nil || !strings.Contains(err.Error(), "NOT_FOUND") || ctx.Err() != nil {
		t.Errorf("publish to a missing exchange: %v", err)
	}
	good, _ := NewPublisher(conn, b.events())
	mustPublish(t, good, itemFact("item.added"), item{SKU: "a"})
	if err := good.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := good.Publish(ctx, itemFact("item.added"), item{SKU: "a"}); !errors.Is(err, ErrClosed) {
		t.Errorf("publish after Close: %v, want ErrClosed", err)
	}
}
