package runtime

import "time"

// Delivery is what a handler learns about the message that carried a fact,
// besides the fact itself.
type Delivery struct {
	MessageID   string    // the producer-made id; stable across retries and redeliveries
	OccurredAt  time.Time // when the producer said the fact happened
	RoutingKey  string    // the fact's routing key
	Attempt     int       // 1 on the first delivery, 2 after the first retry, ...
	Redelivered bool      // the broker delivered this copy before, without an ack
	Consumer    string    // the consumer (and work queue) that received it
	// DueAt is when a fact published with [Publisher.In] or [Publisher.At],
	// or deferred by a handler ([Defer]), was due (header [HeaderDueAt]);
	// time.Since(DueAt) is how late it arrived. The zero time for a fact
	// published now.
	DueAt time.Time
	// Deferrals is how often the fact was deferred ([Defer]) by this
	// consumer so far: 0 on its first delivery.
	Deferrals int
	// Headers are the message's AMQP headers as delivered: the wire
	// contract's x- headers and whatever publish middleware added (trace
	// context, say). Retry and replay copies keep them. Read them only.
	Headers map[string]any
}
