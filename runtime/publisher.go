package runtime

import (
	"context"
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
//
// [Publisher.In] and [Publisher.At] return views of a Publisher that
// publish later; they share its channel.
type Publisher struct {
	*publisher          // shared by p and every view of it
	due        schedule // when the view's facts are due; zero: now
}

type publisher struct {
	conn     *Conn
	exchange string
	opts     publisherOptions
	lane     lane
	closed   atomic.Bool
	seq      *sequencer    // numbers the facts of each ordering key
	direct   directWriters // into streams declared with publish "direct"
}

// PublisherOption configures a [Publisher].
type PublisherOption func(*publisherOptions)

type publisherOptions struct {
	allowUnroutable bool
	middleware      []PublishMiddleware
	sequenceKeys    int
}

// AllowUnroutable makes Publish accept facts that no queue is bound to yet,
// for facts published ahead of their first consumer. The broker then drops
// such a fact. Without this option, Publish sets the mandatory flag and
// returns an error matching [ErrUnroutable].
func AllowUnroutable() PublisherOption {
	return func(o *publisherOptions) { o.allowUnroutable = true }
}

// WithSequenceKeys bounds how many ordering keys the publisher remembers
// the last x-ordering-seq number of: between n and 2n (default
// [DefaultSequenceKeys]). A key not published while n others were is
// forgotten; its next fact starts again at 1 under a new
// x-ordering-source, which an ordered consumer reads as a new sequence
// (so a gap just before it is not detected), never as a step back. Each
// key remembered costs about 100 bytes plus the key.
func WithSequenceKeys(n int) PublisherOption {
	return func(o *publisherOptions) { o.sequenceKeys = n }
}

// NewPublisher returns a Publisher that publishes to exchange (the events
// exchange of a topology) over conn.
func NewPublisher(conn *Conn, exchange string, opts ...PublisherOption) (*Publisher, error) {
	if conn == nil {
		return nil, errors.New("new publisher: nil Conn")
	}
	p := &Publisher{publisher: &publisher{conn: conn, exchange: exchange, lane: lane{conn: conn}}}
	p.direct.opening = make(chan struct{}, 1)
	for _, o := range opts {
		o(&p.opts)
	}
	if p.opts.sequenceKeys < 0 {
		return nil, fmt.Errorf("new publisher: WithSequenceKeys(%d): expected 1 or more keys (0: the default)", p.opts.sequenceKeys)
	}
	p.seq = newSequencer(p.opts.sequenceKeys)
	return p, nil
}

// Publish wraps payload in a new [Envelope], validates it against f's
// schema, publishes it with f's routing key and waits for the broker's
// confirm. It returns the message id.
//
// A payload of a generated fact type ([codec.Validator], and written by
// the codec: [codec.Encodes]) is validated with its Validate method and encoded
// once, with the envelope written around it; any other payload is encoded
// with encoding/json and its bytes validated with f.Validate. Generated
// publishers pass a pointer (the methods of generated structs take one);
// a value is copied once to reach them.
//
// If the connection drops before the confirm, Publish publishes the same
// envelope (same id) again on the next connection, so a consumer may see
// it twice but never zero times; consumers deduplicate by id. Errors: an
// invalid payload (nothing is sent), [ErrUnroutable], [ErrNacked], or ctx's
// error when it ends first, in which case the fact may or may not have been
// published.
func (p *Publisher) Publish(ctx context.Context, f Fact, payload any) (messageID string, err error) {
	m, err := encodeFact(f, payload)
	if err != nil {
		return "", p.publishError(f, err)
	}
	return m.id, p.publishMessage(ctx, f, m)
}

// PublishEnvelope publishes an envelope made earlier, for example by an
// outbox relay after the business transaction committed, keeping its id
// and time. It validates env.Payload against f's schema; otherwise it
// behaves like Publish.
func (p *Publisher) PublishEnvelope(ctx context.Context, f Fact, env Envelope) error {
	m, err := encodeEnvelope(f, env)
	if err != nil {
		return p.publishError(f, err)
	}
	return p.publishMessage(ctx, f, m)
}

func (p *Publisher) publishError(f Fact, err error) error {
	return p.conn.redact(fmt.Errorf("publish %s: %w", f.RoutingKey, err))
}

// publishMessage publishes m, through the publish middleware if there is
// any, and waits for its confirm.
func (p *Publisher) publishMessage(ctx context.Context, f Fact, m outMessage) error {
	msg, err := p.message(f, m)
	if err != nil {
		return p.publishError(f, err)
	}
	dst, err := p.destination(f, &msg)
	if err != nil {
		p.unnumber(msg)
		return p.publishError(f, err)
	}
	wrote := false
	if len(p.opts.middleware) == 0 {
		wrote, err = p.sendTracked(ctx, msg, dst)
	} else {
		err = p.through(ctx, f, dst, msg, func(ctx context.Context, msg amqp.Publishing) error {
			w, err := p.sendTracked(ctx, msg, dst)
			wrote = wrote || w
			return err
		})
	}
	if err != nil {
		if !wrote {
			p.unnumber(msg)
		}
		return p.publishError(f, p.explainDelayed(dst, err))
	}
	return nil
}

// through hands msg to terminal through the publish middleware, which may
// add headers.
func (p *Publisher) through(ctx context.Context, f Fact, dst destination, msg amqp.Publishing, terminal func(context.Context, amqp.Publishing) error) error {
	out := &Outgoing{
		Exchange: dst.exchange, RoutingKey: f.RoutingKey, MessageID: msg.MessageId,
		Headers: map[string]any(msg.Headers),
	}
	send := func(ctx context.Context, out *Outgoing) error {
		msg.Headers = amqp.Table(out.Headers)
		return terminal(ctx, msg)
	}
	for i := len(p.opts.middleware) - 1; i >= 0; i-- {
		send = p.opts.middleware[i](send)
	}
	return send(ctx, out)
}

// explainDelayed names the missing delay levels when a delayed publish
// found no exchange to publish to.
func (p *Publisher) explainDelayed(dst destination, err error) error {
	var ae *amqp.Error
	if dst.exchange != p.exchange && errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return fmt.Errorf("the delay levels of exchange %q are not declared (a topology built with delays: \"delayedFacts\": true in warren.json): %w", p.exchange, err)
	}
	return err
}

// send publishes msg with the mandatory flag (unless unroutable facts are
// allowed) and waits for its confirm, publishing it again (same id) on the
// next channel after a channel loss.
func (p *Publisher) send(ctx context.Context, msg amqp.Publishing, dst destination) error {
	_, err := p.sendTracked(ctx, msg, dst)
	return err
}

// sendTracked is send, reporting whether msg was ever written (or may
// have been): false when every try failed before writing anything.
func (p *Publisher) sendTracked(ctx context.Context, msg amqp.Publishing, dst destination) (wrote bool, err error) {
	for {
		sent, err := p.sendOnce(ctx, msg, dst)
		if !wasNotSent(err) {
			wrote = true
		}
		if err == nil {
			err = sent.wait(ctx)
		}
		if !errors.Is(err, errChannelLost) {
			return wrote, err
		}
		p.conn.log.Debug("republishing after channel loss", "message_id", msg.MessageId, "routing_key", dst.fact, "err", p.conn.redact(err))
	}
}

// sendOnce writes msg on the lane's current channel, or into its stream
// directly, without waiting for its confirm.
func (p *Publisher) sendOnce(ctx context.Context, msg amqp.Publishing, dst destination) (inFlight, error) {
	if dst.stream != "" {
		if _, via := p.direct.viaExchange.Load(dst.stream); !via {
			// Over the stream protocol's connection: the AMQP one is not
			// needed, nor waited for.
			f, err := p.writeDirect(ctx, msg, dst)
			if !errors.Is(err, ErrStreamOnOtherNodes) {
				return f, err
			}
			if _, told := p.direct.viaExchange.LoadOrStore(dst.stream, true); !told {
				p.conn.log.Info("publishing through the exchange: the stream protocol reaches one node, and the stream's leader and replicas are on several; give every node's URL to write into it directly", "stream", dst.stream)
			}
		}
		// The exchange binds the stream's facts to it as well.
		dst.stream = ""
	}
	cc, err := p.lane.channel(ctx)
	if errors.Is(err, ErrClosed) && p.closed.Load() {
		return inFlight{}, notSent(fmt.Errorf("publisher: %w", ErrClosed))
	}
	if err != nil {
		return inFlight{}, notSent(err)
	}
	return cc.send(ctx, dst.exchange, dst.key, !p.opts.allowUnroutable, msg)
}

// Ready waits until a publish could be written to the broker now: the
// publisher's Conn has a live connection and the broker does not block
// publishing on it (a resource alarm). It returns nil then, ctx's error
// (wrapped) when ctx ends first, or an error matching [ErrClosed] once the
// publisher or its Conn is closed. It sends nothing. A caller that must
// hold something while it publishes (an outbox relay, its claim on the
// rows) asks it first, so that it does not hold it through an outage.
func (p *Publisher) Ready(ctx context.Context) error {
	if p.publisher == nil {
		return errors.New("publisher: not made with NewPublisher")
	}
	for {
		if p.closed.Load() {
			return fmt.Errorf("publisher: %w", ErrClosed)
		}
		s, err := p.conn.session(ctx)
		if err != nil {
			return err
		}
		if err := s.waitUnblocked(ctx); err != nil {
			return err
		}
		select {
		case <-s.lost:
			// Lost while it waited: wait for the next connection.
		default:
			return nil
		}
	}
}

// Close releases the publisher's channel. Publishes still waiting fail or
// are republished by nobody: close a publisher only when its callers are
// done.
func (p *Publisher) Close() error {
	p.closed.Store(true)
	p.lane.close()
	p.closeDirect()
	return nil
}
