package warrentest

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime"
)

// observer hears, from the in-process broker, when the runtime hands one
// of its deliveries to a handler and what the handler came to.
type observer Bus

func keyOf(consumer string, d amqp.Delivery) runKey {
	return runKey{consumer: consumer, tag: d.DeliveryTag, msgID: d.MessageId}
}

func (o *observer) HandlerStarted(consumer string, d amqp.Delivery) {
	b := (*Bus)(o)
	b.mu.Lock()
	defer b.mu.Unlock()
	c := callOf(consumer, d)
	if b.ordered(consumer) {
		// An ordered consumer retries and defers in place, so no header
		// counts its attempts and deferrals: the calls before this one on
		// the same fact do.
		c.Attempt = 1
		for _, prev := range b.calls {
			switch {
			case prev.Consumer != consumer || prev.MessageID != d.MessageId || prev.Duplicate:
			case prev.Deferred:
				c.Deferrals++
			case prev.Err != nil:
				c.Attempt++
			}
		}
	}
	b.running[keyOf(consumer, d)] = c
}

// ordered reports whether consumer is an ordered consumer of the topology.
func (b *Bus) ordered(consumer string) bool {
	for _, c := range b.top.Consumers {
		if c.Name == consumer {
			return c.ShardExchange != ""
		}
	}
	return false
}

func (o *observer) HandlerReturned(consumer string, d amqp.Delivery, out transport.Outcome) {
	b := (*Bus)(o)
	b.mu.Lock()
	defer b.mu.Unlock()
	k := keyOf(consumer, d)
	c, ok := b.running[k]
	if !ok {
		c = callOf(consumer, d)
	}
	delete(b.running, k)
	c.Err, c.Duplicate, c.Deferred = out.Err, out.Duplicate, out.Deferred
	b.calls = append(b.calls, c)
}

func callOf(consumer string, d amqp.Delivery) Call {
	rk := d.RoutingKey
	if orig, ok := d.Headers[runtime.HeaderOriginalRoutingKey].(string); ok {
		rk = orig
	}
	return Call{
		Consumer: consumer, MessageID: d.MessageId, RoutingKey: rk,
		Attempt:     amqpmsg.HeaderInt(d.Headers, runtime.HeaderAttempts) + 1,
		Deferrals:   amqpmsg.HeaderInt(d.Headers, runtime.HeaderDeferrals),
		Redelivered: d.Redelivered, Body: d.Body,
	}
}
