package warrentest

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
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
		// An ordered consumer retries in place, so no header counts its
		// attempts: the calls before this one on the same fact do.
		c.Attempt = 1
		for _, prev := range b.calls {
			if prev.Consumer == consumer && prev.MessageID == d.MessageId && prev.Err != nil && !prev.Duplicate {
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

func (o *observer) HandlerReturned(consumer string, d amqp.Delivery, err error, duplicate bool) {
	b := (*Bus)(o)
	b.mu.Lock()
	defer b.mu.Unlock()
	k := keyOf(consumer, d)
	c, ok := b.running[k]
	if !ok {
		c = callOf(consumer, d)
	}
	delete(b.running, k)
	c.Err, c.Duplicate = err, duplicate
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
		Redelivered: d.Redelivered, Body: d.Body,
	}
}
