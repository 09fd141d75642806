// Package declared keeps, on the broker itself, a record of the queues and
// bindings `warren declare` declared for each consumer, so that a later
// declare can tell which warren-owned queues the schema directory no
// longer has: delay queues of an old retry ladder, the queues of a removed
// consumer, a binding removed from the manifest. RabbitMQ never removes
// them by itself, and AMQP cannot list queues, so the record is what makes
// them findable without the management plugin.
//
// The record is one persistent JSON message in a durable queue of its own,
// "warren.declared.<events exchange>", limited to one message.
package declared

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// Record is what was declared, by consumer name.
type Record struct {
	Consumers map[string]Entry `json:"consumers"`
}

// Entry is what was declared for one consumer.
type Entry struct {
	Queues   []string           `json:"queues"`
	Bindings []topology.Binding `json:"bindings"`
}

// QueueName is the name of the queue that holds the record of the topology
// whose events exchange is events.
func QueueName(events string) string {
	name := "warren.declared." + events
	if len(name) > 255 {
		sum := sha256.Sum256([]byte(events))
		name = "warren.declared." + hex.EncodeToString(sum[:16])
	}
	return name
}

// Ledger is the record as read, held until it is replaced.
type Ledger struct {
	ch     *amqp.Channel
	queue  string
	held   *amqp.Delivery // the message read; acked once its successor is confirmed
	Record Record
}

// Open declares the record queue of events if needed and reads the record,
// empty when nothing was recorded yet. ch is used for the ledger alone.
func Open(ch *amqp.Channel, events string) (*Ledger, error) {
	l := &Ledger{ch: ch, queue: QueueName(events), Record: Record{Consumers: map[string]Entry{}}}
	if _, err := ch.QueueDeclare(l.queue, true, false, false, false, amqp.Table{"x-max-length": int64(1)}); err != nil {
		return nil, fmt.Errorf("declare the record queue %q: %w", l.queue, err)
	}
	d, ok, err := ch.Get(l.queue, false)
	if err != nil {
		return nil, fmt.Errorf("read the record in %q: %w", l.queue, err)
	}
	if !ok {
		return l, nil
	}
	l.held = &d
	if err := json.Unmarshal(d.Body, &l.Record); err != nil {
		return nil, fmt.Errorf("read the record in %q: %w", l.queue, err)
	}
	if l.Record.Consumers == nil {
		l.Record.Consumers = map[string]Entry{}
	}
	return l, nil
}

// Save publishes rec as the new record, waits for the broker's confirm and
// only then acks the old one: a failure leaves the old record in place.
func (l *Ledger) Save(ctx context.Context, rec Record) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := l.ch.Confirm(false); err != nil {
		return fmt.Errorf("save the record: %w", err)
	}
	dc, err := l.ch.PublishWithDeferredConfirmWithContext(ctx, "", l.queue, true, false, amqp.Publishing{
		ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: body,
	})
	if err != nil {
		return fmt.Errorf("save the record: %w", err)
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil || !ok {
		return errors.Join(errors.New("save the record: the broker did not confirm it"), err)
	}
	if l.held != nil {
		if err := l.held.Ack(false); err != nil {
			return fmt.Errorf("save the record: drop the old one: %w", err)
		}
	}
	return nil
}

// Of returns what t declares for each consumer.
func Of(t topology.Topology) Record {
	rec := Record{Consumers: map[string]Entry{}}
	consumerOf := map[string]string{} // queue -> consumer
	for _, q := range t.Queues {
		e := rec.Consumers[q.Consumer]
		e.Queues = append(e.Queues, q.Name)
		rec.Consumers[q.Consumer] = e
		consumerOf[q.Name] = q.Consumer
	}
	for _, c := range t.Consumers {
		if c.Ordered() {
			consumerOf[c.ShardExchange] = c.Name // its events-to-hash bindings
		}
	}
	for _, b := range t.Bindings {
		c := consumerOf[b.Queue]
		if b.ToExchange != "" {
			c = consumerOf[b.ToExchange]
		}
		e := rec.Consumers[c]
		e.Bindings = append(e.Bindings, b)
		rec.Consumers[c] = e
	}
	return rec
}

// Orphans lists what old recorded for the consumers in scope (every
// consumer of old when scope is nil) that now does not declare: queues,
// bindings of queues that still exist in now, and ordered consumers'
// bindings of the events exchange to their hash exchange.
func Orphans(old, now Record, scope []string) (queues map[string][]string, bindings map[string][]topology.Binding) {
	queues, bindings = map[string][]string{}, map[string][]topology.Binding{}
	for name, was := range old.Consumers {
		if scope != nil && !slices.Contains(scope, name) {
			continue
		}
		is := now.Consumers[name]
		for _, q := range was.Queues {
			if !slices.Contains(is.Queues, q) {
				queues[name] = append(queues[name], q)
			}
		}
		for _, b := range was.Bindings {
			// An ordered consumer's exchange binding has no queue: it is
			// orphaned when the consumer no longer declares it.
			live := slices.Contains(is.Queues, b.Queue) || b.ToExchange != ""
			if live && !slices.Contains(is.Bindings, b) {
				bindings[name] = append(bindings[name], b)
			}
		}
	}
	return queues, bindings
}
