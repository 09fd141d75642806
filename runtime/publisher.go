package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Publisher publishes facts to one exchange and waits for the broker to
// confirm each. Publishes are pipelined on one channel: any number of
// goroutines may call Publish at once, each waiting only for its own
// confirm. While the connection is down, Publish waits for it to come back,
// up to the deadline of its ctx.
type Publisher struct {
	conn     *Conn
	exchange string
	opts     publisherOptions
	lane     lane
	closed   atomic.Bool
}

// PublisherOption configures a [Publisher].
type PublisherOption func(*publisherOptions)

type publisherOptions struct {
	allowUnroutable bool
	middleware      []PublishMiddleware
}

// AllowUnroutable makes Publish accept facts that no queue is bound to yet,
// for facts published ahead of their first consumer. The broker then drops
// such a fact. Without this option, Publish sets the mandatory flag and
// returns an error matching [ErrUnroutable].
func AllowUnroutable() PublisherOption {
	return func(o *publisherOptions) { o.allowUnroutable = true }
}

// NewPublisher returns a Publisher that publishes to exchange (the events
// exchange of a topology) over conn.
func NewPublisher(conn *Conn, exchange string, opts ...PublisherOption) (*Publisher, error) {
	if conn == nil {
		return nil, errors.New("new publisher: nil Conn")
	}
	p := &Publisher{conn: conn, exchange: exchange, lane: lane{conn: conn}}
	for _, o := range opts {
		o(&p.opts)
	}
	return p, nil
}

// Publish wraps payload in a new [Envelope], validates it against f's
// schema, publishes it with f's routing key and waits for the broker's
// confirm. It returns the message id.
//
// If the connection drops before the confirm, Publish publishes the same
// envelope (same id) again on the next connection, so a consumer may see
// it twice but never zero times; consumers deduplicate by id. Errors: an
// invalid payload (nothing is sent), [ErrUnroutable], [ErrNacked], or ctx's
// error when it ends first, in which case the fact may or may not have been
// published.
func (p *Publisher) Publish(ctx context.Context, f Fact, payload any) (messageID string, err error) {
	env, err := NewEnvelope(payload)
	if err != nil {
		return "", fmt.Errorf("publish %s: %w", f.RoutingKey, err)
	}
	return env.ID, p.PublishEnvelope(ctx, f, env)
}

// PublishEnvelope publishes an envelope made earlier, for example by an
// outbox relay after the business transaction committed, keeping its id
// and time. It validates env.Payload against f's schema; otherwise it
// behaves like Publish.
func (p *Publisher) PublishEnvelope(ctx context.Context, f Fact, env Envelope) error {
	if err := p.publishEnvelope(ctx, f, env); err != nil {
		return p.conn.redact(fmt.Errorf("publish %s: %w", f.RoutingKey, err))
	}
	return nil
}

func (p *Publisher) publishEnvelope(ctx context.Context, f Fact, env Envelope) error {
	return p.through(ctx, f, env, func(ctx context.Context, msg amqp.Publishing) error {
		return p.send(ctx, msg, f.RoutingKey)
	})
}

// through validates env against f, builds its message and hands it to
// terminal through the publish middleware.
func (p *Publisher) through(ctx context.Context, f Fact, env Envelope, terminal func(context.Context, amqp.Publishing) error) error {
	if f.RoutingKey == "" {
		return errNoRoutingKey
	}
	if f.Validate != nil {
		if err := f.Validate(env.Payload); err != nil {
			return fmt.Errorf("payload does not match its schema: %w", err)
		}
	}
	body, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode envelope: %w", err)
	}
	version := f.Version
	if version == 0 {
		version = 1
	}
	out := &Outgoing{
		Exchange: p.exchange, RoutingKey: f.RoutingKey, MessageID: env.ID,
		Headers: map[string]any{HeaderFactVersion: int64(version)},
	}
	send := func(ctx context.Context, out *Outgoing) error {
		return terminal(ctx, amqp.Publishing{
			ContentType:  "application/json",
			DeliveryMode: amqp.Persistent,
			Priority:     f.Priority,
			MessageId:    env.ID,
			Timestamp:    env.OccurredAt,
			Type:         f.RoutingKey,
			Headers:      amqp.Table(out.Headers),
			Body:         body,
		})
	}
	for i := len(p.opts.middleware) - 1; i >= 0; i-- {
		send = p.opts.middleware[i](send)
	}
	return send(ctx, out)
}

// send publishes msg with the mandatory flag (unless unroutable facts are
// allowed) and waits for its confirm, publishing it again (same id) on the
// next channel after a channel loss.
func (p *Publisher) send(ctx context.Context, msg amqp.Publishing, routingKey string) error {
	for {
		sent, err := p.sendOnce(ctx, msg, routingKey)
		if err == nil {
			err = sent.wait(ctx)
		}
		if !errors.Is(err, errChannelLost) {
			return err
		}
		p.conn.log.Debug("republishing after channel loss", "message_id", msg.MessageId, "routing_key", routingKey, "err", p.conn.redact(err))
	}
}

// sendOnce writes msg on the lane's current channel without waiting for
// its confirm.
func (p *Publisher) sendOnce(ctx context.Context, msg amqp.Publishing, routingKey string) (inFlight, error) {
	cc, err := p.lane.channel(ctx)
	if errors.Is(err, ErrClosed) && p.closed.Load() {
		return inFlight{}, fmt.Errorf("publisher: %w", ErrClosed)
	}
	if err != nil {
		return inFlight{}, err
	}
	return cc.send(ctx, p.exchange, routingKey, !p.opts.allowUnroutable, msg)
}

// Close releases the publisher's channel. Publishes still waiting fail or
// are republished by nobody: close a publisher only when its callers are
// done.
func (p *Publisher) Close() error {
	p.closed.Store(true)
	p.lane.close()
	return nil
}
