package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/codec"
)

// DefaultRequestTimeout bounds a call whose ctx has no deadline, so that
// no caller waits forever for a responder that is down.
const DefaultRequestTimeout = 30 * time.Second

// Requester asks requests of responders and waits for their replies. One
// Requester, on one channel of its Conn, serves any number of concurrent
// calls: each request carries a fresh correlation id, replies come back
// through RabbitMQ's direct reply-to on that channel, and each is handed
// to the one call waiting for its id. A reply nobody waits for any more
// (its caller gave up) is dropped and counted ([Requester.Dropped], and
// the [ReplyDropped] event of the Conn's [Metrics]).
//
// Requests are not retried: when the channel is lost while a call waits,
// the call fails (its reply could never arrive), and the caller decides
// whether to ask again.
type Requester struct {
	conn     *Conn
	exchange string
	timeout  time.Duration
	lane     lane
	closed   atomic.Bool
	dropped  atomic.Uint64

	mu    sync.Mutex
	calls map[string]*call // correlation id -> the waiting call
}

// call is one caller waiting for its reply on one channel.
type call struct {
	cc    *confirmChannel
	reply chan amqp.Delivery // buffered: the dispatcher never blocks
}

// RequesterOption configures a [Requester].
type RequesterOption func(*Requester)

// WithRequestTimeout sets the deadline of calls whose ctx has none
// (default [DefaultRequestTimeout]).
func WithRequestTimeout(d time.Duration) RequesterOption {
	return func(r *Requester) { r.timeout = d }
}

// NewRequester returns a Requester that publishes requests to exchange
// (the requests exchange of a topology) over conn.
func NewRequester(conn *Conn, exchange string, opts ...RequesterOption) (*Requester, error) {
	if conn == nil {
		return nil, errors.New("new requester: nil Conn")
	}
	if exchange == "" {
		return nil, errors.New("new requester: empty requests exchange")
	}
	r := &Requester{conn: conn, exchange: exchange, timeout: DefaultRequestTimeout, calls: map[string]*call{}}
	for _, o := range opts {
		o(r)
	}
	if r.timeout <= 0 {
		return nil, fmt.Errorf("new requester: request timeout %s: expected a positive duration", r.timeout)
	}
	r.lane = lane{conn: conn, onOpen: r.listen}
	return r, nil
}

// Call validates payload against req's schema, sends it and waits for the
// reply, which it validates against the reply's schema and decodes into a
// Rep. ctx's deadline (or the requester's timeout) bounds everything: it
// becomes the request's expiration, so a responder does not start a
// request nobody waits for, and Call returns ctx's error
// (context.DeadlineExceeded) when it passes first.
//
// Errors: an invalid request (nothing is sent); [ErrNoResponder], at once,
// when no responder queue is bound to req.Key; a [*ReplyError] when the
// responder answered with an error (errors.As; [IsPermanent] tells whether
// it was marked permanent); [ErrInvalidReply], permanent, when the reply
// cannot be used (not a reply envelope, or a payload that does not match
// the reply's schema or does not decode into Rep); ctx's error.
func Call[Rep any](ctx context.Context, r *Requester, req Request, payload any) (Rep, error) {
	var rep Rep
	typed := codec.Decodes(any(&rep))
	raw, err := r.call(ctx, req, payload, !typed)
	if err != nil {
		return rep, r.conn.redact(fmt.Errorf("request %s: %w", req.Key, err))
	}
	if typed {
		// Decoding is the reply's validation: one pass, no ValidateReply.
		if err := decodeValue(raw, &rep); err != nil {
			return rep, r.conn.redact(fmt.Errorf("request %s: %w", req.Key, invalidReply(fmt.Errorf("reply does not match its schema: %w", err), "payload", raw)))
		}
		return rep, nil
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return rep, r.conn.redact(fmt.Errorf("request %s: %w", req.Key, invalidReply(fmt.Errorf("reply does not decode into %T: %w", rep, err), "payload", raw)))
	}
	return rep, nil
}

// Call is [Call] returning the reply payload undecoded.
func (r *Requester) Call(ctx context.Context, req Request, payload any) (json.RawMessage, error) {
	raw, err := r.call(ctx, req, payload, true)
	if err != nil {
		return nil, r.conn.redact(fmt.Errorf("request %s: %w", req.Key, err))
	}
	return raw, nil
}

// call sends one request and waits for its reply, whose payload it checks
// with req.ValidateReply when validateReply is set.
func (r *Requester) call(ctx context.Context, req Request, payload any, validateReply bool) (json.RawMessage, error) {
	if req.Key == "" {
		return nil, errors.New("request has no routing key")
	}
	if r.closed.Load() {
		return nil, fmt.Errorf("requester: %w", ErrClosed)
	}
	m, err := encodePayload(payload, req.Validate)
	var se *schemaError
	if errors.As(err, &se) {
		return nil, Permanent(fmt.Errorf("request does not match its schema: %w", se.err))
	}
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	cc, err := r.lane.channel(ctx)
	if errors.Is(err, ErrClosed) && r.closed.Load() {
		return nil, fmt.Errorf("requester: %w", ErrClosed)
	}
	if err != nil {
		return nil, err
	}
	// Registered before publishing: a fast reply may beat the confirm.
	c := &call{cc: cc, reply: make(chan amqp.Delivery, 1)}
	r.mu.Lock()
	r.calls[m.id] = c
	r.mu.Unlock()
	defer r.forget(m.id)

	deadline, _ := ctx.Deadline()
	left := time.Until(deadline)
	if left <= 0 {
		return nil, context.Cause(ctx)
	}
	err = cc.publish(ctx, r.exchange, req.Key, true, amqp.Publishing{
		ContentType:   "application/json",
		MessageId:     m.id,
		CorrelationId: m.id,
		ReplyTo:       DirectReplyTo,
		Type:          req.Key,
		Timestamp:     m.at,
		Expiration:    expiration(left),
		Body:          m.body,
	})
	if errors.Is(err, ErrUnroutable) {
		return nil, fmt.Errorf("%w (exchange %q): is the responder's topology declared?", ErrNoResponder, r.exchange)
	}
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		// The requests exchange does not exist: no responder queue can
		// be bound to it either.
		return nil, fmt.Errorf("%w (exchange %q does not exist): is the responder's topology declared? %w", ErrNoResponder, r.exchange, err)
	}
	if err != nil {
		return nil, err
	}
	select {
	case d := <-c.reply:
		raw, err := decodeReply(req.Key, d.Body)
		if err != nil {
			return nil, err
		}
		if validateReply && req.ValidateReply != nil {
			if err := req.ValidateReply(raw); err != nil {
				return nil, invalidReply(fmt.Errorf("reply does not match its schema: %w", err), "payload", raw)
			}
		}
		return raw, nil
	case <-cc.dead:
		return nil, fmt.Errorf("%w: the reply can no longer arrive: %w", errChannelLost, cc.deadErr)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the reply: %w", context.Cause(ctx))
	}
}

// listen starts consuming direct reply-to on a new channel of the lane,
// before anything is published on it, as RabbitMQ requires.
func (r *Requester) listen(cc *confirmChannel) error {
	replies, err := cc.ch.Consume(DirectReplyTo, "", true, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume %s: %w", DirectReplyTo, err)
	}
	go r.dispatch(cc, replies)
	return nil
}

// dispatch hands each reply to the call waiting for its correlation id, at
// most once: a second reply to one request (a responder answered, died
// before its ack, and another answered the redelivery) is dropped like a
// late one.
func (r *Requester) dispatch(cc *confirmChannel, replies <-chan amqp.Delivery) {
	for d := range replies {
		r.mu.Lock()
		c, ok := r.calls[d.CorrelationId]
		if ok && c.cc == cc {
			delete(r.calls, d.CorrelationId)
		}
		r.mu.Unlock()
		if !ok || c.cc != cc {
			r.conn.cfg.Metrics.Count("", ReplyDropped, d.Type) // before Dropped moves, so a reader of Dropped sees it counted
			r.dropped.Add(1)
			r.conn.log.Debug("dropped a reply nobody waits for", "correlation_id", d.CorrelationId, "request", d.Type)
			continue
		}
		c.reply <- d
	}
}

func (r *Requester) forget(id string) {
	r.mu.Lock()
	delete(r.calls, id)
	r.mu.Unlock()
}

// Dropped returns how many replies arrived that no call was waiting for:
// late ones, after their caller's deadline, and second answers to one
// request.
func (r *Requester) Dropped() uint64 { return r.dropped.Load() }

// Close releases the requester's channel. Calls still waiting fail.
func (r *Requester) Close() error {
	r.closed.Store(true)
	r.lane.close()
	return nil
}
