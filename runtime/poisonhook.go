package runtime

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// PoisonEvent is what a consumer tells [WithPoisonHook] about a fact it
// put in its poison queue: the poison copy's headers, as a person reading
// the queue sees them.
type PoisonEvent struct {
	Consumer   string    // the consumer's name
	MessageID  string    // the producer-made id
	RoutingKey string    // the fact's routing key as first published
	Failure    string    // x-failure: the error, redacted and bounded
	Attempts   int       // x-attempts: the failed attempts
	At         time.Time // x-failed-at
	Headers    amqp.Table
}

// WithPoisonHook calls hook each time the consumer put a fact in its poison
// queue (the broker confirmed the copy), so that an alert needs no polling
// of queue depths. It runs on the delivery's goroutine before the next
// delivery is taken: keep it quick (hand the event to a channel), and do
// not change the headers. A hook that panics is recovered and logged.
// runtime/poison's Threshold turns it into an alert when one cause
// poisons many facts. A responder has no poison queue and refuses it.
func WithPoisonHook(hook func(PoisonEvent)) ConsumerOption {
	return func(o *consumerOptions) { o.poisonHook = hook; o.given |= optPoisonHook }
}

// notifyPoisoned calls the poison hook, if any, with the copy msg of in.
func (c *Consumer) notifyPoisoned(in inbound, msg amqp.Publishing) {
	hook := c.opts.poisonHook
	if hook == nil {
		return
	}
	e := PoisonEvent{Consumer: c.spec.Name, MessageID: messageID(in.d), RoutingKey: in.routingKey, Headers: msg.Headers}
	e.Failure, _ = msg.Headers[HeaderFailure].(string)
	if n, ok := msg.Headers[HeaderAttempts].(int64); ok {
		e.Attempts = int(n)
	}
	if s, ok := msg.Headers[HeaderFailedAt].(string); ok {
		e.At, _ = time.Parse(time.RFC3339, s)
	}
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("the poison hook panicked", "message_id", e.MessageID, "panic", v)
		}
	}()
	hook(e)
}
