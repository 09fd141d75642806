package poison

import (
	"encoding/json"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// Headers a replay writes on the copy it sends back to the work queue.
const (
	// HeaderReplayedAt records when the message was last replayed (RFC 3339,
	// UTC).
	HeaderReplayedAt = "x-replayed-at"
	// HeaderReplayCount counts the replays of the message, as an integer; a
	// message replayed again and again is a bug that replay does not fix.
	HeaderReplayCount = "x-replay-count"
	// HeaderLastFailure and HeaderLastFailedAt keep the failure that put the
	// message in the poison queue, since the copy must not carry x-failure
	// (the wire contract reserves it for poison copies).
	HeaderLastFailure  = "x-last-failure"
	HeaderLastFailedAt = "x-last-failed-at"
)

// Message is one message of a poison queue, as a person reads it.
type Message struct {
	ID         string // the producer-made id (message_id, else the envelope's id); the same across retries and replays
	RoutingKey string // the fact's routing key as first published
	Exchange   string // the exchange the fact was first published to
	// Failure says why the message is here: the consumer's last error
	// (x-failure), or, for a message the broker dead-lettered itself (over
	// the delivery limit, rejected), what the broker recorded.
	Failure  string
	Attempts int       // failed handler attempts (x-attempts); 0 when the broker dead-lettered the message
	FailedAt time.Time // when the message was poisoned; zero when nobody recorded it
	Replays  int       // how often the message was replayed before (x-replay-count)
	// Version is the version of the fact's schema the message was written
	// under (x-fact-version); 0 when the message does not say, which a
	// consumer reads as version 1.
	Version int

	Body []byte // the JSON envelope, as published
	// Headers are every header, as the poison queue holds them, producer
	// credentials (an authorization header) included: print or export
	// them through [ShownHeaders], as [ExportLine] does.
	Headers amqp.Table

	key string // the routing key the message has in the queue
}

// ShownHeaders returns a copy of a poison message's headers to print or
// export, as every reading of a lane shows them (warren replay --list
// --format json, warren poison export, warren console): the value of every
// header that carries a credential masked, as [secret.Headers] does, and
// without a quorum queue's x-delivery-count. That one counts the poison
// copy's returns: each reading of the lane (this one too) adds one, so it
// says how often the lane was read, not how often the fact failed
// (x-attempts), and it would differ between two readings. h is not
// changed.
func ShownHeaders(h amqp.Table) map[string]any {
	out := secret.Headers(h)
	delete(out, "x-delivery-count")
	return out
}

// read describes a delivery from consumer c's poison queue.
func read(d amqp.Delivery, c topology.Consumer) Message {
	m := Message{
		ID:         d.MessageId,
		RoutingKey: d.RoutingKey,
		Exchange:   d.Exchange,
		Attempts:   amqpmsg.HeaderInt(d.Headers, runtime.HeaderAttempts),
		Replays:    amqpmsg.HeaderInt(d.Headers, HeaderReplayCount),
		Version:    amqpmsg.HeaderInt(d.Headers, runtime.HeaderFactVersion),
		Body:       d.Body,
		Headers:    d.Headers,
		key:        d.RoutingKey,
	}
	if m.ID == "" {
		var env struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(d.Body, &env) == nil {
			m.ID = env.ID
		}
	}
	if at, ok := d.Headers[runtime.HeaderFailedAt].(string); ok {
		m.FailedAt, _ = time.Parse(time.RFC3339, at)
	}
	death, hasDeath := deathIn(d.Headers, c.Queue)
	if rk, ok := d.Headers[runtime.HeaderOriginalRoutingKey].(string); ok {
		// A poison copy made by the runtime, or a retry copy that the broker
		// later dead-lettered: the copy recorded where the fact started.
		m.RoutingKey = rk
		m.Exchange, _ = d.Headers[runtime.HeaderOriginalExchange].(string)
	} else if hasDeath {
		// Dead-lettered by the broker straight from the work queue: the
		// routing key became the consumer's name, and x-death keeps the one
		// the fact was published with.
		if len(death.keys) > 0 {
			m.RoutingKey = death.keys[0]
		}
		m.Exchange = death.exchange
	}
	if f, ok := d.Headers[runtime.HeaderFailure].(string); ok {
		m.Failure = f
	} else if hasDeath {
		m.Failure = death.explain()
		if m.FailedAt.IsZero() {
			m.FailedAt = death.at
		}
	}
	return m
}

// death is the x-death entry the broker wrote when it dead-lettered a
// message from one queue.
type death struct {
	queue, reason, exchange string
	keys                    []string
	count                   int
	at                      time.Time
}

// deathIn returns the x-death entry for queue.
func deathIn(h amqp.Table, queue string) (death, bool) {
	entries, _ := h["x-death"].([]any)
	for _, e := range entries {
		t, ok := e.(amqp.Table)
		if !ok {
			continue
		}
		if q, _ := t["queue"].(string); q != queue {
			continue
		}
		d := death{queue: queue, count: amqpmsg.HeaderInt(t, "count")}
		d.reason, _ = t["reason"].(string)
		d.exchange, _ = t["exchange"].(string)
		d.at, _ = t["time"].(time.Time)
		keys, _ := t["routing-keys"].([]any)
		for _, k := range keys {
			if s, ok := k.(string); ok {
				d.keys = append(d.keys, s)
			}
		}
		return d, true
	}
	return death{}, false
}

func (d death) explain() string {
	switch d.reason {
	case "delivery_limit":
		return fmt.Sprintf("the broker dead-lettered it from queue %q: delivered too often without an ack (delivery limit); the consumer crashed or lost its connection while handling it", d.queue)
	case "rejected":
		return fmt.Sprintf("the broker dead-lettered it from queue %q: a consumer rejected it without requeueing", d.queue)
	case "":
		return fmt.Sprintf("the broker dead-lettered it from queue %q", d.queue)
	}
	return fmt.Sprintf("the broker dead-lettered it from queue %q: %s", d.queue, d.reason)
}

// replayCopy is the message to send back to the work queue: the same body
// and properties, the attempt count reset, the failure kept under other
// names, and the routing key recorded so the consumer routes it as the fact
// it is (a replay arrives through the default exchange, whose routing key
// is the queue name).
func replayCopy(d amqp.Delivery, m Message, now time.Time) amqp.Publishing {
	h := amqpmsg.CloneHeaders(d.Headers, 4)
	for _, k := range []string{
		runtime.HeaderAttempts, runtime.HeaderFailure, runtime.HeaderFailedAt, runtime.HeaderConsumer,
		// Set by quorum queues on redelivery; it describes the poison queue's
		// copy, not the new one.
		"x-delivery-count",
	} {
		delete(h, k)
	}
	h[runtime.HeaderOriginalRoutingKey] = m.RoutingKey
	h[runtime.HeaderOriginalExchange] = m.Exchange
	h[HeaderReplayedAt] = now.UTC().Format(time.RFC3339)
	h[HeaderReplayCount] = int64(m.Replays + 1)
	if m.Failure != "" {
		h[HeaderLastFailure] = m.Failure
	}
	if !m.FailedAt.IsZero() {
		h[HeaderLastFailedAt] = m.FailedAt.UTC().Format(time.RFC3339)
	}
	return amqpmsg.Republish(d, h)
}
