package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/secret"
)

// inbound is a delivery with what the consumer reads from its headers.
type inbound struct {
	d          amqp.Delivery
	sess       *session // the connection the delivery came on
	attempt    int      // this attempt, 1 for the first
	routingKey string   // the fact's routing key, as first published
	exchange   string   // the exchange it was first published to
}

func inspect(s *session, d amqp.Delivery) inbound {
	in := inbound{d: d, sess: s, attempt: amqpmsg.HeaderInt(d.Headers, HeaderAttempts) + 1, routingKey: d.RoutingKey, exchange: d.Exchange}
	// A retry comes back through the default exchange with the consumer's
	// name as routing key; the copy recorded where it started.
	if rk, ok := d.Headers[HeaderOriginalRoutingKey].(string); ok {
		in.routingKey = rk
		in.exchange, _ = d.Headers[HeaderOriginalExchange].(string)
	}
	return in
}

// process handles one delivery and settles it. Every path ends in exactly
// one ack or nack of d.
func (c *Consumer) process(ctx context.Context, s *session, d amqp.Delivery) {
	in := inspect(s, d)
	c.count(Delivered, in.routingKey)
	if d.Redelivered {
		c.count(Redelivered, in.routingKey)
	}
	dup, err := c.handle(ctx, in)
	switch {
	case dup:
		c.ack(in, DuplicateSkipped)
	case err == nil:
		c.ack(in, Acked)
	case IsPermanent(err) || in.attempt >= c.spec.MaxAttempts:
		c.poison(ctx, in, err)
	default:
		c.retry(ctx, in, err)
	}
}

// handle checks the envelope, finds the route, validates and decodes the
// payload, and calls the handler through the guard and middleware. Every
// error before the handler call is permanent: it would fail the same way on
// every attempt.
func (c *Consumer) handle(ctx context.Context, in inbound) (duplicate bool, err error) {
	env, err := decodeEnvelope(in.d.Body)
	if err != nil {
		return false, err
	}
	route, ok := c.routes[in.routingKey]
	if !ok {
		return false, Permanent(fmt.Errorf("fact %q is not handled by consumer %q", in.routingKey, c.spec.Name))
	}
	c.checkVersion(in, route.fact)
	if validate := route.fact.Validate; validate != nil {
		if err := validate(env.Payload); err != nil {
			return false, Permanent(fmt.Errorf("payload of %s does not match its schema: %w", in.routingKey, err))
		}
	}
	call, err := route.decode(env.Payload)
	if err != nil {
		return false, err
	}
	d := Delivery{
		MessageID: env.ID, OccurredAt: env.OccurredAt, RoutingKey: in.routingKey,
		Attempt: in.attempt, Redelivered: in.d.Redelivered, Consumer: c.spec.Name,
		Headers: in.d.Headers,
	}
	h := func(ctx context.Context, d Delivery) error { return safeCall(ctx, d, call) }
	if g := c.opts.guard; g != nil {
		inner := h
		h = func(ctx context.Context, d Delivery) error {
			var err error
			duplicate, err = g.Run(ctx, c.spec.Name, d.MessageID, func(ctx context.Context) error { return inner(ctx, d) })
			return err
		}
	}
	for i := len(c.opts.middleware) - 1; i >= 0; i-- {
		h = c.opts.middleware[i](h)
	}
	start := time.Now()
	err = safeCall(ctx, d, h)
	c.metrics.ObserveHandler(c.spec.Name, in.routingKey, time.Since(start), err)
	return duplicate, err
}

// safeCall turns a panic into a *PanicError, a transient failure.
func safeCall(ctx context.Context, d Delivery, h func(context.Context, Delivery) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h(ctx, d)
}

func (c *Consumer) ack(in inbound, e Event) {
	if err := in.d.Ack(false); err != nil {
		// The channel is gone; the broker redelivers the message.
		c.log.Debug("ack failed; the message will be redelivered", "message_id", in.d.MessageId, "err", err)
		return
	}
	c.count(e, in.routingKey)
}

// giveBack returns d to its queue unsettled, to be delivered again.
func (c *Consumer) giveBack(d amqp.Delivery, why string) {
	if err := d.Nack(false, true); err != nil {
		c.log.Debug("nack failed; the message will be redelivered", "message_id", d.MessageId, "err", err)
	}
	rk := d.RoutingKey
	if orig, ok := d.Headers[HeaderOriginalRoutingKey].(string); ok {
		rk = orig
	}
	c.count(Returned, rk)
	c.log.Debug("gave a delivery back to the queue", "message_id", d.MessageId, "why", why)
}

func (c *Consumer) count(e Event, routingKey string) {
	c.counters[e].Add(1)
	c.metrics.Count(c.spec.Name, e, routingKey)
}

func logAttrs(in inbound, err error) []any {
	attrs := []any{"message_id", in.d.MessageId, "routing_key", in.routingKey, "attempt", in.attempt, "err", secret.Error(err)}
	var p *PanicError
	if errors.As(err, &p) {
		attrs = append(attrs, "stack", string(p.Stack))
	}
	return attrs
}
