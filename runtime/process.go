package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/internal/transport"
)

// inbound is a delivery with what the consumer reads from its headers.
type inbound struct {
	d          amqp.Delivery
	sess       *session  // the connection the delivery came on
	attempt    int       // this attempt, 1 for the first
	routingKey string    // the fact's routing key, as first published
	exchange   string    // the exchange it was first published to
	deferrals  int       // how often the fact was deferred so far
	due        time.Time // when it was due (HeaderDueAt); the zero time for a fact published now
	// acks sends its ack with others' (see acker.go); nil: acked alone.
	acks *acker
	// acked, when set, learns whether the delivery ended in an ack (sent
	// or waiting in acks): a stream fact is settled then.
	acked *bool
}

func inspect(s *session, d amqp.Delivery) inbound {
	in := inbound{d: d, sess: s, attempt: amqpmsg.HeaderInt(d.Headers, HeaderAttempts) + 1, routingKey: d.RoutingKey, exchange: d.Exchange, deferrals: deferrals(d.Headers), due: dueAt(d.Headers)}
	// A retry comes back through the default exchange with the consumer's
	// name as routing key, a delayed or deferred fact through the delay
	// levels with "f." or "d." before its key; the copy recorded where it
	// started.
	if rk, ok := d.Headers[HeaderOriginalRoutingKey].(string); ok {
		in.routingKey = rk
		in.exchange, _ = d.Headers[HeaderOriginalExchange].(string)
	}
	return in
}

// process handles one delivery and settles it (see settle.go), and returns
// the handling's error. Every path ends in exactly one ack or nack of d.
func (c *Consumer) process(ctx context.Context, s *session, d amqp.Delivery) error {
	return c.processAcks(ctx, s, d, nil)
}

// processAcks is process whose ack, if the delivery ends in one, goes
// through acks (nil: acked at once, alone).
func (c *Consumer) processAcks(ctx context.Context, s *session, d amqp.Delivery, acks *acker) error {
	in := inspect(s, d)
	in.acks = acks
	return c.processIn(ctx, in)
}

// processStream is processAcks for a fact of a stream, and reports
// whether its handling ended in an ack: the fact was handled, or its copy
// confirmed, and it counts towards the stream's offset.
func (c *Consumer) processStream(ctx context.Context, s *session, d amqp.Delivery, acks *acker) (acked bool) {
	in := inspect(s, d)
	in.acks, in.acked = acks, &acked
	c.processIn(ctx, in)
	return acked
}

// processIn counts, handles and settles in.
func (c *Consumer) processIn(ctx context.Context, in inbound) error {
	c.count(Delivered, in.routingKey)
	if in.d.Redelivered {
		c.count(Redelivered, in.routingKey)
	}
	dup, err := c.handle(ctx, in)
	c.settle(ctx, in, dup, err)
	return err
}

// handle checks the bytes and the envelope, finds the route, validates and
// decodes the payload, and calls the handler through the consumer's chain.
// Every error before the handler call is permanent: it would fail the same
// way on every attempt. It returns the error the consumer settles by: the
// handler's, or, for a deferral the consumer cannot honour, the failure it
// is instead (see [Consumer.deferral]).
func (c *Consumer) handle(ctx context.Context, in inbound) (duplicate bool, err error) {
	if err := checkBody(in.d, c.opts.maxBodySize); err != nil {
		return false, err
	}
	route, ok := c.routes[in.routingKey]
	if ok && route.otherCopy(in.d.Headers, versionOf(in.d.Headers)) {
		// The same fact in another version, which this consumer handles
		// instead: as a duplicate, acked unhandled.
		return true, nil
	}
	read := in
	if ok {
		read = route.readAs(in)
	}
	head, h, err := c.decode(read)
	if err != nil {
		return false, err
	}
	d := Delivery{
		MessageID: head.ID, OccurredAt: head.OccurredAt, RoutingKey: in.routingKey,
		Attempt: in.attempt, Redelivered: in.d.Redelivered, Consumer: c.spec.Name,
		DueAt: in.due, Deferrals: in.deferrals, Headers: read.d.Headers,
	}
	returned := in.sess.handlerStarted(c.spec.Name, in.d)
	start := time.Now()
	err = safeCall(context.WithValue(ctx, handlingKey{}, h), d, c.chain)
	c.metrics.ObserveHandler(c.spec.Name, in.routingKey, time.Since(start), err)
	settled, deferred := c.deferral(in, err)
	returned(transport.Outcome{Err: err, Duplicate: h.duplicate, Deferred: deferred})
	return h.duplicate, settled
}

// decode reads the envelope and the payload and returns the delivery's
// handling: the route's handler bound to the decoded fact. A route whose type decodes itself reads the body
// once (see [Handle]); any other validates the payload's bytes against
// the fact's schema and then decodes them.
func (c *Consumer) decode(in inbound) (envelopeHead, *handling, error) {
	route, ok := c.routes[in.routingKey]
	if ok && route.older != nil {
		if dec, older := route.older[versionOf(in.d.Headers)]; older {
			head, h, err := decodeEnvelopeOnce(in.d.Body, dec)
			if pe := (*payloadError)(nil); err != nil && errors.As(err, &pe) {
				return head, nil, Permanent(fmt.Errorf("payload of %s version %d: %w", in.routingKey, versionOf(in.d.Headers), pe.err))
			}
			return head, h, err
		}
	}
	if ok && route.decodeAt != nil {
		head, h, err := decodeEnvelopeOnce(in.d.Body, route.decodeAt)
		if err == nil {
			c.checkVersion(in, route.fact)
			return head, h, nil
		}
		// (errors.As only on failure: its target escapes, and allocates.)
		if pe := (*payloadError)(nil); errors.As(err, &pe) {
			c.checkVersion(in, route.fact) // the envelope was read: as the other path counts it
			return head, nil, Permanent(c.unreadable(in, route, fmt.Errorf("payload of %s does not match its schema: %w", in.routingKey, problemsOnly(pe.err))))
		}
		return head, nil, err
	}
	env, err := decodeEnvelope(in.d.Body)
	if err != nil {
		return envelopeHead{}, nil, err
	}
	if !ok {
		return envelopeHead{}, nil, Permanent(fmt.Errorf("fact %q is not handled by consumer %q", in.routingKey, c.spec.Name))
	}
	c.checkVersion(in, route.fact)
	if validate := route.fact.Validate; validate != nil {
		if err := validate(env.Payload); err != nil {
			return envelopeHead{}, nil, Permanent(c.unreadable(in, route, fmt.Errorf("payload of %s does not match its schema: %w", in.routingKey, problemsOnly(err))))
		}
	}
	call, err := route.decode(env.Payload)
	if err != nil {
		return envelopeHead{}, nil, err
	}
	return envelopeHead{ID: env.ID, OccurredAt: env.OccurredAt}, &handling{call: funcInvoker(call)}, nil
}

// handling is what the chain, built once per consumer, needs to know and
// to tell about one delivery. It travels in the ctx, which every
// middleware passes on (derived or as is).
type handling struct {
	call      invoker // the handler, bound to the decoded fact
	ran       bool    // the handler was called
	failed    bool    // and returned an error
	duplicate bool    // the guard had seen the message
}

type handlingKey struct{}

var errLostHandling = errors.New("middleware dropped the ctx it was given: pass ctx (or one derived from it) to next")

// buildChain composes the handler call of every delivery, outside in:
// panic recovery (in handle), the middleware, the guard, panic recovery,
// the handler.
func buildChain(name string, guard Guard, middleware []Middleware) HandlerFunc {
	h := func(ctx context.Context, d Delivery) error {
		hd, ok := ctx.Value(handlingKey{}).(*handling)
		if !ok {
			return errLostHandling
		}
		hd.ran = true
		err := safeCall(ctx, d, hd.call.invoke)
		hd.failed = err != nil
		return err
	}
	if guard != nil {
		inner := h
		h = func(ctx context.Context, d Delivery) error {
			hd, ok := ctx.Value(handlingKey{}).(*handling)
			if !ok {
				return errLostHandling
			}
			dup, err := guard.Run(ctx, name, d.MessageID, func(ctx context.Context) error { return inner(ctx, d) })
			hd.duplicate = dup
			if err != nil && !hd.failed {
				// The handler was not reached or succeeded: the store
				// failed to claim or to commit. The message is fine.
				return Unavailable(fmt.Errorf("idempotency store: %w", err))
			}
			return err
		}
	}
	for i := len(middleware) - 1; i >= 0; i-- {
		h = middleware[i](h)
	}
	return h
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

func logAttrs(in inbound, err error) []any {
	attrs := []any{"message_id", messageID(in.d), "routing_key", in.routingKey, "attempt", in.attempt, "err", secret.Error(err)}
	var p *PanicError
	if errors.As(err, &p) && !p.stackLogged {
		attrs = append(attrs, "stack", string(p.Stack))
	}
	return attrs
}

// messageID is the delivery's message id or, from a producer that did not
// set the property (the envelope's id is the same id by the wire
// contract), its envelope's id: what an operator finds the fact by in the
// poison lane. Failures only: it reads the body.
func messageID(d amqp.Delivery) string {
	if d.MessageId != "" {
		return d.MessageId
	}
	var env struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(d.Body, &env) == nil {
		return env.ID
	}
	return ""
}

// problemsOnly is err as its problems alone, when it can say them so (a
// runtime/schemaset validation error, whose text begins with the schema's
// location): after "does not match its schema" the location said again
// only doubles the phrase. It unwraps to err.
func problemsOnly(err error) error {
	var d interface{ Detail() string }
	if errors.As(err, &d) {
		return detailError{err: err, text: d.Detail()}
	}
	return err
}

type detailError struct {
	err  error
	text string
}

func (e detailError) Error() string { return e.text }
func (e detailError) Unwrap() error { return e.err }
