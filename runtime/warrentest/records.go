package warrentest

import (
	"encoding/json"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/membroker"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// Call is one handler call the runtime made on the bus.
type Call struct {
	Consumer    string // the consumer's or responder's name
	MessageID   string
	RoutingKey  string // the fact's own routing key, also on retries
	Attempt     int    // 1 for the first
	Redelivered bool   // the broker delivered this copy before, without an ack
	// Err is what the handler returned (or its panic, as an error); nil
	// when it handled the fact.
	Err error
	// Duplicate is set when the idempotency guard found the fact handled
	// before and the handler was not called.
	Duplicate bool
	// Deferred is set when Err is a deferral (runtime.Defer) that the
	// runtime honoured: the fact comes back later, no attempt spent. A
	// deferral the runtime refused (no delay levels, maxDeferrals used up)
	// is a failure, and Deferred is false.
	Deferred bool
	// Deferrals is how often the fact was deferred before this call.
	Deferrals int
	Body      []byte // the message body: the fact's envelope
}

// Message is one message the bus routed.
type Message struct {
	Exchange   string
	RoutingKey string // the fact's own routing key, also on retry and poison copies
	MessageID  string
	Headers    amqp.Table
	Body       []byte
	Queues     []string  // where the bus put it
	At         time.Time // when it was routed
	// Attempts is the x-attempts header: the failed attempts before the
	// message was sent where it went.
	Attempts int
	// Failure says why a poisoned message was given up on: the runtime's
	// x-failure header, or the broker's dead-letter reason.
	Failure string
}

// Payload is the fact inside the message's envelope, as JSON.
func (m Message) Payload() json.RawMessage { return payloadOf(m.Body) }

func payloadOf(body []byte) json.RawMessage {
	var env runtime.Envelope
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	return env.Payload
}

func messageOf(r membroker.Record) Message {
	m := Message{
		Exchange: r.Exchange, RoutingKey: r.RoutingKey, MessageID: r.Msg.MessageId,
		Headers: r.Msg.Headers, Body: r.Msg.Body, Queues: r.Queues, At: r.At,
		Attempts: amqpmsg.HeaderInt(r.Msg.Headers, runtime.HeaderAttempts),
	}
	if orig, ok := r.Msg.Headers[runtime.HeaderOriginalRoutingKey].(string); ok {
		m.RoutingKey = orig
	} else if r.DeadLettered != "" {
		if deaths, ok := r.Msg.Headers["x-death"].([]any); ok && len(deaths) > 0 {
			if t, ok := deaths[len(deaths)-1].(amqp.Table); ok {
				if keys, ok := t["routing-keys"].([]any); ok && len(keys) > 0 {
					m.RoutingKey, _ = keys[0].(string)
				}
			}
		}
	}
	if f, ok := r.Msg.Headers[runtime.HeaderFailure].(string); ok {
		m.Failure = f
	} else if r.DeadLettered != "" {
		m.Failure = "dead-lettered by the broker from " + r.DeadLettered + ": " + r.Reason
	}
	return m
}

// Published returns the facts published to the events exchange so far,
// in publish order: by the test and by the code under test, excluding the
// runtime's retry, deferral and poison copies. A fact published later
// (runtime.Publisher.In or At) is listed when it was published, with its
// own routing key, Exchange the delay level it entered and header x-due-at.
func (b *Bus) Published() []Message {
	b.settle()
	var out []Message
	events := b.eventsExchange()
	levels := map[string]bool{} // empty without delay levels
	for k := range b.top.Delay.Levels {
		levels[topology.DelayExchange(events, k)] = true
	}
	for _, r := range b.broker.Journal(1) {
		_, deferred := r.Msg.Headers[runtime.HeaderDeferrals] // a deferral's copy, not a new fact
		if r.DeadLettered == "" && (r.Exchange == events || levels[r.Exchange] && !deferred) && !r.Nacked {
			out = append(out, messageOf(r))
		}
	}
	return out
}

// Calls returns every handler call of consumer (or responder) so far, in
// the order they returned. It fails the test if the topology has no such
// consumer.
func (b *Bus) Calls(consumer string) []Call {
	b.t.Helper()
	b.mustKnow(consumer)
	b.settle()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Call
	for _, c := range b.calls {
		if c.Consumer == consumer {
			out = append(out, c)
		}
	}
	return out
}

// Handled returns consumer's calls that handled their fact.
func (b *Bus) Handled(consumer string) []Call {
	b.t.Helper()
	return filter(b.Calls(consumer), func(c Call) bool { return c.Err == nil && !c.Duplicate })
}

// Duplicates returns the deliveries of consumer that the idempotency
// guard skipped, the fact having been handled before.
func (b *Bus) Duplicates(consumer string) []Call {
	b.t.Helper()
	return filter(b.Calls(consumer), func(c Call) bool { return c.Duplicate })
}

// Failed returns consumer's calls whose handler returned an error, other
// than a deferral the runtime honoured (see [Bus.Deferred]).
func (b *Bus) Failed(consumer string) []Call {
	b.t.Helper()
	return filter(b.Calls(consumer), func(c Call) bool { return c.Err != nil && !c.Deferred })
}

// Deferred returns consumer's calls that deferred their fact
// (runtime.Defer): it comes back later, or waits to, without spending an
// attempt. errors.As on Call.Err finds the *runtime.DeferredError and its
// due time.
func (b *Bus) Deferred(consumer string) []Call {
	b.t.Helper()
	return filter(b.Calls(consumer), func(c Call) bool { return c.Deferred })
}

// Retried returns consumer's failed calls whose fact was tried again or
// waits to be: every failure that did not send the fact to poison.
func (b *Bus) Retried(consumer string) []Call {
	b.t.Helper()
	poisoned := map[string]int{} // message id -> attempts when poisoned
	for _, m := range b.Poisoned(consumer) {
		poisoned[m.MessageID] = m.Attempts
	}
	return filter(b.Failed(consumer), func(c Call) bool {
		at, ok := poisoned[c.MessageID]
		return !ok || c.Attempt != at
	})
}

// Poisoned returns the messages that reached consumer's poison queue, in
// arrival order: given up on by the runtime (with the x-failure header)
// or dead-lettered by the broker.
func (b *Bus) Poisoned(consumer string) []Message {
	b.t.Helper()
	c := b.mustKnow(consumer)
	b.settle()
	var out []Message
	for _, r := range b.broker.Journal(1) {
		for _, q := range r.Queues {
			if q == c.PoisonQueue {
				out = append(out, messageOf(r))
			}
		}
	}
	return out
}

// Replies returns the replies responders sent, in order.
func (b *Bus) Replies() []Message {
	b.settle()
	var out []Message
	for _, r := range b.broker.Journal(1) {
		if r.Exchange == "" && strings.HasPrefix(r.RoutingKey, runtime.DirectReplyTo+".") {
			out = append(out, messageOf(r))
		}
	}
	return out
}

// Waiting returns the messages waiting in a queue of the topology (a work
// queue, a delay queue, a shard or a poison queue), without taking them.
func (b *Bus) Waiting(queue string) []Message {
	b.t.Helper()
	if _, ok := b.broker.Queue(queue); !ok {
		b.t.Fatalf("warrentest: no queue %q on the bus; the topology declares %s", queue, b.queueNames())
	}
	var out []Message
	for _, d := range b.broker.Messages(queue) {
		out = append(out, messageOf(membroker.Record{Exchange: d.Exchange, RoutingKey: d.RoutingKey,
			Msg: amqp.Publishing{Headers: d.Headers, Body: d.Body, MessageId: d.MessageId}, Queues: []string{queue}}))
	}
	return out
}

func (b *Bus) queueNames() string {
	var names []string
	for _, q := range b.broker.Queues() {
		names = append(names, q.Name)
	}
	return strings.Join(names, ", ")
}

// mustKnow returns the topology's consumer or responder named name, or
// fails the test naming the ones there are.
func (b *Bus) mustKnow(name string) topology.Consumer {
	b.t.Helper()
	var names []string
	for _, c := range b.top.Consumers {
		if c.Name == name {
			return c
		}
		names = append(names, c.Name)
	}
	for _, r := range b.top.Responders {
		if r.Name == name {
			return topology.Consumer{Name: r.Name}
		}
		names = append(names, r.Name)
	}
	b.t.Fatalf("warrentest: no consumer or responder %q in the topology; it has %s", name, strings.Join(names, ", "))
	return topology.Consumer{}
}

func filter[T any](in []T, keep func(T) bool) []T {
	var out []T
	for _, v := range in {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}
