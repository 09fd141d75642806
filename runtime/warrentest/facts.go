package warrentest

import (
	"encoding/json"

	amqp "github.com/rabbitmq/amqp091-go"

	"reflect"
	"sort"
	"strings"

	"github.com/warrenbus/warren/runtime"
)

// factIndex knows the Go type each registered fact decodes into.
type factIndex struct {
	byType map[reflect.Type]runtime.Fact
}

// Register tells the bus that facts of f decode into T, so that
// [Published] can find and decode them. A generated kit registers every
// fact of its package.
func Register[T any](b *Bus, f runtime.Fact) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.facts.byType == nil {
		b.facts.byType = map[reflect.Type]runtime.Fact{}
	}
	b.facts.byType[reflect.TypeFor[T]()] = f
}

// factFor returns the fact T was registered with, or fails the test
// naming the types the bus knows.
func factFor[T any](b *Bus) runtime.Fact {
	b.t.Helper()
	t := reflect.TypeFor[T]()
	b.mu.Lock()
	f, ok := b.facts.byType[t]
	var known []string
	for k := range b.facts.byType {
		known = append(known, k.String())
	}
	b.mu.Unlock()
	if !ok {
		sort.Strings(known)
		if len(known) == 0 {
			known = []string{"none (use the generated kit, or Register)"}
		}
		b.t.Fatalf("warrentest: %s is not a fact type registered with the bus; it knows %s", t, strings.Join(known, ", "))
	}
	return f
}

// Publish publishes v as a fact of f on the topology's events exchange,
// as a service's publisher does (validated, enveloped, confirmed), and
// returns its message id. Any error fails the test.
func Publish[T any](b *Bus, f runtime.Fact, v T) string {
	b.t.Helper()
	id, err := TryPublish(b, f, v)
	if err != nil {
		if strings.HasPrefix(err.Error(), "publish "+f.RoutingKey+":") {
			b.t.Fatalf("warrentest: %v", err) // the publisher's own error names the fact
		}
		b.t.Fatalf("warrentest: publish %s: %v", f.RoutingKey, err)
	}
	return id
}

// TryPublish is Publish that returns the error (a validation error, an
// unroutable fact, a refusal by a full queue) instead of failing the
// test.
func TryPublish[T any](b *Bus, f runtime.Fact, v T) (string, error) {
	b.t.Helper()
	return b.publisher().Publish(b.ctx, f, v)
}

// PublishVersions publishes one fact in several versions at once, as a
// publisher does during a dual publish window
// (runtime.Publisher.PublishVersions): one message that carries every
// version, so that each consumer handles the newest version it reads. It
// returns the message id; any error fails the test. A generated kit's publish
// method does this for a fact warren.json publishes in several versions.
func PublishVersions(b *Bus, copies ...runtime.Copy) string {
	b.t.Helper()
	id, err := TryPublishVersions(b, copies...)
	if err != nil {
		b.t.Fatalf("warrentest: publish versions: %v", err)
	}
	return id
}

// TryPublishVersions is PublishVersions that returns the error instead of
// failing the test.
func TryPublishVersions(b *Bus, copies ...runtime.Copy) (string, error) {
	b.t.Helper()
	return b.publisher().PublishVersions(b.ctx, copies...)
}

// Published returns the facts of type T published on the events exchange
// so far, decoded by their generated code, in publish order. T must be
// registered (the generated kit does it). Of a fact published in several
// versions, the version of T is returned, and the fact is left out when
// it was not published in that version.
func Published[T any](b *Bus) []T {
	b.t.Helper()
	f := factFor[T](b)
	var out []T
	for _, m := range b.Published() {
		if m.RoutingKey != f.RoutingKey {
			continue
		}
		body, ok := bodyOf(m, f)
		if !ok {
			continue
		}
		var v T
		if err := json.Unmarshal(payloadOf(body), &v); err != nil {
			b.t.Fatalf("warrentest: message %s (%s) does not decode as %T: %v", m.MessageID, m.RoutingKey, v, err)
		}
		out = append(out, v)
	}
	return out
}

// bodyOf returns the envelope of m in f's version: of a fact published in
// several versions, the one of f's version if it was published in it; of
// any other, its body.
func bodyOf(m Message, f runtime.Fact) ([]byte, bool) {
	if _, several := m.Headers[runtime.HeaderFactVersions]; !several {
		return m.Body, true
	}
	return runtime.BodyOfVersion(m.Headers, m.Body, max(f.Version, 1))
}

// describe renders a fact's body for a failure message: its payload, cut
// to a readable length.
func describe(body []byte) string {
	p := string(payloadOf(body))
	if p == "" {
		p = string(body)
	}
	if len(p) > 200 {
		p = p[:200] + "…"
	}
	return p
}

// PublishRaw publishes payload as a fact with routing key, in a fresh
// envelope, bypassing validation: what a producer that breaks the contract
// sends. It returns the message id. The consumer's generated code should
// refuse it; this is how a test shows that it does.
func (b *Bus) PublishRaw(routingKey string, payload json.RawMessage) string {
	b.t.Helper()
	env, err := runtime.NewEnvelope(payload)
	if err != nil {
		b.t.Fatalf("warrentest: PublishRaw: %v", err)
	}
	body, err := json.Marshal(env)
	if err != nil {
		b.t.Fatalf("warrentest: PublishRaw: %v", err)
	}
	b.publishDirect(b.eventsExchange(), routingKey, amqp.Publishing{
		ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: env.ID, Timestamp: env.OccurredAt, Body: body,
	})
	return env.ID
}

// PublishAgain publishes the message with id once more, exactly as it was
// first published: what a producer does when it never heard the broker's
// confirm, and what an idempotency guard must absorb.
func (b *Bus) PublishAgain(messageID string) {
	b.t.Helper()
	for _, m := range b.Published() {
		if m.MessageID == messageID {
			b.publishDirect(m.Exchange, m.RoutingKey, amqp.Publishing{
				ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: m.MessageID,
				Headers: m.Headers, Body: m.Body,
			})
			return
		}
	}
	b.t.Fatalf("warrentest: PublishAgain: no message %s was published on the bus", messageID)
}

// publishDirect publishes on a channel of its own, waiting for the
// confirm.
func (b *Bus) publishDirect(exchange, key string, msg amqp.Publishing) {
	b.t.Helper()
	conn, err := b.broker.Dial()
	if err != nil {
		b.t.Fatalf("warrentest: publish: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.t.Fatalf("warrentest: publish: %v", err)
	}
	if err := ch.Confirm(false); err != nil {
		b.t.Fatalf("warrentest: publish: %v", err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	if err := ch.PublishWithContext(b.ctx, exchange, key, true, false, msg); err != nil {
		b.t.Fatalf("warrentest: publish %s: %v", key, err)
	}
	c := <-confirms
	// The bus sends a return before its confirm, as RabbitMQ does.
	select {
	case r := <-returns:
		b.t.Fatalf("warrentest: publish %s: unroutable (%s): no queue is bound to it", key, r.ReplyText)
	default:
	}
	if !c.Ack {
		b.t.Fatalf("warrentest: publish %s: refused by a full queue", key)
	}
}
